"""The sources the kernel serves: one per ``[[connector]]``, and the index files of removed ones.

A :class:`Source` holds a source's store, its sync and what went wrong opening them. An index file
whose ``[[connector]]`` was removed keeps serving what it holds, with no sync, until its file is
deleted (docs/index-and-sync.md): :func:`removed_sources` finds and opens those.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from passageway.kernel.config import SOURCE_NAME, ConnectorSettings

if TYPE_CHECKING:
    from passageway.kernel.embedder import Embedder
    from passageway.kernel.store import Store, StoreContext

log = logging.getLogger("passageway.kernel")


class SourceSyncLike(Protocol):
    """What the kernel needs of a source's sync (``passageway.kernel.index.sync.SourceSync``)."""

    async def sync_once(self) -> Any: ...

    async def run_forever(self, poll_seconds: float, reconcile_seconds: float) -> Any: ...

    def health(self) -> Any: ...


SyncFactory = Callable[["ConnectorSettings", "Store", "Embedder", Mapping[str, str]], SourceSyncLike]
"""``factory(connector settings, store, embedder, environ)`` → the source's sync."""


@attrs.define
class Source:
    """One ``[[connector]]``: its store, its sync and what went wrong opening them."""

    settings: ConnectorSettings
    store: Store | None = None
    sync: SourceSyncLike | None = None
    error: str | None = None
    """Why the store or the sync could not be set up; the source is ``failing`` while set."""
    removed: bool = False
    """An index file in the data folder whose ``[[connector]]`` was removed: it keeps serving what it
    holds, with no sync, until its file is deleted (docs/index-and-sync.md)."""
    counts: tuple[int, int] = (0, 0)
    """Items and passages of a removed source, counted when it was opened."""

    @property
    def name(self) -> str:
        return self.settings.name


async def removed_sources(
    factory: Any, context: StoreContext, data_dir: Path, known: set[str], embedder: tuple[str, int]
) -> dict[str, Source]:
    """The index files in ``data_dir`` of sources no longer in the configuration, opened to be
    served as they are (``known`` are the configured ones) by the store ``factory`` with its
    ``context``, as the hook specification says.

    Only an index built with the running ``embedder`` (name, dimension) can answer; another is
    left alone, and so is a file that cannot be read.
    """
    found: dict[str, Source] = {}
    for path in sorted(await asyncio.to_thread(lambda: list(data_dir.glob("*.db")))):
        name = path.stem
        if name in known or not SOURCE_NAME.match(name):
            continue
        store = None
        try:
            store = factory(path, name, context)
            await store.open()
            if await store.embedder() != embedder:
                await store.close()
                continue
            counts = await store.counts()
        except Exception as error:  # an unreadable leftover must not stop the server
            log.warning("index file %s cannot be served: %s", path.name, error)
            if store is not None:
                with contextlib.suppress(Exception):
                    await store.close()
            continue
        settings = ConnectorSettings(name=name, command=("(removed from the configuration)",))
        found[name] = Source(settings, store=store, removed=True, counts=counts)
        log.warning(
            "source %s is no longer in the configuration; its index keeps serving %d items until "
            "you delete %s", name, counts[0], path,
        )
    return found

"""The sources the kernel serves: one per ``[[connector]]``, and the index files of removed ones.

A :class:`Source` holds a source's store, its sync and what went wrong opening them;
:class:`SyncRuns` runs the syncs the kernel drives (one build or reconcile of each, or a task per
source in the background) and keeps their failures for health. An index file whose
``[[connector]]`` was removed keeps serving what it holds, with no sync, until its file is
deleted (docs/index-and-sync.md): :func:`removed_sources` finds and opens those.
:func:`open_source` and :func:`close_sources` open and close the configured ones' stores for the
kernel (:mod:`passageway.kernel.app`), which adds each source's sync.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from passageway.kernel.config_file import SOURCE_NAME, ConnectorSettings
from passageway.kernel.errors import PassagewayError
from passageway.kernel.index.replicas import Role, run_source
from passageway.kernel.store import SharedStore

if TYPE_CHECKING:
    from passageway.kernel.store import Store, StoreContext

log = logging.getLogger("passageway.kernel")


class SourceSyncLike(Protocol):
    """What the kernel needs of a source's sync (``passageway.kernel.index.sync.SourceSync``)."""

    async def sync_once(self) -> Any: ...

    async def run_forever(self, poll_seconds: float, reconcile_seconds: float) -> Any: ...

    def health(self) -> Any: ...


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


async def open_source(connector: ConnectorSettings, factory: Any, data_dir: Path, context: StoreContext
                      ) -> Source:
    """The source of one ``[[connector]]`` with its store opened by the store ``factory`` at
    ``<data_dir>/<name>.db``; a store that cannot be opened leaves the source with its ``error``
    (it is ``failing``, the others keep serving), never an exception."""
    source = Source(connector)
    try:
        store = factory(data_dir / f"{connector.name}.db", connector.name, context)
        await store.open()
        source.store = store
    except PassagewayError as error:
        source.error = str(error)
        log.error("source %s: the index cannot be opened: %s", connector.name, error)
    except Exception as error:
        source.error = f"the index cannot be opened: {type(error).__name__}: {error}"
        log.exception("source %s: the index cannot be opened", connector.name)
    return source


async def close_sources(sources: Iterable[Source]) -> None:
    """Close every source's store; a store that fails to close is let go all the same."""
    for source in sources:
        store, source.store = source.store, None
        if store is not None:
            with contextlib.suppress(Exception):
                await store.close()


def building_notes(sources: Iterable[Source]) -> tuple[str, ...]:
    """One line per source whose first build is running, for an answer (see ``Answer.notes``)."""
    notes = (source.sync.health().building_note() for source in sources if source.sync is not None)
    return tuple(note for note in notes if note)


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


class SyncRuns:
    """The syncs the kernel drives, each source's last failure (for health) and, on a shared
    store, which replica syncs each source."""

    def __init__(self, replica: str) -> None:
        self.replica = replica
        self.tasks: dict[str, asyncio.Task[Any]] = {}
        self.errors: dict[str, str] = {}
        """The last failure of a kernel-driven build or reconcile, per source (cleared on success)."""
        self.roles: dict[str, Role] = {}
        """Per source on a shared store: which replica syncs it (health shows it)."""

    def start(self, sources: dict[str, Source], poll_seconds: float, reconcile_seconds: float) -> None:
        """One task per source: the first build or reconcile, then polling and reconciling."""
        for name, source in sources.items():
            if source.sync is None or name in self.tasks:
                continue
            self.tasks[name] = asyncio.create_task(
                self._run(source, poll_seconds, reconcile_seconds), name=f"sync {name}")

    async def _run(self, source: Source, poll_seconds: float, reconcile_seconds: float) -> None:
        assert source.sync is not None
        try:
            role = Role(self.replica)
            if isinstance(source.store, SharedStore):  # health shows which replica syncs it
                role = self.roles.setdefault(source.name, role)
            await run_source(source.sync, source.store, poll_seconds, reconcile_seconds, role)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the sync's own bug: this source stops, the server does not
            self.errors[source.name] = f"the sync stopped: {type(error).__name__}: {error}"
            log.exception("source %s: the sync stopped", source.name)

    async def stop(self) -> None:
        tasks, self.tasks = self.tasks, {}
        for task in tasks.values():
            task.cancel()
        for task in tasks.values():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def once(self, sources: list[Source], no_sync: str) -> dict[str, str | None]:
        """Build (or reconcile) ``sources`` once, concurrently; each source's error or None
        (``no_sync`` for a source that has no sync and no error of its own)."""

        async def one(source: Source) -> str | None:
            if source.sync is None:
                return source.error or no_sync
            try:
                await source.sync.sync_once()
            except PassagewayError as error:
                self.errors[source.name] = str(error)
                return str(error)
            except Exception as error:
                message = f"{type(error).__name__}: {error}"
                self.errors[source.name] = message
                log.exception("source %s: the sync failed", source.name)
                return message
            self.errors.pop(source.name, None)
            return None

        results = await asyncio.gather(*(one(source) for source in sources))
        return {source.name: result for source, result in zip(sources, results, strict=True)}

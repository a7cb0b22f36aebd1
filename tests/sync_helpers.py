"""Helpers shared by the storage, sync and crash tests: items, an in-memory runner, settings for
the real fake connector, and a store + sync built in a temporary folder."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from passageway.builtin.storage import SqliteStore
from passageway.builtin.storage.vector_cache import SqliteVectorCache
from passageway.kernel.config import ConnectorSettings
from passageway.kernel.errors import ConnectorError
from passageway.kernel.index.sync import SourceSync
from passageway.kernel.records import (
    PROTOCOL_VERSION,
    CheckReply,
    Item,
    ListEntry,
    Section,
    item_from_json,
    item_to_json,
)
from passageway.testing.toy_embedder import ToyEmbedder

WORDS = [
    "river", "mountain", "engine", "harbour", "library", "telescope", "garden", "volcano", "orchestra",
    "glacier", "bridge", "forest", "market", "lantern", "compass", "canyon", "island", "meadow", "tower",
    "castle", "desert", "valley",
]


def item(number: int, version: str = "1", *, sections: int = 2, updated: str | None = None,
         prefix: str = "item") -> Item:
    """A small item whose text depends on its number and version."""
    word = WORDS[number % len(WORDS)]
    other = WORDS[(number * 7 + 3) % len(WORDS)]
    return Item(
        id=f"{prefix}-{number}",
        title=f"{word.title()} note {number}",
        url=f"https://example.test/{prefix}/{number}",
        version=version,
        sections=tuple(
            Section(
                text=f"The {word} and the {other} in part {part} of note {number}, version {version}.",
                heading=f"Part {part}",
            )
            for part in range(sections)
        ),
        path=("Notes", word.title()),
        updated=updated,
    )


def write_items(path: Path, items: Iterable[Item]) -> Path:
    """Write item records as the fake connector's ``FAKE_ITEMS`` file."""
    path.write_text(json.dumps([item_to_json(entry) for entry in items]), encoding="utf-8")
    return path


def fake_connector_settings(name: str, items_file: Path, **extra_env: str) -> ConnectorSettings:
    """A ``[[connector]]`` running ``python -m passageway.testing.fake_connector``."""
    return ConnectorSettings(
        name=name,
        command=(sys.executable, "-m", "passageway.testing.fake_connector"),
        env={"FAKE_ITEMS": str(items_file), **extra_env},
        timeout=30,
    )


class FakeRunner:
    """An in-memory stand-in for ``ConnectorRunner`` with the same async methods.

    ``fail_batches`` holds fetch call numbers (1-based) that fail; ``fail_ids`` fails every fetch
    that asks for one of them (with rule ``fail_rule``); ``fail_all`` fails every call;
    ``protocol`` is the protocol the connector speaks: another than ``"1"`` is refused by
    ``check``, as :class:`~passageway.kernel.connector.runner.ConnectorRunner` refuses it.
    """

    def __init__(self, name: str, items: Iterable[Item] = ()) -> None:
        self.name = name
        self.items: dict[str, Item] = {entry.id: entry for entry in items}
        self.fail_batches: set[int] = set()
        self.fail_ids: set[str] = set()
        self.fail_rule = "exit status"
        self.fail_all = False
        self.protocol = "1"
        self.fetch_calls: list[list[str]] = []
        self.list_calls = 0
        self.changed_calls: list[datetime] = []
        self.fetch_delay = 0.0
        self.left_out: list[str] = []

    def set(self, *items: Item) -> None:
        for entry in items:
            self.items[entry.id] = entry

    def remove(self, *ids: str) -> None:
        for item_id in ids:
            self.items.pop(item_id, None)

    def _maybe_fail(self, rule: str) -> None:
        if self.fail_all:
            raise ConnectorError(self.name, rule, "told to fail")

    async def check(self) -> CheckReply:
        self._maybe_fail("check")
        if self.protocol != PROTOCOL_VERSION:
            raise ConnectorError(self.name, "protocol version", f"told to speak protocol {self.protocol}")
        return CheckReply(ok=True, count=len(self.items), protocol=self.protocol)

    async def list(self) -> list[ListEntry]:
        self._maybe_fail("list")
        self.list_calls += 1
        return [ListEntry(entry.id, entry.version) for entry in self.items.values()]

    async def fetch(self, ids: Sequence[str]) -> list[Item]:
        self.fetch_calls.append(list(ids))
        if self.fetch_delay:
            await asyncio.sleep(self.fetch_delay)
        self._maybe_fail("fetch")
        if len(self.fetch_calls) in self.fail_batches or self.fail_ids.intersection(ids):
            raise ConnectorError(self.name, self.fail_rule, f"fetch call {len(self.fetch_calls)} failed")
        return [self.items[item_id] for item_id in ids if item_id in self.items]

    async def changed(self, since: datetime) -> list[Item]:
        self._maybe_fail("changed")
        self.changed_calls.append(since)
        return [
            entry for entry in self.items.values()
            if entry.updated is not None
            and datetime.fromisoformat(entry.updated.replace("Z", "+00:00")) >= since
        ]


class Setup:
    """A store, a vector cache, a toy embedder and a sync for one source in ``folder``."""

    def __init__(self, folder: Path, runner: Any, name: str = "notes", *, embedder: ToyEmbedder | None = None,
                 max_delete_fraction: float = 0.3, **sync_options: Any) -> None:
        self.folder = folder
        self.name = name
        self.runner = runner
        self.embedder = embedder or ToyEmbedder()
        self.settings = ConnectorSettings(name=name, command=("unused",),
                                          max_delete_fraction=max_delete_fraction)
        self.sync_options = sync_options
        self.store: SqliteStore | None = None
        self.cache: SqliteVectorCache | None = None
        self.sync: SourceSync | None = None

    async def open(self) -> SourceSync:
        self.store = SqliteStore(self.folder / f"{self.name}.db", self.name)
        await self.store.open()
        self.cache = SqliteVectorCache.for_embedder(self.folder, self.embedder.name, self.embedder.dim)
        await self.cache.open()
        self.sync = SourceSync(self.settings, self.store, self.embedder, self.runner, self.cache,
                               **self.sync_options)
        return self.sync

    async def close(self) -> None:
        if self.store is not None:
            await self.store.close()
        if self.cache is not None:
            await self.cache.close()
        self.store = self.cache = self.sync = None

    async def __aenter__(self) -> SourceSync:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def items_from_file(path: Path) -> list[Item]:
    return [item_from_json(record) for record in json.loads(path.read_text(encoding="utf-8"))]


def stored_passages(store: SqliteStore, item_id: str) -> list[tuple[int, str | None, str, str]]:
    """``(ordinal, heading, text, digest)`` of one item's passages in a sqlite store's file, in
    order, read on a connection of its own (a test's look inside; the store has no such method)."""
    with contextlib.closing(sqlite3.connect(store.path)) as connection:
        rows = connection.execute(
            "SELECT ordinal, heading, text, digest FROM passages WHERE item = ? ORDER BY ordinal", (item_id,))
        return [tuple(row) for row in rows]  # type: ignore[misc]


async def keyword_list(store: Any, question: str, vector: Any, limit: int) -> list[Any]:
    """The keyword candidates of a sqlite store's search."""
    return (await asyncio.to_thread(store.search, question, vector, limit))[0]  # type: ignore[no-any-return]


async def vector_list(store: Any, vector: Any, limit: int) -> list[Any]:
    """The vector candidates of a sqlite store's search."""
    return (await asyncio.to_thread(store.search, "", vector, limit))[1]  # type: ignore[no-any-return]

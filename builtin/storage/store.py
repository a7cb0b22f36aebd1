"""The ``sqlite`` store: one SQLite file per source plus a usearch vector file.

``<data dir>/<source>.db`` is the index's truth (:mod:`~passageway.builtin.storage.tables`);
``<data dir>/<source>.usearch`` holds the same vectors for fast vector search and is only a cache
of the database (:mod:`~passageway.builtin.storage.vector_file`).

Writes run in the store's own writer thread on one connection. Reads run in the calling thread
on that thread's own connection (WAL mode lets them run while a write is in progress): recall
calls :meth:`SqliteStore.search` from its search thread, and the async lookups hand their work to
the store's reader thread. The event loop never waits on SQLite. Running reads are counted, so
that closing waits for them before it closes their connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from passageway.builtin.storage import keyword, rows, tables
from passageway.builtin.storage.keyword import match_terms
from passageway.builtin.storage.vector_file import VectorFile
from passageway.kernel.data_folder import private_file
from passageway.kernel.errors import StoreError
from passageway.kernel.records import Passage
from passageway.kernel.store import Candidate, ItemUpdate, StoredItem, check_updates

T = TypeVar("T")


class SqliteStore:
    """One source's index in ``path`` (``<data dir>/<source>.db``); see the module docstring."""

    def __init__(self, path: Path, source: str) -> None:
        self.path = Path(path)
        self.source = source
        self.vectors = VectorFile(self.path.with_suffix(".usearch"), source)
        self._writer_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"store-{source}-write")
        self._reader_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"store-{source}-read")
        self._writer: sqlite3.Connection | None = None
        self._reader_local = threading.local()  # each reading thread's own connection
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._row_cache = rows.RowCache()
        self._graph_build: asyncio.Future[None] | None = None
        self._closed = False
        self._reads = threading.Condition()
        self._running_reads = 0

    # -- threads and connections --------------------------------------------------------------

    async def _write(self, function: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(
            self._writer_thread, self._writing, function, *args)

    def _writing(self, function: Callable[..., T], *args: Any) -> T:
        """Run ``function`` on the writer; SQLite refusing the write (a full disk, an I/O error)
        is a :class:`StoreError` that names the source and the cause."""
        try:
            return function(*args)
        except sqlite3.OperationalError as error:
            raise tables.write_failure(f"the index of source {self.source!r} ({self.path})", error) from None

    async def _read(self, function: Callable[..., T], *args: Any) -> T:
        if self._closed:
            raise StoreError(f"the index of source {self.source!r} is closed")
        return await asyncio.get_running_loop().run_in_executor(
            self._reader_thread, self._while_reading, function, *args)

    def _while_reading(self, function: Callable[..., T], *args: Any) -> T:
        with self._reading():
            return function(*args)

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """Count a read while it runs, so that closing waits for it; once the store is closing,
        a read fails with a :class:`StoreError` instead of starting."""
        with self._reads:
            if self._closed:
                raise StoreError(f"the index of source {self.source!r} is closed")
            self._running_reads += 1
        try:
            yield
        finally:
            with self._reads:
                self._running_reads -= 1
                self._reads.notify_all()

    def _writing_connection(self) -> sqlite3.Connection:
        if self._writer is None:
            raise StoreError(f"the index of source {self.source!r} is not open")
        return self._writer

    def _reading_connection(self) -> sqlite3.Connection:
        """The calling thread's own connection, opened on first use."""
        if self._writer is None:
            raise StoreError(f"the index of source {self.source!r} is not open")
        connection: sqlite3.Connection | None = getattr(self._reader_local, "connection", None)
        if connection is None:
            connection = tables.connect(self.path)
            self._reader_local.connection = connection
            with self._readers_lock:
                self._readers.append(connection)
        return connection

    # -- lifecycle ----------------------------------------------------------------------------

    async def open(self) -> None:
        await self._write(self._open)
        if self.vectors.needs_graph:
            # The graph is built in the writer thread after open returns, so a large source does
            # not hold up the server's start; searches use the exact stand-in until it is ready.
            self._graph_build = asyncio.get_running_loop().run_in_executor(
                self._writer_thread, lambda: self.vectors.build_graph(self._writing_connection()))

    def _open(self) -> None:
        if self._writer is not None:
            return
        private_file(self.path)  # 600 before SQLite opens it; its -wal and -shm files follow
        try:
            connection = tables.connect(self.path)
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
            tables.migrate(connection, self.path)
        except sqlite3.DatabaseError as error:
            raise StoreError(
                f"the index of source {self.source!r} ({self.path}) cannot be opened: {error}. "
                "It can always be rebuilt: stop the server, delete the file and start it again."
            ) from None
        self._writer = connection
        self.vectors.load(connection)

    async def wait_ready(self) -> None:
        """Wait until a vector index rebuilt at open is complete (searches work before, too)."""
        if self._graph_build is not None:
            await self._graph_build

    async def close(self) -> None:
        """Save the vector file if it changed and close; closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        self.vectors.stop_building = True
        try:
            await self._write(self._close)
        finally:
            self._writer_thread.shutdown(wait=True)
            self._reader_thread.shutdown(wait=True)

    def _close(self) -> None:
        if self._writer is None:
            return
        self.vectors.save_if_changed(self._writer)
        with self._reads:  # close set _closed first, so no read starts any more
            self._reads.wait_for(lambda: self._running_reads == 0)
        with self._readers_lock:
            for connection in self._readers:
                connection.close()
            self._readers.clear()
        self._writer.close()
        self._writer = None

    # -- state and writes ---------------------------------------------------------------------

    async def get_state(self, key: str) -> str | None:
        return await self._write(lambda: tables.get_state(self._writing_connection(), key))

    async def set_state(self, key: str, value: str) -> None:
        await self._write(lambda: tables.set_state(self._writing_connection(), key, value))

    async def embedder(self) -> tuple[str, int] | None:
        return await self._write(lambda: tables.recorded_embedder(self._writing_connection()))

    async def reset(self, embedder_name: str, dim: int) -> None:
        await self._write(self._reset, embedder_name, dim)

    def _reset(self, embedder_name: str, dim: int) -> None:
        tables.empty(self._writing_connection(), embedder_name, dim)
        self.vectors.reset(dim)
        self._row_cache.forget(None)

    async def versions(self) -> dict[str, str]:
        return await self._read(
            lambda: dict(self._reading_connection().execute("SELECT id, version FROM items").fetchall()))

    async def apply(self, updates: Sequence[ItemUpdate], deletions: Sequence[str]) -> None:
        if updates or deletions:
            await self._write(self._apply, list(updates), list(deletions))

    def _apply(self, updates: list[ItemUpdate], deletions: list[str]) -> None:
        connection = self._writing_connection()
        check_updates(updates, self.vectors.dim, self.source)
        removed, added_keys, added_vectors = tables.write(connection, updates, deletions)
        # The database has committed; bring the vectors in memory up to date with it.
        self.vectors.update(connection, removed, added_keys, added_vectors)
        self._row_cache.forget(removed)

    async def set_vectors(self, vectors: Sequence[tuple[str, int, np.ndarray]]) -> None:
        if vectors:
            await self._write(self._set_vectors, list(vectors))

    def _set_vectors(self, vectors: list[tuple[str, int, np.ndarray]]) -> None:
        dim = self.vectors.dim
        for item_id, _, vector in vectors:
            if dim is None or np.asarray(vector).reshape(-1).shape[0] != dim:
                raise StoreError(f"item {item_id!r}: a vector that does not fit the index of "
                                 f"{self.source!r} (dimension {dim}); the sync must reset it first")
        connection = self._writing_connection()
        keys, added = tables.set_vectors(connection, vectors)
        self.vectors.update(connection, [], keys, added)

    async def pending(self, limit: int) -> list[Passage]:
        return await self._read(lambda: tables.pending(self._reading_connection(), limit))

    async def passage_texts(self, after: int, limit: int) -> list[tuple[int, str]]:
        return await self._read(lambda: tables.passage_texts(self._reading_connection(), after, limit))

    # -- searches -----------------------------------------------------------------------------

    def search(self, question: str, vector: np.ndarray, limit: int
               ) -> tuple[list[Candidate], list[Candidate]]:
        """Both searches, one after the other, in the calling thread on its own connection."""
        question_vector = np.asarray(vector, dtype=np.float32).reshape(-1)
        if limit <= 0:
            return [], []
        terms = match_terms(question)
        with self._reading():
            by_keyword = self._keyword_search(terms, question_vector, limit) if terms else []
            return by_keyword, self._vector_search(question_vector, limit)

    def _keyword_search(self, terms: list[str], vector: np.ndarray, limit: int) -> list[Candidate]:
        connection = self._reading_connection()
        try:
            found = keyword.ranked_rows(connection, terms, limit, self._passage_count(connection))
        except sqlite3.Error as error:
            # match_terms quotes every term, so this means a damaged index, not a bad question.
            raise StoreError(f"keyword search in source {self.source!r} failed: {error}") from None
        cosines = keyword.similarities([row[-2] for row in found], vector)
        return [
            rows.candidate(self.source, row[:-2], rank, -float(row[-1]), cosine)
            for rank, (row, cosine) in enumerate(zip(found, cosines, strict=True))
        ]

    def _passage_count(self, connection: sqlite3.Connection) -> int:
        """How many passages the index holds: from the vectors in memory (no SQL before every
        keyword search), or the database's count while no embedder is recorded."""
        held = self.vectors.count()
        if held is not None:
            return held
        return int(connection.execute("SELECT count(*) FROM passages").fetchone()[0])

    def _vector_search(self, vector: np.ndarray, limit: int) -> list[Candidate]:
        keys, distances = self.vectors.nearest(vector, limit)
        if not keys:
            return []
        found = self._row_cache.get(self._reading_connection(), keys)
        candidates = []
        for key, distance in zip(keys, distances, strict=True):
            row = found.get(key)
            if row is not None:  # deleted since the search: skip it
                candidates.append(rows.candidate(self.source, row, len(candidates), 0.0, 1.0 - distance))
        return candidates

    # -- lookups ------------------------------------------------------------------------------

    async def items(self, item_ids: Sequence[str]) -> list[StoredItem]:
        wanted = list(dict.fromkeys(item_ids))
        if not wanted:
            return []
        return await self._read(self._items, wanted)

    def _items(self, wanted: list[str]) -> list[StoredItem]:
        found: dict[str, StoredItem] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for item_id, title, url in self._reading_connection().execute(
                f"SELECT id, title, url FROM items WHERE id IN ({marks})", chunk  # noqa: S608
            ):
                found[item_id] = StoredItem(item_id, title, url)
        return [found[item_id] for item_id in wanted if item_id in found]

    async def counts(self) -> tuple[int, int]:
        return await self._read(self._counts)

    def _counts(self) -> tuple[int, int]:
        connection = self._reading_connection()
        items = connection.execute("SELECT count(*) FROM items").fetchone()[0]
        passages = connection.execute("SELECT count(*) FROM passages").fetchone()[0]
        return int(items), int(passages)

    async def passages_of(self, item_id: str) -> list[tuple[int, str | None, str, str]]:
        """``(ordinal, heading, text, digest)`` of one item's passages, in order (the ``read`` tool)."""
        return await self._read(
            lambda: self._reading_connection().execute(
                "SELECT ordinal, heading, text, digest FROM passages WHERE item = ? ORDER BY ordinal",
                (item_id,),
            ).fetchall()
        )

    async def check_integrity(self) -> list[str]:
        """Problems found by SQLite's and FTS5's integrity checks and by comparing the tables
        with each other and with the vector index."""
        return await self._write(self._check_integrity)

    def _check_integrity(self) -> list[str]:
        problems, with_vector = tables.table_problems(self._writing_connection())
        held = self.vectors.count()
        if held is not None and held != with_vector:
            problems.append(f"{held} vectors in the vector index for {with_vector} passages with a vector")
        return problems

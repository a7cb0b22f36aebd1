"""Builtin plugin: the ``sqlite`` store, one SQLite file per source plus a usearch vector index.

``<data dir>/<source>.db`` is the index's truth: items, passages with their vectors, an FTS5
keyword index and a small state table. ``<data dir>/<source>.usearch`` holds the same vectors
in a usearch (HNSW) index for fast vector search; it is only a cache of the database. The state
table records the generation, count and checksum of the file last saved, and a file that does
not match them (missing, older than the database, truncated or damaged) is rebuilt from the
database when the store opens.

All SQLite work runs in two threads of the store's own: one for writes and one for searches,
each with its own connection (WAL mode lets a search run while a write is in progress). The event
loop never waits on SQLite.

Schema (``PRAGMA user_version`` is the number of the last migration applied, see
:data:`MIGRATIONS`):

* ``items(id, title, url, version, weight, path, labels, links, updated)``; the tuples are JSON.
* ``passages(key, item, ordinal, heading, text, digest, vector)``; ``key`` is the passage's
  stable number (never reused), used as the usearch key and the FTS rowid; ``vector`` is
  little-endian float32 of unit length.
* ``passage_words`` (FTS5, ``unicode61 remove_diacritics 2``) over title, path, heading and text.
* ``state(key, value)``: ``embedder_name``, ``embedder_dim``, ``generation`` (raised by every
  write), ``usearch_generation`` / ``usearch_count`` / ``usearch_size`` / ``usearch_checksum``
  (the saved vector file), and whatever the sync keeps (``last_poll``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from passageway import hookimpl
from passageway.builtin.keyword_workers import WORKERS, parts, read
from passageway.kernel.data_folder import FILE_MODE, private_file
from passageway.kernel.errors import ConfigError, StoreError
from passageway.kernel.store import Candidate, ItemUpdate, StoreContext, StoredItem
from passageway.kernel.textsearch import index_text, match_terms

log = logging.getLogger("passageway.storage")

T = TypeVar("T")

BM25_WEIGHTS = (2.0, 1.0, 1.5, 1.0)
"""FTS5 ``bm25()`` column weights for title, path, heading and text: a word in the title or
heading says more about a passage than the same word in its body."""
_WEIGHTS = ", ".join(str(weight) for weight in BM25_WEIGHTS)
_COUNT_SQL = "SELECT count(*) FROM (SELECT 1 FROM passage_words WHERE passage_words MATCH ? LIMIT ?)"
_RANK_SQL = (  # one key range's best (key, score); FTS5's bm25 is lower for better matches
    f"SELECT rowid, bm25(passage_words, {_WEIGHTS}) AS score FROM passage_words "  # noqa: S608
    "WHERE passage_words MATCH ? AND rowid >= ? AND rowid <= ? ORDER BY score LIMIT ?"
)

SAVE_INTERVAL_SECONDS = 120.0
"""How often, at most, a changed vector index is written to its file while writes go on; it is
always written on close. A crash in between costs a rebuild from the database, nothing more."""

PATH_SEPARATOR = " › "

KEYWORD_ROW_BUDGET = 50_000
"""At most this many matching rows are scored by BM25 per keyword search; see
:meth:`SqliteStore._budgeted_query` and the sweep in docs/performance.md."""

SIDE_BY_SIDE_FROM = 2_000
"""From this many passages on, :meth:`SqliteStore.search` hands the vector search to the store's
reader thread and runs the keyword search meanwhile. In ``bench/recall.py --compare-gather``
(docs/performance.md, "Recall") that was as fast or faster from 2,000 passages on, and made no
difference at 500 or on the sample corpus' stores of about 100, where it only adds hand-overs."""

KEYWORD_SPLIT_FROM = 50_000
"""From this many passages on, a keyword search ranks its matches in key ranges side by side,
one per core, all but one in worker processes (:mod:`passageway.builtin.keyword_workers`); the
merged list is the same. See the comparison in docs/performance.md, "Recall"."""

ROW_CACHE_LIMIT = 10_000
"""How many passages' rows (with their item's columns) a store keeps in memory for vector hits, so
that a small index answers a vector search without SQL (on the sample corpus that SQL took most of
a vector search: see docs/performance.md, "Recall"). A passage's row never changes while its key
exists, because an updated item's passages are deleted and stored again under new keys (keys are
never reused), so the cache only has to drop deleted keys; once full, it takes no more rows."""

EXACT_LIMIT = 20000
"""Up to this many vectors, vector search compares the question with every vector (exact); above,
it walks usearch's HNSW graph."""

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: the first schema
    (
        """CREATE TABLE items (
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL,
            url TEXT NOT NULL,
            version TEXT NOT NULL,
            weight REAL NOT NULL DEFAULT 1.0,
            path TEXT NOT NULL DEFAULT '[]',
            labels TEXT NOT NULL DEFAULT '[]',
            links TEXT NOT NULL DEFAULT '[]',
            updated TEXT
        )""",
        """CREATE TABLE passages (
            key INTEGER PRIMARY KEY AUTOINCREMENT,
            item TEXT NOT NULL REFERENCES items(id),
            ordinal INTEGER NOT NULL,
            heading TEXT,
            text TEXT NOT NULL,
            digest TEXT NOT NULL,
            vector BLOB NOT NULL,
            UNIQUE (item, ordinal)
        )""",
        """CREATE VIRTUAL TABLE passage_words USING fts5(
            title, path, heading, text, tokenize = 'unicode61 remove_diacritics 2'
        )""",
        "CREATE TABLE state (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ),
)


def _connect(path: Path) -> sqlite3.Connection:
    # Autocommit mode: transactions are explicit (BEGIN IMMEDIATE ... COMMIT) in this module.
    connection = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA busy_timeout = 30000")
    return connection


class SqliteStore:
    """One source's index in ``path`` (``<data dir>/<source>.db``); see the module docstring."""

    def __init__(self, path: Path, source: str, *, fts_tokenizer: str | None = None,
                 prefix_queries: bool = False, keyword_row_budget: int | None = None) -> None:
        self.path = Path(path)
        self.source = source
        self.vector_path = self.path.with_suffix(".usearch")
        # Options for bench/keyword_search.py and bench/recall.py, which measure the alternatives;
        # not user settings. A keyword_row_budget of 0 turns the budget off (bench/recall.py's
        # --budget-sweep sets the attribute between runs).
        self._fts_tokenizer = fts_tokenizer
        self._prefix_queries = prefix_queries
        self.keyword_row_budget = KEYWORD_ROW_BUDGET if keyword_row_budget is None else keyword_row_budget
        self.keyword_split_from = KEYWORD_SPLIT_FROM
        self._file_identity = (0, 0)  # the database file's device and inode, for the workers
        self._writer_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"store-{source}-write")
        # Two readers: the async keyword and vector searches run side by side, and search() hands
        # a large index's vector search to one while its caller runs the keyword search.
        self._reader_thread = ThreadPoolExecutor(max_workers=2, thread_name_prefix=f"store-{source}-read")
        self._writer: sqlite3.Connection | None = None
        self._reader_local = threading.local()  # each reader thread's own connection
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._index: Any = None  # usearch.index.Index, or None while no embedder is recorded
        self._index_lock = threading.Lock()
        self._dim: int | None = None
        self._unsaved = False
        self._last_save = 0.0
        self._closed = False
        # While the vector file is rebuilt: every key and vector, searched exactly with numpy.
        self._flat: tuple[np.ndarray, np.ndarray] | None = None
        self._graph_build: asyncio.Future[None] | None = None
        self._stop_graph_build = False
        # Vector hits' rows by passage key; see ROW_CACHE_LIMIT.
        self._row_cache: dict[int, tuple[Any, ...]] = {}
        self._row_cache_lock = threading.Lock()
        # Reads (lookups in the reader threads, searches in recall's threads too, see search)
        # are counted while they run, so that close waits for them before closing connections.
        self._reads = threading.Condition()
        self._running_reads = 0

    # -- threads ------------------------------------------------------------------------------

    async def _write(self, function: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._writer_thread, function, *args)

    async def _read(self, function: Callable[..., T], *args: Any) -> T:
        if self._closed:
            raise StoreError(f"the index of source {self.source!r} is closed")
        return await asyncio.get_running_loop().run_in_executor(
            self._reader_thread, self._while_reading, function, *args)

    def _while_reading(self, function: Callable[..., T], *args: Any) -> T:
        with self._reading():
            return function(*args)

    def _w(self) -> sqlite3.Connection:
        if self._writer is None:
            raise StoreError(f"the index of source {self.source!r} is not open")
        return self._writer

    def _r(self) -> sqlite3.Connection:
        """The calling thread's own reading connection (a reader's or recall's), opened on first use."""
        if self._writer is None:
            raise StoreError(f"the index of source {self.source!r} is not open")
        connection: sqlite3.Connection | None = getattr(self._reader_local, "connection", None)
        if connection is None:
            connection = _connect(self.path)
            self._reader_local.connection = connection
            with self._readers_lock:
                self._readers.append(connection)
        return connection

    # -- lifecycle ----------------------------------------------------------------------------

    async def open(self) -> None:
        await self._write(self._open)
        if self._flat is not None:
            # The graph is built in the writer thread after open returns, so a large source does
            # not hold up the server's start; searches use the exact stand-in until it is ready.
            loop = asyncio.get_running_loop()
            self._graph_build = loop.run_in_executor(self._writer_thread, self._build_graph_from_flat)

    def _open(self) -> None:
        if self._writer is not None:
            return
        private_file(self.path)  # 600 before SQLite opens it; its -wal and -shm files follow
        try:
            connection = _connect(self.path)
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
            self._migrate(connection)
        except sqlite3.DatabaseError as error:
            raise StoreError(
                f"the index of source {self.source!r} ({self.path}) cannot be opened: {error}. "
                "It can always be rebuilt: stop the server, delete the file and start it again."
            ) from None
        self._writer = connection
        stat = os.stat(self.path)
        self._file_identity = (stat.st_dev, stat.st_ino)
        self._load_vector_index()
        if self._splits_keyword_search():
            WORKERS.start()  # now rather than at the first question

    def _migrate(self, connection: sqlite3.Connection) -> None:
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version > len(MIGRATIONS):
            raise StoreError(
                f"the index {self.path} was written by a newer passageway (schema {version}, this one "
                f"knows {len(MIGRATIONS)}); upgrade passageway or delete the file to rebuild it"
            )
        for number in range(version + 1, len(MIGRATIONS) + 1):
            connection.execute("BEGIN IMMEDIATE")
            try:
                for statement in MIGRATIONS[number - 1]:
                    if self._fts_tokenizer and "USING fts5" in statement:
                        statement = statement.replace("unicode61 remove_diacritics 2", self._fts_tokenizer)
                    connection.execute(statement)
                connection.execute(f"PRAGMA user_version = {number}")
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise

    async def close(self) -> None:
        """Save the vector file if it changed and close; closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        self._stop_graph_build = True  # an unfinished rebuild starts again at the next open
        try:
            await self._write(self._close)
        finally:
            self._writer_thread.shutdown(wait=True)
            self._reader_thread.shutdown(wait=True)

    def _close(self) -> None:
        if self._writer is None:
            return
        if self._unsaved:
            self._save_vector_index()
        with self._reads:  # close set _closed first, so no read starts any more
            self._reads.wait_for(lambda: self._running_reads == 0)
        with self._readers_lock:
            for connection in self._readers:
                connection.close()
            self._readers.clear()
        self._writer.close()
        self._writer = None

    # -- state --------------------------------------------------------------------------------

    def _state(self, connection: sqlite3.Connection, key: str) -> str | None:
        row = connection.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def _set_state(self, connection: sqlite3.Connection, key: str, value: str) -> None:
        connection.execute("INSERT OR REPLACE INTO state (key, value) VALUES (?, ?)", (key, value))

    async def get_state(self, key: str) -> str | None:
        return await self._write(lambda: self._state(self._w(), key))

    async def set_state(self, key: str, value: str) -> None:
        await self._write(lambda: self._set_state(self._w(), key, value))

    async def embedder(self) -> tuple[str, int] | None:
        return await self._write(self._embedder)

    def _embedder(self) -> tuple[str, int] | None:
        name = self._state(self._w(), "embedder_name")
        dim = self._state(self._w(), "embedder_dim")
        return None if name is None or dim is None else (name, int(dim))

    async def reset(self, embedder_name: str, dim: int) -> None:
        await self._write(self._reset, embedder_name, dim)

    def _reset(self, embedder_name: str, dim: int) -> None:
        connection = self._w()
        with self._transaction(connection):
            generation = self._generation(connection) + 1
            for table in ("passage_words", "passages", "items", "state"):
                connection.execute(f"DELETE FROM {table}")  # noqa: S608 (fixed names)
            self._set_state(connection, "embedder_name", embedder_name)
            self._set_state(connection, "embedder_dim", str(dim))
            self._set_state(connection, "generation", str(generation))
        with self._index_lock:
            self._index = self._new_index(dim)
            self._flat = None
            self._dim = dim
        self._forget_rows(None)
        self.vector_path.unlink(missing_ok=True)
        self._unsaved = True

    # -- writes -------------------------------------------------------------------------------

    class _Transaction:
        def __init__(self, connection: sqlite3.Connection) -> None:
            self.connection = connection

        def __enter__(self) -> sqlite3.Connection:
            self.connection.execute("BEGIN IMMEDIATE")
            return self.connection

        def __exit__(self, kind: object, value: object, traceback: object) -> None:
            self.connection.execute("COMMIT" if kind is None else "ROLLBACK")

    def _transaction(self, connection: sqlite3.Connection) -> SqliteStore._Transaction:
        return SqliteStore._Transaction(connection)

    def _generation(self, connection: sqlite3.Connection) -> int:
        return int(self._state(connection, "generation") or 0)

    async def versions(self) -> dict[str, str]:
        return await self._read(lambda: dict(self._r().execute("SELECT id, version FROM items").fetchall()))

    async def apply(self, updates: Sequence[ItemUpdate], deletions: Sequence[str]) -> None:
        if not updates and not deletions:
            return
        await self._write(self._apply, list(updates), list(deletions))

    def _apply(self, updates: list[ItemUpdate], deletions: list[str]) -> None:
        connection = self._w()
        dim = self._dim
        for update in updates:
            if len(update.passages) != len(update.vectors):
                raise StoreError(
                    f"item {update.item.id!r}: {len(update.passages)} passages "
                    f"but {len(update.vectors)} vectors"
                )
            if len(update.passages) and (dim is None or update.vectors.shape[1] != dim):
                raise StoreError(
                    f"item {update.item.id!r}: vectors of dimension {update.vectors.shape[1]}, but the index "
                    f"of {self.source!r} was set up for {dim}; the sync must reset it first"
                )
        removed: list[int] = []
        added_keys: list[int] = []
        added_vectors: list[np.ndarray] = []
        with self._transaction(connection):
            gone = list(dict.fromkeys([*deletions, *(update.item.id for update in updates)]))
            for start in range(0, len(gone), 500):
                chunk = gone[start : start + 500]
                marks = ",".join("?" * len(chunk))
                keys = [row[0] for row in connection.execute(
                    f"SELECT key FROM passages WHERE item IN ({marks})", chunk)]  # noqa: S608
                removed.extend(keys)
                connection.executemany("DELETE FROM passage_words WHERE rowid = ?", [(k,) for k in keys])
                connection.execute(f"DELETE FROM passages WHERE item IN ({marks})", chunk)  # noqa: S608
                connection.execute(f"DELETE FROM items WHERE id IN ({marks})", chunk)  # noqa: S608
            for update in updates:
                item = update.item
                connection.execute(
                    "INSERT INTO items (id, title, url, version, weight, path, labels, links, updated)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (item.id, item.title, item.url, item.version, float(item.weight),
                     json.dumps(list(item.path), ensure_ascii=False),
                     json.dumps(list(item.labels), ensure_ascii=False),
                     json.dumps(list(item.links), ensure_ascii=False), item.updated),
                )
                path_text = PATH_SEPARATOR.join(item.path)
                vectors = np.asarray(update.vectors, dtype="<f4")
                for passage, vector in zip(update.passages, vectors, strict=True):
                    cursor = connection.execute(
                        "INSERT INTO passages (item, ordinal, heading, text, digest, vector)"
                        " VALUES (?, ?, ?, ?, ?, ?)",
                        (item.id, passage.ordinal, passage.heading, passage.text, passage.digest,
                         vector.tobytes()),
                    )
                    key = int(cursor.lastrowid or 0)
                    connection.execute(
                        "INSERT INTO passage_words (rowid, title, path, heading, text)"
                        " VALUES (?, ?, ?, ?, ?)",
                        (key, index_text(item.title), index_text(path_text),
                         index_text(passage.heading or ""), index_text(passage.text)),
                    )
                    added_keys.append(key)
                    added_vectors.append(vector)
            self._set_state(connection, "generation", str(self._generation(connection) + 1))
        # The database has committed; bring the in-memory vector index up to date with it.
        with self._index_lock:
            if self._flat is not None:  # the graph could not be rebuilt: keep the exact copy current
                keys, matrix = self._flat
                keep = ~np.isin(keys, np.array(removed, dtype=np.uint64))
                if added_keys:
                    keys = np.concatenate([keys[keep], np.array(added_keys, dtype=np.uint64)])
                    matrix = np.vstack([matrix[keep], np.vstack(added_vectors)])
                else:
                    keys, matrix = keys[keep], matrix[keep]
                self._flat = (keys, matrix)
            elif self._index is not None:
                present = [key for key in removed if self._index.contains(key)]
                if present:
                    self._index.remove(np.array(present, dtype=np.uint64))
                if added_keys:
                    self._index.add(np.array(added_keys, dtype=np.uint64), np.vstack(added_vectors))
        self._forget_rows(removed)
        self._unsaved = True
        if time.monotonic() - self._last_save > SAVE_INTERVAL_SECONDS:
            self._save_vector_index()

    # -- the vector index file ----------------------------------------------------------------

    def _new_index(self, dim: int) -> Any:
        return _usearch_index_class()(ndim=dim, metric="cos", dtype="f32")

    def _load_vector_index(self) -> None:
        """Use the saved vector file when it is intact, catching up with the database when it is
        older; rebuild it from the database when it is missing or damaged."""
        connection = self._w()
        recorded = self._embedder()
        if recorded is None:
            self._index, self._dim = None, None
            return
        dim = recorded[1]
        self._dim = dim
        reason = self._vector_file_problem(connection)
        if reason is None:
            try:
                index = _usearch_index_class().restore(str(self.vector_path))
                if index is not None and index.ndim == dim:
                    self._catch_up(index, dim)
                    return
                reason = "it was written for another dimension"
            except Exception as error:  # a damaged file of any kind is rebuilt
                reason = f"it cannot be read ({error})"
        log.info("source %s: rebuilding the vector index from the database: %s", self.source, reason)
        self._flat = self._read_all_vectors(dim)

    def _vector_file_problem(self, connection: sqlite3.Connection) -> str | None:
        """Why the vector file is not exactly the one last saved, or None."""
        if not self.vector_path.exists():
            return "the file is missing"
        if self._state(connection, "usearch_checksum") is None:
            return "no saved file is recorded"
        if self._state(connection, "usearch_size") != str(self.vector_path.stat().st_size):
            return "the file has the wrong size (truncated?)"
        if self._state(connection, "usearch_checksum") != _checksum(self.vector_path):
            return "the file's checksum does not match"
        return None

    def _catch_up(self, index: Any, dim: int) -> None:
        """Bring an intact but older vector file up to date with the database.

        Passage keys are never reused, so a key present in both holds the same vector; only
        keys added or deleted since the file was saved need work.
        """
        connection = self._w()
        generation = self._generation(connection)
        if self._state(connection, "usearch_generation") == str(generation):
            self._index = index
            self._unsaved = False
            self._last_save = time.monotonic()
            return
        rows = connection.execute("SELECT key FROM passages")
        stored = np.fromiter((row[0] for row in rows), dtype=np.uint64)
        saved = np.asarray(index.keys, dtype=np.uint64)
        extra = np.setdiff1d(saved, stored)
        missing = np.setdiff1d(stored, saved)
        if len(extra):
            index.remove(extra)
        for start in range(0, len(missing), 500):
            chunk = [int(key) for key in missing[start : start + 500]]
            marks = ",".join("?" * len(chunk))
            rows = connection.execute(
                f"SELECT key, vector FROM passages WHERE key IN ({marks})", chunk  # noqa: S608
            ).fetchall()
            matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype="<f4").reshape(len(rows), dim)
            index.add(np.array([key for key, _ in rows], dtype=np.uint64), matrix)
        log.info("source %s: the vector file was older than the database; added %d and removed %d vectors",
                 self.source, len(missing), len(extra))
        with self._index_lock:
            self._index = index
        self._save_vector_index()

    def _read_all_vectors(self, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """Every passage key and vector from the database (fast: no graph is built)."""
        keys: list[int] = []
        blobs: list[bytes] = []
        for key, blob in self._w().execute("SELECT key, vector FROM passages ORDER BY key"):
            if len(blob) != dim * 4:
                raise StoreError(
                    f"the index of source {self.source!r} holds a vector of the wrong size; "
                    "delete the file to rebuild it from the connector"
                )
            keys.append(key)
            blobs.append(blob)
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(keys), dim)
        return np.array(keys, dtype=np.uint64), matrix

    def _build_graph_from_flat(self) -> None:
        """Build the usearch index from the flat copy, then save it (runs in the writer thread,
        before any write queued after open, so the copy is still the database's state)."""
        flat = self._flat
        if flat is None or self._dim is None:
            return
        keys, matrix = flat
        index = self._new_index(self._dim)
        try:
            for start in range(0, len(keys), 4096):
                if self._stop_graph_build:
                    return
                index.add(keys[start : start + 4096], matrix[start : start + 4096])
            with self._index_lock:
                self._index = index
                self._flat = None
            self._save_vector_index()
            log.info("source %s: the vector index is rebuilt (%d vectors)", self.source, len(keys))
        except Exception:  # the exact stand-in keeps serving; the next open tries again
            log.exception("source %s: rebuilding the vector index failed", self.source)

    async def wait_ready(self) -> None:
        """Wait until a vector index rebuilt at open is complete (searches work before, too)."""
        if self._graph_build is not None:
            await self._graph_build

    def _save_vector_index(self) -> None:
        connection = self._w()
        with self._index_lock:
            index = self._index
            if index is None:
                self._unsaved = False
                return
            generation = self._generation(connection)
            count = len(index)
            temporary = self.vector_path.with_suffix(".usearch.tmp")
            index.save(str(temporary))
        os.chmod(temporary, FILE_MODE)  # the data folder is private (kernel/data_folder.py)
        os.replace(temporary, self.vector_path)
        with self._transaction(connection):
            self._set_state(connection, "usearch_generation", str(generation))
            self._set_state(connection, "usearch_count", str(count))
            self._set_state(connection, "usearch_size", str(self.vector_path.stat().st_size))
            self._set_state(connection, "usearch_checksum", _checksum(self.vector_path))
        self._unsaved = False
        self._last_save = time.monotonic()

    # -- searches -----------------------------------------------------------------------------

    # What a candidate needs from a passage row and its item's row, in _candidate's order.
    _COLUMNS = (
        "p.key, p.item, p.heading, p.text, i.title, i.url, i.weight, i.path, i.labels, i.links, "
        "i.updated"
    )

    def _candidate(self, row: Sequence[Any], rank: int, keyword_score: float, similarity: float
                   ) -> Candidate:
        key, item_id, heading, text, title, url, weight, path, labels, links, updated = row
        # Positional: keyword arguments cost measurably here, with up to 200 candidates a question.
        return Candidate(
            self.source, key, item_id, title, url, heading, text, similarity, rank, keyword_score,
            float(weight), _strings(path), _strings(labels), _strings(links), updated,
        )

    async def keyword_search(self, question: str, vector: np.ndarray, limit: int) -> list[Candidate]:
        terms = match_terms(question, prefix=self._prefix_queries)
        if not terms or limit <= 0:
            return []
        question_vector = np.asarray(vector, dtype=np.float32).reshape(-1)
        return await self._read(self._keyword_search, terms, question_vector, limit)

    def _budgeted_query(self, terms: list[str]) -> str | None:
        """The ``MATCH`` expression for ``terms`` within :data:`KEYWORD_ROW_BUDGET`, or None.

        BM25's cost grows with the number of rows that match, and a common word of a large index
        matches hundreds of thousands. So the terms are taken from the rarest up while the rows
        they match add up to at most the budget; the common words left out are the ones BM25
        weighs least. When even the rarest term matches more rows than the budget, there is no
        keyword search (the words barely tell passages apart; vector search still runs). An index
        of at most the budget's number of passages cannot exceed it and is searched whole.
        Counting stops past the budget; a split search counts its terms side by side too.
        """
        budget = self.keyword_row_budget
        if budget and self._passage_count() > budget:
            share = parts() if self._splits_keyword_search() else 1  # every share-th term together
            jobs = [[(term, budget + 1) for term in terms[first::share]] for first in range(share)]
            jobs = [job for job in jobs if job]  # fewer terms than parts
            counts = [rows[0][0] for job in self._side_by_side(_COUNT_SQL, jobs) for rows in job]
            position = {term: number for number, term in enumerate(terms)}
            counted = sorted((count, position[term], term) for count, (term, _) in zip(
                counts, (row for job in jobs for row in job), strict=True))
            kept, total = [], 0
            for count, _, term in counted:
                if total + count > budget:
                    break
                kept.append(term)
                total += count
            terms = kept
        return " OR ".join(terms) or None

    def _passage_count(self) -> int:
        """How many passages the index holds, from the vectors in memory (no SQL: this runs before
        every keyword search); the database's count while no embedder is recorded."""
        with self._index_lock:
            if self._flat is not None:
                return len(self._flat[0])
            if self._index is not None:
                return len(self._index)
        return int(self._r().execute("SELECT count(*) FROM passages").fetchone()[0])

    def _keyword_search(self, terms: list[str], vector: np.ndarray, limit: int) -> list[Candidate]:
        try:
            query = self._budgeted_query(terms)
            if query is None:
                return []
            if self._splits_keyword_search():
                rows = self._rows_ranked(self._rank_split(query, limit))
            else:
                # Rank inside the full-text table first and join only the best rows: joining
                # every match before sorting cost most of the time on large indexes.
                sql = (
                    f"SELECT {self._COLUMNS}, p.vector, best.score FROM ("  # noqa: S608
                    f"SELECT rowid, bm25(passage_words, {_WEIGHTS}) AS score FROM passage_words "
                    "WHERE passage_words MATCH ? ORDER BY score LIMIT ?) AS best "
                    "JOIN passages p ON p.key = best.rowid JOIN items i ON i.id = p.item "
                    "ORDER BY best.score"
                )
                rows = self._r().execute(sql, (query, limit)).fetchall()
        except sqlite3.Error as error:
            # match_terms quotes every term, so this means a damaged index, not a bad question.
            raise StoreError(f"keyword search in source {self.source!r} failed: {error}") from None
        similarities = _similarities([row[-2] for row in rows], vector)
        return [
            self._candidate(row[:-2], rank, -float(row[-1]), similarity)
            for rank, (row, similarity) in enumerate(zip(rows, similarities, strict=True))
        ]

    def _splits_keyword_search(self) -> bool:
        # The size first: it is read from memory, while parts() asks the system (every search).
        return self._passage_count() >= max(1, self.keyword_split_from) and parts() > 1

    def _rank_split(self, query: str, limit: int) -> list[tuple[int, float]]:
        """The ``limit`` best ``(key, score)`` for ``query``, ranked in :func:`parts` key ranges
        side by side (see :meth:`_side_by_side`) and merged."""
        connection = self._r()
        low = connection.execute("SELECT min(key) FROM passages").fetchone()[0]
        high = connection.execute("SELECT max(key) FROM passages").fetchone()[0]
        if low is None:
            return []
        count = parts()
        bounds = [low + (high - low + 1) * number // count for number in range(count + 1)]
        jobs = [[(query, start, end - 1, limit)] for start, end in itertools.pairwise(bounds) if end > start]
        ranked = [row for job in self._side_by_side(_RANK_SQL, jobs) for rows in job for row in rows]
        ranked.sort(key=lambda pair: (pair[1], pair[0]))  # best (lowest) score first; ties by key
        return ranked[:limit]

    def _side_by_side(self, sql: str, jobs: list[list[tuple[Any, ...]]]) -> list[list[list[Any]]]:
        """``sql``'s rows for each parameter row of each job: the first job in this thread, the
        others in worker processes at the same time. A job no worker takes or finishes (none
        start here, one died, or it failed there) runs in this thread too, where a fault of the
        index itself raises as it would without workers."""
        path = str(self.path)
        futures = [WORKERS.submit(path, self._file_identity, sql, job) for job in jobs[1:]]
        results = [read(self._r(), sql, jobs[0])]
        for job, future in zip(jobs[1:], futures, strict=True):
            found = None
            if future is not None:
                try:
                    found = future.result()
                except BrokenProcessPool:
                    WORKERS.died()
                except Exception as error:  # the job runs here instead
                    WORKERS.job_failed(error)
            results.append(found if found is not None else read(self._r(), sql, job))
        return results

    def _rows_ranked(self, ranked: list[tuple[int, float]]) -> list[tuple[Any, ...]]:
        """The candidate rows, vector and score of ``ranked`` in its order; passages deleted
        since they were ranked are left out."""
        if not ranked:
            return []
        found = self._fetch_rows([key for key, _ in ranked], vectors=True)
        return [(*found[key], score) for key, score in ranked if key in found]

    def search(self, question: str, vector: np.ndarray, limit: int
               ) -> tuple[list[Candidate], list[Candidate]]:
        """Both searches in the calling thread (recall's), on that thread's own connection."""
        question_vector = np.asarray(vector, dtype=np.float32).reshape(-1)
        if limit <= 0:
            return [], []
        terms = match_terms(question, prefix=self._prefix_queries)
        with self._reading():
            if not terms:
                return [], self._vector_search(question_vector, limit)
            if self._passage_count() < SIDE_BY_SIDE_FROM:
                return (self._keyword_search(terms, question_vector, limit),
                        self._vector_search(question_vector, limit))
            by_vector = self._reader_thread.submit(self._vector_search, question_vector, limit)
            try:
                keyword = self._keyword_search(terms, question_vector, limit)
            finally:
                vector_result = by_vector.result()
            return keyword, vector_result

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """Count a read (a search or lookup) while it runs, so that closing waits for it; once
        the store is closing, a read fails with a :class:`StoreError` instead of starting."""
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

    async def vector_search(self, vector: np.ndarray, limit: int) -> list[Candidate]:
        question_vector = np.asarray(vector, dtype=np.float32).reshape(-1)
        if limit <= 0:
            return []
        return await self._read(self._vector_search, question_vector, limit)

    def _vector_search(self, vector: np.ndarray, limit: int) -> list[Candidate]:
        with self._index_lock:
            index, flat, dim = self._index, self._flat, self._dim
            if dim is not None and vector.shape[0] != dim:
                raise StoreError(
                    f"the question vector has dimension {vector.shape[0]} but the index of source "
                    f"{self.source!r} holds dimension {dim}; it must be rebuilt for this embedder"
                )
            if index is not None and flat is None:
                if len(index) == 0:
                    return []
                # Small indexes are searched exhaustively: exact, and as fast as the graph there.
                matches = index.search(vector, min(limit, len(index)), exact=len(index) <= EXACT_LIMIT)
                keys = [int(key) for key in matches.keys]
                distances = [float(distance) for distance in matches.distances]
        if flat is not None:
            keys, distances = _exact_search(flat, vector, limit)
        elif index is None:
            return []
        if not keys:
            return []
        rows = self._rows_of(keys)
        candidates = []
        for key, distance in zip(keys, distances, strict=True):
            row = rows.get(key)
            if row is not None:  # deleted since the search: skip it
                candidates.append(self._candidate(row, len(candidates), 0.0, 1.0 - distance))
        return candidates

    def _rows_of(self, keys: list[int]) -> dict[int, tuple[Any, ...]]:
        """The candidate rows of the passages ``keys`` that still exist, from the row cache where
        it has them and from the database for the rest (which then join the cache while there is
        room; see :data:`ROW_CACHE_LIMIT`)."""
        cache = self._row_cache
        rows = {key: cache[key] for key in keys if key in cache}
        missing = [key for key in keys if key not in rows]
        if not missing:
            return rows
        fetched = self._fetch_rows(missing)
        rows.update(fetched)
        with self._row_cache_lock:
            room = ROW_CACHE_LIMIT - len(cache)
            for key, row in itertools.islice(fetched.items(), max(room, 0)):
                cache[key] = row
        return rows

    def _fetch_rows(self, keys: list[int], *, vectors: bool = False) -> dict[int, tuple[Any, ...]]:
        """The candidate rows (with the stored vector last if ``vectors``) of the passages ``keys``
        that exist, by key, from the database."""
        marks = ",".join("?" * len(keys))
        columns = f"{self._COLUMNS}, p.vector" if vectors else self._COLUMNS
        return {
            row[0]: row
            for row in self._r().execute(
                f"SELECT {columns} FROM passages p JOIN items i ON i.id = p.item "  # noqa: S608
                f"WHERE p.key IN ({marks})", keys,
            )
        }

    def _forget_rows(self, keys: Iterable[int] | None) -> None:
        """Drop deleted passages from the row cache (all of it for None)."""
        with self._row_cache_lock:
            if keys is None:
                self._row_cache.clear()
            else:
                for key in keys:
                    self._row_cache.pop(key, None)

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
            for item_id, title, url in self._r().execute(
                f"SELECT id, title, url FROM items WHERE id IN ({marks})", chunk  # noqa: S608
            ):
                found[item_id] = StoredItem(item_id, title, url)
        return [found[item_id] for item_id in wanted if item_id in found]

    async def counts(self) -> tuple[int, int]:
        return await self._read(self._counts)

    def _counts(self) -> tuple[int, int]:
        connection = self._r()
        items = connection.execute("SELECT count(*) FROM items").fetchone()[0]
        passages = connection.execute("SELECT count(*) FROM passages").fetchone()[0]
        return int(items), int(passages)

    async def passages_of(self, item_id: str) -> list[tuple[int, str | None, str, str]]:
        """``(ordinal, heading, text, digest)`` of one item's passages, in order (for tests and tools)."""
        return await self._read(
            lambda: self._r().execute(
                "SELECT ordinal, heading, text, digest FROM passages WHERE item = ? ORDER BY ordinal",
                (item_id,),
            ).fetchall()
        )

    async def check_integrity(self) -> list[str]:
        """Problems found by SQLite's and FTS5's integrity checks and by comparing the tables."""
        return await self._write(self._check_integrity)

    def _check_integrity(self) -> list[str]:
        connection = self._w()
        problems = [row[0] for row in connection.execute("PRAGMA integrity_check") if row[0] != "ok"]
        try:
            connection.execute("INSERT INTO passage_words (passage_words) VALUES ('integrity-check')")
        except sqlite3.DatabaseError as error:
            problems.append(f"keyword index: {error}")
        orphans = connection.execute(
            "SELECT count(*) FROM passages WHERE item NOT IN (SELECT id FROM items)").fetchone()[0]
        if orphans:
            problems.append(f"{orphans} passages without an item")
        words = connection.execute("SELECT count(*) FROM passage_words").fetchone()[0]
        passages = connection.execute("SELECT count(*) FROM passages").fetchone()[0]
        if words != passages:
            problems.append(f"{words} keyword rows for {passages} passages")
        with self._index_lock:
            held = len(self._flat[0]) if self._flat is not None else (
                len(self._index) if self._index is not None else None)
            if held is not None and held != passages:
                problems.append(f"{held} vectors in the vector index for {passages} passages")
        return problems


def _strings(stored: str) -> tuple[str, ...]:
    """A JSON list of strings from the items table as a tuple (most are empty: no parsing)."""
    return () if stored == "[]" else tuple(json.loads(stored))


def _similarities(blobs: Sequence[bytes | None], vector: np.ndarray) -> list[float]:
    """The cosine of ``vector`` with each stored unit vector (0.0 where one is missing or has
    another dimension), in one matrix product instead of one per passage."""
    if not blobs:
        return []
    width = vector.shape[0] * 4
    if all(blob is not None and len(blob) == width for blob in blobs):
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)  # type: ignore[arg-type]
        return (matrix @ vector).tolist()
    return [
        float(np.frombuffer(blob, dtype="<f4") @ vector) if blob is not None and len(blob) == width else 0.0
        for blob in blobs
    ]


def _usearch_index_class() -> Any:
    """usearch's ``Index``, imported after onnxruntime.

    With usearch 2.26 and onnxruntime 1.32, importing onnxruntime after usearch's compiled module
    kills the process with a segmentation fault (the other order works), and the built-in
    embedder imports onnxruntime whenever it starts, possibly after a store has opened. So
    onnxruntime, a dependency of passageway anyway, is imported first here.
    """
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401
    from usearch.index import Index

    return Index


def _exact_search(flat: tuple[np.ndarray, np.ndarray], vector: np.ndarray, limit: int
                  ) -> tuple[list[int], list[float]]:
    """The ``limit`` nearest keys by cosine distance, by brute force over unit vectors."""
    keys, matrix = flat
    if not len(keys):
        return [], []
    similarities = matrix @ (vector / (np.linalg.norm(vector) or 1.0))
    count = min(limit, len(keys))
    best = np.argpartition(-similarities, count - 1)[:count]
    best = best[np.argsort(-similarities[best], kind="stable")]
    return [int(keys[row]) for row in best], [1.0 - float(similarities[row]) for row in best]


def _checksum(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=16)
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def sqlite_store(path: Path, source: str, context: StoreContext | None = None) -> SqliteStore:
    """The factory registered as ``sqlite``: the index of ``source`` in the file ``path``.

    :raises ConfigError: ``[store]`` holds a setting (the sqlite store has none).
    """
    if context is not None and context.settings:
        raise ConfigError(
            f"[store] has {', '.join(sorted(context.settings))}, but the sqlite store takes no settings; "
            "remove the [store] table or set PASSAGEWAY_STORE to the store it was written for"
        )
    return SqliteStore(path, source)


@hookimpl
def passageway_register_stores(register: Callable[[str, Callable[..., Any]], None]) -> None:
    register("sqlite", sqlite_store)

"""The SQLite side of the ``sqlite`` store: the schema and its migrations, state, and writes.

Everything here takes an open connection and runs in the caller's thread (the store's writer
thread for writes). ``PRAGMA user_version`` is the number of the last migration applied, see
:data:`MIGRATIONS`:

* ``items(id, title, url, version, weight, path, labels, links, updated)``; the tuples are JSON.
* ``passages(key, item, ordinal, heading, text, digest, vector, anchor)``; ``key`` is the passage's
  stable number (never reused), used as the usearch key and the FTS rowid; ``vector`` is
  little-endian float32 of unit length, or an empty blob while the passage waits for its vector
  (it is searchable by keywords meanwhile; ``passages_pending`` indexes those); ``anchor`` is the
  id of the passage's section in its page, or NULL (and NULL in every row an index written before
  migration 3 holds, until its item is written again).
* ``passage_words`` (FTS5, ``unicode61 remove_diacritics 2``) over title, path, heading and text.
* ``state(key, value)``: ``embedder_name``, ``embedder_dim``, ``generation`` (raised by every
  write), ``usearch_generation`` / ``usearch_size`` / ``usearch_checksum`` (the saved vector file,
  see :mod:`passageway.builtin.storage.vector_file`), and whatever the sync keeps (``last_poll``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from passageway.kernel.errors import StoreError
from passageway.kernel.records import Passage
from passageway.kernel.store import ItemUpdate
from passageway.kernel.text.chunking import embedding_input
from passageway.kernel.text.keyword_text import index_text

PATH_SEPARATOR = " › "
"""Between the parts of an item's path in the keyword index, so that each part is its own words."""

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
    # 2: the passages stored before their vector (an empty blob until it is set), found fast
    ("CREATE INDEX passages_pending ON passages (key) WHERE length(vector) = 0",),
    # 3: the section's anchor (the id of its heading), which the answer links the passage with;
    # a nullable column added without a default, so SQLite rewrites no row
    ("ALTER TABLE passages ADD COLUMN anchor TEXT",),
)

_CHUNK = 500  # ids per statement, below SQLite's bound-parameter limit


def connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode: transactions are explicit (:func:`transaction`)."""
    connection = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA busy_timeout = 30000")
    return connection


def migrate(connection: sqlite3.Connection, path: Path) -> None:
    """Apply the migrations the file at ``path`` lacks, each in one transaction."""
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    if version > len(MIGRATIONS):
        raise StoreError(
            f"the index {path} was written by a newer passageway (schema {version}, this one "
            f"knows {len(MIGRATIONS)}); upgrade passageway or delete the file to rebuild it"
        )
    for number in range(version + 1, len(MIGRATIONS) + 1):
        with transaction(connection):
            for statement in MIGRATIONS[number - 1]:
                connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {number}")


@contextmanager
def transaction(connection: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, or ``ROLLBACK`` when the block raises."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield connection
    except BaseException:
        # SQLite has already rolled back after some errors (a full disk, SQLITE_FULL); a second
        # ROLLBACK would fail and hide the error that matters.
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


def write_failure(what: str, error: sqlite3.Error) -> StoreError:
    """One line for a write SQLite refused, naming a full disk when that is the cause."""
    if getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(error):
        return StoreError(
            f"{what} could not be written: the disk is full ({error}); nothing of this write was "
            "kept. Free space in the data folder; the next sync goes on from there"
        )
    return StoreError(f"{what} could not be written ({error}); nothing of this write was kept")


def get_state(connection: sqlite3.Connection, key: str) -> str | None:
    row = connection.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def set_state(connection: sqlite3.Connection, key: str, value: str) -> None:
    connection.execute("INSERT OR REPLACE INTO state (key, value) VALUES (?, ?)", (key, value))


def generation(connection: sqlite3.Connection) -> int:
    """How many writes the index has seen (the vector file records the one it was saved at)."""
    return int(get_state(connection, "generation") or 0)


def recorded_embedder(connection: sqlite3.Connection) -> tuple[str, int] | None:
    name, dim = get_state(connection, "embedder_name"), get_state(connection, "embedder_dim")
    return None if name is None or dim is None else (name, int(dim))


def empty(connection: sqlite3.Connection, embedder_name: str, dim: int) -> None:
    """Delete everything and record the embedder that will fill the index (one transaction)."""
    with transaction(connection):
        following = generation(connection) + 1
        for table in ("passage_words", "passages", "items", "state"):
            connection.execute(f"DELETE FROM {table}")  # noqa: S608 (fixed names)
        set_state(connection, "embedder_name", embedder_name)
        set_state(connection, "embedder_dim", str(dim))
        set_state(connection, "generation", str(following))


def write(connection: sqlite3.Connection, updates: Sequence[ItemUpdate], deletions: Sequence[str]
          ) -> tuple[list[int], list[int], list[np.ndarray]]:
    """Delete ``deletions`` and the updated items' old rows, insert the updates, raise the
    generation: one transaction. Returns the removed passage keys, and the added keys with their
    vectors, for the vector index to follow (an update without vectors adds none there)."""
    removed: list[int] = []
    added_keys: list[int] = []
    added_vectors: list[np.ndarray] = []
    with transaction(connection):
        gone = list(dict.fromkeys([*deletions, *(update.item.id for update in updates)]))
        for start in range(0, len(gone), _CHUNK):
            chunk = gone[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            keys = [row[0] for row in connection.execute(
                f"SELECT key FROM passages WHERE item IN ({marks})", chunk)]  # noqa: S608
            removed.extend(keys)
            connection.executemany("DELETE FROM passage_words WHERE rowid = ?", [(key,) for key in keys])
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
            vectors: Sequence[np.ndarray | None] = (
                [None] * len(update.passages) if update.vectors is None
                else np.asarray(update.vectors, dtype="<f4"))
            for passage, vector in zip(update.passages, vectors, strict=True):
                cursor = connection.execute(
                    "INSERT INTO passages (item, ordinal, heading, text, digest, vector, anchor)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (item.id, passage.ordinal, passage.heading, passage.text, passage.digest,
                     b"" if vector is None else vector.tobytes(), passage.anchor),
                )
                key = int(cursor.lastrowid or 0)
                connection.execute(
                    "INSERT INTO passage_words (rowid, title, path, heading, text) VALUES (?, ?, ?, ?, ?)",
                    (key, index_text(item.title), index_text(path_text),
                     index_text(passage.heading or ""), index_text(passage.text)),
                )
                if vector is not None:
                    added_keys.append(key)
                    added_vectors.append(vector)
        set_state(connection, "generation", str(generation(connection) + 1))
    return removed, added_keys, added_vectors


def set_vectors(connection: sqlite3.Connection, vectors: Sequence[tuple[str, int, np.ndarray]]
                ) -> tuple[list[int], list[np.ndarray]]:
    """Give passages stored without a vector theirs, by ``(item id, ordinal, vector)``, in one
    transaction; a passage that has one already or is gone is left alone. Returns the keys set
    and their vectors, for the vector index to follow."""
    keys: list[int] = []
    added: list[np.ndarray] = []
    with transaction(connection):
        for item_id, ordinal, vector in vectors:
            blob = np.asarray(vector, dtype="<f4").reshape(-1)
            row = connection.execute(
                "UPDATE passages SET vector = ? WHERE item = ? AND ordinal = ? AND length(vector) = 0"
                " RETURNING key", (blob.tobytes(), item_id, ordinal)).fetchone()
            if row is not None:
                keys.append(int(row[0]))
                added.append(blob)
        if keys:
            set_state(connection, "generation", str(generation(connection) + 1))
    return keys, added


PENDING = (
    "SELECT p.item, p.ordinal, p.heading, p.text, p.digest, i.title, i.path, p.anchor FROM passages p"
    " JOIN items i ON i.id = p.item WHERE length(p.vector) = 0 ORDER BY p.key LIMIT ?"
)


def pending(connection: sqlite3.Connection, limit: int) -> list[Passage]:
    """Up to ``limit`` passages stored without a vector, oldest first."""
    rows = connection.execute(PENDING, (limit,))
    return [
        Passage(item_id=item_id, ordinal=ordinal, heading=heading, text=text,
                embedding_input=embedding_input(title, json.loads(path), heading, text), digest=digest,
                anchor=anchor)
        for item_id, ordinal, heading, text, digest, title, path, anchor in rows
    ]


def passage_texts(connection: sqlite3.Connection, after: int, limit: int) -> list[tuple[int, str]]:
    """``(key, text)`` of up to ``limit`` passages with a key above ``after``, by key."""
    return connection.execute(
        "SELECT key, text FROM passages WHERE key > ? ORDER BY key LIMIT ?", (after, limit)).fetchall()


def table_problems(connection: sqlite3.Connection) -> tuple[list[str], int]:
    """What SQLite's and FTS5's integrity checks and a comparison of the tables find, and how
    many passages have their vector (the vector index must hold as many)."""
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
    with_vector = connection.execute("SELECT count(*) FROM passages WHERE length(vector) > 0").fetchone()[0]
    return problems, int(with_vector)

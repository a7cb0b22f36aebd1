"""The default vector cache (:class:`passageway.kernel.store.VectorCache`): vectors by digest, per
embedder, in a SQLite file, so that no passage is embedded twice.

A passage's digest is the SHA-256 of its embedding input (see :mod:`passageway.kernel.text.chunking`),
so a vector stored under that digest by the same embedder is the vector the passage would get
again. The cache outlives every index: a source rebuilt after its ``.db`` was deleted, another
source holding the same text, and the throwaway indexes of ``passageway eval`` all reuse it.

One SQLite file per embedder name and dimension, by default
``<data dir>/vectors/<embedder name>-<dim>.db``, with one table ``vectors(digest, vector)``
(little-endian float32). All SQLite work runs in the cache's own thread.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from passageway.builtin.storage.tables import write_failure
from passageway.kernel.data_folder import private_file
from passageway.kernel.errors import StoreError

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_CHUNK = 500  # digests per SELECT, below SQLite's bound-parameter limit


def cache_path(data_dir: Path, embedder_name: str, dim: int) -> Path:
    """Where the cache of one embedder lives: ``<data dir>/vectors/<safe name>-<dim>.db``."""
    safe = _UNSAFE.sub("_", embedder_name).strip("._") or "embedder"
    return Path(data_dir) / "vectors" / f"{safe}-{dim}.db"


class SqliteVectorCache:
    """A digest → vector map in a SQLite file, for one embedder (name and dimension)."""

    def __init__(self, path: Path, embedder_name: str, dim: int) -> None:
        self.path = Path(path)
        self.embedder_name = embedder_name
        self.dim = dim
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vector-cache")
        self._connection: sqlite3.Connection | None = None
        self._closed = False

    @classmethod
    def for_embedder(cls, data_dir: Path, embedder_name: str, dim: int) -> SqliteVectorCache:
        return cls(cache_path(data_dir, embedder_name, dim), embedder_name, dim)

    async def _run(self, function, *args):  # type: ignore[no-untyped-def]
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    async def open(self) -> None:
        await self._run(self._open)

    def _open(self) -> None:
        if self._connection is not None:
            return
        try:
            private_file(self.path)  # the data folder is private (kernel/data_folder.py)
            connection = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute(
                "CREATE TABLE IF NOT EXISTS vectors (digest TEXT PRIMARY KEY, vector BLOB NOT NULL)"
                " WITHOUT ROWID"
            )
            connection.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            rows = dict(connection.execute("SELECT key, value FROM meta").fetchall())
            if not rows:
                connection.executemany(
                    "INSERT INTO meta VALUES (?, ?)",
                    [("embedder", self.embedder_name), ("dim", str(self.dim))],
                )
            elif rows.get("embedder") != self.embedder_name or rows.get("dim") != str(self.dim):
                connection.close()
                raise StoreError(
                    f"the vector cache {self.path} belongs to the embedder {rows.get('embedder')!r} "
                    f"(dimension {rows.get('dim')}), not {self.embedder_name!r} ({self.dim}); "
                    "delete the file, it is only a cache"
                )
        except sqlite3.DatabaseError as error:
            raise StoreError(
                f"the vector cache {self.path} cannot be used ({error}); delete the file, it is only a cache"
            ) from None
        self._connection = connection

    async def close(self) -> None:
        """Close the file; closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._run(self._close)
        finally:
            self._executor.shutdown(wait=True)

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    async def get_many(self, digests: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors among ``digests``; a digest with no vector is left out."""
        return await self._run(self._get_many, list(digests))

    def _get_many(self, digests: list[str]) -> dict[str, np.ndarray]:
        self._open()
        assert self._connection is not None
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(digests))
        for start in range(0, len(unique), _CHUNK):
            chunk = unique[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for digest, blob in self._connection.execute(
                f"SELECT digest, vector FROM vectors WHERE digest IN ({marks})", chunk  # noqa: S608
            ):
                vector = np.frombuffer(blob, dtype="<f4")
                if vector.shape[0] == self.dim:
                    found[digest] = vector
        return found

    async def put_many(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Remember vectors by digest (one transaction)."""
        if vectors:
            await self._run(self._put_many, list(vectors.items()))

    def _put_many(self, pairs: Iterable[tuple[str, np.ndarray]]) -> None:
        self._open()
        assert self._connection is not None
        rows = [(digest, np.asarray(vector, dtype="<f4").tobytes()) for digest, vector in pairs]
        try:
            with self._connection:
                self._connection.execute("BEGIN")
                self._connection.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)
        except sqlite3.OperationalError as error:
            raise write_failure(f"the vector cache {self.path}", error) from None

    async def count(self) -> int:
        return await self._run(self._count)

    def _count(self) -> int:
        self._open()
        assert self._connection is not None
        return int(self._connection.execute("SELECT count(*) FROM vectors").fetchone()[0])

"""The ``sqlite`` store's vector index: usearch (HNSW) in memory, saved to ``<source>.usearch``.

The file is only a cache of the vectors in the database. The state table records the generation,
size and checksum of the file last saved; a file that does not match them (missing, truncated
or damaged) is rebuilt from the database, and an intact file older than the database catches up
with it (passage keys are never reused, so only keys added or deleted since need work).

A rebuild does not hold up the store's opening: :meth:`VectorFile.load` reads every key and
vector into a flat stand-in that is searched exactly with numpy, and
:meth:`VectorFile.build_graph` builds the graph afterwards in the store's writer thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from passageway.builtin.storage import tables
from passageway.kernel.data_folder import FILE_MODE
from passageway.kernel.errors import StoreError

log = logging.getLogger("passageway.storage")

SAVE_INTERVAL_SECONDS = 120.0
"""How often, at most, a changed vector index is written to its file while writes go on; it is
always written on close. A crash in between costs a rebuild from the database, nothing more."""

EXACT_LIMIT = 20000
"""Up to this many vectors, a search compares the question with every vector (exact); above, it
walks usearch's HNSW graph."""


class VectorFile:
    """One source's vectors: the usearch index (or its flat stand-in) and the file it is saved in.

    Searches may run in any thread; loading, changes and saving run in the store's writer thread.
    """

    def __init__(self, path: Path, source: str) -> None:
        self.path = path
        self.source = source
        self._lock = threading.Lock()
        self._index: Any = None  # usearch.index.Index, or None while no embedder is recorded
        self._flat: tuple[np.ndarray, np.ndarray] | None = None  # keys and vectors while rebuilding
        self.dim: int | None = None
        self._unsaved = False
        self._last_save = 0.0
        self.stop_building = False  # set on close: an unfinished rebuild starts again at the next open

    @property
    def needs_graph(self) -> bool:
        """True while the flat stand-in serves: :meth:`build_graph` has work to do."""
        return self._flat is not None

    def count(self) -> int | None:
        """How many vectors are held, or None while no embedder is recorded."""
        with self._lock:
            if self._flat is not None:
                return len(self._flat[0])
            return None if self._index is None else len(self._index)

    # -- loading and saving ------------------------------------------------------------------

    def load(self, connection: sqlite3.Connection) -> None:
        """Use the saved file when it is intact, catching up with the database when it is older;
        otherwise read the database's vectors into the flat stand-in."""
        recorded = tables.recorded_embedder(connection)
        if recorded is None:
            self._index, self.dim = None, None
            return
        dim = self.dim = recorded[1]
        reason = self._file_problem(connection)
        if reason is None:
            try:
                index = _index_class().restore(str(self.path))
                if index is not None and index.ndim == dim:
                    self._catch_up(connection, index, dim)
                    return
                reason = "it was written for another dimension"
            except Exception as error:  # a damaged file of any kind is rebuilt
                reason = f"it cannot be read ({error})"
        log.info("source %s: rebuilding the vector index from the database: %s", self.source, reason)
        self._flat = self._read_all(connection, dim)

    def _file_problem(self, connection: sqlite3.Connection) -> str | None:
        """Why the file is not exactly the one last saved, or None."""
        if not self.path.exists():
            return "the file is missing"
        checksum = tables.get_state(connection, "usearch_checksum")
        if checksum is None:
            return "no saved file is recorded"
        if tables.get_state(connection, "usearch_size") != str(self.path.stat().st_size):
            return "the file has the wrong size (truncated?)"
        if checksum != _checksum(self.path):
            return "the file's checksum does not match"
        return None

    def _catch_up(self, connection: sqlite3.Connection, index: Any, dim: int) -> None:
        if tables.get_state(connection, "usearch_generation") == str(tables.generation(connection)):
            self._index = index
            self._unsaved = False
            self._last_save = time.monotonic()
            return
        stored = np.fromiter((row[0] for row in connection.execute(
            "SELECT key FROM passages WHERE length(vector) > 0")),
                             dtype=np.uint64)
        saved = np.asarray(index.keys, dtype=np.uint64)
        extra, missing = np.setdiff1d(saved, stored), np.setdiff1d(stored, saved)
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
        with self._lock:
            self._index = index
        self.save(connection)

    def _read_all(self, connection: sqlite3.Connection, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """Every passage key and vector from the database (fast: no graph is built)."""
        keys: list[int] = []
        blobs: list[bytes] = []
        for key, blob in connection.execute(
                "SELECT key, vector FROM passages WHERE length(vector) > 0 ORDER BY key"):
            if len(blob) != dim * 4:
                raise StoreError(
                    f"the index of source {self.source!r} holds a vector of the wrong size; "
                    "delete the file to rebuild it from the connector"
                )
            keys.append(key)
            blobs.append(blob)
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(keys), dim)
        return np.array(keys, dtype=np.uint64), matrix

    def build_graph(self, connection: sqlite3.Connection) -> None:
        """Build the usearch index from the flat stand-in, then save it. Runs in the writer
        thread before any write queued after the store opened, so the stand-in is still the
        database's state."""
        flat, dim = self._flat, self.dim
        if flat is None or dim is None:
            return
        keys, matrix = flat
        index = _index_class()(ndim=dim, metric="cos", dtype="f32")
        try:
            for start in range(0, len(keys), 4096):
                if self.stop_building:
                    return
                index.add(keys[start : start + 4096], matrix[start : start + 4096])
            with self._lock:
                self._index, self._flat = index, None
            self.save(connection)
            log.info("source %s: the vector index is rebuilt (%d vectors)", self.source, len(keys))
        except Exception:  # the exact stand-in keeps serving; the next open tries again
            log.exception("source %s: rebuilding the vector index failed", self.source)

    def save(self, connection: sqlite3.Connection) -> None:
        """Write the index to its file (through a temporary file) and record what was saved."""
        with self._lock:
            index = self._index
            if index is None:
                self._unsaved = False
                return
            saved_generation = tables.generation(connection)
            temporary = self.path.with_suffix(".usearch.tmp")
            index.save(str(temporary))
        os.chmod(temporary, FILE_MODE)  # the data folder is private (kernel/data_folder.py)
        os.replace(temporary, self.path)
        with tables.transaction(connection):
            tables.set_state(connection, "usearch_generation", str(saved_generation))
            tables.set_state(connection, "usearch_size", str(self.path.stat().st_size))
            tables.set_state(connection, "usearch_checksum", _checksum(self.path))
        self._unsaved = False
        self._last_save = time.monotonic()

    def save_if_changed(self, connection: sqlite3.Connection) -> None:
        if self._unsaved:
            self.save(connection)

    # -- changes -----------------------------------------------------------------------------

    def reset(self, dim: int) -> None:
        """An empty index of dimension ``dim``; the old file is deleted."""
        with self._lock:
            self._index = _index_class()(ndim=dim, metric="cos", dtype="f32")
            self._flat = None
            self.dim = dim
        self.path.unlink(missing_ok=True)
        self._unsaved = True

    def update(self, connection: sqlite3.Connection, removed: list[int], added_keys: list[int],
               added_vectors: list[np.ndarray]) -> None:
        """Follow a committed write; save now and then (:data:`SAVE_INTERVAL_SECONDS`)."""
        with self._lock:
            if self._flat is not None:  # the graph is not rebuilt yet: keep the stand-in current
                keys, matrix = self._flat
                keep = ~np.isin(keys, np.array(removed, dtype=np.uint64))
                keys, matrix = keys[keep], matrix[keep]
                if added_keys:
                    keys = np.concatenate([keys, np.array(added_keys, dtype=np.uint64)])
                    matrix = np.vstack([matrix, np.vstack(added_vectors)])
                self._flat = (keys, matrix)
            elif self._index is not None:
                present = [key for key in removed if self._index.contains(key)]
                if present:
                    self._index.remove(np.array(present, dtype=np.uint64))
                if added_keys:
                    self._index.add(np.array(added_keys, dtype=np.uint64), np.vstack(added_vectors))
        self._unsaved = True
        if time.monotonic() - self._last_save > SAVE_INTERVAL_SECONDS:
            self.save(connection)

    # -- search ------------------------------------------------------------------------------

    def nearest(self, vector: np.ndarray, limit: int) -> tuple[list[int], list[float]]:
        """The ``limit`` nearest passage keys and their cosine distances, nearest first."""
        with self._lock:
            index, flat, dim = self._index, self._flat, self.dim
            if dim is not None and vector.shape[0] != dim:
                raise StoreError(
                    f"the question vector has dimension {vector.shape[0]} but the index of source "
                    f"{self.source!r} holds dimension {dim}; it must be rebuilt for this embedder"
                )
            if flat is None:
                if index is None or len(index) == 0:
                    return [], []
                # Small indexes are searched exhaustively: exact, and as fast as the graph there.
                matches = index.search(vector, min(limit, len(index)), exact=len(index) <= EXACT_LIMIT)
                return [int(key) for key in matches.keys], [float(distance) for distance in matches.distances]
        return _exact_search(flat, vector, limit)


def _index_class() -> Any:
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

"""Worker processes that read part of a large index's keyword search.

BM25 in SQLite costs about a microsecond per matching row, and a large index's common words
match tens of thousands. Two threads of one process do not help: the system SQLite serializes
them (see docs/performance.md, "Recall"). Two processes do, so the ``sqlite`` store splits a
large index's keyword search, the counting of its terms' matches and the BM25 ranking in key
ranges, between the calling thread and these workers, and merges the parts. BM25 scores do not
depend on the range: FTS5 weighs each word by its frequency in the whole table and each row by
the whole table's mean length, so the merged list is the one a single query gives.

The workers are started with ``spawn`` (a fork of a threaded server is unsafe) and import little:
this module, the standard library, the ``passageway`` package's light ``__init__`` and, as
``spawn`` does, the server's entry script (``passageway.kernel.cli``, about 50 ms here). They run
the read-only statements the store hands them, on one connection per index file, reopened when
the file at that path is a different one (its device and inode changed).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import sqlite3
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

log = logging.getLogger("passageway.storage")

MAX_PARTS = 4
"""At most this many key ranges per search, however many cores there are."""

OPEN_FILES_PER_WORKER = 8
"""How many index files a worker keeps open; the least recently used one is closed beyond."""

RESTART_DELAY_SECONDS = 10.0
"""After a worker died, searches run in one process this long before workers start again, so a
machine that keeps killing them (out of memory, say) does not start new ones at every question."""

FileIdentity = tuple[int, int]
"""An index file's device and inode: a file deleted and created again at the same path differs."""


Rows = list[tuple[Any, ...]]


def read(connection: sqlite3.Connection, sql: str, parameter_rows: list[tuple[Any, ...]]) -> list[Rows]:
    """The rows of ``sql`` for each of ``parameter_rows``, in their order."""
    return [connection.execute(sql, parameters).fetchall() for parameters in parameter_rows]


# -- in a worker process -----------------------------------------------------------------------

_open_files: OrderedDict[str, tuple[FileIdentity, sqlite3.Connection]] = OrderedDict()


def _connection(path: str, identity: FileIdentity) -> sqlite3.Connection:
    known = _open_files.pop(path, None)
    if known is not None and known[0] != identity:
        known[1].close()
        known = None
    if known is None:
        connection = sqlite3.connect(path, timeout=30, isolation_level=None)
        connection.execute("PRAGMA query_only = 1")
        known = (identity, connection)
    _open_files[path] = known
    while len(_open_files) > OPEN_FILES_PER_WORKER:
        _open_files.popitem(last=False)[1][1].close()
    return known[1]


def read_in_worker(path: str, identity: FileIdentity, sql: str,
                   parameter_rows: list[tuple[Any, ...]]) -> list[Rows]:
    """:func:`read` on the worker's connection to ``path``."""
    return read(_connection(path, identity), sql, parameter_rows)


def _ready() -> bool:
    return True


def _worker_setup(parent: int) -> None:
    """Run first in each worker. Ctrl-C reaches the server's whole process group: the server
    shuts down and stops its workers, which should not each print a traceback meanwhile, so they
    ignore it. And a worker whose server died (even by ``kill -9``, which leaves no time to stop
    it) exits within a second instead of holding index files open."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="watch-server", daemon=True).start()


# -- in the server -----------------------------------------------------------------------------


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def parts() -> int:
    """How many key ranges a split search uses here: one per core, at most :data:`MAX_PARTS`."""
    return min(cores(), MAX_PARTS)


class Workers:
    """A pool of ``parts() - 1`` worker processes, started on first use and again a while after
    one died (:data:`RESTART_DELAY_SECONDS`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._failed = False
        self._failures: set[str] = set()
        self._restart_at = 0.0  # after a death: no new pool before this (time.monotonic)

    def _get(self) -> ProcessPoolExecutor | None:
        with self._lock:
            if self._pool is None and not self._failed and time.monotonic() >= self._restart_at:
                try:
                    self._pool = ProcessPoolExecutor(
                        max_workers=max(1, parts() - 1), mp_context=multiprocessing.get_context("spawn"),
                        initializer=_worker_setup, initargs=(os.getpid(),),
                    )
                except (OSError, ImportError) as error:  # no /dev/shm or no semaphores, for example
                    log.warning("keyword searches run in one process: worker processes cannot "
                                "start here (%s)", error)
                    self._failed = True
            return self._pool

    def start(self) -> None:
        """Start the workers now (they take a fraction of a second), so that the first question
        to a large index does not wait for them."""
        pool = self._get()
        if pool is not None:
            with contextlib.suppress(BrokenProcessPool, RuntimeError):
                for _ in range(max(1, parts() - 1)):
                    pool.submit(_ready)

    def submit(self, path: str, identity: FileIdentity, sql: str,
               parameter_rows: list[tuple[Any, ...]]) -> Future[list[Rows]] | None:
        """:func:`read` in a worker; None when no worker can take it (the caller reads itself)."""
        pool = self._get()
        if pool is None:
            return None
        try:
            return pool.submit(read_in_worker, path, identity, sql, parameter_rows)
        except (BrokenProcessPool, RuntimeError):
            self.died(pool)
            return None

    def died(self, pool: ProcessPoolExecutor | None = None) -> None:
        """A worker of ``pool`` (the current pool if None) died: drop that pool, so that the
        next search starts a new one."""
        with self._lock:
            old = self._pool if pool is None or pool is self._pool else None
            if old is not None:
                self._pool = None
                self._restart_at = time.monotonic() + RESTART_DELAY_SECONDS
        if old is not None:
            log.warning("a keyword worker process died; keyword searches rank in one process "
                        "for %.0f s, then new workers start", RESTART_DELAY_SECONDS)
            old.shutdown(wait=False, cancel_futures=True)

    def job_failed(self, error: Exception) -> None:
        """A job failed in a worker (and runs in the caller instead): say so once per error."""
        text = f"{type(error).__name__}: {error}"
        with self._lock:
            if text in self._failures:
                return
            self._failures.add(text)
        log.warning("a keyword search part failed in a worker process and ran in the server "
                    "instead (%s)", text)

    def shutdown(self) -> None:
        with self._lock:
            old, self._pool = self._pool, None
        if old is not None:
            old.shutdown(wait=True, cancel_futures=True)


WORKERS = Workers()
"""The worker processes every store of this process shares."""

"""Keeping one source's index current: build, reconcile, poll, the deletion guard, and health.

One :class:`SourceSync` per source, each run in its own task by the kernel, so one source that
fails or hangs (until its connector's timeout) never holds up another, and its index keeps
serving what it has.

* **Build** (at start, when the index is new or was built with another embedder): ``check``,
  ``list``, then the index is emptied and every item fetched in batches of 50.
* **Reconcile** (at start otherwise, then every ``reconcile_seconds``): ``list``, fetch what is
  new or has another version, delete what is no longer listed, unless the deletion guard refuses.
* **Poll** (every ``poll_seconds``): ``changed --since`` the last successful poll minus
  :data:`POLL_OVERLAP_SECONDS`, and store the items whose version differs.

Every connector call that succeeds is stored in one transaction; a call that fails stores
nothing. A failing fetch batch does not stop the ones after it, but two failing in a row stop
the fetch until the next sync (ADR 0008). A passage whose digest already has a vector in the
:class:`~passageway.kernel.store.VectorCache` is not embedded again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import numpy as np

from passageway.kernel.config import ConnectorSettings
from passageway.kernel.embedder import Embedder
from passageway.kernel.errors import ConnectorError, EmbedderError, PassagewayError
from passageway.kernel.index.chunking import DEFAULT_CAP, passages_for
from passageway.kernel.index.fetch_run import FetchOutcome, FetchRun, latest_items
from passageway.kernel.index.sync_health import BuildProgress, SourceHealth
from passageway.kernel.index.windows import embed_windows
from passageway.kernel.records import PROTOCOL_VERSION, CheckReply, Item, ListEntry, Passage
from passageway.kernel.store import ItemUpdate, Store, VectorCache

FETCH_BATCH = 50
"""Ids per ``fetch`` call; a failing call costs only these."""
EMBED_BATCH = 32
"""Texts per embedder call."""
POLL_OVERLAP_SECONDS = 5.0
"""``changed --since`` asks from this long before the last poll, so no edit falls in a gap."""
PROGRESS_SECONDS = 5.0
"""A long build logs its progress at most this often."""
LAST_POLL = "last_poll"



class Runner(Protocol):
    """What the sync needs of :class:`passageway.kernel.connector.runner.ConnectorRunner`."""

    async def check(self) -> CheckReply: ...
    async def list(self) -> list[ListEntry]: ...
    async def fetch(self, ids: Sequence[str]) -> list[Item]: ...
    async def changed(self, since: datetime) -> list[Item]: ...


class SyncError(PassagewayError):
    """A build, reconcile or poll failed in whole or in part; health holds the same message."""


class DeletionRefused(SyncError):
    """A reconcile would delete more of a source than the deletion guard allows."""


def deletion_refusal(stored: int, deleting: int, max_fraction: float) -> str | None:
    """Why the guard refuses to delete ``deleting`` of ``stored`` items, or None when it may.

    One item may always go; all of a source of two or more may not; otherwise at most
    ``max_fraction`` of it.
    """
    if deleting <= 1:
        return None
    if deleting >= stored:
        return f"the listing would delete all {stored} items of the source"
    if deleting > max_fraction * stored:
        return (
            f"the listing would delete {deleting} of {stored} items ({deleting / stored:.0%}), "
            f"more than max_delete_fraction = {max_fraction:g} allows"
        )
    return None


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class SourceSync:
    """Build, reconcile and poll one source; see the module docstring."""

    def __init__(
        self,
        settings: ConnectorSettings,
        store: Store,
        embedder: Embedder,
        runner: Runner,
        vector_cache: VectorCache,
        *,
        logger: logging.Logger | None = None,
        cap: int = DEFAULT_CAP,
        fetch_batch: int = FETCH_BATCH,
        embed_batch: int = EMBED_BATCH,
        progress_seconds: float = PROGRESS_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.source = settings.name
        self.store = store
        self.embedder = embedder
        self.runner = runner
        self.vector_cache = vector_cache
        self.log = logger or logging.getLogger(f"passageway.sync.{settings.name}")
        self.cap = cap
        self.fetch_batch = fetch_batch
        self.embed_batch = embed_batch
        self.progress_seconds = progress_seconds
        self.clock = clock
        self._health = SourceHealth(source=settings.name)
        self._failed_in: str | None = None  # "sync" or "poll": what failed last
        self._lock = asyncio.Lock()  # one operation at a time per source
        self._progress: BuildProgress | None = None  # the running fetch's counts, if any
        self.embed_seconds = 0.0
        """Time spent awaiting the embedder (the benchmark compares it with the total)."""

    # -- health -------------------------------------------------------------------------------

    def health(self) -> SourceHealth:
        return self._health

    async def refresh_counts(self) -> None:
        self._health.items, self._health.passages = await self.store.counts()

    def _succeeded(self) -> None:
        self._health.state = "ok"
        self._health.last_error = None
        self._health.last_success = _iso(_now())
        self._failed_in = None

    def _failed(self, message: str, kind: str) -> None:
        self._health.state = "failing"
        self._health.last_error = message
        self._failed_in = kind
        self.log.warning("source %s: %s", self.source, message)

    # -- the operations -----------------------------------------------------------------------

    async def sync_once(self) -> None:
        """The start of a source: a full build when the index is new or was built by another
        embedder, else a reconcile."""
        await self._guarded(self._start, "sync")

    async def build(self) -> None:
        """Rebuild the index in full from the connector."""
        await self._guarded(self._build, "sync")

    async def reconcile(self) -> None:
        """Fetch what is new or changed, delete what is gone (unless the guard refuses)."""
        await self._guarded(self._reconcile, "sync")

    async def poll(self) -> None:
        """Store what ``changed --since`` reports."""
        await self._guarded(self._poll, "poll")

    async def run_forever(self, poll_seconds: float, reconcile_seconds: float) -> None:
        """Start, then poll and reconcile on schedule until cancelled; failures go to health."""
        with contextlib.suppress(PassagewayError):
            await self.sync_once()
        next_reconcile = self.clock() + reconcile_seconds
        while True:
            wait = min(poll_seconds, max(next_reconcile - self.clock(), 0.0))
            await asyncio.sleep(wait)
            with contextlib.suppress(PassagewayError):
                if self.clock() >= next_reconcile:
                    next_reconcile = self.clock() + reconcile_seconds
                    await self.reconcile()
                else:
                    await self.poll()

    async def _guarded(self, operation: Callable[[], Any], kind: str) -> None:
        """Run one operation, record its outcome in health, and raise when it failed in whole
        or in part: the :class:`PassagewayError` that stopped it (a ``ConnectorError``,
        :class:`DeletionRefused`, ...), or :class:`SyncError` for failed batches and bugs."""
        failure: str | None = None
        error_to_raise: PassagewayError | None = None
        async with self._lock:
            try:
                failure = await operation()
            except asyncio.CancelledError:
                raise
            except PassagewayError as error:
                failure, error_to_raise = str(error), error
            except Exception as error:  # a bug must not end the source's task; it must show
                self.log.exception("source %s: unexpected error", self.source)
                failure = f"unexpected error: {type(error).__name__}: {error}"
            finally:
                with contextlib.suppress(Exception):
                    await self.refresh_counts()
            if failure is not None:
                self._failed(failure, kind)
            elif kind == "sync" or self._failed_in in (None, "poll"):
                # A good poll clears only a poll's failure: a failed batch waits for the next sync.
                self._succeeded()
        if error_to_raise is not None:
            raise error_to_raise
        if failure is not None:
            raise SyncError(failure)

    async def _index_fits(self) -> bool:
        return await self.store.embedder() == (self.embedder.name, self.embedder.dim)

    async def _start(self) -> str | None:
        recorded = await self.store.embedder()
        if recorded != (self.embedder.name, self.embedder.dim):
            if recorded is not None:
                self.log.info(
                    "source %s: the index was built with %s (dimension %d); rebuilding it for %s",
                    self.source, recorded[0], recorded[1], self.embedder.name,
                )
            return await self._build()
        return await self._reconcile()

    async def _build(self) -> str | None:
        self._health.building = True
        try:
            return await self._build_all()
        finally:
            self._health.building = False

    async def _build_all(self) -> str | None:
        started = _now()
        began = self.clock()
        reply = await self.runner.check()
        if reply.protocol != PROTOCOL_VERSION:
            raise ConnectorError(self.source, "protocol",
                                 f"the connector speaks protocol {reply.protocol!r}, passageway speaks "
                                 f"{PROTOCOL_VERSION!r}; update the connector or passageway")
        if not reply.ok:
            raise ConnectorError(self.source, "check", "the connector's check reported ok = false; "
                                 "see its log lines for why")
        entries = await self.runner.list()
        listed = _latest_versions(entries)
        await self.store.reset(self.embedder.name, self.embedder.dim)
        self._health.state = "indexing"
        self.log.info("source %s: building the index of %d items", self.source, len(listed))
        outcome = await self._fetch_and_store(list(listed))
        await self.store.set_state(LAST_POLL, _iso(started))
        items, passages = await self.store.counts()
        self.log.info("source %s ready: %d items, %d passages in %.1f s",
                      self.source, items, passages, self.clock() - began)
        return outcome.message()

    async def _reconcile(self) -> str | None:
        if not await self._index_fits():
            return await self._start()  # a reconcile cannot fill an index of another embedder
        started = _now()
        entries = await self.runner.list()
        listed = _latest_versions(entries)
        stored = await self.store.versions()
        changed = [item_id for item_id, version in listed.items() if stored.get(item_id) != version]
        gone = [item_id for item_id in stored if item_id not in listed]
        refusal = deletion_refusal(len(stored), len(gone), self.settings.max_delete_fraction)
        if refusal is not None:
            raise DeletionRefused(
                f"deletion guard: {refusal}; nothing was changed. If the items are really gone, "
                f"rebuild the source: stop the server, delete its index file and start it again"
            )
        if changed:
            self._health.state = "indexing"
        outcome = await self._fetch_and_store(changed)
        if gone:
            await self.store.apply([], gone)
            self.log.info("source %s: deleted %d items no longer listed", self.source, len(gone))
        if await self.store.get_state(LAST_POLL) is None:
            await self.store.set_state(LAST_POLL, _iso(started))
        return outcome.message()

    async def _poll(self) -> str | None:
        last = await self.store.get_state(LAST_POLL)
        if last is None or not await self._index_fits():
            return None  # nothing was built yet: the next start or reconcile covers everything
        started = _now()
        since = _parse(last) - timedelta(seconds=POLL_OVERLAP_SECONDS)
        items = latest_items(await self.runner.changed(since))
        if items:
            stored = await self.store.versions()
            fresh = [item for item in items if stored.get(item.id) != item.version]
            if fresh:
                updates, _ = await self._prepare(fresh)
                await self.store.apply(updates, [])
                self.log.info("source %s: stored %d changed items", self.source, len(fresh))
        await self.store.set_state(LAST_POLL, _iso(started))
        return None

    # -- fetching, embedding and storing ------------------------------------------------------

    async def _fetch_and_store(self, ids: list[str]) -> FetchOutcome:
        """Fetch ``ids`` in batches, each stored in one transaction (:class:`FetchRun`)."""
        batches = [ids[start : start + self.fetch_batch] for start in range(0, len(ids), self.fetch_batch)]
        self._health.batches, self._health.failed_batches = len(batches), 0
        if not batches:
            return FetchOutcome()
        progress = BuildProgress(self._health, len(ids), self.progress_seconds, self.log, self.clock)
        self._progress = progress
        run = FetchRun(
            self.source, batches, self.runner.fetch, self._updates, self._write, self._health, progress,
            self.log,
        )
        try:
            return await run.run()
        finally:
            progress.finish()
            self._progress = None

    async def _updates(self, items: Sequence[Item]) -> list[ItemUpdate]:
        updates, _ = await self._prepare(items)
        return updates

    async def _write(self, updates: list[ItemUpdate]) -> None:
        await self.store.apply(updates, [])

    async def _prepare(self, items: Sequence[Item]) -> tuple[list[ItemUpdate], int]:
        """Chunk and embed items (reusing cached vectors); returns the updates and how many
        passages were embedded now."""
        chunked = [(item, passages_for(item, self.cap)) for item in items]
        all_passages: list[Passage] = [passage for _, passages in chunked for passage in passages]
        digests = [passage.digest for passage in all_passages]
        vectors = await self.vector_cache.get_many(digests)
        missing: dict[str, str] = {}
        for passage in all_passages:
            if passage.digest not in vectors:
                missing.setdefault(passage.digest, passage.embedding_input)
        if self._progress is not None:
            self._progress.chunked_items(len(items), len(all_passages), len(missing))
        # The windows that excerpts are chosen by (kernel/query/excerpts.py), into the same cache, before
        # the passages: their time then counts in the passages/s rate and the time left, rather
        # than showing as a last stretch with every passage ready and "0 s left".
        await embed_windows([passage.text for passage in all_passages], self.vector_cache,
                            functools.partial(self._embed, counted=False))
        if missing:
            vectors.update(await self._embed(list(missing.items())))
        updates = []
        for item, passages in chunked:
            if passages:
                matrix = np.vstack([vectors[passage.digest] for passage in passages]).astype(np.float32)
            else:
                matrix = np.zeros((0, self.embedder.dim), dtype=np.float32)
            updates.append(ItemUpdate(item=item, passages=passages, vectors=matrix))
        return updates, len(missing)

    async def _embed(self, pairs: list[tuple[str, str]], counted: bool = True) -> dict[str, np.ndarray]:
        """Vectors for ``(digest, text)`` pairs, in embedder calls of :data:`EMBED_BATCH`
        (``counted=False``: excerpt windows, left out of the build's passage counts).

        Each call's vectors go to the vector cache at once, so work survives a crash or a kill in
        the middle of a batch: the next start embeds only what no call finished.
        """
        result: dict[str, np.ndarray] = {}
        for start in range(0, len(pairs), self.embed_batch):
            chunk = pairs[start : start + self.embed_batch]
            if self._progress is not None:
                self._progress.embedding()  # the rate counts from the first call, windows' too
            began = time.perf_counter()
            matrix = np.asarray(await self.embedder.embed([text for _, text in chunk], "passage"),
                                dtype=np.float32)
            self.embed_seconds += time.perf_counter() - began
            if matrix.shape != (len(chunk), self.embedder.dim):
                raise EmbedderError(
                    f"the embedder {self.embedder.name!r} returned vectors of shape {matrix.shape} for "
                    f"{len(chunk)} texts of dimension {self.embedder.dim}; check the embedder program"
                )
            # Stored vectors are unit length so that a dot product is the cosine.
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            matrix = matrix / np.where(norms > 0, norms, 1.0)
            made = {digest: np.asarray(vector, dtype=np.float32)
                    for (digest, _), vector in zip(chunk, matrix, strict=True)}
            await self.vector_cache.put_many(made)
            result.update(made)
            if self._progress is not None and counted:
                self._progress.embedded(len(chunk))
        return result


def _latest_versions(entries: Sequence[ListEntry]) -> dict[str, str]:
    """``id → version``; a repeated id keeps its last version."""
    return {entry.id: entry.version for entry in entries}

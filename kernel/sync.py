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
:class:`~passageway.kernel.vector_cache.VectorCache` is not embedded again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

import attrs
import numpy as np

from passageway.kernel.chunking import DEFAULT_CAP, passages_for
from passageway.kernel.config import ConnectorSettings
from passageway.kernel.embedder import Embedder
from passageway.kernel.errors import ConnectorError, EmbedderError, PassagewayError
from passageway.kernel.excerpts import embed_windows
from passageway.kernel.records import PROTOCOL_VERSION, CheckReply, Item, ListEntry, Passage
from passageway.kernel.status_page import duration_text
from passageway.kernel.store import ItemUpdate, Store
from passageway.kernel.vector_cache import VectorCache

FETCH_BATCH = 50
"""Ids per ``fetch`` call; a failing call costs only these."""
EMBED_BATCH = 32
"""Texts per embedder call."""
POLL_OVERLAP_SECONDS = 5.0
"""``changed --since`` asks from this long before the last poll, so no edit falls in a gap."""
PROGRESS_SECONDS = 5.0
"""A long build logs its progress at most this often."""
LAST_POLL = "last_poll"

State = Literal["ok", "indexing", "failing"]


class Runner(Protocol):
    """What the sync needs of :class:`passageway.kernel.connector.ConnectorRunner`."""

    async def check(self) -> CheckReply: ...
    async def list(self) -> list[ListEntry]: ...
    async def fetch(self, ids: Sequence[str]) -> list[Item]: ...
    async def changed(self, since: datetime) -> list[Item]: ...


@attrs.define
class SourceHealth:
    """One source's state as ``/health`` and ``status`` report it.

    ``state`` is ``indexing`` while a build or a large fetch runs, ``failing`` when the last sync
    failed in any part (``last_error`` says how; the items already indexed keep serving), and
    ``ok`` otherwise. While indexing, ``fetched`` of ``of`` items are stored, ``ready`` of
    ``expected`` passages have their vector (``expected`` is exact once every item was fetched, an
    estimate from the items so far before that), ``embedded`` of them were embedded in this run,
    at ``rate`` passages per second, with ``eta_seconds`` left; ``rate`` and ``eta_seconds`` stay
    ``None`` for the first :data:`RATE_AFTER_SECONDS` of embedding. :meth:`public` leaves the
    error text out, :meth:`full` keeps it.
    """

    source: str
    state: State = "ok"
    items: int = 0
    passages: int = 0
    fetched: int | None = None
    of: int | None = None
    ready: int = 0
    expected: int | None = None
    embedded: int = 0
    rate: float | None = None
    eta_seconds: float | None = None
    last_success: str | None = None
    last_error: str | None = None
    failed_batches: int = 0
    batches: int = 0
    building: bool = False
    """True during a first build (or a rebuild for another embedder): the index is not complete."""
    expected_exact: bool = False
    """Whether ``expected`` is a count (every item chunked) rather than an estimate."""

    def public(self) -> dict[str, Any]:
        """What anyone may see: counts and state, not the error text."""
        view: dict[str, Any] = {
            "state": self.state,
            "items": self.items,
            "passages": self.passages,
            "last_success": self.last_success,
            "failing": self.state == "failing",
        }
        if self.state == "indexing":
            view.update(fetched=self.fetched, of=self.of, ready=self.ready, expected=self.expected,
                        embedded=self.embedded, rate=self.rate, eta_seconds=self.eta_seconds)
        return view

    def building_note(self) -> str | None:
        """One line for an answer given while this source's first build runs, else ``None``:
        ``"corpus-en: 48 of 96 passages indexed"``."""
        if not self.building:
            return None
        if self.expected is None:
            return f"{self.source}: starting its first build"
        about = "" if self.expected_exact else "about "
        return f"{self.source}: {self.ready} of {about}{self.expected} passages indexed"

    def full(self) -> dict[str, Any]:
        """Everything, for a caller with the password: the public view plus the error."""
        view = self.public()
        view["last_error"] = self.last_error
        if self.batches:
            view["failed_batches"] = self.failed_batches
            view["batches"] = self.batches
        return view


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


RATE_AFTER_SECONDS = 2.0
"""A build's rate and estimate appear once embedding has run this long (earlier they jump)."""


class _Progress:
    """Counts of a running fetch, kept in ``health`` and logged at most every ``interval`` s.

    Passages are counted as their vectors arrive (each embedder call of at most
    :data:`EMBED_BATCH` texts), not per fetch batch, so a first build shows movement within
    seconds. Until every item was fetched, the expected number of passages is extrapolated from
    the items chunked so far.
    """

    def __init__(self, health: SourceHealth, total: int, interval: float, log: logging.Logger,
                 clock: Callable[[], float]) -> None:
        self.health = health
        self.total = total
        self.interval = interval
        self.log = log
        self.clock = clock
        self.last_report = clock()
        self.done = 0  # items stored (or given up in a failed batch)
        self.chunked = 0  # items chunked
        self.found = 0  # passages of the chunked items
        self.to_embed = 0  # of which had no vector yet
        self.embedding_since: float | None = None
        health.fetched, health.of = 0, total
        health.ready = health.embedded = 0
        health.expected = None
        health.rate = health.eta_seconds = None

    def chunked_items(self, items: int, passages: int, missing: int) -> None:
        """``items`` were chunked into ``passages``, ``missing`` of which need embedding."""
        self.chunked += items
        self.found += passages
        self.to_embed += missing
        self.health.ready += passages - missing
        self._estimate()

    def embedding(self) -> None:
        """An embedder call starts (the rate counts from the first one)."""
        if self.embedding_since is None:
            self.embedding_since = self.clock()

    def embedded(self, passages: int) -> None:
        self.health.embedded += passages
        self.health.ready += passages
        self._estimate()
        self._report()

    def advance(self, items: int) -> None:
        """A fetch batch of ``items`` was stored (or failed, and counts as handled)."""
        self.done += items
        self.health.fetched = self.done
        self._report()

    def _estimate(self) -> None:
        health = self.health
        unseen = max(self.total - self.chunked, 0)
        per_item = self.found / self.chunked if self.chunked else 0.0
        health.expected = self.found + round(unseen * per_item)
        health.expected_exact = unseen == 0
        if self.embedding_since is None:
            return
        elapsed = self.clock() - self.embedding_since
        if elapsed < RATE_AFTER_SECONDS or not health.embedded:
            return
        rate = health.embedded / elapsed
        missing_per_item = self.to_embed / self.chunked if self.chunked else 0.0
        left = max(self.to_embed - health.embedded, 0) + unseen * missing_per_item
        health.rate = round(rate, 2)
        health.eta_seconds = round(left / rate, 1)

    def _report(self) -> None:
        now = self.clock()
        if now - self.last_report < self.interval:
            return
        self.last_report = now
        health, eta = self.health, self.health.eta_seconds
        rate = f"{health.rate:.1f} passages/s" if health.rate is not None else "rate not known yet"
        self.log.info(
            "source %s: %d of %s passages ready, %d of %d items fetched, %s, about %s left",
            health.source, health.ready, health.expected if health.expected is not None else "?",
            self.done, self.total, rate, duration_text(eta) if eta is not None else "?",
        )

    def finish(self) -> None:
        health = self.health
        health.fetched = health.of = health.expected = None
        health.expected_exact = False
        health.rate = health.eta_seconds = None


@attrs.define
class _FetchOutcome:
    batches: int = 0
    failed: int = 0
    stopped: bool = False
    first_error: str | None = None
    stored: int = 0

    def message(self) -> str | None:
        if not self.failed:
            return None
        text = f"{self.failed} of {self.batches} fetch batches failed"
        if self.stopped:
            text += " (two in a row: the fetch stopped, the rest waits for the next sync)"
        return f"{text}: {self.first_error}"


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
        self._progress: _Progress | None = None  # the running fetch's counts, if any
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
        items = _latest_items(await self.runner.changed(since))
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

    async def _fetch_and_store(self, ids: list[str]) -> _FetchOutcome:
        """Fetch ``ids`` in batches, each stored in one transaction (ADR 0008 on failures).

        Three stages overlap: while batch ``n`` is embedded, batch ``n + 1`` is being fetched and
        batch ``n - 1`` is being written (SQLite and the vector index, in the store's thread).
        Batches are still stored in order, one transaction each, and a batch counts as done
        only when its write has committed.
        """
        outcome = _FetchOutcome()
        batches = [ids[start : start + self.fetch_batch] for start in range(0, len(ids), self.fetch_batch)]
        outcome.batches = len(batches)
        self._health.batches, self._health.failed_batches = len(batches), 0
        if not batches:
            return outcome
        progress = _Progress(self._health, len(ids), self.progress_seconds, self.log, self.clock)
        self._progress = progress
        consecutive = 0

        def failed(index: int, error: PassagewayError) -> bool:
            """Count a failed batch; True when it is the second in a row (stop)."""
            nonlocal consecutive
            outcome.failed += 1
            self._health.failed_batches = outcome.failed
            consecutive += 1
            outcome.first_error = outcome.first_error or str(error)
            self.log.warning("source %s: fetch batch %d of %d failed: %s",
                             self.source, index + 1, len(batches), error)
            progress.advance(len(batches[index]))
            if consecutive >= 2:
                outcome.stopped = True
            return outcome.stopped

        async def settle(writing: tuple[int, asyncio.Future[None], int]) -> bool:
            """Wait for a batch's write; True when the fetch must stop."""
            nonlocal consecutive
            index, future, stored = writing
            try:
                await future
            except PassagewayError as error:
                return failed(index, error)
            consecutive = 0
            outcome.stored += stored
            progress.advance(len(batches[index]))
            return False

        def fetch(index: int) -> asyncio.Task[list[Item]]:
            return asyncio.ensure_future(self.runner.fetch(batches[index]))

        fetching: asyncio.Task[list[Item]] | None = fetch(0)
        writing: tuple[int, asyncio.Future[None], int] | None = None
        try:
            for index, batch in enumerate(batches):
                assert fetching is not None
                current, fetching = fetching, None
                problem: PassagewayError | None = None
                try:
                    items = await current
                    if index + 1 < len(batches):
                        fetching = fetch(index + 1)
                    wanted = set(batch)
                    items = [item for item in _latest_items(items) if item.id in wanted]
                    updates, _ = await self._prepare(items)
                except PassagewayError as error:
                    problem = error
                if writing is not None:
                    previous, writing = writing, None
                    if await settle(previous):
                        break
                if problem is not None:
                    if failed(index, problem):
                        break
                    if fetching is None and index + 1 < len(batches):
                        fetching = fetch(index + 1)
                    continue
                writing = (index, asyncio.ensure_future(self.store.apply(updates, [])), len(items))
            if writing is not None:
                previous, writing = writing, None
                await settle(previous)
        finally:
            if fetching is not None:
                fetching.cancel()
                with contextlib.suppress(BaseException):
                    await fetching
            if writing is not None:  # leaving early (cancelled): let the write finish or fail
                with contextlib.suppress(BaseException):
                    await writing[1]
            progress.finish()
            self._progress = None
        return outcome

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
        if missing:
            vectors.update(await self._embed(list(missing.items())))
        # The windows that excerpts are chosen by (kernel/excerpts.py), into the same cache.
        await embed_windows([passage.text for passage in all_passages], self.vector_cache,
                            functools.partial(self._embed, counted=False))
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
            if self._progress is not None and counted:
                self._progress.embedding()
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


def _latest_items(items: Sequence[Item]) -> list[Item]:
    by_id: dict[str, Item] = {}
    for item in items:
        by_id[item.id] = item
    return list(by_id.values())

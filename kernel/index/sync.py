"""Keeping one source's index current: build, reconcile and poll, in order, with their health.

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
nothing. A failing fetch batch is fetched again one id at a time, so a bad record costs only
itself; its id is remembered and fetched alone, after every other, at later syncs. Failed calls
in a row that are not about a record (three timeouts, or ten quick failures) stop the fetch until
the next sync (ADR 0008). A store that takes passages before their vectors (``LaterVectors``, the
builtin one) gets each batch at once and its vectors after, passages first and excerpt windows
last (:mod:`.sync_passes`); another store gets each batch with its vectors. A passage whose
digest already has a vector in the :class:`~passageway.kernel.store.VectorCache` is not
embedded again.

This module holds the operations and their order, and the one conductor of the index path:
:meth:`SourceSync._store_fetched` loops over the batches a :class:`~.fetch_run.FetchRun` yields,
makes each into updates (:mod:`.item_updates`) and writes them; nothing it calls calls it back.
Beside it: the passes (:mod:`.sync_passes`), the reconcile's plan and deletion guard
(:mod:`.reconcile_plan`), health and progress (:mod:`.sync_health`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any

from passageway.kernel.config import ConnectorSettings
from passageway.kernel.embedder import Embedder
from passageway.kernel.errors import ConnectorError, PassagewayError, SyncError
from passageway.kernel.index.fetch_run import (
    POISONED,
    Fetched,
    FetchOutcome,
    FetchRun,
    Runner,
    Writing,
    batches_of,
    latest_items,
    poisoned_from,
    poisoned_to_save,
)
from passageway.kernel.index.item_updates import EMBED_BATCH, UpdateMaker
from passageway.kernel.index.reconcile_plan import latest_versions, reconcile_plan
from passageway.kernel.index.sync_health import (
    BuildProgress,
    SourceHealth,
    joined,
    left_out_message,
    nothing_fetched,
)
from passageway.kernel.index.sync_passes import (
    WINDOWS_STATE,
    embed_all_windows,
    embed_pending,
    embedding_meanwhile,
)
from passageway.kernel.store import ItemUpdate, LaterVectors, Store, VectorCache
from passageway.kernel.text.chunking import DEFAULT_CAP

FETCH_BATCH = 50
"""Ids per ``fetch`` call; a failing call costs only these."""
POLL_OVERLAP_SECONDS = 5.0
"""``changed --since`` asks from this long before the last poll, so no edit falls in a gap."""
PROGRESS_SECONDS = 5.0
"""A long build logs its progress at most this often."""
LAST_POLL = "last_poll"


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


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
        self._lock = asyncio.Lock()  # one operation at a time per source
        self._progress: BuildProgress | None = None  # the running fetch's counts, if any
        self._poisoned: dict[str, str] | None = None  # ids that failed alone, and why (ADR 0008)
        self.later = isinstance(store, LaterVectors)
        """Whether passages are stored before their vectors (:mod:`.sync_passes`)."""
        self.update_maker = UpdateMaker(embedder, vector_cache, cap=cap, embed_batch=embed_batch,
                                        later=self.later)
        self._stored_more: asyncio.Event | None = None  # set by each write while a fetch runs
        self._ready_line: tuple[Any, ...] | None = None  # a build's "ready", logged when health is ok

    @property
    def embed_seconds(self) -> float:
        """Time spent awaiting the embedder (the benchmark compares it with the total)."""
        return self.update_maker.embed_seconds

    # -- health -------------------------------------------------------------------------------

    def health(self) -> SourceHealth:
        return self._health

    async def refresh_counts(self) -> None:
        self._health.items, self._health.passages = await self.store.counts()

    # -- the operations -----------------------------------------------------------------------

    async def sync_once(self) -> None:
        """The start of a source: a full build when the index is new or was built by another
        embedder, else a reconcile."""
        await self._guarded(self._start(), "sync")

    async def build(self) -> None:
        """Rebuild the index in full from the connector."""
        await self._guarded(self._build(), "sync")

    async def reconcile(self) -> None:
        """Fetch what is new or changed, delete what is gone (unless the guard refuses)."""
        await self._guarded(self._reconcile(), "sync")

    async def poll(self) -> None:
        """Store what ``changed --since`` reports."""
        await self._guarded(self._poll(), "poll")

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

    async def _guarded(self, operation: Coroutine[Any, Any, str | None], kind: str) -> None:
        """Run one operation, record its outcome in health, and raise when it failed in whole
        or in part: the :class:`PassagewayError` that stopped it (a ``ConnectorError``,
        :class:`DeletionRefused`, ...), or :class:`SyncError` for failed batches and bugs."""
        failure: str | None = None
        error_to_raise: PassagewayError | None = None
        async with contextlib.AsyncExitStack() as stack:
            stack.callback(operation.close)  # never started (cancelled while waiting): no warning
            await stack.enter_async_context(self._lock)
            try:
                failure = await operation
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
            self._health.record(kind, failure, _iso(datetime.now(UTC)))
            self._health.stage = None  # the windows stage ends with the operation, as its state does
            if failure is not None:
                self.log.warning("source %s: %s", self.source, failure)
            elif self._ready_line is not None:  # the log says ready when /health says ok
                self.log.info(*self._ready_line)
            self._ready_line = None
        if error_to_raise is not None:
            raise error_to_raise
        if failure is not None:
            raise SyncError(failure)

    async def _index_fits(self) -> bool:
        return await self.store.embedder() == (self.embedder.name, self.embedder.dim)

    async def _start(self) -> str | None:
        # Health counts what the store holds before a resumed pass, which can take minutes (38.7).
        with contextlib.suppress(PassagewayError):
            await self.refresh_counts()
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
            self._end_progress()

    async def _build_all(self) -> str | None:
        started = datetime.now(UTC)
        began = self.clock()
        reply = await self.runner.check()  # the runner refuses another protocol version
        if not reply.ok:
            raise ConnectorError(self.source, "check", "the connector's check reported ok = false; "
                                 "see its log lines for why")
        entries = await self.runner.list()
        left_out = left_out_message(self.runner.left_out)
        listed = latest_versions(entries)
        await self.store.reset(self.embedder.name, self.embedder.dim)
        self._health.state = "indexing"
        self.log.info("source %s: building the index of %d items", self.source, len(listed))
        outcome = await self._fetch_and_store(list(listed))
        await self.store.set_state(LAST_POLL, _iso(started))
        await self._complete(began)
        return joined(nothing_fetched(self._health, outcome.message(), len(listed), outcome.stored), left_out)

    async def _reconcile(self) -> str | None:
        if not await self._index_fits():
            return await self._start()  # a reconcile cannot fill an index of another embedder
        started = datetime.now(UTC)
        entries = await self.runner.list()
        left_out = left_out_message(self.runner.left_out)
        plan = reconcile_plan(latest_versions(entries), await self.store.versions(),
                              self.settings.max_delete_fraction)
        changed, gone = plan.changed, plan.gone
        if changed:
            self._health.state = "indexing"
        outcome = await self._fetch_and_store(changed)
        if gone:
            await self.store.apply([], gone)
            self.log.info("source %s: deleted %d items no longer listed", self.source, len(gone))
        if await self.store.get_state(LAST_POLL) is None:
            await self.store.set_state(LAST_POLL, _iso(started))
        # Passages left without vectors by a build that was stopped: it goes on, and says so.
        resumed = self.later and bool(await self.store.pending(1))  # type: ignore[attr-defined]
        if resumed:
            self._health.state, self._health.building = "indexing", True
        try:
            await self._complete(self.clock() if resumed else None)  # a resumed build ends "ready" too
        finally:
            self._end_progress()
            self._health.building = False
        failure = outcome.message()  # changed ids that fetch skips without a failure: deleted since
        failure = failure and nothing_fetched(self._health, failure, len(changed), outcome.stored)
        return joined(failure, left_out)

    async def _poll(self) -> str | None:
        last = await self.store.get_state(LAST_POLL)
        if last is None or not await self._index_fits():
            return None  # nothing was built yet: the next start or reconcile covers everything
        started = datetime.now(UTC)
        since = datetime.fromisoformat(last) - timedelta(seconds=POLL_OVERLAP_SECONDS)
        items = latest_items(await self.runner.changed(since))
        if items:
            stored = await self.store.versions()
            fresh = [item for item in items if stored.get(item.id) != item.version]
            if fresh:
                updates, _ = await self.update_maker.prepare(fresh, self._progress)
                await self._write(updates)
                self.log.info("source %s: stored %d changed items", self.source, len(fresh))
                await self._complete(None)
        await self.store.set_state(LAST_POLL, _iso(started))
        return None

    async def _complete(self, began: float | None) -> None:
        """The passes after a fetch (:mod:`.sync_passes`): the passages waiting for a vector, then
        the windows; ``began`` (a build's start) logs each stage's end. The source is ``ready`` in
        the log when ``/health`` turns it ``ok``: after the windows, which choose the excerpts."""
        if self.later:
            await embed_pending(self.store, self.vector_cache, self.update_maker,  # type: ignore[arg-type]
                                self._progress, self.log)
        windows_due = self.later and await self.store.get_state(WINDOWS_STATE) == "due"
        if windows_due:
            self._health.stage = "windows"
        if began is not None:
            self._health.building = False  # every passage searchable; the windows only choose excerpts
            if windows_due:
                items, passages = await self.store.counts()
                self.log.info("source %s: every passage searchable (%d items, %d passages in %.1f s); "
                              "embedding its excerpt windows, which choose each answer's excerpt",
                              self.source, items, passages, self.clock() - began)
        if windows_due:
            await embed_all_windows(self.store, self.vector_cache,  # type: ignore[arg-type]
                                    self.update_maker, self._progress)
        if began is not None:
            items, passages = await self.store.counts()
            self._ready_line = ("source %s ready: %d items, %d passages in %.1f s",
                                self.source, items, passages, self.clock() - began)

    # -- fetching, embedding and storing ------------------------------------------------------

    async def _fetch_and_store(self, ids: list[str]) -> FetchOutcome:
        """Fetch ``ids`` in batches, each stored in one transaction (:class:`FetchRun`); ids that
        failed alone before come last, one per batch, so they cost no other item a call."""
        wanted = set(ids)
        if self._poisoned is None:
            self._poisoned = poisoned_from(await self.store.get_state(POISONED))
        poisoned = self._poisoned = {key: error for key, error in self._poisoned.items() if key in wanted}
        batches = batches_of(ids, self.fetch_batch, poisoned)
        self._health.batches, self._health.failed_batches, self._health.failed_items = len(batches), 0, 0
        if not batches:
            return FetchOutcome()
        progress = BuildProgress(self._health, len(ids), self.progress_seconds, self.log, self.clock)
        self._progress = progress
        run = FetchRun(self.source, batches, self.runner, self._health, progress, self.log, poisoned)
        try:
            if not self.later:
                return await self._store_fetched(run)
            # The passages stored by each write are embedded while the next batches are fetched.
            first_pass = functools.partial(embed_pending, self.store, self.vector_cache, self.update_maker,
                                           progress, self.log)
            async with embedding_meanwhile(first_pass) as self._stored_more:
                return await self._store_fetched(run)
        finally:
            self._stored_more = None
            if not self.later:
                self._end_progress()
            with contextlib.suppress(PassagewayError):  # a store that cannot write says so itself
                await self.store.set_state(POISONED, poisoned_to_save(poisoned))

    def _end_progress(self) -> None:
        if self._progress is not None:
            self._progress.finish()
            self._progress = None

    async def _store_fetched(self, run: FetchRun) -> FetchOutcome:
        """The conductor's loop: each batch ``run`` yields is made into updates while the next
        is fetched, and written in a task of its own while the next is made (one write in
        flight, in order); the run hears how each ended."""
        writing: Writing | None = None
        try:
            async with contextlib.aclosing(run.fetched()) as batches:
                async for batch in batches:
                    updates, problem = await self._made(batch)
                    stop, writing = await run.settled(writing), None
                    if stop or (problem is not None and run.failed(batch, problem)):
                        break
                    if problem is None:
                        writing = (batch, asyncio.ensure_future(self._write(updates)))
            _, writing = await run.settled(writing), None
        finally:
            if writing is not None:  # leaving early (cancelled, a bug): let the write end
                with contextlib.suppress(BaseException):
                    await writing[1]
        return run.outcome

    async def _made(self, batch: Fetched) -> tuple[list[ItemUpdate], PassagewayError | None]:
        """The updates of ``batch``'s items, or the error that prevented them."""
        try:
            updates, _ = await self.update_maker.prepare(batch.items, self._progress)
        except PassagewayError as error:
            return [], error
        return updates, None

    async def _write(self, updates: list[ItemUpdate]) -> None:
        if self.later and any(update.passages for update in updates):
            await self.store.set_state(WINDOWS_STATE, "due")  # before: a kill leaves it due
        await self.store.apply(updates, [])
        if self._progress is not None:
            self._progress.stored(len(updates), sum(len(update.passages) for update in updates))
            await self.refresh_counts()  # what the index holds, during a build too
        if self._stored_more is not None:
            self._stored_more.set()


"""Fetching a list of ids in batches, one batch ahead of the sync that stores them (ADR 0008).

:class:`FetchRun` is one such run; :meth:`FetchRun.fetched` yields the fetched batches in order,
and the sync (:class:`~passageway.kernel.index.sync.SourceSync`, the one conductor of the index
path) makes each into updates and writes it in one transaction. The next batch is read from the
connector while the one yielded is chunked, embedded and written: a batch ahead, never more. The
sync tells the run how each batch ended (:meth:`FetchRun.settled` with its write in flight, or
:meth:`FetchRun.failed`), and a batch counts as stored only when its write has committed.

A batch whose ``fetch`` fails is fetched again one id at a time, so a record the connector cannot
deliver (a line that is not UTF-8, nested too deep, a page that crashes it) costs only itself:
its id goes to ``poisoned`` with the error, the log and health name it, and the rest of the batch
is yielded. Failed calls in a row that are not about one record mean the source is down (three
timeouts, or ten quick failures such as an exit status): the run stops and the rest waits for the
next sync. Ids that failed alone before are fetched alone and last, and their failing again says
nothing about the source.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from typing import Protocol

import attrs

from passageway.kernel.errors import ConnectorError, PassagewayError
from passageway.kernel.index.sync_health import BuildProgress, SourceHealth
from passageway.kernel.records import CheckReply, Item, ListEntry


class Runner(Protocol):
    """What the index path needs of :class:`passageway.kernel.connector.runner.ConnectorRunner`,
    all of it: the four calls, and the notes on what the last call left out."""

    async def check(self) -> CheckReply:
        """The ``check`` reply; refuses (``ConnectorError``, rule ``protocol version``) a connector
        of another protocol: the runner checks the version, the sync reads only ``ok``."""
        ...

    async def list(self) -> list[ListEntry]: ...
    async def fetch(self, ids: Sequence[str]) -> list[Item]: ...
    async def changed(self, since: datetime) -> list[Item]: ...

    @property
    def left_out(self) -> Sequence[str]:
        """One note per record the last call left out (an id that is not Unicode), else none."""
        ...


RECORD_RULES = frozenset({"malformed line", "invalid record", "line too long", "duplicate id",
                          "unrequested id"})
"""Connector failures that are about one line: the connector runs, one record is bad."""
SLOW_RULES = frozenset({"timeout", "command not found", "cannot start", "out of file descriptors"})
"""Connector failures that cost a call timeout, or that no record can cause."""
DOWN_AFTER = 3
"""Failed calls in a row of :data:`SLOW_RULES` after which the source counts as down: a batch and
the first two of its ids alone, so a source that hangs costs three timeouts, not one per item."""
QUICK_DOWN_AFTER = 10
"""Failed calls in a row of any other rule (an exit status) after which the source counts as
down: such a call is quick, and a connector that exits on each of a few bad records in a row
must not look like a source that is down."""
SHOWN_ITEMS = 3
"""Items named in the health message; the count says how many more."""
POISONED = "poisoned_ids"
"""The store's state key of the ids that failed alone (JSON, id to error): kept across restarts."""
POISONED_ERROR_CHARS = 300


@attrs.define
class FetchOutcome:
    """How a run went: its batches, the failed ones, whether it stopped, the first error, and the
    items that failed alone (``bad``: id to error)."""

    batches: int = 0
    failed: int = 0
    stopped: bool = False
    first_error: str | None = None
    stored: int = 0
    isolated: int = 0
    """Failed batches whose ids were all fetched one by one (their failures are in ``bad``)."""
    bad: dict[str, str] = attrs.field(factory=dict)

    def message(self) -> str | None:
        """The failure for health, or None when every item was stored."""
        if not self.failed or (not self.stopped and not self.bad and self.isolated == self.failed):
            return None
        text = f"{self.failed} of {self.batches} fetch batches failed"
        if self.stopped:
            text += (" (calls kept failing in a row, so the source looks down: the fetch stopped, "
                     "the rest waits for the next sync)")
        if not self.bad:
            return f"{text}: {self.first_error}"
        shown = "; ".join(f"{item_id}: {error}" for item_id, error in list(self.bad.items())[:SHOWN_ITEMS])
        more = f"; and {len(self.bad) - SHOWN_ITEMS} more" if len(self.bad) > SHOWN_ITEMS else ""
        return (f"{text}; fetched one by one, {len(self.bad)} item(s) could not be stored and are "
                f"tried again, alone and last, at the next sync: {shown}{more}")


@attrs.define(frozen=True)
class Fetched:
    """A batch the connector delivered: its place in the run and the items of its ids."""

    index: int
    items: list[Item]


Writing = tuple[Fetched, "asyncio.Future[None]"]
"""A batch's write in flight: the batch, and the task of the sync that writes it."""


@attrs.define
class FetchRun:
    """One run over ``batches`` of ids; see the module docstring. Iterate :meth:`fetched` once.

    ``poisoned`` (id to error) is the source's record of ids that failed alone: this run adds
    the ones that fail and drops the ones stored.
    """

    source: str
    batches: list[list[str]]
    runner: Runner
    health: SourceHealth
    progress: BuildProgress
    log: logging.Logger
    poisoned: dict[str, str] = attrs.field(factory=dict)
    outcome: FetchOutcome = attrs.field(init=False)
    _in_a_row: int = attrs.field(default=0, init=False)
    """Failed calls since the last one that worked, none of them about a record."""
    _slow_in_a_row: int = attrs.field(default=0, init=False)
    """Of those, the ones of :data:`SLOW_RULES`."""
    _fetching: asyncio.Task[list[Item]] | None = attrs.field(default=None, init=False)
    _known_bad: frozenset[str] = attrs.field(factory=frozenset, init=False)
    """Ids that failed alone before this run: their failing again says nothing about the source."""

    def __attrs_post_init__(self) -> None:
        self.outcome = FetchOutcome(batches=len(self.batches))
        self._known_bad = frozenset(self.poisoned)

    async def fetched(self) -> AsyncIterator[Fetched]:
        """The batches whose items are to be stored, in order; the next one's ``fetch`` runs
        while the caller stores the one yielded. Ends early when the source looks down or the
        caller reported a failure that stops the run; close it (``contextlib.aclosing``) to
        cancel the fetch in flight when leaving early."""
        self._fetch_next(0)
        try:
            for index in range(len(self.batches)):
                items, stop = await self._take(index)
                if items is not None:
                    yield Fetched(index, items)
                if stop or self.outcome.stopped:
                    return
        finally:
            await self._abandon()

    def stored(self, batch: Fetched) -> None:
        """Count ``batch`` as stored: its write has committed."""
        self.outcome.stored += len(batch.items)
        for item in batch.items:
            self.poisoned.pop(item.id, None)

    async def settled(self, writing: Writing | None) -> bool:
        """Wait for the sync's write in flight, if any, and count how it ended; True when the run
        must stop."""
        if writing is None:
            return False
        batch, future = writing
        try:
            await future
        except PassagewayError as error:
            return self.failed(batch, error)
        self.stored(batch)
        return False

    def failed(self, batch: Fetched, error: PassagewayError) -> bool:
        """Count ``batch`` as failed (making its updates or writing them); True when the run must
        stop, which it does for any failure that is not the connector's (ADR 0008)."""
        return self._failed(batch.index, error)

    async def _take(self, index: int) -> tuple[list[Item] | None, bool]:
        """Batch ``index`` from the connector: its items (None when no item is to be stored) and
        whether the run must stop after it."""
        batch = self.batches[index]
        items, problem = await self._fetched(index)
        if problem is None:
            # Counted when the connector has answered (or failed), not when the write commits:
            # the write of a batch comes after its embedding, and "0 of 200 fetched" beside 200
            # ready passages read as a stalled fetch.
            self.progress.advance(len(batch))
            return items, False
        if not isinstance(problem, ConnectorError):
            return None, self._lost(index, problem)
        if len(batch) == 1 and batch[0] in self._known_bad:
            stop = self._lost(index, problem)
        elif self._count_call(problem) or len(batch) == 1:
            # The source looks down, or the batch is one id: there is nothing to isolate.
            stop = self._lost(index, problem) or self._down()
        else:
            return await self._isolated(index, problem)
        if not stop:
            self._fetch_next(index + 1)
        return None, stop

    def _lost(self, index: int, problem: PassagewayError) -> bool:
        """Batch ``index`` failed and none of its items is stored; True when the run must stop."""
        batch = self.batches[index]
        self.progress.advance(len(batch))
        if len(batch) == 1 and isinstance(problem, ConnectorError):
            self._bad(batch[0], problem)
        return self._failed(index, problem)

    async def _isolated(self, index: int, problem: PassagewayError) -> tuple[list[Item], bool]:
        """Batch ``index`` failed: its ids fetched alone; (the items found, whether to stop)."""
        self._note_batch(index, problem)
        items, stop = await self._one_by_one(index)
        if not stop:
            self.outcome.isolated += 1
            self._fetch_next(index + 1)
        self.progress.advance(len(self.batches[index]))
        return items, stop

    async def _fetched(self, index: int) -> tuple[list[Item], PassagewayError | None]:
        """Await batch ``index``'s fetch and start the next one; the items wanted, or the error."""
        current, self._fetching = self._fetching, None
        assert current is not None
        try:
            items = await current
        except PassagewayError as error:
            return [], error
        self._count_call(None)
        self._fetch_next(index + 1)
        wanted = set(self.batches[index])
        return [item for item in latest_items(items) if item.id in wanted], None

    async def _one_by_one(self, index: int) -> tuple[list[Item], bool]:
        """Fetch batch ``index``'s ids alone; (the items, whether the source looks down)."""
        found: list[Item] = []
        for item_id in self.batches[index]:
            try:
                items = await self.runner.fetch([item_id])
            except ConnectorError as error:
                self._bad(item_id, error)
                if self._count_call(error):
                    return found, True
                continue
            self._count_call(None)
            found.extend(item for item in latest_items(items) if item.id == item_id)
        return found, False

    def _count_call(self, error: ConnectorError | None) -> bool:
        """Count a call's outcome; True when the source now looks down (:data:`DOWN_AFTER`)."""
        if error is None or error.rule in RECORD_RULES:
            self._in_a_row = self._slow_in_a_row = 0  # the connector answered: the source is up
            return False
        self._in_a_row += 1
        self._slow_in_a_row += error.rule in SLOW_RULES
        return self._down()

    def _down(self) -> bool:
        if self._slow_in_a_row >= DOWN_AFTER or self._in_a_row >= QUICK_DOWN_AFTER:
            self.outcome.stopped = True
        return self.outcome.stopped

    def _bad(self, item_id: str, error: PassagewayError) -> None:
        self.outcome.bad[item_id] = str(error)
        self.poisoned[item_id] = str(error)
        self.health.failed_items = len(self.outcome.bad)
        self.log.warning("source %s: item %s could not be fetched, the rest of its batch is stored: %s",
                         self.source, item_id, error)

    def _note_batch(self, index: int, error: PassagewayError) -> None:
        """Count a failed batch whose ids are fetched again one by one."""
        outcome = self.outcome
        outcome.failed += 1
        self.health.failed_batches = outcome.failed
        outcome.first_error = outcome.first_error or str(error)
        self.log.warning("source %s: fetch batch %d of %d failed, fetching its %d ids one by one: %s",
                         self.source, index + 1, len(self.batches), len(self.batches[index]), error)

    def _fetch_next(self, index: int) -> None:
        if self._fetching is None and index < len(self.batches):
            self._fetching = asyncio.ensure_future(self.runner.fetch(self.batches[index]))

    def _failed(self, index: int, error: PassagewayError) -> bool:
        """Count a failed batch whose items are not stored; True when the run must stop.

        A failure that is not the connector's (chunking, the embedder, the store) stops the run at
        once, as it would repeat for every batch (ADR 0008).
        """
        outcome = self.outcome
        outcome.failed += 1
        self.health.failed_batches = outcome.failed
        outcome.first_error = outcome.first_error or str(error)
        self.log.warning("source %s: fetch batch %d of %d failed: %s",
                         self.source, index + 1, len(self.batches), error)
        if not isinstance(error, ConnectorError):
            outcome.stopped = True
        return outcome.stopped

    async def _abandon(self) -> None:
        """Leaving (done, stopped or cancelled): cancel the fetch in flight, if any."""
        if self._fetching is not None:
            self._fetching.cancel()
            with contextlib.suppress(BaseException):
                await self._fetching
            self._fetching = None


def latest_items(items: Sequence[Item]) -> list[Item]:
    """One item per id, the last one given."""
    by_id: dict[str, Item] = {}
    for item in items:
        by_id[item.id] = item
    return list(by_id.values())


def batches_of(ids: Sequence[str], size: int, poisoned: Mapping[str, str]) -> list[list[str]]:
    """``ids`` in batches of ``size``; the ids that failed alone before come last, one per batch,
    so they cost no other item a call."""
    fresh = [item_id for item_id in ids if item_id not in poisoned]
    batches = [fresh[start : start + size] for start in range(0, len(fresh), size)]
    return batches + [[item_id] for item_id in ids if item_id in poisoned]


def poisoned_from(saved: str | None) -> dict[str, str]:
    """The ids that failed alone, read from the :data:`POISONED` state (anything unreadable: none)."""
    try:
        found = json.loads(saved) if saved else {}
    except ValueError:
        return {}
    return {str(key): str(value) for key, value in found.items()} if isinstance(found, dict) else {}


def poisoned_to_save(poisoned: Mapping[str, str]) -> str:
    """The :data:`POISONED` state for ``poisoned``, each error cut to :data:`POISONED_ERROR_CHARS`."""
    return json.dumps({key: error[:POISONED_ERROR_CHARS] for key, error in poisoned.items()})

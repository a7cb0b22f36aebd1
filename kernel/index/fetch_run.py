"""Fetching a list of ids in batches and storing each batch in one transaction (ADR 0008).

:class:`FetchRun` is one such run. Three stages overlap: while batch ``n`` is chunked and
embedded, batch ``n + 1`` is being fetched and batch ``n - 1`` is being written (by the store, in
its own thread). Batches are still stored in order, one transaction each, and a batch counts as
done only when its write has committed. A failing batch does not stop the ones after it; two
failing in a row stop the run, and the rest waits for the next sync.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence

import attrs

from passageway.kernel.errors import PassagewayError
from passageway.kernel.index.sync_health import BuildProgress, SourceHealth
from passageway.kernel.records import Item
from passageway.kernel.store import ItemUpdate

Fetch = Callable[[Sequence[str]], Awaitable[list[Item]]]
"""The connector's ``fetch``: the items of some ids."""
Prepare = Callable[[Sequence[Item]], Awaitable[list[ItemUpdate]]]
"""Chunk and embed items into the updates a store applies."""
Write = Callable[[list[ItemUpdate]], Awaitable[None]]
"""Store updates in one transaction."""


@attrs.define
class FetchOutcome:
    """How a run went: its batches, the failed ones, whether it stopped, the first error."""

    batches: int = 0
    failed: int = 0
    stopped: bool = False
    first_error: str | None = None
    stored: int = 0

    def message(self) -> str | None:
        """The failure for health, or None when every batch was stored."""
        if not self.failed:
            return None
        text = f"{self.failed} of {self.batches} fetch batches failed"
        if self.stopped:
            text += " (two in a row: the fetch stopped, the rest waits for the next sync)"
        return f"{text}: {self.first_error}"


@attrs.define
class _Write:
    """A batch's write in flight."""

    index: int
    future: asyncio.Future[None]
    items: int


@attrs.define
class FetchRun:
    """One run over ``batches`` of ids; see the module docstring. Call :meth:`run` once."""

    source: str
    batches: list[list[str]]
    fetch: Fetch
    prepare: Prepare
    write: Write
    health: SourceHealth
    progress: BuildProgress
    log: logging.Logger
    outcome: FetchOutcome = attrs.field(init=False)
    _in_a_row: int = attrs.field(default=0, init=False)
    """Failed batches since the last one stored."""
    _fetching: asyncio.Task[list[Item]] | None = attrs.field(default=None, init=False)
    _writing: _Write | None = attrs.field(default=None, init=False)

    def __attrs_post_init__(self) -> None:
        self.outcome = FetchOutcome(batches=len(self.batches))

    async def run(self) -> FetchOutcome:
        self._fetch_next(0)
        try:
            for index in range(len(self.batches)):
                if await self._step(index):
                    break
            await self._settle_write()
        finally:
            await self._abandon()
        return self.outcome

    async def _step(self, index: int) -> bool:
        """Take batch ``index`` from fetched to writing; True when the run must stop."""
        updates, items, problem = await self._fetched_and_prepared(index)
        if await self._settle_write():
            return True
        if problem is not None:
            if self._failed(index, problem):
                return True
            self._fetch_next(index + 1)  # its fetch may not have started before the failure
            return False
        self._writing = _Write(index, asyncio.ensure_future(self.write(updates)), items)
        return False

    async def _fetched_and_prepared(self, index: int) -> tuple[list[ItemUpdate], int, PassagewayError | None]:
        """Await batch ``index``'s fetch, start the next one, and chunk and embed the items."""
        current, self._fetching = self._fetching, None
        assert current is not None
        try:
            items = await current
            self._fetch_next(index + 1)
            wanted = set(self.batches[index])
            items = [item for item in latest_items(items) if item.id in wanted]
            return await self.prepare(items), len(items), None
        except PassagewayError as error:
            return [], 0, error

    def _fetch_next(self, index: int) -> None:
        if self._fetching is None and index < len(self.batches):
            self._fetching = asyncio.ensure_future(self.fetch(self.batches[index]))

    async def _settle_write(self) -> bool:
        """Wait for the write in flight, if any; True when the run must stop."""
        if self._writing is None:
            return False
        writing, self._writing = self._writing, None
        try:
            await writing.future
        except PassagewayError as error:
            return self._failed(writing.index, error)
        self._in_a_row = 0
        self.outcome.stored += writing.items
        self.progress.advance(len(self.batches[writing.index]))
        return False

    def _failed(self, index: int, error: PassagewayError) -> bool:
        """Count a failed batch; True when it is the second in a row (the run stops)."""
        outcome = self.outcome
        outcome.failed += 1
        self.health.failed_batches = outcome.failed
        self._in_a_row += 1
        outcome.first_error = outcome.first_error or str(error)
        self.log.warning("source %s: fetch batch %d of %d failed: %s",
                         self.source, index + 1, len(self.batches), error)
        self.progress.advance(len(self.batches[index]))
        if self._in_a_row >= 2:
            outcome.stopped = True
        return outcome.stopped

    async def _abandon(self) -> None:
        """Leaving early (stopped or cancelled): cancel the next fetch, let the write end."""
        if self._fetching is not None:
            self._fetching.cancel()
            with contextlib.suppress(BaseException):
                await self._fetching
        if self._writing is not None:
            with contextlib.suppress(BaseException):
                await self._writing.future


def latest_items(items: Sequence[Item]) -> list[Item]:
    """One item per id, the last one given."""
    by_id: dict[str, Item] = {}
    for item in items:
        by_id[item.id] = item
    return list(by_id.values())

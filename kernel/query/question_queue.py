"""The questions' queue in front of the embedder: one at a time, typed questions first.

Recall reduces a long prompt to its question (:mod:`passageway.kernel.query.prompt`), so a pasted
20,000 characters costs about what a one-line question costs. Several recalls at once still
queue for the embedder, which answers one question at a time (the built-in model has one thread
for questions). A one-line question that arrives behind four pastes would wait for all four.

:class:`QuestionQueue` hands the embedder one question at a time and lets a question that was
typed as such go before the ones recall cut out of a longer prompt (those run inside
:func:`yielding`). So a typed question waits for at most the one call under way; a paste's
recall waits for the typed ones, which matters little since the paste's own text is not what the
user waits on. ``bench/long_prompts.py --compare-queue`` measures both ways side by side
(docs/performance.md, "Long prompts"). Batching the waiting questions into one call was tried
and dropped: one call of four questions took 0.63 of four calls, but a typed question then
waited for a whole batch of pastes.

The kernel wraps its embedder for the query path only (``Kernel.recall``); indexing and
``passageway eval`` call the embedder directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import heapq
import itertools
from collections.abc import Iterator, Sequence

import numpy as np

from passageway.kernel.embedder import Embedder, ForwardingEmbedder
from passageway.kernel.records import EmbedKind

_YIELDING: contextvars.ContextVar[bool] = contextvars.ContextVar("passageway_question_yields", default=False)


@contextlib.contextmanager
def yielding() -> Iterator[None]:
    """Within this block, the current task's questions go after typed ones (a reduced prompt's)."""
    token = _YIELDING.set(True)
    try:
        yield
    finally:
        _YIELDING.reset(token)


class QuestionQueue(ForwardingEmbedder):
    """The ``embedder`` recall sees: questions go to the real one one at a time, in order of
    priority (typed first), then of arrival. Everything but :meth:`embed` is the embedder's (its
    name, gate numbers, token count); passages and lists of questions go straight through."""

    def __init__(self, embedder: Embedder) -> None:
        super().__init__(embedder)
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._busy = False
        self.served: list[str] = []
        """The order questions reached the embedder in, for tests (the last 100)."""

    async def embed(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        texts = list(texts)
        if kind != "query" or len(texts) != 1:
            return await self.inner.embed(texts, kind)
        await self._turn(1 if _YIELDING.get() else 0)
        try:
            self.served = [*self.served[-99:], texts[0]]
            return await self.inner.embed(texts, kind)
        finally:
            self._next()

    async def _turn(self, priority: int) -> None:
        """Return when it is this question's turn at the embedder."""
        if not self._busy and not self._waiting:
            self._busy = True
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (priority, next(self._order), future))
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._next()  # it was this question's turn: pass it on
            raise

    def _next(self) -> None:
        """The embedder is free: wake the first waiting question that still waits."""
        while self._waiting:
            _, _, future = heapq.heappop(self._waiting)
            if not future.done():
                future.set_result(None)
                return
        self._busy = False

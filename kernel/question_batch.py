"""Questions that wait together are embedded together.

An embedder answers questions one call at a time (the built-in model runs them on one thread of
its own). When several recalls arrive at once, say four long prompts from the hook and a question
from an MCP client, each would wait for every call ahead of it. :class:`QuestionBatcher` instead
sends every question that is waiting when the embedder becomes free in one call: a short question
then waits for at most the call under way and its own, however many came before it. One call of a
few questions costs little more than a call of one, since the model's weights are read once per
call (``bench/long_prompts.py`` measures both ways side by side; numbers in
``docs/performance.md``).

The kernel wraps its embedder for the query path only (``Kernel.recall``); indexing and
``passageway eval`` call the embedder directly.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import numpy as np

MAX_BATCH = 16
"""At most this many questions in one call; more wait for the next."""


class QuestionBatcher:
    """The ``embedder`` seen by recall: one question at a time in, batched calls out.

    Everything but :meth:`embed` is the wrapped embedder's (its name, gate numbers, token count).
    A call of several texts, or of passages, goes straight through.
    """

    def __init__(self, embedder: Any, max_batch: int = MAX_BATCH) -> None:
        self._embedder = embedder
        self._max_batch = max_batch
        self._waiting: list[tuple[str, asyncio.Future[np.ndarray]]] = []
        self._draining: asyncio.Task[None] | None = None
        self.calls = 0
        """Embedder calls made for questions (tests and the benchmark read it)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)

    async def embed(self, texts: Any, kind: str) -> np.ndarray:
        texts = list(texts)
        if kind != "query" or len(texts) != 1:
            return await self._embedder.embed(texts, kind)  # type: ignore[no-any-return]
        future: asyncio.Future[np.ndarray] = asyncio.get_running_loop().create_future()
        self._waiting.append((texts[0], future))
        if self._draining is None or self._draining.done():
            self._draining = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        """Embed what waits, in calls of at most ``max_batch``, until nothing does."""
        while self._waiting:
            batch, self._waiting = self._waiting[: self._max_batch], self._waiting[self._max_batch :]
            batch = [(text, future) for text, future in batch if not future.done()]  # cancelled
            if not batch:
                continue
            self.calls += 1
            try:
                vectors = np.asarray(
                    await self._embedder.embed([text for text, _ in batch], "query"), dtype=np.float32
                )
                if vectors.ndim != 2 or vectors.shape[0] != len(batch):
                    raise ValueError(
                        f"the embedder returned an array of shape {vectors.shape} for {len(batch)} questions"
                    )
            except asyncio.CancelledError:
                for _, future in batch:
                    future.cancel()
                raise
            except Exception as error:  # every waiting recall gets the embedder's error
                for _, future in batch:
                    if not future.done():
                        future.set_exception(error)
                continue
            for (_, future), vector in zip(batch, vectors, strict=True):
                if not future.done():
                    future.set_result(vector.reshape(1, -1))

    async def close(self) -> None:
        """Stop a drain under way (the server is closing); waiting recalls are cancelled."""
        task, self._draining = self._draining, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for _, future in self._waiting:
            future.cancel()
        self._waiting = []

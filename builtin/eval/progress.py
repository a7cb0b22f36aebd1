"""The progress of ``passageway eval`` on a terminal: a bar while the index builds and while it asks.

Off a terminal nothing changes: the engine's progress lines go to stderr as before. On a
terminal the bar replaces the repeated "indexing …" lines; every other line is still printed.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from typing import Any

from passageway.kernel.progress import ProgressBar, watch_build


class EvalProgress:
    """One bar for one ``eval`` run."""

    def __init__(self, bar: ProgressBar | None = None) -> None:
        self.bar = bar or ProgressBar()

    def line(self, message: str) -> None:
        """The engine's ``progress`` callback."""
        if self.bar.enabled and message.startswith("eval: indexing"):
            return  # the bar shows the same numbers
        self.bar.clear()
        print(message, file=sys.stderr, flush=True)

    async def build(self, engine: Any) -> Any:
        """``engine.build()`` with the bar drawn from the kernel's health while it runs."""
        health = lambda: engine.kernel.health(include_errors=False)  # noqa: E731
        watcher = asyncio.ensure_future(watch_build(health, self.bar))
        try:
            return await engine.build()
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)

    def asking(self, engine: Any, cases: Sequence[Any], threshold: float, sweep: Sequence[float]) -> Any:
        """``engine`` counting its questions on the bar (the warm-up question of each run included)."""
        runs = 1 + sum(round(value, 6) != round(threshold, 6) for value in sweep)
        return _CountingEngine(engine, self.bar, runs * (len(cases) + 1))


class _CountingEngine:
    """Passes everything to ``engine``; each ``ask`` moves the bar one step."""

    def __init__(self, engine: Any, bar: ProgressBar, total: int) -> None:
        self._engine, self._bar, self._total, self._done = engine, bar, total, 0

    async def ask(self, *args: Any, **kwargs: Any) -> Any:
        reply = await self._engine.ask(*args, **kwargs)
        self._done += 1
        self._bar.update("asking", self._done, self._total, "questions")
        if self._done >= self._total:
            self._bar.clear()
        return reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

"""Waiting for something to have happened, instead of sleeping for a time and hoping it did.

A test that sleeps 0.2 s so that a task, a server or a subprocess gets somewhere fails on a busy
machine, where 0.2 s may not be enough for anything (issue 36). :func:`until` checks the condition
itself, often, and gives up only after a bound no healthy run comes near: it decides nothing on
a quiet machine and lets a broken behaviour fail instead of hanging the suite.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable

WAIT_SECONDS = 60.0
"""How long :func:`until` waits by default: minutes of margin over a loaded run's few seconds."""


async def until(condition: Callable[[], bool | Awaitable[bool]], what: str,
                timeout: float = WAIT_SECONDS) -> None:
    """Return once ``condition()`` (a function, or a coroutine function) is true; checked every
    20 ms, on the running loop, so tasks and servers on the loop go on meanwhile. After ``timeout``
    seconds, fail the test, saying ``what`` it waited for."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = condition()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        if loop.time() >= deadline:
            raise AssertionError(f"gave up after {timeout:g} s waiting until {what}")
        await asyncio.sleep(0.02)

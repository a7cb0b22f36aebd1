"""Waiting for something to have happened, instead of sleeping for a time and hoping it did.

A test that sleeps 0.2 s so that a task, a server or a subprocess gets somewhere fails on a busy
machine, where 0.2 s may not be enough for anything (issue 36). :func:`until` checks the condition
itself, often, and gives up only after a bound no healthy run comes near: it decides nothing on
a quiet machine and lets a broken behaviour fail instead of hanging the suite.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

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


HELD_CONNECTOR = '''
import os, runpy, sys, time
if sys.argv[1] == os.environ["HOLD_MODE"]:  # this call waits until the test lets it go
    while not os.path.exists(os.environ["HOLD_UNTIL"]):
        time.sleep(0.02)
runpy.run_module("passageway.testing.fake_connector", run_name="__main__")
'''


def hold_connector(config: Path, mode: str) -> Path:
    """Make the fake connector of the configuration file ``config`` wait at each ``mode`` call
    (``list``, ``fetch``) until the returned file exists: a build held at a known point, where a
    connector's ``FAKE_SLEEP`` only makes that point likely."""
    hold, script = config.with_name(f"hold-{mode}"), config.with_name(f"held_{mode}.py")
    script.write_text(HELD_CONNECTOR, encoding="utf-8")
    text = config.read_text(encoding="utf-8")
    text = text.replace('"-m", "passageway.testing.fake_connector"]', f"{json.dumps(str(script))}]")
    text = text.replace("env = { ", f"env = {{ HOLD_MODE = {json.dumps(mode)}, "
                                    f"HOLD_UNTIL = {json.dumps(str(hold))}, ")
    text = text.replace("timeout = 30\n", "timeout = 600\n")  # the wait counts towards the timeout
    assert str(script) in text and "HOLD_UNTIL" in text, text
    config.write_text(text, encoding="utf-8")
    return hold

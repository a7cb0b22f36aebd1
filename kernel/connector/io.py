"""A connector call's pipes: stdin fed, stderr forwarded to the log with every secret masked,
lines quoted in errors, and the process group ended.

stderr goes to the logger line by line, with every secret value replaced by ``***``; a very long
line is cut, and after :data:`STDERR_MAX_LINES` lines a call's stderr is only counted. What one
call did, raw and unmasked, is a :class:`CallTrace`, kept only where an observer (the contract
check) asks for it.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
from collections.abc import Callable, Iterable

import attrs

from passageway.kernel.connector.processes import close_pipes, kill_tree
from passageway.kernel.errors import ConnectorError

READ_CHUNK = 64 * 1024
EXCERPT_CHARS = 120
STDERR_CUT_BYTES = 8 * 1024  # a longer stderr line is cut and the rest of it dropped
STDERR_SHOWN_BYTES = 2000
STDERR_MAX_LINES = 1000  # per call; the rest is counted, not logged
STDERR_QUOTED_CHARS = 300
KILL_GRACE_SECONDS = 5.0
MASK = "***"


LOGGER = logging.getLogger("passageway.connector")


@attrs.define
class CallTrace:
    """What one call did, raw and unmasked: handed to an ``observer`` (the contract check).

    The server never sets an observer, so raw output is only kept where a test asks for it.
    """

    mode: str
    arguments: tuple[str, ...]
    stdout_lines: builtins.list[bytes] = attrs.field(factory=builtins.list)
    stderr_lines: builtins.list[bytes] = attrs.field(factory=builtins.list)
    exit_code: int | None = None
    secrets_masked: int = 0
    error: ConnectorError | None = None
    seconds: float = 0.0
    last_stderr: str = ""
    """The last non-blank stderr line, masked and cut: quoted in the error of a failed call."""
    not_unicode: builtins.list[str] = attrs.field(factory=builtins.list)
    """One note per line whose JSON held a lone surrogate escape (``"\\ud800"``): text that is not
    Unicode. Such text is repaired and the item kept; an id is refused with its line alone."""


class Masker:
    """Replaces every secret value with ``***``, longest first so that overlapping ones go too."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = sorted({value for value in secrets if value}, key=len, reverse=True)
        self.masked = 0

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                self.masked += text.count(secret)
                text = text.replace(secret, MASK)
        return text

    def cut(self, text: str) -> str:
        """Mask ``text`` whose end was cut off: a secret's first characters at the end go too."""
        text = self(text)
        for secret in self.secrets:
            for length in range(len(secret) - 1, 0, -1):
                if text.endswith(secret[:length]):
                    text = text[:-length] + MASK
                    break
        return text


async def forward_stderr(
    stream: asyncio.StreamReader | None, masker: Masker, trace: CallTrace,
    log: Callable[[str], None], keep_raw: bool,
) -> None:
    """Log stderr line by line with ``log``, masked; cut very long lines and stop logging after
    many. ``keep_raw`` keeps every raw line in ``trace`` (for an observer)."""
    if stream is None:
        return
    buffer = bytearray()
    dropping = False  # the rest of a line that was too long to log
    logged = 0
    unlogged = 0

    def forward(text: str) -> None:
        nonlocal logged, unlogged
        text = text.rstrip("\r")
        if not text.strip():
            return
        if logged >= STDERR_MAX_LINES:
            trace.last_stderr = text[:STDERR_QUOTED_CHARS]
            unlogged += 1
            return
        trace.last_stderr = text[:STDERR_QUOTED_CHARS]
        logged += 1
        log(text)

    while chunk := await stream.read(READ_CHUNK):
        buffer += chunk
        while (end := buffer.find(b"\n")) >= 0:
            line = bytes(buffer[:end])
            del buffer[: end + 1]
            if keep_raw:
                trace.stderr_lines.append(line)
            if dropping:
                dropping = False
            elif len(line) > STDERR_CUT_BYTES:
                # A long line that arrived whole in one chunk is cut like one that did not.
                text = masker.cut(line[:STDERR_CUT_BYTES].decode("utf-8", "replace"))
                masker(line[STDERR_CUT_BYTES:].decode("utf-8", "replace"))  # count its secrets
                forward(text[:STDERR_SHOWN_BYTES] + " [line cut]")
            else:
                # Masking every line, logged or not, keeps the count of leaked secrets right.
                forward(masker(line.decode("utf-8", "replace")))
        if len(buffer) > STDERR_CUT_BYTES:
            if keep_raw:
                trace.stderr_lines.append(bytes(buffer))
            if not dropping:
                text = masker.cut(buffer.decode("utf-8", "replace"))
                forward(text[:STDERR_SHOWN_BYTES] + " [line cut]")
            dropping = True
            buffer.clear()
    if buffer:
        if keep_raw:
            trace.stderr_lines.append(bytes(buffer))
        if not dropping:
            forward(masker(buffer.decode("utf-8", "replace")))
    if unlogged:
        log(f"{unlogged} more stderr lines were not logged")


def stderr_note(trace: CallTrace) -> str:
    if not trace.last_stderr:
        return " (it printed nothing on stderr)"
    return f"; its last line on stderr: {trace.last_stderr}"


def excerpt(line: bytes, masker: Masker) -> str:
    text = line[: EXCERPT_CHARS * 4].decode("utf-8", "replace")
    cut = len(text) > EXCERPT_CHARS or len(line) > EXCERPT_CHARS * 4
    text = masker.cut(text) if cut else masker(text)
    if len(text) > EXCERPT_CHARS:
        text = text[:EXCERPT_CHARS]
    return repr(text + ("…" if cut else ""))


async def feed(stream: asyncio.StreamWriter, data: bytes) -> None:
    """Write the request lines and close stdin; a connector may exit without reading them."""
    try:
        stream.write(data)
        await stream.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        stream.close()


async def kill_group(process: asyncio.subprocess.Process) -> None:
    """SIGKILL the connector's whole process group (its session) and every process below it that
    left the group (``setsid``), then reap the leader.

    A process that left the group *and* whose parent already exited (a daemon's double fork)
    belongs to init and cannot be told apart from any other; it survives, and the warning below
    names the connector.
    """
    await asyncio.to_thread(kill_tree, process.pid)
    try:
        async with asyncio.timeout(KILL_GRACE_SECONDS):
            await process.wait()
    except TimeoutError:
        # The group is dead, but a process that started a session of its own still holds the
        # pipes open; finish closes our ends.
        LOGGER.warning(
            "connector process %d: a process it started outside its process group still holds its "
            "output open; passageway closed its end", process.pid,
        )


async def finish(
    process: asyncio.subprocess.Process,
    stderr_task: asyncio.Task[None],
    stdin_task: asyncio.Task[None] | None,
) -> None:
    """Drain and close the pipes so that no transport or task outlives the call."""
    if process.returncode is not None and process.stdout is not None:
        # After the group is gone the pipes reach their end quickly; drain what is left.
        try:
            async with asyncio.timeout(1.0):
                while await process.stdout.read(READ_CHUNK):
                    pass
        except TimeoutError:
            pass
    tasks = {task for task in (stderr_task, stdin_task) if task is not None}
    _done, running = await asyncio.wait(tasks, timeout=1.0)
    for task in running:
        task.cancel()
    if running:
        await asyncio.wait(running)
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            LOGGER.debug("connector pipe task failed: %r", task.exception())
    # A process that left the group (setsid) could still hold a pipe open; close our ends.
    close_pipes(process)

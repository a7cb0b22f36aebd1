"""The one driver of child programs: connectors (one process per call) and command embedders (one
long-lived process).

:meth:`Program.spawn` starts a program in a session of its own (``start_new_session=True``) with
exactly the environment it is given, so one ``killpg`` reaches everything it started. Its stderr
is read in the background by :class:`Stderr`: line by line, every secret value replaced by
``***`` (:class:`Masker`), a very long line cut, each line logged (up to a limit per program),
and the last lines kept to quote in an error. :meth:`Program.kill` ends the program with its
whole process group and whatever left the group
(:func:`passageway.kernel.program.processes.kill_tree`); :meth:`Program.finish` drains and
closes the pipes so that no task or transport outlives the program.
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence

from passageway.kernel.program.processes import MARKER_VARIABLE, close_pipes, kill_tree

READ_CHUNK = 64 * 1024
STDERR_CUT_BYTES = 8 * 1024  # a longer stderr line is cut and the rest of it dropped
STDERR_SHOWN_BYTES = 2000
STDERR_QUOTED_CHARS = 300
KILL_GRACE_SECONDS = 5.0
MASK = "***"

LOGGER = logging.getLogger("passageway.program")


class Masker:
    """Replaces every secret value with ``***``, longest first so that overlapping ones go too;
    :attr:`masked` counts the replacements (a program that prints its secrets is warned about)."""

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


class Stderr:
    """A program's stderr: each non-blank line masked, logged with ``log`` and kept in
    :attr:`tail` (the last ``tail_lines``, each cut to :data:`STDERR_QUOTED_CHARS`).

    After ``max_logged`` lines (None: no limit) the rest is only counted, and one line says how
    many were not logged. ``keep_raw`` keeps every raw, unmasked line in :attr:`raw` (for the
    contract check only: the server never keeps them).
    """

    def __init__(
        self, masker: Masker, log: Callable[[str], None], *, tail_lines: int = 1,
        max_logged: int | None = None, keep_raw: bool = False,
    ) -> None:
        self.masker = masker
        self.log = log
        self.tail: collections.deque[str] = collections.deque(maxlen=tail_lines)
        self.max_logged = max_logged
        self.keep_raw = keep_raw
        self.raw: builtins.list[bytes] = []
        self._logged = 0
        self._unlogged = 0

    @property
    def last(self) -> str:
        """The last non-blank line, masked and cut ("" when there was none)."""
        return self.tail[-1] if self.tail else ""

    def _forward(self, text: str) -> None:
        text = text.rstrip("\r")
        if not text.strip():
            return
        self.tail.append(text[:STDERR_QUOTED_CHARS])
        if self.max_logged is not None and self._logged >= self.max_logged:
            self._unlogged += 1
            return
        self._logged += 1
        self.log(text)

    async def read(self, stream: asyncio.StreamReader | None) -> None:
        """Read ``stream`` to its end (the program's stderr)."""
        if stream is None:
            return
        buffer = bytearray()
        dropping = False  # the rest of a line that was too long to log
        while chunk := await stream.read(READ_CHUNK):
            buffer += chunk
            while (end := buffer.find(b"\n")) >= 0:
                line = bytes(buffer[:end])
                del buffer[: end + 1]
                if self.keep_raw:
                    self.raw.append(line)
                if dropping:
                    dropping = False
                elif len(line) > STDERR_CUT_BYTES:
                    # A long line that arrived whole in one chunk is cut like one that did not.
                    text = self.masker.cut(line[:STDERR_CUT_BYTES].decode("utf-8", "replace"))
                    self.masker(line[STDERR_CUT_BYTES:].decode("utf-8", "replace"))  # count its secrets
                    self._forward(text[:STDERR_SHOWN_BYTES] + " [line cut]")
                else:
                    # Masking every line, logged or not, keeps the count of leaked secrets right.
                    self._forward(self.masker(line.decode("utf-8", "replace")))
            if len(buffer) > STDERR_CUT_BYTES:
                if self.keep_raw:
                    self.raw.append(bytes(buffer))
                if not dropping:
                    text = self.masker.cut(buffer.decode("utf-8", "replace"))
                    self._forward(text[:STDERR_SHOWN_BYTES] + " [line cut]")
                dropping = True
                buffer.clear()
        if buffer:
            if self.keep_raw:
                self.raw.append(bytes(buffer))
            if not dropping:
                self._forward(self.masker(buffer.decode("utf-8", "replace")))
        if self._unlogged:
            self.log(f"{self._unlogged} more stderr lines were not logged")
            self._unlogged = 0


class Program:
    """One running child program, its stderr read in the background (:attr:`stderr`)."""

    def __init__(self, process: asyncio.subprocess.Process, stderr: Stderr, label: str,
                 marker: str | None = None) -> None:
        self.process = process
        self.stderr = stderr
        self.label = label
        self.marker = marker
        self._stderr_task = asyncio.create_task(stderr.read(process.stderr))

    @classmethod
    async def spawn(
        cls, command: Sequence[str], environment: Mapping[str, str], stderr: Stderr, *,
        stdin: bool = True, limit: int | None = None, label: str = "program", marker: str | None = None,
    ) -> Program:
        """Start ``command`` with exactly ``environment``, in a session of its own; with a
        ``marker``, also :data:`~passageway.kernel.program.processes.MARKER_VARIABLE` set to it,
        which every process it starts inherits, so that :meth:`kill` finds a daemon's double fork.

        :raises OSError: the program cannot be started (the caller says which setting to fix).
        """
        options = {} if limit is None else {"limit": limit}
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**environment, MARKER_VARIABLE: marker} if marker else dict(environment),
            start_new_session=True,
            **options,  # type: ignore[arg-type]
        )
        return cls(process, stderr, label, marker)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def running(self) -> bool:
        return self.process.returncode is None

    async def stderr_done(self, within: float | None = None) -> None:
        """Wait until stderr is read to its end (at most ``within`` seconds, then stop reading)."""
        task = self._stderr_task
        if within is None:
            await task
            return
        _done, running = await asyncio.wait({task}, timeout=within)
        for pending in running:
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pending

    def kill_now(self) -> int:
        """SIGKILL the program, its process group, whatever left the group and whatever carries
        its marker; how many processes besides the program were found. Blocking (it reads
        ``/proc``): from a running event loop, use :meth:`kill`."""
        found = kill_tree(self.process.pid, self.marker)
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        return found

    async def kill(self, grace: float = KILL_GRACE_SECONDS, *, wait: bool = True) -> int:
        """SIGKILL the program with everything it started, then reap it; returns how many processes
        besides the program were found (unless not ``wait``:
        asyncio's ``wait()`` also waits for the output pipes, which a daemon may hold; then call
        :meth:`finish` first, which closes them).

        A process that left the group *and* whose parent already exited (a daemon's double fork)
        belongs to init and cannot be told apart from any other; it survives, may hold the pipes
        open, and :meth:`finish` closes our ends.
        """
        found = await asyncio.to_thread(self.kill_now)
        if not wait:
            return found
        # wait() also waits for stdout to reach its end: what the program printed and no one read
        # (a caller that stopped at a limit) would hold it until the grace ran out. It is dropped.
        drain = asyncio.create_task(self._drop_stdout())
        try:
            async with asyncio.timeout(grace):
                await self.process.wait()
        except TimeoutError:
            LOGGER.warning(
                "%s (process %d): a process it started outside its process group still holds its "
                "output open; passageway closed its end", self.label, self.process.pid,
            )
        finally:
            drain.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await drain
        return found

    async def _drop_stdout(self) -> None:
        """Read the program's stdout to its end and drop it (after a kill: nothing is kept)."""
        stdout = self.process.stdout
        if stdout is None:
            return
        with contextlib.suppress(Exception):  # another reader, or a pipe already closed
            while await stdout.read(READ_CHUNK):
                pass

    async def finish(self, *others: asyncio.Task[None] | None) -> None:
        """Drain and close the pipes, and end the stderr reader and ``others`` (tasks that feed
        the program), so that none outlives the program."""
        process = self.process
        if process.returncode is not None and process.stdout is not None:
            # After the group is gone the pipes reach their end quickly; drain what is left.
            with contextlib.suppress(TimeoutError, ValueError):
                async with asyncio.timeout(1.0):
                    while await process.stdout.read(READ_CHUNK):
                        pass
        tasks = {task for task in (self._stderr_task, *others) if task is not None}
        _done, running = await asyncio.wait(tasks, timeout=1.0)
        for task in running:
            task.cancel()
        if running:
            await asyncio.wait(running)
        for task in tasks:
            if not task.cancelled() and task.exception() is not None:
                LOGGER.debug("%s: a pipe task failed: %r", self.label, task.exception())
        # A process that left the group (setsid) could still hold a pipe open; close our ends.
        close_pipes(process)
        await asyncio.sleep(0)  # let the pipes' closing callbacks run while the loop does

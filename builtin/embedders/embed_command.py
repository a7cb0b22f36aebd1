"""The client for command embedders: one long-lived program speaking the embedder protocol.

The core writes one JSON request per line to the program's stdin and reads exactly one reply
line from its stdout (``docs/embedder-protocol.md``). :class:`CommandEmbedder` keeps the program
running between calls, splits long lists into ``batch_size`` requests, kills the whole process
group when a request exceeds ``timeout``, restarts a dead program at most once per call, refuses
a program whose name or dimension changes after a restart, and normalises the vectors.

Its methods are coroutines, as the :class:`~passageway.kernel.embedder.Embedder` protocol asks;
a program started on one event loop cannot be driven from another. Plain (synchronous) code wraps
it in :class:`passageway.testing.blocking.BlockingEmbedder`, which runs every call on one private
loop::

    with BlockingEmbedder(CommandEmbedder("mine", [sys.executable, "my_embedder.py"])) as embedder:
        vectors = embedder.embed(["Lighthouses guide ships."], "passage")
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from passageway.kernel.embedder import BaseEmbedder
from passageway.kernel.errors import EmbedderError
from passageway.kernel.program.driver import Masker, Program, Stderr
from passageway.kernel.records import PROTOCOL_VERSION, validate_embedder_message

STDERR_TAIL_LINES = 20
MAX_REPLY_BYTES = 256 * 1024 * 1024
CLOSE_GRACE_SECONDS = 2.0


class _ProgramDied(Exception):
    """The program's stdout ended: it exited or crashed while (or before) answering."""


class CommandEmbedder(BaseEmbedder):
    """An embedder program run as one long-lived process.

    :param name: a label for messages (the ``[embedder]`` table or your test); the model's own name
        comes from the program's ``info`` reply and is :attr:`name` after :meth:`start`.
    :param command: the program and its arguments.
    :param env: variables for the program, on top of ``PATH``, ``HOME`` and ``PASSAGEWAY_PROTOCOL=1``.
    :param secrets: resolved secret values (variable name → value); passed like ``env`` and masked
        in every message and log line.
    :param batch_size: at most this many texts per request.
    :param timeout: seconds per request, the first ``info`` included.
    :param min_similarity: the relevance gate; None gives the built-in model's value.
    :param cross_language_offset: how much lower the gate is for a passage in another language
        than the question (0 to 1); None gives 0, no lower bar, because the built-in model's
        offset belongs to its cosine scale and says nothing about another model's.
    :param environ: where ``PATH`` and ``HOME`` come from (default: this process's environment).
    """

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        env: Mapping[str, str] | None = None,
        secrets: Mapping[str, str] | None = None,
        batch_size: int = 32,
        timeout: float = 60.0,
        *,
        min_similarity: float | None = None,
        cross_language_offset: float | None = None,
        environ: Mapping[str, str] | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        if not command:
            raise EmbedderError(f"embedder {name!r}: `command` is empty")
        if not 1 <= batch_size <= 1024:
            raise EmbedderError(f"embedder {name!r}: batch_size is from 1 to 1024, got {batch_size}")
        from passageway.builtin.embedders.models import DEFAULT_MIN_SIMILARITY

        self.label = name
        self.command = tuple(command)
        self.env = dict(env or {})
        self.secrets = dict(secrets or {})
        self.batch_size = batch_size
        self.timeout = float(timeout)
        self.min_similarity = DEFAULT_MIN_SIMILARITY if min_similarity is None else float(min_similarity)
        self.cross_language_offset = 0.0 if cross_language_offset is None else float(cross_language_offset)
        if not 0.0 <= self.cross_language_offset <= 1.0:
            raise EmbedderError(
                f"embedder {name!r}: cross_language_offset is from 0 to 1, got {cross_language_offset}"
            )
        self._environ = os.environ if environ is None else environ
        self._log = logger or logging.getLogger("passageway.embedder")
        self._program: Program | None = None
        self._masker = Masker(self.secrets.values())
        self._stderr: Stderr | None = None
        """The last program's stderr, kept after it stopped to quote in an error."""
        self._identity: tuple[str, int] | None = None
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.starts = 0
        """How many times the program was started (for tests and health)."""

    # -----------------------------------------------------------------------------------------
    # The Embedder protocol
    # -----------------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        if self._identity is None:
            raise EmbedderError(f"embedder {self.label!r} has not been started")
        return self._identity[0]

    @property
    def dim(self) -> int:
        if self._identity is None:
            raise EmbedderError(f"embedder {self.label!r} has not been started")
        return self._identity[1]

    @property
    def pid(self) -> int | None:
        """The running program's process id, or None."""
        program = self._program
        return program.pid if program is not None and program.running else None

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            if self._program is not None and self._program.running:
                raise EmbedderError(
                    f"embedder {self.label!r} was started on another event loop; "
                    "use one CommandEmbedder per loop"
                )
            self._loop = loop
            self._lock = asyncio.Lock()

    # -----------------------------------------------------------------------------------------
    # Calls
    # -----------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the program and ask for its name and dimension (idempotent)."""
        self._bind_loop()
        assert self._lock is not None
        async with self._lock:
            if self._running():
                return
            restarted = False
            while True:
                try:
                    await self._spawn()
                    return
                except _ProgramDied:
                    if restarted:
                        raise self._died_error("while starting") from None
                    restarted = True

    async def embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        """``(len(texts), dim)`` float32 unit rows, in order."""
        texts = list(texts)
        if kind not in ("query", "passage"):
            raise EmbedderError(f"embedder {self.label!r}: kind is query or passage, got {kind!r}")
        if not texts:
            return np.zeros((0, self._identity[1] if self._identity else 0), dtype=np.float32)
        self._bind_loop()
        assert self._lock is not None
        async with self._lock:
            restarted = False
            parts = []
            for start in range(0, len(texts), self.batch_size):
                batch = texts[start : start + self.batch_size]
                while True:
                    try:
                        if not self._running():
                            if self._program is not None:
                                # Found dead since the last call: this start is the one restart.
                                if restarted:
                                    raise self._died_error("after a restart")
                                restarted = True
                            await self._spawn()
                        parts.append(await self._embed_batch(batch, kind))
                        break
                    except _ProgramDied:
                        if restarted:
                            raise self._died_error("again after a restart") from None
                        restarted = True
                        await self._stop()
            return np.concatenate(parts, axis=0)

    async def close(self) -> None:
        """Stop the program; a closed embedder starts it again when used."""
        program, self._program = self._program, None
        if program is None:
            return
        if self._loop is not asyncio.get_running_loop():
            # The loop that owns the program is gone (a test's loop); kill it directly.
            program.kill_now()
            return
        if program.running:
            if program.process.stdin is not None:
                with contextlib.suppress(Exception):
                    program.process.stdin.close()
            try:
                await asyncio.wait_for(program.process.wait(), CLOSE_GRACE_SECONDS)
            except TimeoutError:
                await program.kill()
        await program.finish()

    # -----------------------------------------------------------------------------------------
    # The process (driven by passageway.kernel.program.driver, as connectors are)
    # -----------------------------------------------------------------------------------------

    def _running(self) -> bool:
        program = self._program
        return program is not None and program.running and not (
            program.process.stdout is not None and program.process.stdout.at_eof()
        )

    def _child_environment(self) -> dict[str, str]:
        environment = {key: self._environ[key] for key in ("PATH", "HOME") if key in self._environ}
        environment["PASSAGEWAY_PROTOCOL"] = PROTOCOL_VERSION
        environment.update(self.env)
        environment.update(self.secrets)
        return environment

    async def _spawn(self) -> None:
        if self._program is not None:
            await self._stop()
        self._stderr = Stderr(self._masker, self._log_stderr, tail_lines=STDERR_TAIL_LINES)
        try:
            self._program = await Program.spawn(self.command, self._child_environment(), self._stderr,
                                                limit=MAX_REPLY_BYTES, label=f"embedder {self.label!r}")
        except OSError as error:
            raise EmbedderError(
                f"embedder {self.label!r}: cannot start {self.command[0]} ({error.strerror or error}); "
                "check `command` (an absolute path to the interpreter is safest)"
            ) from None
        self.starts += 1
        reply = await self._request({"op": "info"}, expect="infoReply")
        protocol = reply.get("protocol", PROTOCOL_VERSION)
        if protocol != PROTOCOL_VERSION:
            await self._stop()
            raise EmbedderError(
                f"embedder {self.label!r} speaks protocol {protocol!r}; "
                f"this passageway speaks {PROTOCOL_VERSION!r}"
            )
        identity = (reply["name"], int(reply["dim"]))
        if self._identity is not None and identity != self._identity:
            await self._stop()
            raise EmbedderError(
                f"embedder {self.label!r} answered as {identity[0]!r} with {identity[1]} dimensions after a "
                f"restart, but it started as {self._identity[0]!r} with {self._identity[1]}; the index "
                "cannot mix models. Restart passageway after changing the model"
            )
        self._identity = identity

    async def _embed_batch(self, texts: list[str], kind: str) -> np.ndarray:
        reply = await self._request({"op": "embed", "kind": kind, "texts": texts}, expect="embedReply")
        assert self._identity is not None
        name, dim = self._identity
        vectors = reply["vectors"]
        if len(vectors) != len(texts) or any(len(vector) != dim for vector in vectors):
            await self._stop()
            lengths = sorted({len(vector) for vector in vectors})
            raise EmbedderError(
                f"embedder {self.label!r} ({name}) answered {len(vectors)} vectors of length "
                f"{', '.join(map(str, lengths)) or '-'} for {len(texts)} texts of {dim} dimensions; "
                "the program was stopped"
            )
        matrix = np.asarray(vectors, dtype=np.float64)
        if not np.isfinite(matrix).all():
            raise EmbedderError(
                f"embedder {self.label!r} ({name}) answered a vector with a non-finite number"
            )
        norms = np.linalg.norm(matrix, axis=1)
        if (norms == 0).any():
            raise EmbedderError(
                f"embedder {self.label!r} ({name}) answered a vector of zero length for text "
                f"{int(np.argmin(norms)) + 1} of {len(texts)}; every text needs a direction"
            )
        return (matrix / norms[:, None]).astype(np.float32)

    async def _request(self, message: dict[str, Any], *, expect: str) -> dict[str, Any]:
        assert self._program is not None
        process = self._program.process
        assert process.stdin is not None and process.stdout is not None
        line = (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            async with asyncio.timeout(self.timeout):
                try:
                    process.stdin.write(line)
                    await process.stdin.drain()
                except (BrokenPipeError, ConnectionResetError):
                    raise _ProgramDied from None
                answer = await process.stdout.readline()
        except TimeoutError:
            await self._stop()
            raise EmbedderError(
                f"embedder {self.label!r} did not answer {message['op']!r} within {self.timeout:g} seconds "
                f"and was stopped; the next call starts it again. {self._tail_text()}"
                + (" A model that loads slowly needs a larger `timeout`." if message["op"] == "info" else "")
            ) from None
        except ValueError:  # a line longer than the stream limit
            await self._stop()
            raise EmbedderError(
                f"embedder {self.label!r} printed a line longer than {MAX_REPLY_BYTES} bytes"
            ) from None
        if not answer:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 2.0)
            await self._program.stderr_done(within=1.0)
            raise _ProgramDied
        try:
            reply = json.loads(answer)
        except ValueError:
            await self._stop()
            raise EmbedderError(
                f"embedder {self.label!r} printed a line on stdout that is not a JSON reply "
                f"({self._mask(answer[:120].decode('utf-8', 'replace')).strip()!r}); "
                "the program was stopped. "
                "Log to stderr, never stdout"
            ) from None
        is_error = isinstance(reply, dict) and "error" in reply
        if is_error and not validate_embedder_message("errorReply", reply):
            raise EmbedderError(f"embedder {self.label!r} failed: {self._mask(reply['error'])}")
        problems = validate_embedder_message(expect, reply)
        if problems:
            await self._stop()
            raise EmbedderError(
                f"embedder {self.label!r} answered {message['op']!r} with a reply of the wrong shape "
                f"({self._mask('; '.join(problems[:3]))}); the program was stopped"
            )
        return reply

    def _log_stderr(self, text: str) -> None:
        self._log.info("embedder %s: %s", self.label, text)

    async def _stop(self) -> None:
        program = self._program
        if program is None:
            return
        if program.running:
            await program.kill(wait=False)
        # Closing the pipes first: wait() also waits for the output pipes to close, which a
        # daemon the program started can hold open.
        await program.finish()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(program.process.wait(), 5.0)
        # Stopped on purpose: the next call starts it afresh, which is not a restart.
        self._program = None

    # -----------------------------------------------------------------------------------------
    # Messages
    # -----------------------------------------------------------------------------------------

    def _mask(self, text: str) -> str:
        return self._masker(text)

    def _tail_text(self) -> str:
        tail = self._stderr.tail if self._stderr is not None else ()
        if not tail:
            return "It wrote nothing to stderr."
        return "Its last stderr lines: " + " | ".join(tail)

    def _died_error(self, when: str) -> EmbedderError:
        program = self._program
        code = program.process.returncode if program is not None else None
        status = f"exit status {code}" if code is not None and code >= 0 else (
            f"signal {-code}" if code is not None else "no exit status"
        )
        return EmbedderError(
            f"embedder {self.label!r} ({' '.join(self.command[:2])}) died {when} ({status}). "
            f"{self._tail_text()}"
        )

    def __repr__(self) -> str:
        return f"CommandEmbedder({self.label!r}, pid={self.pid})"

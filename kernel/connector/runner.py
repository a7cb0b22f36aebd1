"""One connector call: start the program, read its JSON Lines, keep everything or nothing.

A connector is any executable. For each call the kernel runs ``<command> <mode> [arguments]``
with an environment that holds only ``PATH`` and ``HOME`` (from the server's environment),
``PASSAGEWAY_PROTOCOL=1``, the connector's ``env`` table and the values of the secrets it names.
The program starts a session of its own, so a timeout can kill it together with every child it
started; ``PASSAGEWAY_CALL``, a random value per call in its environment, finds a daemon that left
the session too. Whatever a call started ends with the call, also when it succeeded.

stdout is read in chunks while the program runs. Each line must be one JSON object that is valid
against the schema definition of the mode (``checkReply``, ``listEntry`` or ``item``), and the
rules a schema cannot express hold across the call: no id twice, and ``fetch`` returns only ids
it was asked for. A line longer than ``max_line_bytes``, more than ``max_output_bytes`` in all, a
malformed or invalid line, a broken rule, a non-zero exit or the ``timeout`` fail the whole call:
:class:`ConnectorError` names the connector, the rule and the line, the process group is killed,
and nothing from the call is returned. The runner stays usable for the next call.

stderr goes to the logger line by line, with every secret value replaced by ``***``.
"""

from __future__ import annotations

import asyncio
import builtins
import errno
import json
import logging
import os
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from passageway.kernel.config import ConnectorSettings, resolve_secrets
from passageway.kernel.connector.io import (
    EXCERPT_CHARS,
    STDERR_MAX_LINES,
    CallTrace,
    excerpt,
    feed,
    stderr_note,
)
from passageway.kernel.connector.lines import DEFINITIONS, LineProblem, parse_batch
from passageway.kernel.errors import ConnectorError
from passageway.kernel.program.driver import READ_CHUNK, Masker, Program, Stderr
from passageway.kernel.program.processes import new_marker
from passageway.kernel.records import (
    PROTOCOL_VERSION,
    CheckReply,
    Item,
    ListEntry,
)

MODES = ("check", "list", "fetch", "changed")
"""The modes a connector is run in; ``connector_lines.DEFINITIONS`` names the schema definition
(in ``schemas/connector-protocol.schema.json``) of the lines each prints."""

MAX_FETCH_IDS = 50
"""The kernel asks ``fetch`` for at most this many ids per call; callers do the batching."""

LOGGER = logging.getLogger("passageway.connector")


class ConnectorRunner:
    """Runs the calls of one connector. Safe to reuse after a failed call; not thread-safe. It is
    what ``passageway.kernel.index.fetch_run.Runner`` describes: all the sync reads of a runner.

    :param settings: the ``[[connector]]`` table.
    :param environ: the server's environment: ``PATH``, ``HOME`` and the secrets' variables are
        read from it, nothing else (default: ``os.environ``).
    :param logger: where the connector's stderr goes (default: ``passageway.connector``).
    :param observer: called with a :class:`CallTrace` after every call, failed or not. For the
        contract check only: a trace holds unmasked output.
    """

    def __init__(
        self,
        settings: ConnectorSettings,
        environ: Mapping[str, str] | None = None,
        logger: logging.Logger | None = None,
        *,
        observer: Callable[[CallTrace], None] | None = None,
    ) -> None:
        self.settings = settings
        self._environ = os.environ if environ is None else environ
        self._logger = logger or LOGGER
        self._observer = observer
        self.left_out: builtins.list[str] = []
        """The records the last call left out (an id that is not Unicode), one note each: the
        sync reports them in health, so a source is not ``ok`` while a listed item is missing."""

    @property
    def name(self) -> str:
        return self.settings.name

    # -- the four modes ---------------------------------------------------------------------

    async def check(self) -> CheckReply:
        """Ask ``check``. A reply that announces a protocol other than ``"1"`` fails the call (rule
        ``protocol version``, checked as the line is read, :mod:`.lines`): the one check of the
        version, which the sync relies on."""
        records = await self.call("check")
        if len(records) != 1:
            raise ConnectorError(
                self.name, "check reply",
                f"`check` printed {len(records)} lines; it prints exactly one, "
                '{"ok": true, "count": N}',
            )
        return records[0]

    async def list(self) -> builtins.list[ListEntry]:
        """Ask ``list``: every item that exists, with its version."""
        return await self.call("list")

    async def fetch(self, ids: Sequence[str]) -> builtins.list[Item]:
        """Ask ``fetch`` for ``ids`` (the caller batches, at most :data:`MAX_FETCH_IDS`).

        Ids that no longer exist are simply missing from the result.
        """
        wanted = builtins.list(dict.fromkeys(ids))
        if not wanted:
            return []
        stdin = b"".join(json.dumps({"id": item_id}).encode() + b"\n" for item_id in wanted)
        return await self.call("fetch", stdin=stdin, requested=wanted)

    async def changed(self, since: datetime) -> builtins.list[Item]:
        """Ask ``changed --since <UTC ISO>``; a naive ``since`` is taken to be UTC."""
        if since.tzinfo is None:
            since = since.replace(tzinfo=UTC)
        stamp = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return await self.call("changed", ("--since", stamp))

    # -- one call ---------------------------------------------------------------------------

    def environment(self) -> dict[str, str]:
        """The environment a call runs with, but for its ``PASSAGEWAY_CALL`` marker.

        :raises ConfigError: a secret refers to a variable that is not set (named, never a value).
        """
        secrets = resolve_secrets(self.settings.secrets, self._environ, f"connector {self.name!r}")
        environment = {key: self._environ[key] for key in ("PATH", "HOME") if self._environ.get(key)}
        environment["PASSAGEWAY_PROTOCOL"] = PROTOCOL_VERSION
        environment.update(self.settings.env)
        environment.update(secrets)
        return environment

    def _secret_values(self) -> builtins.list[str]:
        return [self._environ.get(variable, "") for variable in self.settings.secrets.values()]

    async def call(
        self,
        mode: str,
        arguments: Sequence[str] = (),
        *,
        stdin: bytes | None = None,
        requested: Collection[str] | None = None,
    ) -> builtins.list[Any]:
        """Run ``<command> <mode> <arguments>`` and return its validated records, or raise.

        The building block of the four modes; the contract check uses it to send requests the
        kernel never sends (a malformed stdin line). ``requested`` turns on the rule that only
        those ids may come back.

        :raises ConnectorError: the call failed; nothing is returned.
        :raises ConfigError: a secret's variable is unset.
        """
        if mode not in DEFINITIONS:
            raise ValueError(f"unknown connector mode {mode!r}; the modes are {', '.join(MODES)}")
        environment = self.environment()
        self.left_out = []
        masker = Masker(self._secret_values())
        trace = CallTrace(mode, tuple(arguments))
        started = time.monotonic()
        try:
            records = await self._call(mode, tuple(arguments), stdin, requested, environment, masker, trace)
        except ConnectorError as error:
            trace.error = error
            raise
        finally:
            trace.seconds = time.monotonic() - started
            trace.secrets_masked = masker.masked
            if masker.masked:
                self._logger.warning(
                    "connector %s printed a secret value on stderr %d time(s); the log shows *** instead. "
                    "A connector must never print its secrets.", self.name, masker.masked,
                )
            if self._observer is not None:
                self._observer(trace)
        self._logger.debug(
            "connector %s %s: %d records in %.2f s", self.name, mode, len(records), trace.seconds
        )
        return records

    async def _call(
        self,
        mode: str,
        arguments: tuple[str, ...],
        stdin: bytes | None,
        requested: Collection[str] | None,
        environment: dict[str, str],
        masker: Masker,
        trace: CallTrace,
    ) -> builtins.list[Any]:
        command = self.settings.command
        stderr = Stderr(masker, self._log_stderr, max_logged=STDERR_MAX_LINES,
                        keep_raw=self._observer is not None)
        marker = new_marker()  # every process of this call inherits it, a daemon's too
        try:
            program = await Program.spawn((*command, mode, *arguments), environment, stderr,
                                          stdin=stdin is not None, label=f"connector {self.name}",
                                          marker=marker)
        except FileNotFoundError:
            raise ConnectorError(
                self.name, "command not found",
                f"{command[0]} (the `command` of [[connector]] {self.name!r} in passageway.toml; "
                "connectors run with an empty environment, so give an absolute path)",
            ) from None
        except PermissionError:
            raise ConnectorError(
                self.name, "command not found",
                f"{command[0]} is not executable; check `command` in passageway.toml "
                "(make the file executable or start it with its interpreter)",
            ) from None
        except OSError as error:
            raise self._cannot_start(command[0], error) from None

        process = program.process
        stdin_task = (
            asyncio.create_task(feed(process.stdin, stdin)) if stdin is not None and process.stdin else None
        )
        failed = True
        try:
            async with asyncio.timeout(self.settings.timeout):
                assert process.stdout is not None
                records = await self._read_stdout(process.stdout, mode, requested, masker, trace)
                exit_code = await process.wait()
                await program.stderr_done()
            trace.exit_code = exit_code
            if exit_code != 0:
                how = f"status {exit_code}" if exit_code > 0 else f"signal {-exit_code}"
                raise ConnectorError(
                    self.name, "exit status",
                    f"`{mode}` exited with {how} after printing {len(records)} records; nothing from "
                    f"this call is kept{stderr_note(stderr.last)}",
                )
            failed = False
            return records
        except TimeoutError:
            raise ConnectorError(
                self.name, "timeout",
                f"`{mode}` did not finish within {self.settings.timeout:g} s (`timeout` in "
                f"passageway.toml); its process group was killed and nothing from this call is kept"
                f"{stderr_note(stderr.last)}",
            ) from None
        except LineProblem as problem:
            raise ConnectorError(self.name, problem.rule, self._describe(problem, masker)) from None
        finally:
            # Also after a call that succeeded: what it started (a daemon) ends with it.
            left = await program.kill()
            if left and not failed:
                self._logger.warning(
                    "connector %s: `%s` left %d process(es) running after it exited; passageway "
                    "ended them (a connector's processes end with its call)", self.name, mode, left)
            await program.finish(stdin_task)
            trace.stderr_lines, trace.last_stderr = stderr.raw, stderr.last
            if trace.exit_code is None:
                trace.exit_code = process.returncode

    def _cannot_start(self, program: str, error: OSError) -> ConnectorError:
        """Why a program could not start, named for what ran out: the pipes of a call need file
        descriptors, and a full table is no missing command."""
        if error.errno in (errno.EMFILE, errno.ENFILE):
            return ConnectorError(
                self.name, "out of file descriptors",
                f"cannot start {program}: passageway has no file descriptors left ({error.strerror}); "
                "raise the limit (LimitNOFILE= in its service, ulimit -n in a shell); the next call "
                "tries again",
            )
        if error.errno in (errno.EAGAIN, errno.ENOMEM):
            return ConnectorError(
                self.name, "cannot start",
                f"cannot start {program}: the system refused a new process ({error.strerror}); "
                "memory or the process limit ran out; the next call tries again",
            )
        return ConnectorError(self.name, "command not found", f"cannot start {program}: {error.strerror}")

    def _log_stderr(self, text: str) -> None:
        self._logger.info("connector %s: %s", self.name, text)

    def _describe(self, problem: LineProblem, masker: Masker) -> str:
        message = f"line {problem.line_number}: {masker(str(problem))}"
        if problem.line is not None:
            message += f": {excerpt(problem.line, masker)}"
        return message + "; nothing from this call is kept"

    async def _read_stdout(
        self,
        stream: asyncio.StreamReader,
        mode: str,
        requested: Collection[str] | None,
        masker: Masker,
        trace: CallTrace,
    ) -> builtins.list[Any]:
        """Read, split and check the lines as they arrive; never hold more than the limits allow."""
        max_line = self.settings.max_line_bytes
        max_total = self.settings.max_output_bytes
        wanted = set(requested) if requested is not None else None
        seen: dict[str, int] = {}
        records: builtins.list[Any] = []
        pending = bytearray()
        total = 0
        line_number = 0
        keep_raw = self._observer is not None
        while True:
            chunk = await stream.read(READ_CHUNK)
            if not chunk:
                break
            total += len(chunk)
            if total > max_total:
                raise LineProblem(
                    "output too large", line_number + 1,
                    f"the output passed {max_total} bytes (`max_output_bytes` in passageway.toml)",
                )
            pending += chunk
            end = pending.rfind(b"\n", len(pending) - len(chunk))
            if end < 0:
                if len(pending) > max_line:
                    raise LineProblem(
                        "line too long", line_number + 1,
                        f"a line passed {max_line} bytes (`max_line_bytes` in passageway.toml)",
                        bytes(pending[:EXCERPT_CHARS * 4]),
                    )
                continue
            lines = bytes(pending[:end]).split(b"\n")
            del pending[: end + 1]
            if len(pending) > max_line:
                raise LineProblem(
                    "line too long", line_number + len(lines) + 1,
                    f"a line passed {max_line} bytes (`max_line_bytes` in passageway.toml)",
                    bytes(pending[:EXCERPT_CHARS * 4]),
                )
            for offset, line in enumerate(lines):
                if len(line) > max_line:
                    raise LineProblem(
                        "line too long", line_number + offset + 1,
                        f"the line has {len(line)} bytes, more than {max_line} "
                        "(`max_line_bytes` in passageway.toml)", line[: EXCERPT_CHARS * 4],
                    )
            if keep_raw:
                trace.stdout_lines.extend(lines)
            parsed = await parse_batch(lines, line_number + 1, mode)
            line_number += len(lines)
            self._check_ids(self._note_repairs(parsed, trace), mode, wanted, seen, records)
        if pending:
            # A last line without a newline still counts.
            if keep_raw:
                trace.stdout_lines.append(bytes(pending))
            parsed = await parse_batch([bytes(pending)], line_number + 1, mode)
            self._check_ids(self._note_repairs(parsed, trace), mode, wanted, seen, records)
        return records

    def _note_repairs(
        self, parsed: builtins.list[tuple[int, bytes, Any, str | None]], trace: CallTrace
    ) -> builtins.list[tuple[int, bytes, Any]]:
        """Log the lines whose text was not Unicode; keep the records that survived it."""
        kept = []
        for number, line, record, note in parsed:
            if note is not None:
                trace.not_unicode.append(f"line {number}: {note}")
                self._logger.warning("connector %s: line %d: %s", self.name, number, note)
            if record is not None:
                kept.append((number, line, record))
            else:
                self.left_out.append(f"line {number}: {note}")
        return kept

    def _check_ids(
        self,
        parsed: builtins.list[tuple[int, bytes, Any]],
        mode: str,
        wanted: set[str] | None,
        seen: dict[str, int],
        records: builtins.list[Any],
    ) -> None:
        for number, line, record in parsed:
            if mode != "check":
                item_id = record.id
                if wanted is not None and item_id not in wanted:
                    raise LineProblem(
                        "unrequested id", number, f"id {item_id!r} was not requested in this call", line
                    )
                if item_id in seen:
                    raise LineProblem(
                        "duplicate id", number,
                        f"id {item_id!r} came already on line {seen[item_id]}; each id comes at most once "
                        "per call", line,
                    )
                seen[item_id] = number
            records.append(record)

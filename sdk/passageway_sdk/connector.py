"""The :class:`Connector` base class: the plumbing of the connector protocol, version 1.

A connector is run as ``<command> <mode>``. This module turns that call into method calls on a
subclass, checks everything the subclass returns against the protocol's schema, and prints the
result only when the whole call succeeded, so a failure never leaves half an answer on stdout.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import IO, Any, ClassVar, NoReturn

from .schema import message_errors

PROTOCOL_VERSION = "1"
"""The connector protocol version this SDK speaks; ``check`` prints it."""

USAGE = "usage: <connector> check | list | fetch (ids on stdin) | changed --since <UTC ISO 8601 time>"

EXIT_OK = 0
EXIT_SOURCE = 1
EXIT_USAGE = 2


class SettingsError(Exception):
    """The connector's settings are missing or wrong. The call exits 2 with the message."""


class SourceError(Exception):
    """The source failed: unreachable, refused, or answered something unusable. Exits 1."""


class _UsageError(Exception):
    """The call itself is wrong: an unknown mode, a bad ``--since``, a bad line on stdin."""


class _ProtocolViolation(Exception):
    """The connector returned something the protocol does not allow."""


class Connector:
    """Subclass this, implement :meth:`versions` and :meth:`fetch`, and call ``main()``.

    The SDK answers the four modes of the protocol from these methods:

    ``check``
        ``{"ok": true, "count": count(), "protocol": "1"}``.
    ``list``
        one ``{"id", "version"}`` line per entry of :meth:`versions`.
    ``fetch``
        reads ``{"id": ...}`` lines from stdin and prints what :meth:`fetch` returns.
    ``changed --since T``
        prints what :meth:`changed` returns, or nothing if the subclass does not implement it.

    Exit codes: 0 on success; 1 when the source fails (:class:`SourceError`, a type in
    :attr:`expected_errors`, or output that breaks the protocol); 2 for wrong settings
    (:class:`SettingsError`) or a wrong call. Any other exception is a bug: it propagates with
    its traceback. In every failure stdout stays empty.
    """

    name: ClassVar[str] = "connector"
    """Prefix of every message on stderr, such as ``"folder connector"``."""

    expected_errors: ClassVar[tuple[type[BaseException], ...]] = ()
    """Exception types that mean "the source failed", handled like :class:`SourceError`: exit 1
    with ``name: message`` on stderr and no traceback (for example ``(httpx.HTTPError,)``)."""

    _stderr: IO[str] | None = None

    def __init__(self, env: Mapping[str, str]) -> None:
        """Read and check the settings from ``env``; raise :class:`SettingsError` if they are wrong.

        ``env`` is the connector's environment: its ``env`` table and named secrets from
        ``passageway.toml``, plus ``PATH``, ``HOME`` and ``PASSAGEWAY_PROTOCOL``. Keyword options
        given to :meth:`run` arrive here as keyword arguments.
        """

    # -----------------------------------------------------------------------------------------
    # What a subclass implements
    # -----------------------------------------------------------------------------------------

    def versions(self) -> Mapping[str, str]:
        """Every item that exists, as ``{id: version}``. Answers ``list`` and, by default, ``check``.

        The listing decides deletions, so it must be complete: if the source answered only
        partly, raise :class:`SourceError` instead of returning less.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement versions()")

    def fetch(self, ids: Sequence[str]) -> Iterable[Mapping[str, Any]]:
        """The item record for each requested id that still exists (a generator is fine).

        ``ids`` lists the requested ids in the order they arrived, each once. Leave out ids that
        no longer exist; returning an id that was not requested is a protocol error.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement fetch()")

    def changed(self, since: datetime) -> Iterable[Mapping[str, Any]]:
        """Optional: the item records of items changed since ``since`` (timezone-aware, UTC).

        Implement it only if the source can answer cheaply; without it ``changed`` prints
        nothing and edits appear at the next reconcile.
        """
        raise NotImplementedError

    def count(self) -> int:
        """The number ``check`` prints; ``len(self.versions())`` unless overridden."""
        return len(self.versions())

    def warn(self, message: str) -> None:
        """Report something odd on stderr as ``name: warning: message``; the call goes on."""
        stream = self._stderr if self._stderr is not None else sys.stderr
        stream.write(f"{self.name}: warning: {message}\n")
        stream.flush()

    # -----------------------------------------------------------------------------------------
    # Running a call
    # -----------------------------------------------------------------------------------------

    @classmethod
    def main(cls) -> NoReturn:
        """Run the mode named on the command line with the process's environment, and exit."""
        raw_stdin = getattr(sys.stdin, "buffer", None)
        stdin: IO[str] = (
            io.TextIOWrapper(raw_stdin, encoding="utf-8") if raw_stdin is not None else io.StringIO()
        )
        raise SystemExit(cls.run(sys.argv[1:], os.environ, stdin, sys.stdout, sys.stderr))

    @classmethod
    def run(
        cls,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        stdin: IO[str] | None = None,
        stdout: IO[str] | None = None,
        stderr: IO[str] | None = None,
        **options: Any,
    ) -> int:
        """Run one mode in-process and return the exit code.

        ``argv`` are the arguments after the program name, such as ``["changed", "--since",
        "2026-10-28T09:00:00Z"]``. ``env`` defaults to ``os.environ`` and the streams to the
        process's own; ``options`` are passed to ``__init__``. Output reaches ``stdout`` only
        when the call succeeded. Exceptions other than the expected ones propagate.
        """
        env = os.environ if env is None else env
        stdin = sys.stdin if stdin is None else stdin
        stdout = sys.stdout if stdout is None else stdout
        stderr = sys.stderr if stderr is None else stderr

        def fail(code: int, message: str) -> int:
            stderr.write(f"{cls.name}: {message}\n")
            stderr.flush()
            return code

        try:
            mode, since = _parse_arguments(argv)
            if mode == "changed" and since is None and cls.changed is not Connector.changed:
                raise _UsageError("changed needs --since <UTC ISO 8601 time>")
            protocol = env.get("PASSAGEWAY_PROTOCOL") or PROTOCOL_VERSION
            if protocol != PROTOCOL_VERSION:
                raise _UsageError(
                    f"passageway asked for connector protocol {protocol!r}, "
                    f"but this connector speaks version {PROTOCOL_VERSION}; update passageway-sdk"
                )
            ids = _read_ids(stdin) if mode == "fetch" else []
        except _UsageError as error:
            return fail(EXIT_USAGE, f"{error}\n{USAGE}")

        connector = cls.__new__(cls)
        connector._stderr = stderr
        try:
            connector.__init__(env, **options)  # type: ignore[misc]
            lines = connector._answer(mode, since, ids)
        except SettingsError as error:
            return fail(EXIT_USAGE, f"{error}")
        except (SourceError, _ProtocolViolation, *cls.expected_errors) as error:
            return fail(EXIT_SOURCE, f"{error}" or type(error).__name__)

        stdout.write("".join(lines))
        stdout.flush()
        return EXIT_OK

    def _answer(self, mode: str, since: datetime | None, ids: list[str]) -> list[str]:
        if mode == "check":
            count = self.count()
            reply = {"ok": True, "count": count, "protocol": PROTOCOL_VERSION}
            return [_encode("checkReply", reply, "the check reply")]
        if mode == "list":
            versions = self.versions()
            if not isinstance(versions, Mapping):
                raise _ProtocolViolation(
                    f"versions() must return a dict of id to version, not {type(versions).__name__}"
                )
            return [
                _encode("listEntry", {"id": item_id, "version": version}, f"the list entry {item_id!r}")
                for item_id, version in versions.items()
            ]
        if mode == "fetch":
            return _encode_items(self.fetch(ids), requested=set(ids))
        # changed
        if since is None or type(self).changed is Connector.changed:
            return []
        return _encode_items(self.changed(since), requested=None)


# ---------------------------------------------------------------------------------------------
# Arguments, stdin and output
# ---------------------------------------------------------------------------------------------


def _parse_arguments(argv: Sequence[str]) -> tuple[str, datetime | None]:
    if not argv:
        raise _UsageError("no mode given")
    mode, rest = argv[0], list(argv[1:])
    if mode not in ("check", "list", "fetch", "changed"):
        raise _UsageError(f"unknown mode {mode!r}")
    if mode != "changed":
        if rest:
            raise _UsageError(f"{mode} takes no arguments, got {' '.join(rest)!r}")
        return mode, None
    value: str | None = None
    if rest and rest[0].startswith("--since="):
        value, rest = rest[0].removeprefix("--since="), rest[1:]
    elif len(rest) >= 2 and rest[0] == "--since":
        value, rest = rest[1], rest[2:]
    if rest:
        raise _UsageError(f"unexpected arguments {' '.join(rest)!r}")
    if value is None:
        return mode, None
    try:
        return mode, parse_since(value)
    except ValueError as error:
        raise _UsageError(str(error)) from None


def parse_since(value: str) -> datetime:
    """The ``--since`` time as a timezone-aware UTC datetime; a time without offset is UTC.

    Raises :class:`ValueError` with a readable message for anything that is not ISO 8601.
    """
    try:
        moment = datetime.fromisoformat(value.strip().replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--since {value!r} is not an ISO 8601 time such as 2026-10-28T09:00:00Z") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _read_ids(stdin: IO[str]) -> list[str]:
    ids: dict[str, None] = {}
    try:
        lines = stdin.read().splitlines()
    except UnicodeDecodeError:
        raise _UsageError("stdin is not UTF-8 text") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except json.JSONDecodeError:
            raise _UsageError(f'stdin line {number} is not JSON; fetch expects {{"id": ...}} lines') from None
        errors = message_errors("fetchRequest", request)
        if errors:
            raise _UsageError(f"stdin line {number} is not a fetch request: {'; '.join(errors)}")
        ids.setdefault(request["id"], None)
    return list(ids)


def _encode(definition: str, record: Any, what: str) -> str:
    """One output line, after checking ``record`` against the schema as the core will."""
    try:
        line = json.dumps(record, ensure_ascii=True, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise _ProtocolViolation(f"{what} cannot be written as JSON: {error}") from None
    errors = message_errors(definition, json.loads(line))
    if errors:
        shown = "; ".join(errors[:5]) + (f"; and {len(errors) - 5} more" if len(errors) > 5 else "")
        raise _ProtocolViolation(f"{what} breaks the connector protocol: {shown}")
    return line + "\n"


def _encode_items(items: Iterable[Mapping[str, Any]] | None, requested: set[str] | None) -> list[str]:
    lines: list[str] = []
    seen: set[str] = set()
    for index, item in enumerate(items or ()):
        if not isinstance(item, Mapping):
            raise _ProtocolViolation(f"item {index + 1} is a {type(item).__name__}, not a dict")
        item_id = item.get("id")
        what = f"the item {item_id!r}" if isinstance(item_id, str) else f"item {index + 1}"
        lines.append(_encode("item", dict(item), what))
        if item_id in seen:
            raise _ProtocolViolation(f"the item {item_id!r} was returned twice in one call")
        if requested is not None and item_id not in requested:
            raise _ProtocolViolation(f"the item {item_id!r} was returned but not requested")
        seen.add(item_id)
    return lines

"""A connector that serves the item records of a JSON file: for trying passageway and for tests.

Run it as ``python -m passageway.testing.fake_connector <mode>``. Settings (environment):

``FAKE_ITEMS``
    Required. Path of a JSON file holding a list of item records (see the connector protocol).
    The file is read on every call, so a test can rewrite it between two syncs. Records are
    served as they are, without validation, so a test can also feed the kernel a broken one.
``FAKE_FAIL``
    Optional. Comma-separated modes that fail: the call prints nothing on stdout, a message on
    stderr, and exits 1. ``fetch:ID`` fails only a ``fetch`` whose request contains ``ID``;
    ``list``, ``check``, ``fetch`` and ``changed`` fail every call of that mode.
``FAKE_SLEEP``
    Optional. Seconds to sleep before answering: ``2`` for every mode, or ``fetch:2`` (also
    comma-separated) for one mode. For timeout tests.

``check`` prints ``{"ok": true, "count": n, "protocol": "1"}``; ``list`` prints the ``id`` and
``version`` of every record; ``fetch`` prints the records whose ids are on stdin; ``changed
--since T`` prints the records whose ``updated`` is at or after ``T`` (records without
``updated`` never). Exit 2 for a usage or settings error, 1 for a failure from ``FAKE_FAIL``.
All output is written at the end, so a failing call prints nothing.

In tests, :func:`command` is the faster way to name it: it runs this file directly, which needs
only the standard library, and skips importing the ``passageway`` package at every call.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import IO, Any

USAGE = "usage: fake_connector check | list | fetch | changed --since <UTC ISO time>"


class _Exit(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _parse_time(text: str) -> datetime:
    stamp = datetime.fromisoformat(text.replace("Z", "+00:00").replace(" ", "T"))
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def _load(environ: Mapping[str, str]) -> list[dict[str, Any]]:
    path = environ.get("FAKE_ITEMS")
    if not path:
        raise _Exit(2, "FAKE_ITEMS is not set; point it at a JSON file with a list of item records")
    try:
        with open(path, encoding="utf-8") as handle:
            records = json.load(handle)
    except (OSError, ValueError) as error:
        raise _Exit(2, f"cannot read FAKE_ITEMS ({path}): {error}") from None
    if not isinstance(records, list) or not all(isinstance(record, dict) for record in records):
        raise _Exit(2, f"FAKE_ITEMS ({path}) must hold a JSON list of item records")
    return records


def _per_mode(value: str, mode: str) -> list[str]:
    """The parts of ``value`` (``a,b:c``) that apply to ``mode``: ``""`` for a bare match."""
    found = []
    for part in value.split(","):
        part = part.strip()
        name, _, argument = part.partition(":")
        if name == mode:
            found.append(argument)
    return found


def _sleep(environ: Mapping[str, str], mode: str) -> None:
    value = environ.get("FAKE_SLEEP", "").strip()
    if not value:
        return
    try:
        seconds = float(value)
    except ValueError:
        matches = _per_mode(value, mode)
        try:
            seconds = max((float(argument) for argument in matches), default=0.0)
        except ValueError:
            raise _Exit(2, f"FAKE_SLEEP is seconds or mode:seconds, got {value!r}") from None
    time.sleep(seconds)


def _fail(environ: Mapping[str, str], mode: str, ids: Sequence[str] = ()) -> None:
    for argument in _per_mode(environ.get("FAKE_FAIL", ""), mode):
        if not argument or argument in ids:
            raise _Exit(1, f"failing `{mode}` as FAKE_FAIL asks")


def run(argv: Sequence[str], environ: Mapping[str, str], stdin: IO[str], stdout: IO[str]) -> int:
    """One call; returns the exit code. Messages go to stderr."""
    try:
        lines = _answer(list(argv), environ, stdin)
    except _Exit as stop:
        print(f"fake connector: {stop}", file=sys.stderr)
        return stop.code
    stdout.write("".join(json.dumps(line) + "\n" for line in lines))
    stdout.flush()
    return 0


def _answer(argv: list[str], environ: Mapping[str, str], stdin: IO[str]) -> list[dict[str, Any]]:
    if not argv or argv[0] not in ("check", "list", "fetch", "changed"):
        raise _Exit(2, USAGE)
    mode = argv[0]
    _sleep(environ, mode)
    records = _load(environ)
    if mode == "check":
        _fail(environ, mode)
        return [{"ok": True, "count": len(records), "protocol": "1"}]
    if mode == "list":
        _fail(environ, mode)
        return [{"id": record.get("id"), "version": record.get("version")} for record in records]
    if mode == "fetch":
        wanted = []
        for number, line in enumerate(stdin, 1):
            if not line.strip():
                continue
            try:
                request = json.loads(line)
                wanted.append(request["id"])
            except (ValueError, KeyError, TypeError):
                raise _Exit(2, f'stdin line {number} is not a request {{"id": ...}}') from None
        _fail(environ, mode, wanted)
        wanted_set = set(wanted)
        return [record for record in records if record.get("id") in wanted_set]
    if len(argv) != 3 or argv[1] != "--since":
        raise _Exit(2, USAGE)
    try:
        since = _parse_time(argv[2])
    except ValueError:
        raise _Exit(2, f"--since needs an ISO time such as 2026-10-28T09:00:00Z, got {argv[2]!r}") from None
    _fail(environ, mode)
    changed = []
    for record in records:
        updated = record.get("updated")
        if not isinstance(updated, str):
            continue
        try:
            if _parse_time(updated) >= since:
                changed.append(record)
        except ValueError:
            continue
    return changed


def command() -> list[str]:
    """The ``command`` of a ``[[connector]]`` (or a ``Connector``) that runs the fake connector."""
    return [sys.executable, __file__]


def main(argv: Sequence[str] | None = None) -> int:
    return run(sys.argv[1:] if argv is None else argv, os.environ, sys.stdin, sys.stdout)


if __name__ == "__main__":
    sys.exit(main())

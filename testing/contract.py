"""The connector contract check: the protocol rules a test can check, run against a real program.

The check runs the connector as the server would (same runner, same empty environment, same
limits and schema) and then asks more of it than the server does: two listings that must agree,
a fetch of every listed id, an id that does not exist, a request line that is not JSON, and a
canary secret that must never appear in its output. Each rule ends as ``pass``, ``fail`` or
``skip`` (it could not be tried, which is not a failure), with the offending line named.

Public entry points: :class:`Connector` (a connector program and its settings; its
``runner()`` runs the modes as the server does) and :func:`check_connector`, which raises
``AssertionError`` with the report when a rule fails (:func:`run_contract` returns the report
either way). The command ``passageway check-connector`` runs the same check from a shell::

    from passageway.testing.contract import Connector, check_connector

    def test_my_connector(tmp_path):
        check_connector(Connector("mine", [sys.executable, "my_connector.py"], env={...}))
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import secrets as random_secrets
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

from passageway.kernel.config import ConnectorSettings
from passageway.kernel.connector.io import CallTrace
from passageway.kernel.connector.runner import MAX_FETCH_IDS, ConnectorRunner
from passageway.kernel.errors import ConnectorError, PassagewayError

Status = Literal["pass", "fail", "skip"]
CANARY_VARIABLE = "PASSAGEWAY_CONTRACT_CANARY"
"""A secret the check adds to every call; it must never appear on stdout or stderr."""
LONG_AGO = "1970-01-01T00:00:00Z"
_DEFAULTS = ConnectorSettings(name="defaults", command=("x",))

LOGGER = logging.getLogger("passageway.contract")


def _as_dict(value: Mapping[str, str] | None) -> dict[str, str]:
    return dict(value or {})


@attrs.frozen
class Connector:
    """A connector program and its settings, as a test or a script names it.

    :param name: a label for messages (the source name in ``passageway.toml``).
    :param command: the program and its arguments; the mode is appended to it.
    :param env: plain settings the program receives as environment variables.
    :param secrets: secret *values* the program receives as environment variables; they are
        masked in the log and must never appear in its output (in ``passageway.toml`` secrets are
        ``env:NAME`` references instead).
    :param timeout: seconds one call may take before its process group is killed.
    """

    name: str
    command: tuple[str, ...] = attrs.field(converter=tuple)
    env: Mapping[str, str] = attrs.field(factory=dict, converter=_as_dict)
    secrets: Mapping[str, str] = attrs.field(factory=dict, converter=_as_dict, repr=False)
    timeout: float = 60.0
    max_line_bytes: int = _DEFAULTS.max_line_bytes
    max_output_bytes: int = _DEFAULTS.max_output_bytes

    @command.validator
    def _check_command(self, _attribute: Any, value: tuple[str, ...]) -> None:
        if not value or not all(isinstance(part, str) and part for part in value):
            raise ValueError("command is a non-empty list of strings, program first")

    def _variable(self, key: str) -> str:
        return f"PASSAGEWAY_TEST_SECRET_{key}"

    def settings(self) -> ConnectorSettings:
        """The ``[[connector]]`` settings this handle stands for."""
        return ConnectorSettings(
            name=self.name,
            command=self.command,
            env=dict(self.env),
            secrets={key: self._variable(key) for key in self.secrets},
            timeout=self.timeout,
            max_line_bytes=self.max_line_bytes,
            max_output_bytes=self.max_output_bytes,
        )

    def environ(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The server-side environment the runner reads: ``PATH``, ``HOME`` and the secrets."""
        base = os.environ if base is None else base
        environ = {key: base[key] for key in ("PATH", "HOME") if base.get(key)}
        environ.update({self._variable(key): value for key, value in self.secrets.items()})
        return environ

    def runner(self, logger: logging.Logger | None = None, **options: Any) -> ConnectorRunner:
        """A :class:`ConnectorRunner` for this connector, exactly as the server would build it."""
        return ConnectorRunner(self.settings(), self.environ(), logger, **options)


@attrs.frozen
class RuleResult:
    rule: str
    status: Status
    detail: str = ""


@attrs.define
class ContractReport:
    """The outcome of every rule, in the order they ran."""

    connector: str
    command: tuple[str, ...]
    results: list[RuleResult] = attrs.field(factory=list)

    @property
    def passed(self) -> bool:
        return all(result.status != "fail" for result in self.results)

    @property
    def failed_rules(self) -> list[str]:
        return [result.rule for result in self.results if result.status == "fail"]

    def status(self, rule: str) -> Status:
        return next(result.status for result in self.results if result.rule == rule)

    def add(self, rule: str, status: Status, detail: str = "") -> None:
        self.results.append(RuleResult(rule, status, detail))

    def render(self) -> str:
        lines = [f"connector contract check: {self.connector!r} ({' '.join(self.command)})"]
        for result in self.results:
            detail = f": {result.detail}" if result.detail else ""
            lines.append(f"  {result.status.upper():4}  {result.rule}{detail}")
        counts = {
            status: sum(result.status == status for result in self.results)
            for status in ("pass", "fail", "skip")
        }
        verdict = "all rules pass" if self.passed else f"FAILED: {', '.join(self.failed_rules)}"
        lines.append(
            f"{len(self.results)} rules: {counts['pass']} passed, {counts['fail']} failed, "
            f"{counts['skip']} skipped; {verdict}"
        )
        return "\n".join(lines)

    __str__ = render


RULES = (
    "check answers",
    "list answers",
    "list is stable",
    "fetch returns every listed item",
    "fetched versions match the listing",
    "fetch skips unknown ids",
    "fetch returns only requested ids",
    "changed answers",
    "a failure leaves stdout empty",
    "text is UTF-8",
    "no secret in the output",
)
"""Every rule the check reports, in order; ``docs/write-a-connector.md`` explains each."""


async def check_connector_async(connector: Connector) -> ContractReport:
    """Run every rule and return the report; never raises for a rule that fails."""
    canary = f"canary-{random_secrets.token_hex(12)}"
    probe = attrs.evolve(connector, secrets={**connector.secrets, CANARY_VARIABLE: canary})
    traces: list[CallTrace] = []
    runner = probe.runner(LOGGER, observer=traces.append)
    report = ContractReport(connector.name, connector.command)

    def _failure(error: PassagewayError) -> str:
        return str(error)

    # check
    try:
        reply = await runner.check()
        report.add("check answers", "pass", f"count {reply.count}, protocol {reply.protocol}")
    except PassagewayError as error:
        report.add("check answers", "fail", _failure(error))

    # list, twice
    listing: dict[str, str] | None = None
    try:
        first = await runner.list()
        listing = {entry.id: entry.version for entry in first}
        report.add("list answers", "pass", f"{len(listing)} items")
    except PassagewayError as error:
        report.add("list answers", "fail", _failure(error))
    if listing is None:
        report.add("list is stable", "skip", "needs a working list")
    else:
        try:
            second = {entry.id: entry.version for entry in await runner.list()}
            report.add("list is stable", *_compare_listings(listing, second))
        except PassagewayError as error:
            report.add("list is stable", "fail", f"the second list failed: {_failure(error)}")

    # fetch every listed id
    unrequested: list[str] = []
    fetched: dict[str, str] = {}
    fetch_error: str | None = None
    if listing is not None:
        ids = list(listing)
        for start in range(0, len(ids), MAX_FETCH_IDS):
            batch = ids[start : start + MAX_FETCH_IDS]
            try:
                for item in await runner.fetch(batch):
                    fetched[item.id] = item.version
            except ConnectorError as error:
                if error.rule == "unrequested id":
                    unrequested.append(str(error))
                fetch_error = f"fetch of ids {start + 1}-{start + len(batch)} failed: {_failure(error)}"
                break
    if listing is None:
        report.add("fetch returns every listed item", "skip", "needs a working list")
        report.add("fetched versions match the listing", "skip", "needs a working list")
    elif fetch_error is not None:
        report.add("fetch returns every listed item", "fail", fetch_error)
        report.add("fetched versions match the listing", "skip", "needs a working fetch")
    else:
        missing = [item_id for item_id in listing if item_id not in fetched]
        if missing:
            report.add("fetch returns every listed item", "fail",
                       f"{len(missing)} listed ids did not come back, such as {missing[0]!r}")
        else:
            report.add("fetch returns every listed item", "pass", f"{len(fetched)} items in "
                       f"{-(-len(listing) // MAX_FETCH_IDS)} calls of at most {MAX_FETCH_IDS} ids")
        different = [i for i, version in fetched.items() if listing.get(i) != version]
        if different:
            first_id = different[0]
            report.add("fetched versions match the listing", "fail",
                       f"{len(different)} items differ, such as {first_id!r}: list said "
                       f"{listing.get(first_id)!r}, fetch said {fetched[first_id]!r}")
        else:
            report.add("fetched versions match the listing", "pass")

    # an id that does not exist, alone and next to one that does
    unknown = f"passageway-contract-no-such-id-{random_secrets.token_hex(6)}"
    try:
        extra = await runner.fetch([unknown])
        if extra:
            report.add("fetch skips unknown ids", "fail",
                       f"fetch of {unknown!r} returned {len(extra)} records")
        else:
            report.add("fetch skips unknown ids", "pass")
    except ConnectorError as error:
        if error.rule == "unrequested id":
            unrequested.append(str(error))
        report.add("fetch skips unknown ids", "fail", _failure(error))
    if listing:
        known = next(iter(listing))
        try:
            mixed = await runner.fetch([unknown, known])
            if [item.id for item in mixed] != [known]:
                report.add("fetch returns only requested ids", "fail",
                           f"fetch of [{unknown!r}, {known!r}] returned {[item.id for item in mixed]}")
            elif unrequested:
                report.add("fetch returns only requested ids", "fail", unrequested[0])
            else:
                report.add("fetch returns only requested ids", "pass")
        except ConnectorError as error:
            report.add("fetch returns only requested ids", "fail", _failure(error))
    elif unrequested:
        report.add("fetch returns only requested ids", "fail", unrequested[0])
    else:
        report.add("fetch returns only requested ids", "skip", "needs at least one listed item")

    # changed --since long ago: optional, but what it prints must be right
    try:
        changed = await runner.call("changed", ("--since", LONG_AGO))
        if not changed:
            report.add("changed answers", "pass", "prints nothing (optional mode not implemented)")
        elif listing is None:
            report.add("changed answers", "pass", f"{len(changed)} valid items (not compared: no listing)")
        else:
            strangers = [item for item in changed if listing.get(item.id) != item.version]
            if strangers:
                item = strangers[0]
                report.add("changed answers", "fail",
                           f"item {item.id!r} version {item.version!r} is not in the listing as such "
                           f"(list said {listing.get(item.id)!r})")
            else:
                report.add("changed answers", "pass", f"{len(changed)} items since {LONG_AGO}")
    except PassagewayError as error:
        report.add("changed answers", "fail", _failure(error))

    # a request line that is not JSON must fail the call, and a failed call prints nothing
    report.add("a failure leaves stdout empty", *await _provoke_failure(runner, traces, listing))

    # lone surrogate escapes: the server repairs the text, but the connector is wrong
    notes = [f"`{trace.mode}` {note}" for trace in traces for note in trace.not_unicode]
    if notes:
        report.add("text is UTF-8", "fail", f"{len(notes)} lines hold text that is not Unicode; {notes[0]}")
    else:
        report.add("text is UTF-8", "pass")

    # no secret, and no canary, in anything the connector printed
    report.add("no secret in the output", *_find_secrets(traces, probe.secrets))
    return report


def _compare_listings(first: dict[str, str], second: dict[str, str]) -> tuple[Status, str]:
    if first == second:
        return "pass", f"two calls agree on {len(first)} ids and versions"
    gone = sorted(set(first) - set(second))
    new = sorted(set(second) - set(first))
    moved = sorted(i for i in set(first) & set(second) if first[i] != second[i])
    if gone:
        return "fail", f"{len(gone)} ids of the first list are missing from the second, such as {gone[0]!r}"
    if new:
        return "fail", f"{len(new)} ids appear only in the second list, such as {new[0]!r}"
    return "fail", (f"{len(moved)} versions changed between two calls, such as {moved[0]!r} "
                    f"({first[moved[0]]!r} then {second[moved[0]]!r}); "
                    "a version changes only with the content")


async def _provoke_failure(
    runner: ConnectorRunner, traces: list[CallTrace], listing: dict[str, str] | None
) -> tuple[Status, str]:
    known = next(iter(listing), None) if listing else None
    request = b""
    if known is not None:
        request += json.dumps({"id": known}).encode() + b"\n"
    request += b"this request line is not JSON\n"
    try:
        await runner.call("fetch", stdin=request, requested=[known] if known else [])
    except ConnectorError as error:
        trace = traces[-1]
        if error.rule != "exit status":
            return "fail", f"fetch with a malformed request line: {error}"
        if trace.stdout_lines and any(line.strip() for line in trace.stdout_lines):
            return "fail", (f"fetch with a malformed request line exited {trace.exit_code} but printed "
                            f"{len(trace.stdout_lines)} lines first; a failing call prints nothing on stdout")
        return "pass", f"fetch with a malformed request line exited {trace.exit_code} and printed nothing"
    return "skip", ("fetch accepted a request line that is not JSON, so no failure could be provoked; "
                    "make sure a failing call exits non-zero before it prints anything")


def _find_secrets(traces: list[CallTrace], secrets: Mapping[str, str]) -> tuple[Status, str]:
    needles = {key: value.encode() for key, value in secrets.items() if value}
    for trace in traces:
        for stream, lines in (("stdout", trace.stdout_lines), ("stderr", trace.stderr_lines)):
            for number, line in enumerate(lines, 1):
                for key, needle in needles.items():
                    if needle in line or needle in _json_text(line):
                        return "fail", (f"`{trace.mode}` printed the value of {key} on {stream} "
                                        f"line {number}; never print a secret (it is masked here)")
    return "pass", f"no secret value ({len(needles)} with the canary) appeared in {len(traces)} calls"


def _json_text(line: bytes) -> bytes:
    """The line with JSON escapes undone, so an escaped secret is found too."""
    try:
        return json.dumps(json.loads(line), ensure_ascii=False).encode()
    except (ValueError, UnicodeDecodeError, RecursionError):  # the line itself was reported
        return b""


def run_contract(connector: Connector) -> ContractReport:
    """The report, from synchronous code; works inside a running event loop too (in a thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(check_connector_async(connector))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, check_connector_async(connector)).result()


def check_connector(connector: Connector) -> ContractReport:
    """Check ``connector`` against the protocol; for a pytest test.

    :returns: the report, when every rule passes (skipped rules do not fail).
    :raises AssertionError: with the whole report, naming each failed rule and its line.
    """
    report = run_contract(connector)
    if not report.passed:
        raise AssertionError(report.render())
    return report


def parse_assignments(pairs: Sequence[str] | None, option: str) -> dict[str, str]:
    """``["K=V", ...]`` from the command line as a dict; a malformed pair is a usage error."""
    from passageway.kernel.errors import ConfigError
    from passageway.kernel.tables import ENV_KEY

    result = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not ENV_KEY.match(key):
            raise ConfigError(
                f"{option} takes NAME=VALUE, such as {option} FOLDER=/path/to/notes; got {pair!r}"
            )
        result[key] = value
    return result

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
import logging
import os
import secrets as random_secrets
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

from passageway.kernel.config import ConnectorSettings
from passageway.kernel.connector.io import CallTrace
from passageway.kernel.connector.runner import ConnectorRunner
from passageway.testing.contract_rules import ContractRun

Status = Literal["pass", "fail", "skip"]
CANARY_VARIABLE = "PASSAGEWAY_CONTRACT_CANARY"
"""A secret the check adds to every call; it must never appear on stdout or stderr."""
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
    run = ContractRun(runner, traces, ContractReport(connector.name, connector.command))
    await run.check_mode()
    await run.list_twice()
    await run.fetch_listed()
    await run.fetch_unknown()
    await run.changed_since_long_ago()
    await run.malformed_request()
    run.text_is_unicode()
    run.no_secret(probe.secrets)
    return run.report


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

"""The steps of the connector contract check, one method per group of rules, in the order they run.

:func:`passageway.testing.contract.check_connector_async` builds a :class:`ContractRun` and calls
its steps top to bottom; each step adds its rules to the report. What one step learns that a later
one needs (the listing, the ids a fetch returned unasked) is kept on the run.
"""

from __future__ import annotations

import json
import secrets as random_secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from passageway.kernel.connector.io import CallTrace
from passageway.kernel.connector.runner import MAX_FETCH_IDS, ConnectorRunner
from passageway.kernel.errors import ConnectorError, PassagewayError

if TYPE_CHECKING:
    from passageway.testing.contract import ContractReport, Status

LONG_AGO = "1970-01-01T00:00:00Z"


@attrs.define
class ContractRun:
    """One run of the check: the runner, the traces of its calls, the report, what steps learnt."""

    runner: ConnectorRunner
    traces: list[CallTrace]
    report: ContractReport
    listing: dict[str, str] | None = None
    unrequested: list[str] = attrs.field(factory=list)

    async def check_mode(self) -> None:
        try:
            reply = await self.runner.check()
            self.report.add("check answers", "pass", f"count {reply.count}, protocol {reply.protocol}")
        except PassagewayError as error:
            self.report.add("check answers", "fail", str(error))

    async def list_twice(self) -> None:
        try:
            self.listing = {entry.id: entry.version for entry in await self.runner.list()}
            self.report.add("list answers", "pass", f"{len(self.listing)} items")
        except PassagewayError as error:
            self.report.add("list answers", "fail", str(error))
            self.report.add("list is stable", "skip", "needs a working list")
            return
        try:
            second = {entry.id: entry.version for entry in await self.runner.list()}
            self.report.add("list is stable", *_compare_listings(self.listing, second))
        except PassagewayError as error:
            self.report.add("list is stable", "fail", f"the second list failed: {error}")

    async def fetch_listed(self) -> None:
        """Fetch every listed id, in batches of at most ``MAX_FETCH_IDS``; compare with the listing."""
        if self.listing is None:
            self.report.add("fetch returns every listed item", "skip", "needs a working list")
            self.report.add("fetched versions match the listing", "skip", "needs a working list")
            return
        fetched, fetch_error = await self._fetch_all(list(self.listing))
        if fetch_error is not None:
            self.report.add("fetch returns every listed item", "fail", fetch_error)
            self.report.add("fetched versions match the listing", "skip", "needs a working fetch")
            return
        self.report.add("fetch returns every listed item", *_every_item_back(self.listing, fetched))
        self.report.add("fetched versions match the listing", *_same_versions(self.listing, fetched))

    async def _fetch_all(self, ids: list[str]) -> tuple[dict[str, str], str | None]:
        fetched: dict[str, str] = {}
        for start in range(0, len(ids), MAX_FETCH_IDS):
            batch = ids[start : start + MAX_FETCH_IDS]
            try:
                for item in await self.runner.fetch(batch):
                    fetched[item.id] = item.version
            except ConnectorError as error:
                if error.rule == "unrequested id":
                    self.unrequested.append(str(error))
                return fetched, f"fetch of ids {start + 1}-{start + len(batch)} failed: {error}"
        return fetched, None

    async def fetch_unknown(self) -> None:
        """An id that does not exist, alone and next to one that does."""
        unknown = f"passageway-contract-no-such-id-{random_secrets.token_hex(6)}"
        try:
            extra = await self.runner.fetch([unknown])
            if extra:
                self.report.add("fetch skips unknown ids", "fail",
                                f"fetch of {unknown!r} returned {len(extra)} records")
            else:
                self.report.add("fetch skips unknown ids", "pass")
        except ConnectorError as error:
            if error.rule == "unrequested id":
                self.unrequested.append(str(error))
            self.report.add("fetch skips unknown ids", "fail", str(error))
        self.report.add("fetch returns only requested ids", *await self._only_requested(unknown))

    async def _only_requested(self, unknown: str) -> tuple[Status, str]:
        if not self.listing:
            if self.unrequested:
                return "fail", self.unrequested[0]
            return "skip", "needs at least one listed item"
        known = next(iter(self.listing))
        try:
            mixed = await self.runner.fetch([unknown, known])
        except ConnectorError as error:
            return "fail", str(error)
        if [item.id for item in mixed] != [known]:
            return "fail", f"fetch of [{unknown!r}, {known!r}] returned {[item.id for item in mixed]}"
        if self.unrequested:
            return "fail", self.unrequested[0]
        return "pass", ""

    async def changed_since_long_ago(self) -> None:
        """``changed --since`` long ago: optional, but what it prints must be in the listing."""
        try:
            changed = await self.runner.call("changed", ("--since", LONG_AGO))
        except PassagewayError as error:
            self.report.add("changed answers", "fail", str(error))
            return
        if not changed:
            self.report.add("changed answers", "pass", "prints nothing (optional mode not implemented)")
        elif self.listing is None:
            self.report.add("changed answers", "pass",
                            f"{len(changed)} valid items (not compared: no listing)")
        else:
            listing = self.listing
            strangers = [item for item in changed if listing.get(item.id) != item.version]
            if strangers:
                item = strangers[0]
                self.report.add("changed answers", "fail",
                                f"item {item.id!r} version {item.version!r} is not in the listing as "
                                f"such (list said {listing.get(item.id)!r})")
            else:
                self.report.add("changed answers", "pass", f"{len(changed)} items since {LONG_AGO}")

    async def malformed_request(self) -> None:
        """A request line that is not JSON must fail the call, and a failed call prints nothing."""
        self.report.add("a failure leaves stdout empty", *await self._provoke_failure())

    async def _provoke_failure(self) -> tuple[Status, str]:
        known = next(iter(self.listing), None) if self.listing else None
        request = b""
        if known is not None:
            request += json.dumps({"id": known}).encode() + b"\n"
        request += b"this request line is not JSON\n"
        try:
            await self.runner.call("fetch", stdin=request, requested=[known] if known else [])
        except ConnectorError as error:
            trace = self.traces[-1]
            if error.rule != "exit status":
                return "fail", f"fetch with a malformed request line: {error}"
            if trace.stdout_lines and any(line.strip() for line in trace.stdout_lines):
                return "fail", (f"fetch with a malformed request line exited {trace.exit_code} but "
                                f"printed {len(trace.stdout_lines)} lines first; a failing call prints "
                                "nothing on stdout")
            return "pass", (f"fetch with a malformed request line exited {trace.exit_code} "
                            "and printed nothing")
        return "skip", ("fetch accepted a request line that is not JSON, so no failure could be "
                        "provoked; make sure a failing call exits non-zero before it prints anything")

    def text_is_unicode(self) -> None:
        """Lone surrogate escapes: the server repairs the text, but the connector is wrong."""
        notes = [f"`{trace.mode}` {note}" for trace in self.traces for note in trace.not_unicode]
        if notes:
            self.report.add("text is UTF-8", "fail",
                            f"{len(notes)} lines hold text that is not Unicode; {notes[0]}")
        else:
            self.report.add("text is UTF-8", "pass")

    def no_secret(self, secrets: Mapping[str, str]) -> None:
        """No secret, and no canary, in anything the connector printed."""
        self.report.add("no secret in the output", *_find_secrets(self.traces, secrets))


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


def _every_item_back(listing: dict[str, str], fetched: dict[str, str]) -> tuple[Status, str]:
    missing = [item_id for item_id in listing if item_id not in fetched]
    if missing:
        return "fail", f"{len(missing)} listed ids did not come back, such as {missing[0]!r}"
    return "pass", (f"{len(fetched)} items in {-(-len(listing) // MAX_FETCH_IDS)} calls "
                    f"of at most {MAX_FETCH_IDS} ids")


def _same_versions(listing: dict[str, str], fetched: dict[str, str]) -> tuple[Status, str]:
    different = [i for i, version in fetched.items() if listing.get(i) != version]
    if not different:
        return "pass", ""
    first_id = different[0]
    return "fail", (f"{len(different)} items differ, such as {first_id!r}: list said "
                    f"{listing.get(first_id)!r}, fetch said {fetched[first_id]!r}")


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

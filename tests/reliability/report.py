"""Writes ``docs/reliability.json`` and renders ``docs/reliability.md`` from it.

The full run (``RELIABILITY_FULL=1 uv run pytest tests/reliability``) calls :func:`write` when it
ends; ``uv run python -m tests.reliability.report`` renders the page again from the JSON file.
Every number on the page comes from that file: none is typed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.reliability.report_probe3 import probe3

DOCS = Path(__file__).resolve().parents[2] / "docs"
RESULTS = DOCS / "reliability.json"
PAGE = DOCS / "reliability.md"


def write(results: dict[str, Any]) -> None:
    RESULTS.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    PAGE.write_text(render(results), encoding="utf-8")


def _rows(pairs: list[tuple[str, Any]]) -> str:
    lines = ["| Figure | Value |", "| --- | --- |"]
    lines += [f"| {name} | {value} |" for name, value in pairs]
    return "\n".join(lines)


def render(results: dict[str, Any]) -> str:
    sections = results["sections"]
    faults, connectors = sections["faults"], sections["connectors"]
    hostile, fuzz, load = sections["hostile_http"], sections["fuzz"], sections["load"]
    index = sections["index_input"]
    limits = sections["server_limits"]
    statuses = ", ".join(f"{status}: {count}" for status, count in hostile["statuses"].items())
    targets = ", ".join(f"{name} {count}" for name, count in fuzz["by_target"].items())
    verdict = "passed" if results["passed"] else "FAILED"
    return f"""# Reliability

What a hostile probe of passageway does to it, and what it survives: `kill -9` during builds and
reconciles, connectors that break the protocol in every way we know, hostile HTTP, property-based
fuzzing of everything that reads outside input, and load. The suite is `tests/reliability/`; the
normal test run (`uv run pytest`) runs a reduced form of it (marker `reliability`), and one command
runs it in full and rewrites this page from its own measurements:

```sh
{results["command"]}
```

Last full run: {results["finished"]} on {results["machine"]} ({verdict}). The figures below are
copied from `docs/reliability.json` by `tests/reliability/report.py`; none is typed by hand.

## Faults: `kill -9` of a real server

The server (the real `passageway serve`, with the deterministic toy embedder) builds an index and
is killed with `SIGKILL` at random moments, then started again; after the build, a quarter of the
items are edited, a tenth added and a twentieth deleted, and the reconcile is killed the same way.
After every kill the index passes `PRAGMA integrity_check` and holds every item it held before;
at the end it holds every item in its last version (`tests/reliability/test_faults.py`).

{_rows([
    ("kills (first build + reconcile)",
     f"{faults['kills']} ({faults['build_kills']} + {faults['reconcile_kills']})"),
    ("kills that landed while work was left", faults["kills_with_work_left"]),
    ("server starts", faults["server_starts"]),
    ("items expected at the end", faults["items_expected"]),
    ("items lost", faults["items_lost"]),
    ("integrity checks failed", faults["integrity_checks_failed"]),
    ("passages embedded again after a kill", faults["texts_embedded_again"]),
])}

## Faults: connectors that misbehave

One source per misbehaviour ({", ".join(f"`{name}`" for name in connectors["behaviours"])}), each
of {connectors["items_per_source"]} items, beside a source that behaves; the fetch of the batch
holding one item misbehaves. Only that batch is lost (text that is not Unicode is repaired
instead), the other sources are untouched, and once the connectors behave the next start fetches
what is missing (`tests/reliability/test_connectors.py`).

{_rows([
    ("faults survived", connectors["faults"]),
    ("items lost after recovery", connectors["items_lost"]),
    ("healthy source disturbed", connectors["healthy_source_disturbed"]),
])}

## Hostile HTTP

Raw requests to a real server with OAuth on: headers and bodies that are not UTF-8, JSON nested
100,000 deep, lone surrogates, 3.9 MB session ids, 5 MB bodies, wrong content types, bad tokens,
query syntax of the keyword index, foreign `Host` headers, bytes that are not HTTP, and the OAuth
attacks (unsafe redirects, missing or plain PKCE, reused codes, wrong verifiers, registration
floods, password guessing). None may answer 500 or leave a traceback or an ERROR line in the log
(`tests/reliability/test_hostile_http.py`).

{_rows([
    ("requests sent", hostile["requests"]),
    ("answers by status", statuses),
    ("server errors (500)", hostile["server_errors"]),
    ("tracebacks in the log", hostile["tracebacks"]),
])}

## Idle connections, dropped clients, OAuth abuse

The server runs under `ulimit -n {limits["descriptor_limit"]}` (the systemd default) while
{limits["idle_connections"]} connections that send nothing are held open (each one the server
closes is opened again) and {limits["slow_connections"]} more dribble headers or a body a byte at a
time, for {limits["seconds_held"]} s; `/health` and an authenticated `/recall` are timed every half
second (`tests/reliability/test_slow_connections.py`). Clients hang up mid-body on `/register`,
`/token`, `/authorize`, `/recall` and `/mcp`. Redirect addresses that a browser reads otherwise
than Python does, bodies that do not decompress, `Host` headers that are no host name, and
anonymous registrations with the largest fields are sent (`tests/reliability/test_oauth_abuse.py`);
one client opens MCP sessions and never closes them, then the server gets `SIGTERM`
(`tests/reliability/test_mcp_sessions.py`).

{_rows([
    ("idle connections reopened after the server closed them", limits["idle_reopened"]),
    ("probes / slowest answer", f"{limits['probes']} / {limits['slowest_answer_s']} s"),
    ("answers slower than 1 s", limits["answers_over_1s"]),
    ("log growth under the idle connections", f"{limits['log_bytes_per_minute']} bytes a minute"),
    ("clients that hung up mid-body / log lines about them",
     f"{limits['dropped_clients']} / {limits['log_lines_for_dropped']}"),
    ("tricky redirect addresses refused / plain ones accepted",
     f"{limits['redirect_tricks_refused']} / {limits['redirect_addresses_accepted']}"),
    ("bad bodies and hosts (all 4xx) / with a JSON error",
     f"{limits['bad_body_cases']} / {limits['bad_body_json_errors']}"),
    ("anonymous registrations / oauth.json size / slowest",
     f"{limits['registrations']} / {limits['oauth_state_bytes']} bytes / "
     f"{limits['slowest_registration_s']} s"),
    ("MCP sessions opened (never closed) / refused",
     f"{limits['sessions_opened']} / {limits['sessions_refused']}"),
    ("SIGTERM after them", f"{limits['stop_seconds_after_sessions']} s"),
])}

## Fuzzing

[hypothesis](https://hypothesis.readthedocs.io) generates inputs for the connector-record
validator, the configuration loader, the markdown parser and connector, the chunker and the
question path (`tests/reliability/test_fuzz.py`).

{_rows([
    ("inputs fuzzed", fuzz["inputs"]),
    ("by target", targets),
    ("crashes", fuzz["crashes"]),
])}

## Hostile site folders

`passageway index` run as the real command on site folders built to hurt it
(`tests/reliability/test_index_input.py`): an `ai/` that links out of the site and links planted in
it, pages and twins that link outside, paragraphs of unmatched Markdown marks, repeated headings,
named pipes, deep JSON and HTML, and a page over the size cap. Each ends with exit status 0 (a bad
page skipped with one warning) or 2 (one error line), never a traceback.

{_rows([
    ("runs", index["runs"]),
    ("repeated headings in one page", index.get("repeated_headings", 0)),
    ("slowest run", f"{index['slowest_s']} s"),
    ("peak memory of a run", f"{index['peak_mib']} MiB"),
])}

## Load

{load["hook_clients"]} concurrent `/recall` clients and {load["mcp_clients"]} MCP clients (each its
own session) for {load["seconds"]:g} s against a real server holding {load["items"]} items
(`tests/reliability/test_load.py`). Latencies are as the clients saw them, on a machine that runs
clients and server together.

{_rows([
    ("`/recall` requests served", load["hook_requests"]),
    ("MCP `recall` calls served", load["mcp_calls"]),
    ("errors", load["errors"]),
    ("`/recall` p50 / p95", f"{load['hook_p50_ms']} / {load['hook_p95_ms']} ms"),
    ("MCP p50 / p95", f"{load['mcp_p50_ms']} / {load['mcp_p95_ms']} ms"),
    ("server memory before / after", f"{load['rss_before_mib']} / {load['rss_after_mib']} MiB"),
])}
{connector_families(sections)}{probe3(sections)}"""


def connector_families(sections: dict[str, Any]) -> str:
    """The sections of issue 32's connector families, where the run has them."""
    parts = []
    redirects = sections.get("redirects")
    if redirects:
        parts.append(f"""
## Connectors: redirects to another origin

The Trilium and Confluence connectors against a fake server that answers every request with a
redirect (301, 302, 303, 307, 308) to a second fake on another port or host: each call must fail
with one line naming both origins, and the second server counts every `Authorization` header it
receives. A redirect within the origin is followed with the token
(`tests/reliability/test_redirect_leaks.py`).

{_rows([
    ("calls redirected to another origin", redirects["calls"]),
    ("credentials sent to another origin", redirects["credentials_to_other_origins"]),
    ("same-origin redirects followed", redirects.get("same_origin_followed", 0)),
])}
""")
    poisoned = sections.get("poisoned_batches")
    if poisoned:
        parts.append(f"""
## Connectors: poisoned records

{poisoned["sources"]} sources of {poisoned["items_per_source"]} items ({", ".join(poisoned["kinds"])}),
each with {poisoned["bad_records"]} bad records in different fetch batches, in a real server beside a
healthy source, through a first build and a restart: a failing batch is fetched again one id at a
time, so each bad record costs only itself, and `/health` names it
(`tests/reliability/test_poisoned_batches.py`).

{_rows([
    ("bad records per source", poisoned["bad_records"]),
    ("items lost to another record's fault", poisoned["items_lost_to_another_record"]),
])}
""")
    hostile = sections.get("hostile_remote")
    if hostile:
        timings = [(name.removeprefix("seconds_").replace("_", " "), f"{value} s, "
                    f"{hostile.get('peak_mib_' + name.removeprefix('seconds_'), '?')} MiB")
                   for name, value in hostile.items() if name.startswith("seconds_")]
        parts.append(f"""
## Connectors: hostile remote servers

`list` of each connector against a fake that answers without end (with and without a length),
drips a byte every 0.2 s, nests its JSON 200,000 deep, or pages without end; `TIMEOUT` is 3 s.
Each call must end with one clear line on stderr, within its limits
(`tests/reliability/test_hostile_remote.py`). Time and peak memory of the slowest call of each:

{_rows([
    ("calls", hostile["calls"]),
    ("ended with one clear error", hostile["clear_errors"]),
    ("requests the connectors sent", hostile["requests"]),
    *timings,
])}
""")
    quadratic = sections.get("quadratic_sdk")
    if quadratic:
        rows = [(name, value) for name, value in quadratic.items() if ":" in name]
        parts.append(f"""
## Connectors: quadratic inputs to the SDK

Nested lists and blocks and one long sentence through the SDK's HTML to markdown step and its
text cutter, at two sizes: output and time must grow linearly
(`tests/reliability/test_quadratic_sdk.py`). The larger input of each:

{_rows(rows)}
""")
    return "".join(parts)


if __name__ == "__main__":
    PAGE.write_text(render(json.loads(RESULTS.read_text(encoding="utf-8"))), encoding="utf-8")
    sys.exit(0)

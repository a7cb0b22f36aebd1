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
"""


if __name__ == "__main__":
    PAGE.write_text(render(json.loads(RESULTS.read_text(encoding="utf-8"))), encoding="utf-8")
    sys.exit(0)

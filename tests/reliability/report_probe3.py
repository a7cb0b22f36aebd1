"""The sections of ``docs/reliability.md`` for the third probe's attacks (issue 38), rendered by
``report.py`` from the figures of ``tests/reliability/test_probe3_*.py``."""

from __future__ import annotations

from typing import Any

PROBE3_SECTIONS = {"probe3_slow_bodies", "probe3_prompts", "probe3_index"}


def _rows(pairs: list[tuple[str, Any]]) -> str:
    lines = ["| Figure | Value |", "| --- | --- |"]
    lines += [f"| {name} | {value} |" for name, value in pairs]
    return "\n".join(lines)


def probe3(sections: dict[str, Any]) -> str:
    """The third probe's sections, where the run has them."""
    parts = []
    slow = sections.get("probe3_slow_bodies")
    if slow:
        parts.append(f"""
## Slow request bodies at the connection cap

The server runs under `ulimit -n {slow["descriptor_limit"]}` with OAuth on. {slow["slow_connections"]}
connections send the headers of `POST /register`, then of `POST /token` (both anonymous), then of
`POST /recall` with the password, then with a wrong one (answered 401 before the body arrives),
and a body byte every round whatever the answer; each one the server closes is opened again.
Meanwhile `/health` and an authenticated `/recall` are probed, and every probe must be answered
200; the log may grow by about a line a second at most, without a traceback
(`tests/reliability/test_probe3_slow_bodies.py`).

{_rows([
    ("seconds under attack", slow["seconds"]),
    ("slow connections opened again after the server closed them", slow["slow_reopened"]),
    ("probes / unanswered", f"{slow['probes']} / {slow['probes_unanswered']}"),
    ("log lines added (besides the probes' own recalls)", slow["log_lines"]),
])}
""")
    prompts = sections.get("probe3_prompts")
    if prompts:
        parts.append(f"""
## Prompts that were quadratic

A question and one pasted line of the shapes that made the prompt reducer quadratic (a letter and
underscores, dots or dashes, a dotted path, a snake_case name, a run of short sentences), each
{prompts["prompt_chars"]} characters, sent to `/recall` while another thread probes `/health`
all along (`tests/reliability/test_probe3_prompts.py`).

{_rows([
    ("shapes", prompts["prompt_shapes"]),
    ("slowest `/recall`", f"{prompts['slowest_recall_s']} s"),
    ("`/health` probes meanwhile / slowest", f"{prompts['health_probes']} / {prompts['slowest_health_s']} s"),
])}
""")
    index = sections.get("probe3_index")
    if index:
        parts.append(f"""
## `passageway index`: ragged tables and runs of chrome

A page with a table of one row of N cells over N rows of one cell, and a page of
`<button>x</button>tail` repeated, through the real command; `chunks.json` must stay proportional
to the page and the CPU time grow linearly (`tests/reliability/test_probe3_index.py`).

{_rows([
    ("table page / chunks.json", f"{index['table_page_bytes']} / {index['table_chunks_bytes']} bytes"),
    ("table: time, peak memory", f"{index['table_seconds']} s, {index['table_peak_mib']} MiB"),
    ("chrome page / chunks.json", f"{index['chrome_page_bytes']} / {index['chrome_chunks_bytes']} bytes"),
    ("chrome: time, peak memory", f"{index['chrome_seconds']} s, {index['chrome_peak_mib']} MiB"),
])}
""")
    parts.append(LOW_FINDINGS)
    return "".join(parts)


LOW_FINDINGS = """
## Third probe: the low findings

Each is fixed where it arose, and a test fails without the fix:

- a build whose every fetch failed logged `ready: 0 items`; it now fails with `nothing could be
  fetched`, the number of items and what to do (`tests/test_fetch_run.py`);
- after a `kill -9` in the embedding or windows pass, `/health` said 0 items while the resumed
  pass ran; a source's start now reads its counts from the index first (`tests/test_sync_health.py`);
- a page past libxml2's depth or text limits was read as empty, silently; `passageway index` now
  skips it with one line naming the page and the limit
  (`plugins/passage-index/tests/test_html_page.py`);
- during a PostgreSQL outage each `/recall` waited 10 s for a connection and the syncing server
  said `indexing`; once a call has found the database away, later calls wait half a second and
  `/health` shows the source failing (`stores/postgres/tests/test_store.py`, `tests/test_app.py`).
"""

"""Where the test suite's time goes: a pytest plugin that records each test, and its report.

    rm -rf /tmp/timeline && PASSAGEWAY_TIMELINE=/tmp/timeline uv run pytest -q -p tests.timeline
    uv run python -m tests.timeline /tmp/timeline        # per worker, then per module

The plugin appends one JSON line per test (setup, call and teardown together) to
``<folder>/<worker>.jsonl``: its id, wall-clock start and end, and the processor time it used in
the worker's process and in the child processes it waited for (servers, command-line runs). It
changes nothing else, and asserts nothing (docs/performance.md, "Test suite in parallel").
"""

from __future__ import annotations

import collections
import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def _processor_seconds() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    folder = Path(os.environ.get("PASSAGEWAY_TIMELINE", "timeline"))
    start, (own, children) = time.time(), _processor_seconds()
    yield
    end, (own_after, children_after) = time.time(), _processor_seconds()
    folder.mkdir(parents=True, exist_ok=True)
    line = {"id": item.nodeid, "start": start, "end": end, "own": own_after - own,
            "children": children_after - children}
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with (folder / f"{worker}.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")


def report(folder: Path, top: int = 40) -> str:
    """Per worker: busy time and tests; per module (the ``top`` with most wall time): wall time
    summed over its tests, processor time, tests, workers and when it ran from the first start."""
    rows = []
    for path in sorted(folder.glob("*.jsonl")):
        rows += [json.loads(line) | {"worker": path.stem} for line in path.read_text().splitlines()]
    first, last = min(row["start"] for row in rows), max(row["end"] for row in rows)
    lines = [f"{len(rows)} tests from the first start to the last end: {last - first:.1f} s"]
    for worker in sorted({row["worker"] for row in rows}):
        mine = [row for row in rows if row["worker"] == worker]
        busy = sum(row["end"] - row["start"] for row in mine)
        cpu = sum(row["own"] + row["children"] for row in mine)
        ended = max(row["end"] for row in mine) - first
        lines.append(f"{worker}: {len(mine)} tests, busy {busy:.1f} s, processor {cpu:.1f} s, "
                     f"last end {ended:.1f} s")
    modules: dict[str, list[dict]] = collections.defaultdict(list)
    for row in rows:
        modules[row["id"].split("::", 1)[0]].append(row)
    lines.append("wall s | processor s | tests | workers | from-to s | module")
    by_wall = sorted(modules.items(), key=lambda pair: -sum(r["end"] - r["start"] for r in pair[1]))
    for module, mine in by_wall[:top]:
        wall = sum(row["end"] - row["start"] for row in mine)
        cpu = sum(row["own"] + row["children"] for row in mine)
        workers = ",".join(sorted({row["worker"] for row in mine}))
        span = f"{min(r['start'] for r in mine) - first:.0f}-{max(r['end'] for r in mine) - first:.0f}"
        lines.append(f"{wall:.1f} | {cpu:.1f} | {len(mine)} | {workers} | {span} | {module}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 40))

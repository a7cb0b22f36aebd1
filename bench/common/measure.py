"""Measuring: percentiles, milliseconds, progress lines on stderr, the commit and a machine gauge
for the lines a benchmark writes to docs/performance.md."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence

from common import ROOT


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[index]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def commit() -> str:
    """The checkout's short commit, marked ``+changes`` when tracked files differ from it."""
    def git(*arguments: str) -> str:
        return subprocess.run(["git", *arguments], cwd=ROOT, capture_output=True, text=True,
                              check=False).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return f"{head}+changes" if git("status", "--porcelain", "--untracked-files=no") else head


def python_gauge_ms() -> float:
    """How fast this machine runs plain Python: the best of five runs of 2 million additions.

    Recall's own work (outside the model) is Python and SQLite, so its times scale roughly with
    this number; it lets runs on different machines be compared (a machine twice as slow gives
    twice the gauge).
    """
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        total = 0
        for number in range(2_000_000):
            total += number
        best = min(best, time.perf_counter() - started)
    return best * 1000

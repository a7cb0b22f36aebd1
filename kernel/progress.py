"""A progress bar a person can watch on a terminal, and nothing at all when output is not one.

One line on stderr, redrawn in place: ``label [#####.....] done/total unit  rate/s  about N left``.
Used by a first build run in the foreground (``passageway serve`` on a terminal), by
``passageway eval`` and by ``passageway search --local`` on an unbuilt index. The numbers come
from what ``/health`` already reports for a building source (``fetched``, ``of``, ``rate``,
``eta_seconds``), so the bar and the health report never disagree.

Log lines and the bar share stderr: :meth:`ProgressBar.attach_to_logging` clears the bar before
each log line, and the next redraw puts it back below.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from passageway.kernel.durations import duration_text

REDRAW_SECONDS = 0.25


class ProgressBar:
    """One redrawn line on ``stream``; every method does nothing unless ``stream`` is a terminal."""

    def __init__(self, stream: TextIO | None = None, *, enabled: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self.shown = False
        self.started = time.monotonic()

    def update(
        self, label: str, done: int, total: int | None, unit: str = "",
        rate: float | None = None, eta_seconds: float | None = None,
    ) -> None:
        """Redraw the bar. Without ``rate`` and ``eta_seconds`` they are worked out from the start time."""
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.started
        if rate is None and elapsed > 0 and done:
            rate = done / elapsed
        if eta_seconds is None and rate and total:
            eta_seconds = max(total - done, 0) / rate
        width = shutil.get_terminal_size((80, 24)).columns
        counts = f"{done}/{total}" if total else f"{done}"
        tail = f" {counts}{' ' + unit if unit else ''}"
        if rate:
            tail += f"  {rate:.1f}/s"
        if eta_seconds is not None and total:
            tail += f"  about {duration_text(eta_seconds)} left"
        bar_width = max(10, min(30, width - len(label) - len(tail) - 4))
        filled = int(bar_width * min(done / total, 1.0)) if total else 0
        line = f"{label} [{'#' * filled}{'.' * (bar_width - filled)}]{tail}"
        self.stream.write("\r\x1b[K" + line[: width - 1])
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        """Take the bar off its line, so that a log line or a message can be written there."""
        if self.enabled and self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False

    def attach_to_logging(self) -> Callable[[], None]:
        """Clear the bar before every line of passageway's log handler; returns the undo."""
        handlers = [
            handler for handler in logging.getLogger().handlers if getattr(handler, "_passageway", False)
        ]

        def clear_first(record: logging.LogRecord) -> bool:
            self.clear()
            return True

        for handler in handlers:
            handler.addFilter(clear_first)

        def detach() -> None:
            for handler in handlers:
                handler.removeFilter(clear_first)

        return detach


def build_progress(
    report: Mapping[str, Any],
) -> tuple[str, int, int, float | None, float | None, str] | None:
    """``(label, done, total, rate, eta, unit)`` summed over the sources that build, from a health
    report: in passages (they move with every embedder call) once every building source knows how
    many to expect, in items fetched before that, and in excerpt windows once every passage has
    its vector.

    None when no source is building (the bar then disappears).
    """
    building = {
        name: entry for name, entry in (report.get("sources") or {}).items()
        if entry.get("state") == "indexing" and entry.get("of")
    }
    if not building:
        return None
    unit = "passages" if all(entry.get("expected") for entry in building.values()) else "items"
    if unit == "passages" and all(entry.get("windows_expected") and (
            entry.get("stage") == "windows" or int(entry.get("ready") or 0) >= int(entry["expected"]))
            for entry in building.values()):
        unit = "windows"  # every passage has its vector: the excerpt windows are what is left
    if unit == "windows":
        done = sum(int(entry.get("windows") or 0) for entry in building.values())
        total = sum(int(entry["windows_expected"]) for entry in building.values())
    elif unit == "passages":
        done = sum(int(entry.get("ready") or 0) for entry in building.values())
        total = sum(int(entry["expected"]) for entry in building.values())
    else:
        done = sum(int(entry.get("fetched") or 0) for entry in building.values())
        total = sum(int(entry["of"]) for entry in building.values())
    rates = [entry.get("rate") for entry in building.values()]
    rate = sum(rates) if all(value is not None for value in rates) else None  # type: ignore[misc]
    etas = [entry.get("eta_seconds") for entry in building.values()]
    eta = max(etas) if all(value is not None for value in etas) else None  # type: ignore[type-var]
    return f"building {', '.join(building)}", done, total, rate, eta, unit


async def watch_build(health: Callable[[], Mapping[str, Any]], bar: ProgressBar) -> None:
    """Redraw ``bar`` from ``health()`` until cancelled (it runs beside a build or a server)."""
    if not bar.enabled:
        return
    try:
        while True:
            progress = build_progress(health())
            if progress is None:
                bar.clear()
            else:
                label, done, total, rate, eta, unit = progress
                bar.update(label, done, total, unit, rate, eta)
            await asyncio.sleep(REDRAW_SECONDS)
    finally:
        bar.clear()

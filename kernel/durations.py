"""Durations as a person reads them, for the status page, ``passageway status``, the terminal's
progress bar and the build's log lines alike."""

from __future__ import annotations


def duration_text(seconds: float) -> str:
    """A time left as a person reads it: ``40 s``, ``12 min``, ``2.5 h``.

    The page, ``passageway status``, the terminal's progress bar and the build's log lines all say
    it this way.
    """
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"

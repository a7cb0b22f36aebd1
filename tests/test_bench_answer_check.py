"""The benches that replay recall count an answer as shown as ``passageway eval`` does: in a right
hit's excerpt, or in the heading shown above it (``contains_answer`` with the heading)."""

from __future__ import annotations

import sys
from pathlib import Path

from passageway.builtin.eval.cases import Case
from passageway.kernel.records import Hit

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _answered():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(BENCH))
    try:
        from common.replay import answered
    finally:
        sys.path.remove(str(BENCH))
    return answered


def _hit(text: str, heading: str | None, title: str = "Configuration") -> Hit:
    return Hit(source="docs", item_id="user-guide/configuration.md", title=title, url="",
               heading=heading, text=text, score=1.0, similarity=0.9)


def test_an_answer_in_the_heading_above_the_excerpt_counts_as_shown():
    answered = _answered()
    case = Case(query="Which setting reloads the site on changes?", expect=("configuration.md",),
                expect_text=("watch",))

    assert answered(case, [_hit("Determines additional directories to follow.", "Live Reloading › watch")])
    assert answered(case, [_hit("Set watch to a list of folders.", None)])
    assert not answered(case, [_hit("Determines additional directories to follow.", "Live Reloading")])
    # the title is not shown as the heading is, so it does not count
    assert not answered(case, [_hit("Determines additional directories.", None, title="watch")])

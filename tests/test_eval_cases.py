"""Cases files: strict parsing, merging, group filters and matching a hit against a case."""

from __future__ import annotations

from pathlib import Path

import pytest

from passageway.builtin.eval.cases import (
    Case,
    accepts,
    contains_answer,
    load_cases,
    normalise,
    parse_cases_text,
)
from passageway.kernel.errors import EvalError

GOOD = """
[targets]
hit_at_3 = 0.8
p95_ms = 300

[[case]]
query = "what is the vanishing gradient problem"
expect = ["Vanishing gradient problem"]
expect_text = ["gradients shrink"]
group = "en"

[[case]]
query = "wie funktioniert Backpropagation"
expect_id = ["backpropagation.md"]

[[case]]
query = "what is on the cafeteria menu"
"""


def test_parses_cases_targets_and_silent_questions():
    parsed = parse_cases_text(GOOD, "cases.toml")
    assert [case.answerable for case in parsed.cases] == [True, True, False]
    assert parsed.cases[0].expect_text == ("gradients shrink",)
    assert parsed.cases[1].expect_id == ("backpropagation.md",)
    assert parsed.cases[2].group_label == "(no group)"
    assert parsed.targets == {"hit_at_3": 0.8, "p95_ms": 300.0}
    assert parsed.has_targets


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[[case]]\nquery = "q"\nexpcet = ["x"]\n', "'expcet'"),
        ('[targets]\nhit_at_5 = 0.5\n[[case]]\nquery = "q"\n', "'hit_at_5'"),
        ('[[cases]]\nquery = "q"\n', "'cases'"),
        ('[[case]]\nquery = "q"\nexpect = []\n', "`expect`"),
        ('[[case]]\nquery = "q"\nexpect = [1]\n', "`expect`"),
        ('[[case]]\nquery = ""\n', "`query`"),
        ('[[case]]\nquery = "q"\nexpect_text = ["a"]\n', "`expect_text` needs"),
        ('[targets]\nsilence = 80\n[[case]]\nquery = "q"\n', "share from 0 to 1"),
        ('[targets]\nsilence = "high"\n[[case]]\nquery = "q"\n', "must be a number"),
        ("[targets]\nhit_at_3 = 0.5\n", "no [[case]]"),
        ("[[case]\n", "not valid TOML"),
    ],
)
def test_a_mistake_is_an_error_that_names_it(text, named):
    with pytest.raises(EvalError) as caught:
        parse_cases_text(text, "cases.toml")
    assert named in str(caught.value)
    assert caught.value.exit_code == 2


def test_files_merge_in_order_and_later_targets_win(tmp_path: Path):
    first = tmp_path / "a.toml"
    second = tmp_path / "b.toml"
    first.write_text('[targets]\nsilence = 0.5\nhit_at_3 = 0.6\n[[case]]\nquery = "one"\n', encoding="utf-8")
    second.write_text('[targets]\nsilence = 0.9\n[[case]]\nquery = "two"\ngroup = "g"\n', encoding="utf-8")
    merged = load_cases([first, second])
    assert [case.query for case in merged.cases] == ["one", "two"]
    assert merged.targets == {"silence": 0.9, "hit_at_3": 0.6}
    with pytest.raises(EvalError, match="does not exist"):
        load_cases([tmp_path / "missing.toml"])


def test_only_groups_keeps_the_named_groups_and_refuses_an_unknown_one():
    parsed = parse_cases_text(GOOD, "cases.toml")
    assert [case.query for case in parsed.only_groups(["en"]).cases] == [parsed.cases[0].query]
    with pytest.raises(EvalError, match="no case has that group"):
        parsed.only_groups(["de"])


def test_expect_matches_title_heading_address_or_id_case_insensitively():
    case = Case("q", expect=("backpropagation.md",))
    assert accepts(case, item_id="de/Backpropagation.md", title="X", heading=None, url="u")
    assert accepts(case, item_id="x", title="x", heading=None, url="file:///corpus/en/backpropagation.md")
    assert not accepts(case, item_id="x", title="Backpropagation", heading=None, url="u")
    heading_case = Case("q", expect=("Watering",))
    assert accepts(heading_case, item_id="x", title="Tomatoes", heading="watering", url="u")


def test_expect_id_must_be_exact():
    case = Case("q", expect_id=("notes/a",))
    assert accepts(case, item_id="notes/a", title="t", heading=None, url="u")
    assert not accepts(case, item_id="notes/ab", title="t", heading=None, url="u")


def test_answer_text_ignores_case_and_whitespace():
    case = Case("q", expect=("x",), expect_text=("30 to 50\nthousand",))
    assert normalise("  A \t B\n") == "a b"
    assert contains_answer(case, "Between 30  to 50 Thousand died.")
    assert not contains_answer(case, "30 to 40 thousand")
    assert not contains_answer(Case("q", expect=("x",)), "anything")


def test_an_answer_in_the_heading_shown_counts_and_never_across_text_and_heading():
    case = Case("which setting makes the server watch my theme?", expect=("configuration.md",),
                expect_text=("watch",))
    text = "A directory containing a custom theme."
    assert not contains_answer(case, text)
    assert contains_answer(case, text, "Live Reloading › watch")
    assert not contains_answer(case, text, None)
    joined = Case("q", expect=("x",), expect_text=("theme. Live",))
    assert not contains_answer(joined, text, "Live Reloading › watch")

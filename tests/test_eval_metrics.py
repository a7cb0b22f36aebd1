"""Scoring: ranks, rates with Wilson intervals, n/a, latency, targets and the gate rule."""

from __future__ import annotations

import pytest

from passageway.builtin.eval.cases import Case
from passageway.builtin.eval.metrics import Outcome, check_targets, percentile, score, wilson
from passageway.builtin.eval.report import choose_threshold
from passageway.kernel.records import Hit


def hit(item_id: str, text: str = "") -> Hit:
    return Hit("notes", item_id, item_id.title(), f"https://x/{item_id}", None, text, 0.9, 0.9)


def outcome(case: Case, *ids: str, seconds: float = 0.01, embed: float = 0.004, text: str = "") -> Outcome:
    return Outcome(case, tuple(hit(item, text) for item in ids), seconds, embed)


def test_wilson_matches_known_values():
    low, high = wilson(62, 70)
    assert (round(low, 3), round(high, 3)) == (0.79, 0.941)  # the published 88.6% (79–94%)
    low, high = wilson(0, 10)
    assert low == 0.0 and round(high, 3) == 0.278
    low, high = wilson(10, 10)
    assert round(low, 3) == 0.722 and high == 1.0
    assert wilson(0, 0) is None


def test_percentile_interpolates_and_handles_empty():
    assert percentile([], 0.5) is None
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert percentile([0.0, 10.0], 0.95) == pytest.approx(9.5)


def test_rank_answer_rank_and_rates():
    first = Case("a", expect=("alpha",), expect_text=("needle",))
    second = Case("b", expect=("beta",), expect_text=("needle",))
    third = Case("c", expect=("gamma",))
    silent_ok = Case("d")
    silent_bad = Case("e")
    outcomes = [
        outcome(first, "alpha", "other", text="a needle here"),  # rank 1, answer 1
        outcome(second, "other", "zeta", "beta"),  # rank 3, no answer text
        outcome(third),  # silent: false silence
        outcome(silent_ok),
        outcome(silent_bad, "alpha"),
    ]
    assert outcomes[0].rank == 1 and outcomes[0].answer_rank == 1
    assert outcomes[1].rank == 3 and outcomes[1].answer_rank is None
    metrics = score(outcomes)
    assert (metrics.answerable, metrics.unanswerable, metrics.with_answer_text) == (3, 2, 2)
    assert metrics.rates["hit_at_1"].count == 1
    assert metrics.rates["hit_at_3"].count == 2
    assert metrics.rates["false_silence"].count == 1
    assert metrics.rates["silence"].count == 1
    assert metrics.rates["answer_at_1"].count == 1 and metrics.rates["answer_at_1"].total == 2
    assert metrics.mrr == pytest.approx((1 + 1 / 3 + 0) / 3)


def test_a_metric_without_questions_is_none_and_fails_its_target():
    metrics = score([outcome(Case("a", expect=("alpha",)), "alpha")])
    assert metrics.rates["silence"].value is None
    assert metrics.rates["silence"].interval is None
    results = check_targets(metrics, {"silence": 0.0, "hit_at_1": 1.0})
    assert results["silence"]["met"] is False and results["silence"]["value"] is None
    assert results["hit_at_1"]["met"] is True


def test_targets_compare_the_shown_value_and_maxima():
    cases = [Case(q, expect=("alpha",)) for q in "abc"]
    metrics = score([outcome(cases[0], "alpha"), outcome(cases[1], "alpha"), outcome(cases[2], "zeta")])
    results = check_targets(metrics, {"hit_at_1": 0.667, "false_silence": 0.0, "p95_ms": 10.0})
    assert results["hit_at_1"]["met"] is True  # 2 of 3 shows as 66.7%
    assert check_targets(metrics, {"hit_at_1": 0.668})["hit_at_1"]["met"] is False
    assert results["false_silence"]["met"] is True
    assert results["p95_ms"]["met"] is True  # every question took 10.0 ms
    assert check_targets(metrics, {"p95_ms": 9.9})["p95_ms"]["met"] is False


def test_latency_and_embedding_share():
    cases = [Case(q) for q in "abcd"]
    metrics = score(
        [outcome(case, seconds=0.010 * (index + 1), embed=0.002) for index, case in enumerate(cases)]
    )
    assert metrics.p50_ms == pytest.approx(25.0)
    assert metrics.embedding_p50_ms == pytest.approx(2.0)
    assert metrics.embedding_share == pytest.approx(8 / 100)


def test_gate_rule_takes_the_highest_sum_and_the_lower_threshold_on_a_tie():
    answerable = Case("a", expect=("alpha",))
    silent = Case("s")

    def row(found: bool, quiet: bool):
        return score(
            [outcome(answerable, *(["alpha"] if found else [])), outcome(silent, *([] if quiet else ["x"]))]
        )

    rows = [
        (0.80, row(True, False)),
        (0.82, row(True, True)),
        (0.84, row(False, True)),
        (0.86, row(True, True)),
    ]
    assert choose_threshold(rows) == 0.82
    assert choose_threshold([(0.9, score([outcome(answerable, "alpha")]))]) is None


def test_an_answer_named_by_the_hits_heading_counts_as_shown():
    case = Case("which template variable holds the version?", expect=("themes",),
                expect_text=("mkdocs_version",))
    headed = Hit("docs", "themes", "Themes", "https://x/themes", "Global Context › mkdocs_version",
                 "Contains the current MkDocs version.", 0.9, 0.9)
    assert Outcome(case, (headed,), 0.01, 0.004).answer_rank == 1
    bare = Hit("docs", "themes", "Themes", "https://x/themes", "Global Context",
               "Contains the current MkDocs version.", 0.9, 0.9)
    assert Outcome(case, (bare,), 0.01, 0.004).answer_rank is None

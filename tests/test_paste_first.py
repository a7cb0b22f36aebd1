"""A paste's names may add a page to the answer, never push out what the question alone finds."""

from __future__ import annotations

from passageway.kernel.query.recall import alternated
from passageway.kernel.ranking import Ranked
from passageway.kernel.store import Candidate


def ranked(item: str, key: int) -> Ranked:
    return Ranked(Candidate("docs", key, item, item, f"u{key}", None, f"text {key}", 0.9, key), 1.0)


def test_the_two_rankings_alternate_with_the_first_leading_and_each_item_once():
    first = [ranked("a", 1), ranked("b", 2), ranked("c", 3)]
    second = [ranked("x", 4), ranked("a", 5), ranked("y", 6), ranked("z", 7)]
    merged = alternated(first, second)
    assert [entry.candidate.item_id for entry in merged] == ["a", "x", "b", "c", "y", "z"]
    assert merged[0].candidate.passage_key == 1  # the first ranking's passage of a shared item


def test_an_empty_ranking_leaves_the_other():
    second = [ranked("x", 4), ranked("y", 6)]
    assert alternated([], second) == second
    assert alternated(second, []) == second

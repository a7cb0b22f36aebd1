"""The keyword row budget's choice of terms (the search itself: tests/test_storage.py)."""

from __future__ import annotations

from passageway_store_postgres.budget import Statistics, lexeme, within_budget


def test_a_small_index_or_no_budget_searches_every_term():
    assert within_budget(["alpha", "beta"], 900, {"alpha": 0.9}, budget=1000) == ["alpha", "beta"]
    assert within_budget(["alpha", "beta"], 10**6, {"alpha": 0.9}, budget=0) == ["alpha", "beta"]


def test_the_rarest_terms_are_kept_in_question_order_up_to_the_budget():
    fractions = {"the": 0.9, "mill": 0.004, "river": 0.003, "wheel": 0.0005}
    # 100,000 rows: wheel 50, river 300, mill 400, the 90,000 (estimated)
    assert within_budget(["the", "mill", "river", "wheel"], 100_000, fractions, budget=1000) == [
        "mill", "river", "wheel"]
    assert within_budget(["the", "mill", "river", "wheel"], 100_000, fractions, budget=500) == [
        "river", "wheel"]
    assert within_budget(["the"], 100_000, fractions, budget=500) == []


def test_a_term_outside_the_common_list_counts_as_the_least_common_one():
    assert within_budget(["zebra", "the"], 100_000, {"the": 0.9, "mill": 0.004}, budget=1000) == ["zebra"]


def test_lexemes_are_lower_case_without_accents():
    assert lexeme("Brücke") == "brucke" and lexeme("ÉCOLE") == "ecole"


def test_statistics_are_read_once_per_interval_and_again_after_a_write():
    reads = []
    statistics = Statistics(lambda connection: (reads.append(connection), (10.0, {"a": 0.5}, 40.0))[1])
    assert statistics.current("first") == (10.0, {"a": 0.5}, 40.0)
    assert statistics.current("second") == (10.0, {"a": 0.5}, 40.0)
    assert reads == ["first"]
    statistics.forget()
    statistics.current("third")
    assert reads == ["first", "third"]

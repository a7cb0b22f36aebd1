"""The rankers and the relevance gate on small fixed candidate lists."""

from __future__ import annotations

import re

import numpy as np
import pytest

from passageway.builtin.ranking import FusionRanker
from passageway.builtin.ranking.signals import unknown_words
from passageway.kernel.plugins import build_plugin_manager, collect_registries
from passageway.kernel.ranking import DEPTH, Gate, Ranker
from passageway.kernel.store import Candidate
from passageway.kernel.text.stopwords import (
    content_words,
    fold,
    language_of,
    language_of_words,
    matched_words,
    words,
)

VECTOR = np.zeros(4, dtype=np.float32)
GATE = Gate(0.85)
"""A gate like the built-in model's, without a cross-language offset."""
OPEN = Gate(0.5)

_keys = iter(range(10_000))


def candidate(
    item: str,
    text: str,
    similarity: float,
    *,
    source: str = "notes",
    title: str | None = None,
    weight: float = 1.0,
    rank: int = 0,
) -> Candidate:
    return Candidate(
        source=source,
        passage_key=next(_keys),
        item_id=item,
        title=title or item.title(),
        url=f"https://x/{item}",
        heading=None,
        text=text,
        similarity=similarity,
        rank=rank,
        weight=weight,
    )


def ranked_items(result) -> list[str]:
    return [entry.candidate.item_id for entry in result]


# ---------------------------------------------------------------------------------------------
# Content words
# ---------------------------------------------------------------------------------------------


def test_content_words_drop_english_and_german_stopwords_and_keep_numbers():
    assert content_words("What is the name of the river that flows through Bonn in 1990?") == [
        "river",
        "flows",
        "bonn",
        "1990",
    ]
    assert content_words("Wann wurde die Universität in Chicago gegründet?") == [
        "universitat",
        "chicago",
        "gegrundet",
    ]
    assert content_words("was ist das und wie?") == []


def test_matched_words_are_whole_folded_words():
    assert matched_words(["universitat", "chicago"], "Die Universität von Chicago") == {
        "universitat",
        "chicago",
    }
    assert matched_words(["chicago"], "Chicagoland") == set()


def test_language_of_tells_english_from_german_by_function_words():
    assert language_of("When was the university founded and by whom?") == "en"
    assert language_of("Wann wurde die Universität gegründet und von wem?") == "de"
    assert language_of("Chicago 1890") is None


@pytest.mark.parametrize("text", [
    "The Amazon RAINFOREST, 5,500,000 km2 (in 1991) - snake_case and CamelCase.",
    "Die Universität von Chicago wurde 1890 gegründet; Straße, Ärger, café, İstanbul, ﬁne, x²",
    "",
    "   ",
])
def test_words_split_and_fold_ascii_and_other_text_alike(text):
    # the ASCII fast path must give what folding word by word gives
    expected = [fold(token) for token in re.findall(r"\w+", text)]
    assert words(text) == expected


def test_language_of_words_agrees_with_language_of():
    for text in ("When was the university founded and by whom?",
                 "Wann wurde die Universität gegründet und von wem?", "Chicago 1890"):
        assert language_of_words(words(text)) == language_of(text)
        assert language_of_words(iter(words(text))) == language_of(text)


def test_unknown_words_accept_a_six_letter_prefix_but_not_a_short_one():
    vocabulary = {"siedler", "amazonas", "chicago"}
    assert unknown_words(["siedlern", "amazonaswaldes", "chicago", "yale"], vocabulary) == {"yale"}
    assert unknown_words(["chic"], vocabulary) == {"chic"}


# ---------------------------------------------------------------------------------------------
# Fusion
# ---------------------------------------------------------------------------------------------


def test_hybrid_puts_a_passage_both_signals_found_first():
    both = candidate("both", "tesla coil patents radio", 0.80)
    vector_only = candidate("vector-only", "something else entirely", 0.82)
    keyword_only = candidate("keyword-only", "tesla coil patents radio and more", 0.60)
    fillers = [candidate(f"filler{i}", "unrelated", 0.70) for i in range(5)]
    ranker = FusionRanker("hybrid", unknown_margin=None)
    scored, _ = ranker.score("tesla coil patents radio", [keyword_only, both], [vector_only, both, *fillers])
    order = [entry.candidate.item_id for entry in scored]
    assert order[:3] == ["both", "keyword-only", "vector-only"]


def test_the_keyword_rank_counts_by_coverage_so_a_foreign_keyword_list_cannot_reorder():
    # A German question against English passages: the keyword list matched on one stray word.
    answer = candidate("answer", "Tesla was granted patents for transmitting electrical energy", 0.83)
    noise = [candidate(f"noise{i}", f"the river Main flows {i}", 0.70 + i / 1000) for i in range(5)]
    question = "Welche Patente erhielt Tesla im Jahr 1900 für die Übertragung von Energie am Main?"
    plain = FusionRanker("hybrid", coverage_weighted=False, unknown_margin=None)
    weighted = FusionRanker("hybrid", unknown_margin=None)
    vector_list = [answer, *noise]
    keyword_list = [*reversed(noise), answer]  # the stray word outranks "Tesla" in BM25
    plain_scored, _ = plain.score(question, keyword_list, vector_list)
    weighted_scored, _ = weighted.score(question, keyword_list, vector_list)
    assert plain_scored[0].candidate.item_id != "answer"
    assert weighted_scored[0].candidate.item_id == "answer"


def test_weight_multiplies_the_score():
    light = candidate("light", "alpha beta", 0.90)
    heavy = candidate("heavy", "alpha beta", 0.85, weight=2.0)
    result = FusionRanker("hybrid").rank("alpha beta", VECTOR, [], [light, heavy], OPEN)
    assert ranked_items(result) == ["heavy", "light"]
    result = FusionRanker("vector").rank("alpha beta", VECTOR, [], [light, heavy], OPEN)
    assert ranked_items(result) == ["heavy", "light"]


def test_only_the_best_passage_of_an_item_competes_and_the_list_stops_at_the_depth_recall_reads():
    passages = [candidate("same", f"alpha part {i}", 0.95 - i / 100) for i in range(3)]
    others = [candidate(f"other{i}", "alpha", 0.80 - i / 100) for i in range(DEPTH + 2)]
    result = FusionRanker("hybrid").rank("alpha", VECTOR, [], [*passages, *others], OPEN)
    assert ranked_items(result) == ["same", *(f"other{i}" for i in range(DEPTH - 1))]
    assert result[0].candidate.text == "alpha part 0"


def test_the_same_item_id_in_two_sources_is_two_items():
    english = candidate("normans.md", "alpha", 0.9, source="corpus-en")
    german = candidate("normans.md", "alpha", 0.89, source="corpus-de")
    result = FusionRanker("vector").rank("alpha", VECTOR, [], [english, german], OPEN)
    assert [entry.candidate.source for entry in result] == ["corpus-en", "corpus-de"]


def test_keyword_ranker_orders_by_the_keyword_list_and_vector_ranker_by_cosine():
    first_by_keywords = candidate("k", "alpha beta gamma", 0.70)
    first_by_cosine = candidate("v", "alpha beta gamma", 0.90)
    keyword_list = [first_by_keywords, first_by_cosine]
    vector_list = [first_by_cosine, first_by_keywords]
    question = "alpha beta gamma"
    assert ranked_items(FusionRanker("keyword").rank(question, VECTOR, keyword_list, vector_list, OPEN)) == [
        "k",
        "v",
    ]
    assert ranked_items(FusionRanker("vector").rank(question, VECTOR, keyword_list, vector_list, OPEN)) == [
        "v",
        "k",
    ]


# ---------------------------------------------------------------------------------------------
# The gate
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("signals", ["hybrid", "keyword", "vector"])
def test_gate_cosine_path(signals):
    above = candidate("above", "nothing in common", 0.86)
    below = candidate("below", "nothing in common", 0.84)
    result = FusionRanker(signals).rank("quantum chromodynamics", VECTOR, [], [above, below], GATE)
    assert ranked_items(result) == ["above"]
    assert result[0].reason == "similarity"


@pytest.mark.parametrize("signals", ["hybrid", "keyword", "vector"])
def test_gate_three_content_words_rescue_a_low_cosine(signals):
    three = candidate("three", "The steam turbine rotor and its blades", 0.40)
    two = candidate("two", "The steam turbine", 0.40)
    question = "How are the blades of a steam turbine rotor arranged?"
    result = FusionRanker(signals).rank(question, VECTOR, [three, two], [three, two], GATE)
    assert ranked_items(result) == ["three"]
    assert result[0].reason == "words"
    assert result[0].matched >= 3


def test_stopwords_do_not_count_towards_three_words_in_english_or_german():
    english = candidate("en", "What is the one of these that was in it", 0.40)
    german = candidate("de", "Was ist das, wie wurde es in der Zeit von dem", 0.40)
    for question in (
        "What is the one of these that was in it?",
        "Was ist das, wie wurde es in der Zeit von dem?",
    ):
        result = FusionRanker("hybrid").rank(question, VECTOR, [english, german], [english, german], GATE)
        assert result == []


def test_below_the_gate_is_silence_not_a_best_guess():
    weak = [candidate(f"weak{i}", "unrelated text", 0.6) for i in range(10)]
    assert FusionRanker("hybrid").rank("volcanic eruptions", VECTOR, weak, weak, GATE) == []


def test_cross_language_passages_get_the_lower_bar_by_the_gates_offset():
    english = candidate("en", "Tesla was granted patents for transmitting electrical energy in 1900.", 0.82)
    question = "Wann erhielt Tesla die Patente für die Übertragung elektrischer Energie?"
    ranker = FusionRanker("hybrid", unknown_margin=None)
    assert ranked_items(ranker.rank(question, VECTOR, [], [english], Gate(0.85, 0.05))) == ["en"]
    assert ranker.rank(question, VECTOR, [], [english], Gate(0.85, 0.0)) == []
    assert ranker.rank(question, VECTOR, [], [english], Gate(0.85)) == []  # no offset unless given
    # the same cosine in the question's own language stays below the bar
    same = candidate("en2", "Tesla was granted patents for transmitting electrical energy in 1900.", 0.82)
    question_en = "When did Tesla get his radio patent approved?"
    assert ranker.rank(question_en, VECTOR, [], [same], Gate(0.85, 0.05)) == []


def test_a_ranker_without_cross_language_ignores_the_offset():
    english = candidate("en", "Tesla was granted patents for transmitting electrical energy in 1900.", 0.82)
    question = "Wann erhielt Tesla die Patente für die Übertragung elektrischer Energie?"
    ranker = FusionRanker("hybrid", unknown_margin=None, cross_language=False)
    assert ranker.rank(question, VECTOR, [], [english], Gate(0.85, 0.05)) == []
    assert ranked_items(ranker.rank(question, VECTOR, [], [english], Gate(0.82, 0.05))) == ["en"]


def test_the_ranker_has_no_offset_of_its_own():
    # V1: the offset belongs to the model; the built-in rankers take it from the gate only.
    for signals in ("hybrid", "keyword", "vector"):
        assert not hasattr(FusionRanker(signals), "cross_language_offset")


def test_a_question_word_no_source_knows_raises_the_bar_and_turns_off_the_word_rescue():
    chicago = candidate(
        "chicago",
        "The University of Chicago was founded in 1890 by John D. Rockefeller.",
        0.86,
        title="University of Chicago",
    )
    question = "When was Yale University founded and who was its first president in 1701?"
    strict = FusionRanker("hybrid", unknown_margin=0.02)
    assert strict.rank(question, VECTOR, [chicago], [chicago], GATE) == []
    assert ranked_items(strict.rank(question, VECTOR, [chicago], [chicago], Gate(0.83))) == ["chicago"]
    off = FusionRanker("hybrid", unknown_margin=None)
    assert ranked_items(off.rank(question, VECTOR, [chicago], [chicago], GATE)) == ["chicago"]


# ---------------------------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------------------------


def test_the_plugin_registers_three_rankers_that_satisfy_the_protocol():
    manager = build_plugin_manager({}, builtins=("passageway.builtin.ranking",), load_entry_points=False)
    rankers = collect_registries(manager).rankers
    assert rankers.names() == ["hybrid", "keyword", "vector"]
    for name in rankers.names():
        ranker = rankers.get(name)()
        assert isinstance(ranker, Ranker)
        assert ranker.name == name


def test_the_lead_path_is_off_by_default_and_passes_a_clear_leader_when_on():
    leader = candidate("leader", "nothing shared", 0.80)
    crowd = [candidate(f"crowd{i}", "nothing shared", 0.70 - i / 1000) for i in range(12)]
    question = "quantum chromodynamics lattice"
    assert FusionRanker("vector").rank(question, VECTOR, [], [leader, *crowd], GATE) == []
    result = FusionRanker("vector", lead=0.05).rank(question, VECTOR, [], [leader, *crowd], GATE)
    assert ranked_items(result) == ["leader"] and result[0].reason == "lead"
    # with fewer than ten candidates there is no reference, so no lead
    assert FusionRanker("vector", lead=0.05).rank(question, VECTOR, [], [leader, *crowd[:5]], GATE) == []


def test_lead_across_only_leaves_same_language_passages_to_the_absolute_bar():
    crowd = [candidate(f"crowd{i}", "the and of a text about nothing", 0.60 - i / 1000) for i in range(12)]
    english = candidate("en", "The patents of the engineer were granted in the year of the fair.", 0.70)
    german_question = "Wann wurden die Patente des Ingenieurs erteilt und von wem?"
    english_question = "When were the engineer's patents approved, and by whom?"
    ranker = FusionRanker("vector", lead=0.05, lead_across_only=True)
    assert ranked_items(ranker.rank(german_question, VECTOR, [], [english, *crowd], GATE)) == ["en"]
    assert ranker.rank(english_question, VECTOR, [], [english, *crowd], GATE) == []

"""The answerability score: its features, its weights, and the silence it gives in recall."""

from __future__ import annotations

import math

import pytest

from passageway.builtin.ranking import FusionRanker, answerability
from passageway.kernel.query.recall import sentence_cosines
from passageway.kernel.ranking import AnswerCheck, Gate
from passageway.kernel.store import Candidate
from passageway.testing.recall import recall_over as recall
from passageway.testing.toy_embedder import ToyEmbedder

GATE = Gate(0.87, 0.06)


def passage(key: int, text: str, cosine: float, item: str | None = None) -> Candidate:
    return Candidate("docs", key, item or f"page-{key}", f"Page {key}", f"u{key}", None, text, cosine, key)


POOL = [
    passage(0, "Configure the prompt timeout with command_timeout in milliseconds.", 0.90),
    passage(1, "The prompt shows the git branch of the current directory.", 0.88),
    passage(2, "Install the prompt with the installer script.", 0.86),
]
BIG = POOL + [passage(10 + n, f"Filler passage {n} about the prompt.", 0.80) for n in range(8)]
"""Enough candidates for the score to judge (``answerability.MIN_POOL``)."""


def test_features_measure_words_against_the_candidates():
    question = "How do I configure the prompt timeout in milliseconds?"
    found = answerability.features(question, POOL[:1], POOL, POOL, [None], GATE)
    assert found.cosine == pytest.approx(0.03)
    assert found.sentence == pytest.approx(0.03)  # no windows: the passage's cosine stands in
    assert found.keyword == 1.0  # first in the keyword list
    assert found.across == 0.0
    assert found.absent == 0.0  # every content word is in some candidate
    # "prompt" is in every candidate and weighs least; the first hit holds all the words
    assert found.coverage == pytest.approx(1.0)
    elsewhere = answerability.features(question, POOL[1:2], POOL, POOL, [None], GATE)
    assert elsewhere.coverage < 0.3 and elsewhere.keyword < 1.0


def test_a_word_no_candidate_holds_counts_as_absent_and_a_window_can_raise_the_sentence():
    question = "How do I show the weather in the prompt?"
    found = answerability.features(question, POOL[:2], POOL, POOL, [0.95, None], GATE)
    assert found.absent > 0.5  # "weather" is rare, "show" and "prompt" are not
    assert found.sentence == pytest.approx(0.08)  # the first hit's best window


def test_the_lead_measures_the_first_hit_against_the_tenth_best_candidate():
    question = "How do I configure the prompt timeout in milliseconds?"
    found = answerability.features(question, BIG[:1], BIG, BIG, [None], GATE)
    # BIG's tenth-best cosine is a filler's 0.80; the first hit's is 0.90
    assert found.lead == pytest.approx(0.10)
    small = answerability.features(question, POOL[:1], POOL, POOL, [None], GATE)
    assert small.lead == pytest.approx(0.04)  # fewer than ten: measured against the last (0.86)
    level = [passage(20 + n, f"Another passage {n} about the prompt.", 0.90) for n in range(10)]
    assert answerability.features(question, level[:1], level, level, [None], GATE).lead == 0.0


def test_the_score_is_a_logistic_of_the_weighted_features():
    found = answerability.Features(0.02, 0.01, 0.5, 0.0, 1.0, 0.0)
    weights = {"bias": -1.0, "coverage": 2.0, "keyword": 1.0}
    assert answerability.score(found, weights) == pytest.approx(1 / (1 + math.exp(-1.0)))  # -1 + 2 × 0.5 + 1


def test_the_answer_is_judged_by_its_best_hit():
    question = "How do I configure the prompt timeout in milliseconds?"
    # a paste's names can put a page about the paste first and the answer second
    hits = [BIG[2], BIG[0]]
    each = answerability.each_hit(question, hits, BIG, BIG, [None, None], GATE)
    assert each[0] == answerability.features(question, hits, BIG, BIG, [None, None], GATE)
    assert each[1].coverage == pytest.approx(1.0) and each[0].coverage < 0.5
    assert each[0].sentence == each[1].sentence == pytest.approx(0.03)  # answer-wide: the best window
    by_coverage = {"bias": -1.0, "coverage": 2.0}
    assert answerability.score(each[0], by_coverage) < 0.5
    assert answerability.answers(each, by_coverage, 0.5)  # the second hit answers
    assert not answerability.answers(each[:1], by_coverage, 0.5)
    strict = FusionRanker("hybrid", min_answerable=0.5, weights=by_coverage)
    assert strict.answerable(question, hits, BIG, BIG, [None, None], GATE)
    assert not strict.answerable(question, hits[:1], BIG, BIG, [None], GATE)


def test_the_ranker_judges_answers_only_when_a_bar_is_set():
    ranker = FusionRanker("hybrid", min_answerable=None)
    assert isinstance(ranker, AnswerCheck)
    question = "How do I show the weather in the prompt?"
    assert ranker.answerable(question, BIG[:1], BIG, BIG, [None], GATE)
    strict = FusionRanker("hybrid", min_answerable=0.5, weights={"bias": -5.0})
    assert not strict.answerable(question, BIG[:1], BIG, BIG, [None], GATE)
    lenient = FusionRanker("hybrid", min_answerable=0.5, weights={"bias": 5.0})
    assert lenient.answerable(question, BIG[:1], BIG, BIG, [None], GATE)
    # a pool of a few notes is not judged: word rarity among three candidates means nothing
    assert strict.answerable(question, POOL[:1], POOL, POOL, [None], GATE)


def test_the_cosine_bar_is_lowered_only_while_the_score_judges():
    question = "Where is the prompt installer?"
    with_score = FusionRanker("vector", min_answerable=0.0, bar_margin=0.02)
    passed = {entry.candidate.item_id for entry in with_score.rank(question, None, BIG, BIG, GATE)}
    assert "page-2" in passed  # 0.86 passes the bar 0.87 − 0.02
    without = FusionRanker("vector", min_answerable=None, bar_margin=0.02)
    assert "page-2" not in {e.candidate.item_id for e in without.rank(question, None, BIG, BIG, GATE)}
    small = {e.candidate.item_id for e in with_score.rank(question, None, POOL, POOL, GATE)}
    assert "page-2" not in small  # too few candidates to judge: the plain bar


class FixedStore:
    source = "docs"

    def search(self, question, vector, limit):
        return list(BIG), list(BIG)

    async def items(self, item_ids):
        return []


async def test_recall_is_silent_when_the_score_says_so():
    question = "How do I configure the prompt timeout in milliseconds?"
    embedder = ToyEmbedder(min_similarity=0.87)
    answered = await recall(question, [FixedStore()], embedder, FusionRanker("hybrid", min_answerable=None))
    assert not answered.silent
    vetoed = FusionRanker("hybrid", min_answerable=0.5, weights={"bias": -5.0})
    assert (await recall(question, [FixedStore()], embedder, vetoed)).silent


class Lookup:
    def __init__(self, vectors):
        self.vectors = vectors

    async def get_many(self, digests):
        return {digest: self.vectors[digest] for digest in digests if digest in self.vectors}


async def test_sentence_cosines_read_the_hits_window_vectors():
    import numpy as np

    from passageway.kernel.text.windows import flat, window_plan

    long_text = " ".join(f"Sentence number {n} says something about the prompt." for n in range(8))
    hit = passage(5, long_text, 0.88)
    plan = window_plan(flat(long_text))
    assert len(plan) > 1
    query = np.zeros(4, np.float32)
    query[0] = 1.0
    vectors = {digest: np.array([0.5 + 0.1 * n, 0, 0, 0], np.float32) for n, (_, digest) in enumerate(plan)}
    best = await sentence_cosines([hit, POOL[0]], query, Lookup(vectors))
    assert best[0] == pytest.approx(0.5 + 0.1 * (len(plan) - 1))
    assert best[1] is None  # a short passage has no windows
    assert await sentence_cosines([hit], query, None) == [None]


def test_an_answer_in_another_language_is_not_judged_and_keeps_the_cross_language_bar():
    german = "Wie stelle ich die Wartezeit des Prompts in Millisekunden ein?"
    strict = FusionRanker("hybrid", min_answerable=0.5, weights={"bias": -5.0})
    assert strict.answerable(german, BIG[:1], BIG, BIG, [None], GATE)  # English hit: not judged
    lowered = answerability.lowered(GATE, 0.03)
    assert lowered.min_similarity == pytest.approx(0.84)
    assert lowered.min_similarity - lowered.cross_language_offset == pytest.approx(0.81)  # as before

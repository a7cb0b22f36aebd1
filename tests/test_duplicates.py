"""One slot per content (kernel/query/duplicates.py): a copy of a better hit from another source or
item is left out, the question's language is kept, and the kept hit names the other source."""

from __future__ import annotations

import numpy as np

from passageway.builtin.ranking import FusionRanker
from passageway.kernel.query.duplicates import (
    DUPLICATE_ACROSS,
    DUPLICATE_COSINE,
    MUTUAL_FLOOR,
    candidate_digest,
    distinct,
)
from passageway.kernel.query.rendering import render_answer
from passageway.kernel.ranking import Ranked
from passageway.kernel.store import Candidate
from passageway.testing.recall import recall_over as recall
from passageway.testing.toy_embedder import ToyEmbedder
from tests.test_excerpts import DictCache, unit

ENGLISH = Candidate("corpus-en", 1, "steam.md", "Steam engine", "https://w/steam", None,
                    "The steam engine converts the heat of steam into work.", 0.93, 0)
GERMAN = Candidate("corpus-de", 1, "steam.md", "Dampfmaschine", "https://w/steam", None,
                   "Die Dampfmaschine wandelt die Wärme des Dampfes in Arbeit um.", 0.92, 1)
OTHER = Candidate("corpus-en", 2, "turbine.md", "Turbine", "https://w/turbine", None,
                  "A turbine extracts energy from a fluid flow.", 0.90, 2)
ENGLISH_QUESTION = "How does the steam engine turn the heat of steam into work?"
GERMAN_QUESTION = "Wie wandelt die Dampfmaschine die Wärme des Dampfes in Arbeit um?"


class Sources:
    """One store per source name, each returning its own candidates."""

    def __init__(self, source, candidates):
        self.source = source
        self.candidates = [c for c in candidates if c.source == source]

    def search(self, question, vector, limit):
        return [], list(self.candidates)

    async def items(self, item_ids):
        return []


def stores(*candidates):
    return [Sources(name, candidates) for name in ("corpus-en", "corpus-de")]


def cache_with(cosine: float) -> DictCache:
    """Passage vectors: ENGLISH and GERMAN at ``cosine`` to each other, OTHER far from both."""
    base, away = unit(1), unit(2)
    away = away - (away @ base) * base
    away /= np.linalg.norm(away)
    twin = cosine * base + np.sqrt(1 - cosine**2) * away
    return DictCache({
        candidate_digest(ENGLISH): base,
        candidate_digest(GERMAN): twin.astype(np.float32),
        candidate_digest(OTHER): unit(3),
    })


async def ask(question, cache, *candidates):
    embedder = ToyEmbedder(min_similarity=0.5)
    return await recall(question, stores(*candidates), embedder, FusionRanker("vector"), vector_cache=cache)


async def test_a_translation_fills_one_slot_and_the_kept_hit_names_the_other_source():
    answer = await ask(ENGLISH_QUESTION, cache_with(DUPLICATE_ACROSS + 0.01), ENGLISH, GERMAN, OTHER)
    assert [(hit.source, hit.item_id) for hit in answer.hits] == [
        ("corpus-en", "steam.md"), ("corpus-en", "turbine.md"),
    ]
    assert answer.hits[0].also_in == ("corpus-de",) and answer.hits[1].also_in == ()
    assert "also in: corpus-de" in render_answer(answer).splitlines()[1]


async def test_the_copy_in_the_questions_language_is_kept_even_when_ranked_lower():
    answer = await ask(GERMAN_QUESTION, cache_with(DUPLICATE_ACROSS + 0.01), ENGLISH, GERMAN, OTHER)
    assert [hit.source for hit in answer.hits] == ["corpus-de", "corpus-en"]
    assert answer.hits[0].title == "Dampfmaschine" and answer.hits[0].also_in == ("corpus-en",)
    assert answer.hits[1].item_id == "turbine.md"


async def test_passages_below_the_cut_are_different_content_and_both_stay():
    answer = await ask(ENGLISH_QUESTION, cache_with(DUPLICATE_ACROSS - 0.05), ENGLISH, GERMAN, OTHER)
    assert [hit.source for hit in answer.hits] == ["corpus-en", "corpus-de", "corpus-en"]
    assert all(hit.also_in == () for hit in answer.hits)


async def test_the_same_text_in_two_sources_is_one_content_without_any_vector():
    copy = Candidate("corpus-de", 5, "copied-note", ENGLISH.title, "https://elsewhere", None, ENGLISH.text,
                     0.92, 1)
    answer = await ask(ENGLISH_QUESTION, None, ENGLISH, copy, OTHER)
    assert [hit.item_id for hit in answer.hits] == ["steam.md", "turbine.md"]
    assert answer.hits[0].also_in == ("corpus-de",)


async def test_the_freed_slot_goes_to_the_next_passage_that_passes_the_gate():
    fourth = Candidate("corpus-en", 3, "boiler.md", "Boiler", "https://w/boiler", None,
                       "A boiler heats water.", 0.88, 3)
    cache = cache_with(DUPLICATE_ACROSS + 0.01)
    cache.vectors[candidate_digest(fourth)] = unit(4)
    answer = await ask(ENGLISH_QUESTION, cache, ENGLISH, GERMAN, OTHER, fourth)
    assert [hit.item_id for hit in answer.hits] == ["steam.md", "turbine.md", "boiler.md"]


async def test_one_language_needs_a_near_copy_different_paragraphs_of_an_article_stay_apart():
    close = Candidate("corpus-de", 4, "steam-notes.md", "Steam notes", "https://n/steam", None,
                      "The steam engine of Watt added a separate condenser to save heat.", 0.92, 1)
    cache = cache_with(DUPLICATE_ACROSS + 0.05)  # would be one content across languages
    cache.vectors[candidate_digest(close)] = cache.vectors.pop(candidate_digest(GERMAN))
    apart = await ask(ENGLISH_QUESTION, cache, ENGLISH, close, OTHER)
    assert [hit.item_id for hit in apart.hits] == ["steam.md", "steam-notes.md", "turbine.md"]
    cache = cache_with(DUPLICATE_COSINE + 0.01)
    cache.vectors[candidate_digest(close)] = cache.vectors.pop(candidate_digest(GERMAN))
    copied = await ask(ENGLISH_QUESTION, cache, ENGLISH, close, OTHER)
    assert [hit.item_id for hit in copied.hits] == ["steam.md", "turbine.md"]


def near(base: np.ndarray, cosine: float, seed: int) -> np.ndarray:
    """A unit vector at ``cosine`` to ``base`` in a direction of its own."""
    away = unit(seed)
    away = away - (away @ base) * base
    away /= np.linalg.norm(away)
    return (cosine * base + np.sqrt(1 - cosine**2) * away).astype(np.float32)


SECOND_GERMAN = Candidate("corpus-de", 2, "steam.md", "Dampfmaschine", "https://w/steam", None,
                          "Der Kondensator der Dampfmaschine spart Wärme, sagt der Text hier.", 0.2, 3)
"""Another paragraph of the German article: a candidate too dissimilar to the question to be a hit."""


async def test_across_languages_each_others_nearest_is_one_content_below_the_cut():
    cosine = (MUTUAL_FLOOR + DUPLICATE_ACROSS) / 2
    cache = cache_with(cosine)
    cache.vectors[candidate_digest(SECOND_GERMAN)] = near(cache.vectors[candidate_digest(ENGLISH)],
                                                          cosine - 0.05, 7)
    answer = await ask(ENGLISH_QUESTION, cache, ENGLISH, GERMAN, OTHER, SECOND_GERMAN)
    assert [(hit.source, hit.item_id) for hit in answer.hits] == [
        ("corpus-en", "steam.md"), ("corpus-en", "turbine.md"),
    ]
    assert answer.hits[0].also_in == ("corpus-de",)


async def test_a_pair_below_the_cut_is_two_contents_when_another_candidate_is_nearer():
    cosine = (MUTUAL_FLOOR + DUPLICATE_ACROSS) / 2
    cache = cache_with(cosine)
    # Another German paragraph is nearer to the English passage than the German hit is.
    cache.vectors[candidate_digest(SECOND_GERMAN)] = near(cache.vectors[candidate_digest(ENGLISH)],
                                                          cosine + 0.01, 7)
    answer = await ask(ENGLISH_QUESTION, cache, ENGLISH, GERMAN, OTHER, SECOND_GERMAN)
    assert [hit.source for hit in answer.hits] == ["corpus-en", "corpus-de", "corpus-en"]
    assert all(hit.also_in == () for hit in answer.hits)
    below = cache_with(MUTUAL_FLOOR - 0.01)  # each other's nearest, but under the floor
    answer = await ask(ENGLISH_QUESTION, below, ENGLISH, GERMAN, OTHER)
    assert [hit.source for hit in answer.hits] == ["corpus-en", "corpus-de", "corpus-en"]


# ---------------------------------------------------------------------------------------------
# The rule as a filter over the ranker's list
# ---------------------------------------------------------------------------------------------

COPY = Candidate("corpus-de", 6, "copied-steam.md", ENGLISH.title, "https://elsewhere/steam", None,
                 ENGLISH.text, 0.925, 2)
"""The English passage copied word for word into another item of another source."""
BOILER = Candidate("corpus-en", 3, "boiler.md", "Boiler", "https://w/boiler", None,
                   "A boiler heats water.", 0.88, 4)
PUMP = Candidate("corpus-en", 7, "pump.md", "Pump", "https://w/pump", None, "A pump moves water.", 0.87, 5)


def listed(*candidates: Candidate) -> list[Ranked]:
    """A ranker's list: the candidates in the given order, each having passed the gate."""
    return [Ranked(candidate, 1.0 - place / 100) for place, candidate in enumerate(candidates)]


async def test_the_filter_fills_three_slots_when_the_top_of_the_list_is_copies():
    cache = cache_with(DUPLICATE_ACROSS + 0.01)
    for seed, extra in enumerate((BOILER, PUMP), start=5):
        cache.vectors[candidate_digest(extra)] = unit(seed)
    ranked = listed(ENGLISH, GERMAN, COPY, OTHER, BOILER, PUMP)
    hits, copies = await distinct(ranked, ENGLISH_QUESTION, cache)
    assert [entry.candidate.item_id for entry in hits] == ["steam.md", "turbine.md", "boiler.md"]
    assert hits == [ranked[0], ranked[3], ranked[4]]  # the ranker's entries, in its order
    assert copies == {("corpus-en", "steam.md"): ("corpus-de",)}


async def test_the_filter_keeps_the_questions_language_in_the_place_the_list_gives_it():
    ranked = listed(ENGLISH, OTHER, GERMAN, BOILER)
    hits, copies = await distinct(ranked, GERMAN_QUESTION, cache_with(DUPLICATE_ACROSS + 0.01))
    assert [entry.candidate.item_id for entry in hits] == ["turbine.md", "steam.md", "boiler.md"]
    assert hits[1].candidate.source == "corpus-de"
    assert copies == {("corpus-de", "steam.md"): ("corpus-en",)}


async def test_without_copies_the_filter_reads_and_looks_up_only_the_first_three():
    cache = cache_with(DUPLICATE_ACROSS - 0.05)
    cache.vectors[candidate_digest(BOILER)] = unit(5)
    ranked = listed(ENGLISH, GERMAN, OTHER, BOILER, PUMP)
    hits, copies = await distinct(ranked, ENGLISH_QUESTION, cache)
    assert hits == ranked[:3] and copies == {}
    assert cache.asked == [[candidate_digest(entry.candidate) for entry in ranked[:3]]]


async def test_copies_beyond_the_list_leave_fewer_hits_and_a_list_of_one_needs_no_lookup():
    cache = cache_with(DUPLICATE_ACROSS + 0.01)
    hits, _ = await distinct(listed(ENGLISH, GERMAN, COPY), ENGLISH_QUESTION, cache)
    assert [entry.candidate.item_id for entry in hits] == ["steam.md"]
    cache.asked.clear()
    hits, copies = await distinct(listed(OTHER), ENGLISH_QUESTION, cache)
    assert hits == listed(OTHER) and copies == {} and cache.asked == []

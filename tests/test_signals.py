"""The gate's signals relative to the question and its candidates (builtin/ranking/signals.py), and
the rules built on them, on a tiny two-source corpus: a tool's documentation, where every passage
is close to every question about the tool, and an unrelated source."""

from __future__ import annotations

import math

import numpy as np

from passageway.builtin.ranking import AGREE_RANK, FIELD_LEAD, FusionRanker
from passageway.builtin.ranking.signals import (
    contains_term,
    fields,
    identifiers,
    name_words,
    named_items,
    named_sources,
    rare_words,
)
from passageway.kernel.ranking import Gate
from passageway.kernel.store import Candidate

VECTOR = np.zeros(4, dtype=np.float32)
GATE = Gate(0.85)
HIGH = Gate(0.95)

_keys = iter(range(10_000))


def candidate(item: str, text: str, similarity: float, *, source: str = "prompt-docs",
              title: str | None = None) -> Candidate:
    return Candidate(source=source, passage_key=next(_keys), item_id=item, title=title or item.title(),
                     url=f"file:///{source}/{item}", heading=None, text=text, similarity=similarity,
                     rank=0)


def one_topic(best: float, best_text: str = "Colours of the prompt segments.") -> list[Candidate]:
    """A tool's documentation: eight passages all near 0.87 to a question about the tool, and
    the best one at ``best``; plus a note of another source far away."""
    docs = [candidate(f"page{n}.md", f"The prompt shows module {n} when its files are present.",
                      0.865 + 0.002 * n) for n in range(8)]
    docs.append(candidate("best.md", best_text, best))
    docs.append(candidate("recipe.md", "Knead the dough for ten minutes.", 0.74, source="kitchen"))
    return sorted(docs, key=lambda c: -c.similarity)


def items(result) -> list[str]:
    return [entry.candidate.item_id for entry in result]


# ---------------------------------------------------------------------------------------------
# The signals
# ---------------------------------------------------------------------------------------------


def test_identifiers_are_names_a_paraphrase_would_not_produce():
    question = ("Why does `add_newline` not work, I set STARSHIP_CONFIG and --no-force, "
                "and TestClient, app.state and url_for() fail with the API in 10 full runs I want?")
    assert identifiers(question) == (
        "add_newline", "starship_config", "--no-force", "testclient", "app.state", "url_for()",
    )
    assert identifiers("How do I want the full 10 API calls?") == ()


def test_a_term_is_found_as_a_whole_name_only():
    assert contains_term("set `add_newline = false` in the file", "add_newline")
    assert not contains_term("set add_newline_twice here", "add_newline")
    assert contains_term("use --no-force.", "--no-force")


def test_the_field_is_each_sources_own_median_and_a_tiny_pool_has_none():
    pool = one_topic(0.95)
    field = fields(pool)
    assert 0.87 < field["prompt-docs"] < 0.88  # the tool's passages, not the kitchen note
    assert field["kitchen"] == field[""]  # one candidate: measured against the whole pool
    assert fields(pool[:3]) == {"": -math.inf}


def test_a_passage_without_a_vector_yet_is_in_no_field():
    # During a build a passage's cosine is NaN until its vector is made; a median with it is NaN.
    pool = [*one_topic(0.95), candidate("new.md", "Not embedded yet.", math.nan)]
    assert fields(pool) == fields(pool[:-1])


def test_rare_words_leave_out_words_every_candidate_has_and_numbers():
    present = {n: frozenset({"prompt", "module", "want"} | ({"palette", "10"} if n == 0 else set()))
               for n in range(20)}
    assert rare_words(["prompt", "want", "palette", "10"], present, 0.1) == {"palette"}


def test_a_source_is_named_by_a_word_of_its_name_unless_every_source_has_it():
    assert name_words("starship-en") == {"starship"}
    assert named_sources(["starlette", "timeout"], ["typer", "starlette"]) == {"starlette"}
    assert named_sources(["docs"], ["docs-a", "docs-b"]) == frozenset()
    assert named_items(["tokyo", "night", "preset"],
                       {"tokyo.md": "Tokyo Night Preset", "pure.md": "Pure Preset"}) == {"tokyo.md"}


# ---------------------------------------------------------------------------------------------
# The gate on one topic
# ---------------------------------------------------------------------------------------------


STAND_OUT = FusionRanker(field_lead=FIELD_LEAD)
"""The stand-out requirement alone, without its passes (they are off by default, as it is)."""


def test_an_on_topic_passage_that_does_not_stand_out_is_silence_with_the_requirement_on():
    # The best passage is above the bar but no closer than the rest of the tool's docs: the
    # question is about the tool, not answered by it. The default gate (the requirement off,
    # docs/gate-levels.md "Ablation") lets it through.
    pool = one_topic(0.878)
    question = "How do I show the weather in the prompt?"
    assert STAND_OUT.rank(question, VECTOR, [], pool, GATE) == []
    assert "best.md" in items(FusionRanker().rank(question, VECTOR, [], pool, GATE))


def test_a_passage_that_leads_its_field_passes():
    pool = one_topic(0.91)
    result = STAND_OUT.rank("How do I colour the prompt segments?", VECTOR, [], pool, GATE)
    assert items(result)[:1] == ["best.md"]


def test_a_passage_holding_the_questions_identifier_passes_without_a_lead():
    pool = one_topic(0.878, "Set `add_newline = false` to drop the blank line.")
    question = "What does add_newline do?"
    assert STAND_OUT.rank(question, VECTOR, [], pool, GATE) == []
    result = FusionRanker(field_lead=FIELD_LEAD, identifier_pass=True).rank(question, VECTOR, [], pool, GATE)
    assert items(result)[:1] == ["best.md"]


def test_a_passage_keyword_search_ranks_first_passes_without_a_lead():
    pool = one_topic(0.878)
    best = next(c for c in pool if c.item_id == "best.md")
    question = "How do I show the weather in the prompt?"
    assert STAND_OUT.rank(question, VECTOR, [best], pool, GATE) == []
    agreeing = FusionRanker(field_lead=FIELD_LEAD, agree_rank=AGREE_RANK)
    assert items(agreeing.rank(question, VECTOR, [best], pool, GATE))[:1] == ["best.md"]
    # outside the keyword search's first AGREE_RANK, agreement does not count
    others = [c for c in pool if c is not best]
    late = [*others[:AGREE_RANK], best]
    assert "best.md" not in items(agreeing.rank(question, VECTOR, late, pool, GATE))


def test_the_rare_words_rescue_does_not_fire_on_words_every_passage_has():
    pool = one_topic(0.80, "The prompt module shows files when present, you want it full.")
    common = "I want the full prompt module files present"
    rare_only = FusionRanker(rare_only=True)
    # a bar above every passage, so that only the words rescue can let one through
    assert rare_only.rank(common, VECTOR, [], pool, HIGH) == []
    assert FusionRanker().rank(common, VECTOR, [], pool, HIGH) != []
    rare = one_topic(0.80, "Palettes define named colours that segments reuse.")
    result = rare_only.rank("palettes named colours segments", VECTOR, [], rare, HIGH)
    assert items(result) == ["best.md"] and result[0].reason == "words"


# ---------------------------------------------------------------------------------------------
# Focus on the named source
# ---------------------------------------------------------------------------------------------


def two_tools(other: float) -> list[Candidate]:
    """A question's candidates from two tools' docs: the named one's best at 0.90, the other's
    best at ``other``, each source with a field of its own."""
    pool = [candidate(f"s{n}.md", "Routing requests to endpoints.", 0.80, source="starlette")
            for n in range(5)]
    pool += [candidate(f"t{n}.md", "Commands and their options.", 0.80, source="typer") for n in range(5)]
    pool.append(candidate("timeouts.md", "Requests time out after the configured delay.", 0.90,
                          source="starlette"))
    pool.append(candidate("testing.md", "Testing a command that times out.", other, source="typer"))
    return sorted(pool, key=lambda c: -c.similarity)


def test_the_named_source_comes_first_unless_another_is_much_closer():
    question = "How do I set a timeout in starlette?"
    assert items(FusionRanker().rank(question, VECTOR, [], two_tools(0.91), GATE))[0] == "timeouts.md"
    unfocused = FusionRanker(focus=False)
    assert items(unfocused.rank(question, VECTOR, [], two_tools(0.91), GATE))[0] == "testing.md"
    assert items(FusionRanker().rank(question, VECTOR, [], two_tools(0.93), GATE))[0] == "testing.md"

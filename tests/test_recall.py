"""The query path: real sqlite indexes with the toy embedder, and stores or embedders that fail."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import ClassVar

import attrs
import numpy as np
import pytest

import passageway
from passageway.builtin.ranking import FusionRanker
from passageway.builtin.storage import SqliteStore
from passageway.kernel.errors import EmbedderError, StoreError
from passageway.kernel.query.recall import related_items
from passageway.kernel.query.rendering import (
    BUDGET_TOKENS,
    MIN_SHARE,
    NOTHING,
    approx_tokens,
    excerpt,
    fit_budget,
    render_answer,
)
from passageway.kernel.query.search import keyword_query, merge_candidates
from passageway.kernel.ranking import Gate, Ranked
from passageway.kernel.records import Answer, Item, Related, Section
from passageway.kernel.store import Candidate, ItemUpdate, StoredItem
from passageway.kernel.text.chunking import passages_for
from passageway.testing.recall import recall_over as recall
from passageway.testing.toy_embedder import ToyEmbedder, toy_vectors
from tests import test_duplicates as duplicate_cases

LONG = " ".join(
    f"Sentence {n} talks about ordinary matters of the day and nothing that matters here." for n in range(40)
)

ITEMS = {
    "notes": [
        Item(
            id="turbines",
            title="Steam turbines",
            url="https://notes/turbines",
            version="1",
            sections=(
                Section("A steam turbine has rotors with blades mounted on a drive shaft. " + LONG, "Rotors"),
            ),
            links=("boilers", "missing-item"),
            path=("Engineering",),
            updated="2026-10-01",
        ),
        Item(
            id="boilers",
            title="Boilers",
            url="https://notes/boilers",
            version="1",
            sections=(Section("A boiler heats water into steam for the engine.", None),),
            path=("Engineering",),
        ),
        Item(
            id="gardening",
            title="Gardening",
            url="https://notes/gardening",
            version="1",
            sections=(Section("Tomatoes need sun, water and a stake to climb.", None),),
            labels=("turbines-project",),
        ),
    ],
    "wiki": [
        Item(
            id="rotor-design",
            title="Rotor design",
            url="https://wiki/rotor",
            version="1",
            sections=(Section("Rotor blades of a steam turbine are shaped like propellers.", None),),
        ),
    ],
}


async def build_store(tmp_path, source: str, items: Sequence[Item]) -> SqliteStore:
    store = SqliteStore(tmp_path / f"{source}.db", source)
    await store.open()
    await store.reset("toy-hash-64", 64)
    updates = []
    for item in items:
        passages = passages_for(item)
        updates.append(ItemUpdate(item, passages, toy_vectors([p.embedding_input for p in passages])))
    await store.apply(updates, [])
    return store


@pytest.fixture
async def stores(tmp_path):
    built = [await build_store(tmp_path, source, items) for source, items in ITEMS.items()]
    yield built
    for store in built:
        await store.close()


QUESTION = "How are the blades of a steam turbine rotor mounted on the drive shaft?"


async def test_recall_returns_passages_with_their_place_and_related_items(stores):
    # a strict cosine bar: only the three-words rule lets passages through
    answer = await recall(QUESTION, stores, ToyEmbedder(min_similarity=0.99), FusionRanker("hybrid"))
    assert [(hit.source, hit.item_id) for hit in answer.hits] == [
        ("notes", "turbines"),
        ("wiki", "rotor-design"),
    ]
    first = answer.hits[0]
    assert first.title == "Steam turbines" and first.heading == "Rotors"
    assert first.url == "https://notes/turbines" and first.updated == "2026-10-01"
    assert first.path == ("Engineering",)
    # the turbine passage fills the budget: related items come only when there is room
    assert answer.related == ()
    text = render_answer(answer)
    assert "Steam turbines › Rotors" in text and "https://notes/turbines" in text
    assert "updated 2026-10-01" in text and "notes: turbines" in text
    # with room, the indexed link is found and the unknown one left out (kernel/query/recall.py)
    turbine = Candidate("notes", 0, "turbines", "", "", None, "", 1.0, 0, links=first.links)
    assert await related_items([Ranked(turbine, 1.0)], stores) == (
        Related("notes", "boilers", "Boilers", "https://notes/boilers"),)


async def test_a_hit_is_not_repeated_as_related(stores):
    answer = await recall(QUESTION, stores, ToyEmbedder(min_similarity=0.5), FusionRanker("hybrid"))
    hit_ids = [hit.item_id for hit in answer.hits]
    assert "boilers" in hit_ids and len(hit_ids) == len(set(hit_ids)) <= 3
    assert answer.related == ()


async def test_the_answer_stays_within_the_budget_and_the_excerpt_keeps_the_relevant_part(stores):
    answer = await recall(QUESTION, stores, ToyEmbedder(), FusionRanker("hybrid"))
    rendered = render_answer(answer)
    assert approx_tokens(rendered) <= BUDGET_TOKENS + 10
    turbine = next(hit for hit in answer.hits if hit.item_id == "turbines")
    assert turbine.text.startswith("A steam turbine has rotors") and turbine.text.endswith("…")
    assert len(turbine.text) < len(LONG)


def test_excerpt_starts_at_the_sentence_with_the_question_words():
    text = LONG + " The Kaplan turbine regulates its blade pitch automatically. " + LONG
    piece = excerpt(text, "How does a Kaplan turbine regulate blade pitch?", 200)
    assert piece.startswith("… The Kaplan turbine") and len(piece) <= 204


async def test_silence_is_an_empty_answer_and_renders_as_one_line(stores):
    embedder = ToyEmbedder(min_similarity=0.99)
    answer = await recall("quarterly invoices of the cafeteria", stores, embedder, FusionRanker("hybrid"))
    assert answer == Answer()
    assert answer.silent
    assert render_answer(answer) == NOTHING


async def test_min_similarity_argument_overrides_the_embedder(stores):
    embedder = ToyEmbedder(min_similarity=0.99)
    question = "tomatoes sun"
    assert (await recall(question, stores, embedder, FusionRanker("vector"))).silent
    answer = await recall(question, stores, embedder, FusionRanker("vector"), min_similarity=0.1)
    assert answer.hits[0].item_id == "gardening"


async def test_exclude_items_removes_what_the_session_already_saw(stores):
    ranker = FusionRanker("hybrid")
    first = await recall(QUESTION, stores, ToyEmbedder(), ranker)
    shown = {(hit.source, hit.item_id) for hit in first.hits}
    again = await recall(QUESTION, stores, ToyEmbedder(), ranker, exclude_items=shown)
    assert not shown & {(hit.source, hit.item_id) for hit in again.hits}


async def test_boost_words_lift_an_item_whose_title_path_or_labels_hold_them(stores):
    # two equal passages in different items: the boost decides
    embedder = ToyEmbedder(min_similarity=0.0)
    plain = await recall("tomatoes sun water stake", stores, embedder, FusionRanker("vector"))
    assert plain.hits[0].item_id == "gardening"
    boosted = await recall(
        "boiler heats water steam engine",
        stores,
        embedder,
        FusionRanker("vector"),
        boost_words=["Engineering"],
    )
    unboosted = await recall("boiler heats water steam engine", stores, embedder, FusionRanker("vector"))
    boosted_score = next(hit.score for hit in boosted.hits if hit.item_id == "boilers")
    unboosted_score = next(hit.score for hit in unboosted.hits if hit.item_id == "boilers")
    assert boosted_score == pytest.approx(unboosted_score * 1.1)


class FixedStore:
    """Returns the same candidates for every question."""

    source = "fixed"

    def __init__(self, candidates):
        self.candidates = candidates

    def search(self, question, vector, limit):
        return list(self.candidates), list(self.candidates)

    async def items(self, item_ids):
        return []


async def test_boost_words_reorder_equal_items_by_their_place():
    # different texts: the same text twice would be one content (kernel/query/duplicates.py)
    plain = Candidate("fixed", 1, "plain", "Notes", "u1", None, "same text, one", 0.9, 0)
    placed = Candidate("fixed", 2, "placed", "Notes", "u2", None, "same text, two", 0.9, 1,
                       labels=("passageway",))
    store = FixedStore([plain, placed])
    ranker = FusionRanker("vector")
    without = await recall("same text", [store], ToyEmbedder(min_similarity=0.5), ranker)
    assert [hit.item_id for hit in without.hits] == ["plain", "placed"]
    boosted = await recall(
        "same text", [store], ToyEmbedder(min_similarity=0.5), ranker, boost_words=["work", "passageway"]
    )
    assert [hit.item_id for hit in boosted.hits] == ["placed", "plain"]


# ---------------------------------------------------------------------------------------------
# The gate belongs to the embedder: its min_similarity and its cross-language offset
# ---------------------------------------------------------------------------------------------

GERMAN_QUESTION = "Wann erhielt der Ingenieur die Patente für die Übertragung elektrischer Energie?"
ENGLISH_ANSWER = Candidate(
    "fixed", 1, "patents", "Patents", "u1", None,
    "The engineer was granted patents for transmitting electrical energy in the year 1900.", 0.84, 0,
)
"""In English, under a German question: its cosine (0.84) is below 0.87 and within 0.06 of it,
and it shares no content word with the question, so only the cross-language bar can pass it."""


class MinimalEmbedder:
    """A third-party embedder written before ``cross_language_offset`` existed."""

    name = "minimal"
    dim = 64
    min_similarity = 0.87

    async def start(self):
        return None

    async def embed(self, texts, kind):
        return toy_vectors(texts, self.dim)

    async def close(self):
        return None


async def test_a_passage_across_languages_just_under_the_gate_passes_by_the_models_offset():
    store = FixedStore([ENGLISH_ANSWER])
    ranker = FusionRanker("hybrid")
    with_offset = ToyEmbedder(min_similarity=0.87, cross_language_offset=0.06)
    answer = await recall(GERMAN_QUESTION, [store], with_offset, ranker)
    assert [hit.item_id for hit in answer.hits] == ["patents"]
    without_offset = ToyEmbedder(min_similarity=0.87, cross_language_offset=0.0)
    assert (await recall(GERMAN_QUESTION, [store], without_offset, ranker)).silent
    # the same cosine in the question's own language does not pass
    english_question = "When was the engineer granted the radio patent?"
    assert (await recall(english_question, [store], with_offset, FusionRanker("vector"))).silent


async def test_a_min_similarity_override_keeps_the_embedders_offset():
    store = FixedStore([ENGLISH_ANSWER])
    embedder = ToyEmbedder(min_similarity=0.5, cross_language_offset=0.06)
    strict = await recall(GERMAN_QUESTION, [store], embedder, FusionRanker("hybrid"), min_similarity=0.91)
    assert strict.silent  # 0.91 - 0.06 = 0.85 > 0.84
    answer = await recall(GERMAN_QUESTION, [store], embedder, FusionRanker("hybrid"), min_similarity=0.89)
    assert [hit.item_id for hit in answer.hits] == ["patents"]  # 0.89 - 0.06 = 0.83 <= 0.84
    assert Gate.of(embedder, 0.89) == Gate(0.89, 0.06)
    assert Gate.of(embedder) == Gate(0.5, 0.06)


async def test_an_embedder_without_the_attribute_gets_no_offset():
    embedder = MinimalEmbedder()
    assert Gate.of(embedder) == Gate(0.87, 0.0)
    store = FixedStore([ENGLISH_ANSWER])
    assert (await recall(GERMAN_QUESTION, [store], embedder, FusionRanker("hybrid"))).silent
    answer = await recall(GERMAN_QUESTION, [store], embedder, FusionRanker("hybrid"), min_similarity=0.84)
    assert [hit.item_id for hit in answer.hits] == ["patents"]


@pytest.mark.parametrize("value", [1.5, -0.1, float("nan"), float("inf"), "0.06", True, None])
async def test_an_invalid_offset_is_an_error_naming_the_embedder_not_silence(value):
    embedder = MinimalEmbedder()
    embedder.cross_language_offset = value
    with pytest.raises(EmbedderError) as caught:
        await recall(GERMAN_QUESTION, [FixedStore([ENGLISH_ANSWER])], embedder, FusionRanker("hybrid"))
    message = str(caught.value)
    assert "'minimal' (MinimalEmbedder)" in message
    assert "cross_language_offset" in message and "from 0 to 1" in message


async def test_an_offset_property_that_fails_is_an_embedder_error():
    class Failing(MinimalEmbedder):
        @property
        def cross_language_offset(self):
            raise RuntimeError("not loaded")

    with pytest.raises(EmbedderError, match="not loaded"):
        await recall(GERMAN_QUESTION, [FixedStore([ENGLISH_ANSWER])], Failing(), FusionRanker("hybrid"))


async def test_a_failing_embedder_raises_and_is_never_silence(stores):
    embedder = ToyEmbedder()
    embedder.fail = True
    with pytest.raises(EmbedderError):
        await recall(QUESTION, stores, embedder, FusionRanker("hybrid"))


async def test_an_embedder_plugin_bug_also_raises_embedder_error(stores):
    class Broken(ToyEmbedder):
        async def embed(self, texts, kind):
            raise RuntimeError("boom")

    with pytest.raises(EmbedderError, match="boom"):
        await recall(QUESTION, stores, Broken(), FusionRanker("hybrid"))


class FailingStore:
    source = "broken"

    def search(self, question, vector, limit):
        raise StoreError("disk on fire")

    async def items(self, item_ids):
        raise StoreError("disk on fire")


async def test_a_failing_store_is_skipped_and_logged_without_the_question(stores, caplog):
    caplog.set_level(logging.DEBUG, logger="passageway.recall")
    answer = await recall(QUESTION, [FailingStore(), *stores], ToyEmbedder(), FusionRanker("hybrid"))
    assert answer.hits[0].item_id == "turbines"
    assert "broken" in caplog.text and "disk on fire" in caplog.text
    assert "blades" not in caplog.text


async def test_every_store_failing_is_an_error_not_silence():
    with pytest.raises(StoreError, match="broken"):
        await recall(QUESTION, [FailingStore()], ToyEmbedder(), FusionRanker("hybrid"))


async def test_no_store_at_all_is_silence():
    assert (await recall(QUESTION, [], ToyEmbedder(), FusionRanker("hybrid"))).silent


class RecordingStore:
    source = "recording"

    def __init__(self) -> None:
        self.keyword_questions: list[str] = []

    def search(self, question, vector, limit):
        self.keyword_questions.append(question)
        return [], []

    async def items(self, item_ids):
        return [StoredItem(i, i, i) for i in item_ids]


async def test_the_keyword_search_gets_content_words_only():
    store = RecordingStore()
    await recall("Wann wurde die Universität von Chicago gegründet?", [store], ToyEmbedder(), FusionRanker())
    assert store.keyword_questions == ["universitat chicago gegrundet"]
    await recall("was ist das?", [store], ToyEmbedder(), FusionRanker())
    assert store.keyword_questions[1] == ""  # nothing left to search for by keywords
    assert keyword_query("What is the Gini coefficient?") == "gini coefficient"


def make(source: str, key: int, similarity: float, keyword_score: float = 0.0) -> Candidate:
    return Candidate(source, key, f"item{key}", "t", "u", None, "x", similarity, 99, keyword_score)


def test_merge_candidates_orders_across_sources_and_renumbers_ranks():
    a = [make("a", 1, 0.9, 3.0), make("a", 2, 0.5, 1.0)]
    b = [make("b", 3, 0.7, 2.0)]
    by_vector = merge_candidates([a, b], "similarity", limit=2)
    assert [(c.source, c.passage_key, c.rank) for c in by_vector] == [("a", 1, 0), ("b", 3, 1)]
    by_keyword = merge_candidates([a, b], "keyword_score")
    assert [c.passage_key for c in by_keyword] == [1, 3, 2]


def test_short_excerpts_share_their_unused_room_and_leave_room_for_related_items():
    from passageway.kernel.records import Hit

    short = Hit("s", "a", "A", "https://a", None, "Install it with `pip install typer`.", 1.0, 0.9)
    long = Hit("s", "b", "B", "https://b", None, LONG, 0.9, 0.89)
    related = (Related("s", "r", "Other", "https://y"),)
    answer = fit_budget(Answer((short, long, long), related), "ordinary matters")
    assert answer.hits[0].text == short.text  # whole, and what it did not need went to the others
    assert len(answer.hits[1].text) > (BUDGET_TOKENS * 4 - 400) // 3
    assert approx_tokens(render_answer(answer)) <= BUDGET_TOKENS
    assert answer.related == ()  # no room left
    roomy = fit_budget(Answer((short,), related), "install")
    assert roomy.related == related and "Related:\n- Other (https://y)" in render_answer(roomy)


def test_a_clear_leader_gets_the_budget_of_three_and_file_addresses_give_way_to_the_item():
    from passageway.kernel.records import Hit

    leader = Hit("docs", "guide/setup.md", "Setup", "file:///srv/docs/guide/setup.md", "Install", LONG, 1.0,
                 0.90, path=("guide",))
    others = [attrs.evolve(leader, item_id=f"other{n}.md", similarity=0.87, path=()) for n in (1, 2)]
    answer = fit_budget(Answer((leader, *others)), "ordinary matters")
    assert [hit.item_id for hit in answer.hits] == ["guide/setup.md", "other1.md", "other2.md"]  # all kept
    assert all(len(hit.text) <= MIN_SHARE + 4 for hit in answer.hits[1:])  # short, with their "…"
    assert len(answer.hits[0].text) > (BUDGET_TOKENS * 4 - 400) // 3 + 2 * 200  # the others' room too
    text = render_answer(answer)
    assert approx_tokens(text) <= BUDGET_TOKENS
    assert "file://" not in text and "docs: guide/setup.md" in text and "guide /" not in text
    assert "`read` tool" in text  # cut excerpts name the tool that returns the rest
    even = fit_budget(Answer((leader, *(attrs.evolve(o, similarity=0.89) for o in others))), "ordinary")
    assert abs(len(even.hits[0].text) - len(even.hits[1].text)) < 20


async def test_a_sections_anchor_goes_on_the_link_of_its_hits(tmp_path):
    """From the connector's section to the answer: the web page's address with #anchor, or the
    item with #anchor where the address is a file; a section without one links as before."""
    def guide(item_id: str, url: str, where: str) -> Item:
        return Item(id=item_id, title="Guide", url=url, version="1", sections=(
            Section(f"Install the turbine tool {where} with pip.", "Install", anchor="install"),
            Section(f"Turbine blades are inspected every spring {where}.", "Care"),
        ))

    store = await build_store(tmp_path, "docs", [guide("web", "https://docs.example/guide/", "online"),
                                                 guide("guide.md", "file:///srv/docs/guide.md", "locally")])
    try:
        answer = await recall("How do I install the turbine tool with pip?", [store],
                              ToyEmbedder(min_similarity=0.99), FusionRanker("hybrid"))
        care = await recall("When are turbine blades inspected in spring?", [store],
                            ToyEmbedder(min_similarity=0.99), FusionRanker("hybrid"))
    finally:
        await store.close()
    assert {(hit.item_id, hit.anchor) for hit in answer.hits} == {("web", "install"), ("guide.md", "install")}
    text = render_answer(answer)
    assert "docs: web · https://docs.example/guide/#install" in text
    assert "docs: guide.md#install\n" in text and "file://" not in text
    assert {hit.anchor for hit in care.hits} == {None}
    assert "#" not in render_answer(care).replace("**", "")


def test_an_anchor_replaces_the_fragment_of_an_address_and_marks_an_item_named_by_its_address():
    from passageway.kernel.records import Hit

    hit = Hit("site", "https://x/page#top", "Page", "https://x/page#top", "Install", "Text.", 1.0, 0.9,
              anchor="install")
    assert "site: https://x/page#top#install" in render_answer(Answer((hit,)))
    other = attrs.evolve(hit, item_id="page")
    assert "site: page · https://x/page#install" in render_answer(Answer((other,)))


def test_render_answer_lists_related_items():
    from passageway.kernel.records import Hit

    hit = Hit("s", "i", "Title", "https://x", "Heading", "Some text.", 1.0, 0.9, path=("A", "B"))
    text = render_answer(Answer((hit,), (Related("s", "r", "Other", "https://y"),)))
    assert "1. **Title › Heading**" in text and "A / B" in text
    assert "Related:\n- Other (https://y)" in text
    assert np.isfinite(approx_tokens(text))


async def test_a_store_error_that_quotes_the_question_is_logged_without_it(caplog):
    class Echoing(FailingStore):
        def search(self, question, vector, limit):
            raise StoreError(f"fts5: syntax error near {question}")

    caplog.set_level(logging.DEBUG, logger="passageway.recall")
    with pytest.raises(StoreError):
        await recall("secret quarterly merger plans", [Echoing()], ToyEmbedder(), FusionRanker())
    assert "merger" not in caplog.text and "withheld" in caplog.text


def test_at_rank_changes_only_the_rank():
    import attrs

    from passageway.kernel.store import Candidate

    candidate = Candidate(
        source="s", passage_key=7, item_id="i", title="T", url="u", heading="h", text="x",
        similarity=0.5, rank=3, keyword_score=1.5, weight=2.0, path=("a",), labels=("l",),
        links=("k",), updated="2026-01-01",
    )
    assert candidate.at_rank(3) is candidate
    moved = candidate.at_rank(0)
    assert moved == attrs.evolve(candidate, rank=0)  # every other field kept, whatever their order


class CountingEmbedder(ToyEmbedder):
    """A toy embedder that states an input limit and counts one token a word, as a model would."""

    def __init__(self, max_tokens: int = 12) -> None:
        super().__init__()
        self.max_tokens = max_tokens
        self.questions: list[str] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split()) + 2

    async def embed(self, texts, kind):  # type: ignore[no-untyped-def]
        if kind == "query":
            self.questions.extend(texts)
        return await super().embed(texts, kind)


async def test_the_question_is_cut_to_the_embedders_input_limit_in_its_tokens(stores):
    embedder = CountingEmbedder()
    many = " ".join(f"Which rotor number {n} turns the shaft?" for n in range(30))
    await recall(many, stores, embedder, FusionRanker())
    (embedded,) = embedder.questions
    assert embedder.count_tokens(embedded) <= 12
    assert embedded == "Which rotor number 0 turns the shaft?"


async def test_a_paste_that_asks_nothing_is_silence_and_embeds_nothing(stores):
    embedder = CountingEmbedder(max_tokens=512)
    log = "\n".join(f"2026-11-30 10:00:{n:02d} ERROR rotor blade {n} shaft mounted" for n in range(40))
    assert (await recall(log, stores, embedder, FusionRanker())).silent
    assert embedder.questions == []
    answer = await recall(f"{log}\n\n{QUESTION}", stores, embedder, FusionRanker())
    assert answer.hits[0].title == "Steam turbines" and embedder.questions == [QUESTION]


def test_a_silent_answer_with_a_building_note_says_both_in_one_line():
    answer = Answer(notes=("notes: 48 of 96 passages indexed",))
    assert render_answer(answer) == (
        "Nothing relevant in the sources indexed so far. Still indexing: notes: 48 of 96 passages indexed."
    )


async def test_the_names_of_a_paste_join_the_keyword_search_but_not_the_embedded_question(monkeypatch):
    from passageway.kernel.query import prompt_names

    monkeypatch.setattr(prompt_names, "KEYWORD_NAMES", "all")  # the default, "none", leaves them out
    class Recording:
        source = "notes"
        def __init__(self) -> None:
            self.asked: list[str] = []

        def search(self, question, vector, limit):
            self.asked.append(question)
            return [], []

        async def items(self, item_ids):
            return []

    class Embedder(ToyEmbedder):
        embedded: ClassVar[list[str]] = []

        async def embed(self, texts, kind):
            self.embedded += list(texts)
            return await super().embed(texts, kind)

    store, embedder = Recording(), Embedder()
    trace = 'Traceback (most recent call last):\n  File "x.py", line 1\nImportStringError: app'
    paste = f"{trace}\n\nWhat is wrong?"

    await recall(paste, [store], embedder, FusionRanker("hybrid"))
    assert store.asked == ["wrong importstringerror"] and embedder.embedded == ["What is wrong?"]


class CountingRanker:
    """A plugin author's ranker, written against the public door alone: cosine order, the gate's
    bar, one passage per item; it counts how often recall asks it."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def rank(self, question: str, question_vector: np.ndarray, keyword: list[passageway.Candidate],
             vector: list[passageway.Candidate], gate: passageway.Gate) -> list[passageway.Ranked]:
        self.calls += 1
        best: dict[tuple[str, str], passageway.Ranked] = {}
        for candidate in sorted([*keyword, *vector], key=lambda c: (-c.similarity, c.item_id)):
            if candidate.similarity >= gate.min_similarity:
                entry = passageway.Ranked(candidate, candidate.similarity)
                best.setdefault((candidate.source, candidate.item_id), entry)
        return list(best.values())


async def test_the_ranker_is_asked_once_even_when_copies_fill_the_top_of_its_list():
    # The two top candidates after the first are copies of it: a translation and a word-for-word copy.
    case = duplicate_cases
    candidates = (case.ENGLISH, case.GERMAN, case.COPY, case.OTHER, case.BOILER, case.PUMP)
    ranker = CountingRanker()
    assert isinstance(ranker, passageway.Ranker)
    answer = await recall(case.ENGLISH_QUESTION, case.stores(*candidates), ToyEmbedder(min_similarity=0.5),
                          ranker, vector_cache=case.cache_with(case.DUPLICATE_ACROSS + 0.01))
    assert ranker.calls == 1
    assert [hit.item_id for hit in answer.hits] == ["steam.md", "turbine.md", "boiler.md"]
    assert answer.hits[0].also_in == ("corpus-de",)

"""The store contract as pytest tests, for every store: the builtin ``sqlite`` one and any plugin's.

A store's test module imports the tests and provides a ``contract_store`` fixture: an opened
store that ``reset("toy-hash-64", DIM)`` has just emptied, closed after the test::

    from passageway.testing.store_contract import *  # noqa: F403  (the contract tests)

    @pytest.fixture
    async def contract_store(tmp_path):
        store = MyStore(...)
        await store.open()
        await store.reset("toy-hash-64", DIM)
        yield store
        await store.close()

``tests/test_storage.py`` runs them over both the ``sqlite`` and the ``postgres`` store; the
rules they check are written out in ``docs/plugins.md`` ("Write a store").
"""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from passageway.kernel.errors import StoreError
from passageway.kernel.records import Item, Passage, Section
from passageway.kernel.store import Candidate, ItemUpdate, LaterVectors, Store
from passageway.kernel.text.chunking import passages_for
from passageway.testing.toy_embedder import toy_vectors

__all__ = [
    "DIM",
    "anchored",
    "doc",
    "keyword_hits",
    "numbered",
    "question_vector",
    "test_a_closed_store_refuses_searches_and_lookups",
    "test_a_failing_apply_leaves_the_index_as_it_was",
    "test_a_sections_anchor_comes_back_with_each_of_its_passages",
    "test_apply_stores_versions_counts_items_and_deletes",
    "test_cjk_text_is_found_by_words_inside_a_run",
    "test_every_keyword_candidate_gets_its_own_cosine",
    "test_german_umlauts_and_sharp_s",
    "test_keyword_candidates_carry_the_cosine_and_a_positive_score",
    "test_no_question_is_a_keyword_syntax_error",
    "test_passage_texts_pages_through_every_passage",
    "test_passages_stored_without_vectors_are_found_by_keywords_then_by_vector",
    "test_reset_records_the_embedder_and_empties_the_index",
    "test_search_gives_both_lists_from_any_thread",
    "test_searches_from_other_threads_while_items_are_rewritten",
    "test_the_store_satisfies_the_protocol",
    "test_the_store_state_table",
    "test_title_and_heading_words_weigh_more_than_body_words",
    "test_vector_search_returns_the_nearest_passages_with_their_cosine",
    "test_vectors_of_the_wrong_dimension_are_refused",
    "update_for",
    "vector_hits",
]

DIM = 64
WORDS = ["river", "mountain", "engine", "harbour", "library", "telescope", "garden", "volcano"]


def numbered(number: int, version: str = "1", *, sections: int = 2) -> Item:
    """A small item ``item-<number>`` whose text depends on its number and version."""
    word, other = WORDS[number % len(WORDS)], WORDS[(number * 3 + 1) % len(WORDS)]
    return Item(
        id=f"item-{number}", title=f"{word.title()} note {number}",
        url=f"https://example.test/item/{number}", version=version,
        sections=tuple(Section(f"The {word} and the {other} in part {part}, version {version}.",
                               f"Part {part}") for part in range(sections)),
        path=("Notes", word.title()),
    )


def doc(item_id: str, title: str, *texts: str, path: tuple[str, ...] = ()) -> Item:
    return Item(id=item_id, title=title, url=f"https://example.test/{item_id}", version="1",
                sections=tuple(Section(text, f"Section {n}") for n, text in enumerate(texts)), path=path)


def update_for(entry: Item) -> ItemUpdate:
    passages = passages_for(entry)
    return ItemUpdate(entry, passages, toy_vectors([p.embedding_input for p in passages], DIM))


def question_vector(text: str) -> np.ndarray:
    return toy_vectors([text], DIM)[0]


async def keyword_hits(store: Store, question: str, vector: np.ndarray, limit: int) -> list[Candidate]:
    """The keyword list of ``store.search``, asked from a worker thread as recall asks it."""
    return (await asyncio.to_thread(store.search, question, vector, limit))[0]


async def vector_hits(store: Store, vector: np.ndarray, limit: int) -> list[Candidate]:
    """The vector list of ``store.search`` with no words to search for."""
    return (await asyncio.to_thread(store.search, "", vector, limit))[1]


async def test_the_store_satisfies_the_protocol(contract_store):
    assert isinstance(contract_store, Store)
    assert await contract_store.embedder() == ("toy-hash-64", DIM)
    assert await contract_store.counts() == (0, 0)


async def test_reset_records_the_embedder_and_empties_the_index(contract_store):
    store = contract_store
    await store.apply([update_for(numbered(1))], [])
    await store.set_state("last_poll", "2026-01-01T00:00:00Z")
    await store.reset("other", 32)
    assert await store.embedder() == ("other", 32)
    assert await store.counts() == (0, 0)
    assert await store.get_state("last_poll") is None


async def test_apply_stores_versions_counts_items_and_deletes(contract_store):
    store = contract_store
    await store.apply([update_for(numbered(n)) for n in range(3)], [])
    assert await store.versions() == {"item-0": "1", "item-1": "1", "item-2": "1"}
    assert await store.counts() == (3, 6)
    await store.apply([update_for(numbered(1, "2", sections=3))], ["item-0"])
    assert await store.versions() == {"item-1": "2", "item-2": "1"}
    assert await store.counts() == (2, 5)
    found = await store.items(["item-2", "missing", "item-1"])
    assert [(entry.item_id, entry.url) for entry in found] == [
        ("item-2", "https://example.test/item/2"), ("item-1", "https://example.test/item/1")]


async def test_passages_of_an_item_come_in_order_with_heading_and_text(contract_store):
    store = contract_store
    entry = numbered(4, sections=3)
    await store.apply([update_for(entry)], [])
    rows = [tuple(row) for row in await store.passages_of("item-4")]
    expected = [(p.ordinal, p.heading, p.text, p.digest) for p in update_for(entry).passages]
    assert rows == expected
    assert await store.passages_of("missing") == []


async def test_a_failing_apply_leaves_the_index_as_it_was(contract_store):
    store = contract_store
    await store.apply([update_for(numbered(1))], [])
    good = update_for(numbered(2))
    duplicate = Passage("item-3", 0, None, "x", "t: x", "d" * 64)
    bad = ItemUpdate(numbered(3), [duplicate, duplicate], toy_vectors(["a", "b"], DIM))  # same ordinal twice
    with pytest.raises(Exception):  # noqa: B017 (each engine has its own integrity error)
        await store.apply([good, bad], ["item-1"])
    assert await store.versions() == {"item-1": "1"}
    assert await store.counts() == (1, 2)
    hits = await vector_hits(store, question_vector("river"), 10)
    assert [hit.item_id for hit in hits] == ["item-1", "item-1"]


async def test_vectors_of_the_wrong_dimension_are_refused(contract_store):
    entry = numbered(1)
    passages = passages_for(entry)
    with pytest.raises(StoreError, match="dimension"):
        await contract_store.apply([ItemUpdate(entry, passages, toy_vectors(["a", "b"], 32))], [])


async def test_vector_search_returns_the_nearest_passages_with_their_cosine(contract_store):
    store = contract_store
    entries = [doc("tesla", "Tesla", "alternating current induction motor"),
               doc("bread", "Bread", "flour water yeast salt oven")]
    await store.apply([update_for(entry) for entry in entries], [])
    vector = question_vector("induction motor current")
    hits = await vector_hits(store, vector, 2)
    assert [hit.item_id for hit in hits] == ["tesla", "bread"]
    assert [hit.rank for hit in hits] == [0, 1]
    expected = toy_vectors([passages_for(entries[0])[0].embedding_input], DIM)[0]
    assert hits[0].similarity == pytest.approx(float(expected @ vector), abs=1e-5)
    assert hits[0].title == "Tesla" and hits[0].heading == "Section 0" and hits[0].source == store.source


async def test_every_keyword_candidate_gets_its_own_cosine(contract_store):
    store = contract_store
    names = ("alpha", "beta", "gamma")
    entries = [doc(name, name.title(), f"the mill by the river {name}") for name in names]
    await store.apply([update_for(entry) for entry in entries], [])
    vector = question_vector("mill river")
    hits = await keyword_hits(store, "mill river", vector, 5)
    assert sorted(hit.item_id for hit in hits) == ["alpha", "beta", "gamma"]
    by_id = {entry.id: entry for entry in entries}
    for hit in hits:
        stored = toy_vectors([passages_for(by_id[hit.item_id])[0].embedding_input], DIM)[0]
        assert hit.similarity == pytest.approx(float(stored @ vector), abs=1e-5)


async def test_search_gives_both_lists_from_any_thread(contract_store):
    store = contract_store
    entries = [doc(name, name.title(), f"the mill by the river {name}") for name in ("alpha", "beta")]
    entries.append(doc("bread", "Bread", "flour water yeast salt oven"))
    await store.apply([update_for(entry) for entry in entries], [])
    vector = question_vector("mill river")
    results: list[object] = []
    thread = threading.Thread(target=lambda: results.append(store.search("mill river", vector, 5)))
    thread.start()
    thread.join()
    keyword, by_vector = results[0]
    assert (keyword, by_vector) == store.search("mill river", vector, 5)  # the same in this thread
    assert {hit.item_id for hit in keyword} == {"alpha", "beta"}
    assert len(keyword) == 2 and len(by_vector) == 3
    # no words to search for: the vector list alone
    assert await asyncio.to_thread(store.search, "", vector, 5) == ([], by_vector)
    assert await asyncio.to_thread(store.search, "mill", vector, 0) == ([], [])


async def test_searches_from_other_threads_while_items_are_rewritten(contract_store):
    store = contract_store
    await store.apply([update_for(doc(f"n{n}", "Version 0", f"mill river wheel {n}")) for n in range(5)], [])
    vector = question_vector("mill river wheel")
    seen: set[str] = set()
    errors: list[BaseException] = []
    done = threading.Event()

    def ask() -> None:
        try:
            while not done.is_set():
                keyword, by_vector = store.search("mill river", vector, 10)
                seen.update(hit.title for hit in [*keyword, *by_vector])
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for thread in threads:
        thread.start()
    for version in range(1, 16):
        await store.apply([update_for(doc(f"n{n}", f"Version {version}", f"mill river wheel {n}"))
                           for n in range(5)], [])
    done.set()
    for thread in threads:
        thread.join()
    assert not errors
    assert seen and seen <= {f"Version {version}" for version in range(16)}
    keyword, by_vector = await asyncio.to_thread(store.search, "mill river", vector, 10)
    assert {hit.title for hit in [*keyword, *by_vector]} == {"Version 15"}


async def test_a_closed_store_refuses_searches_and_lookups(contract_store):
    store = contract_store
    await store.apply([update_for(doc("alpha", "Alpha", "the mill by the river"))], [])
    await store.close()
    await store.close()  # twice is harmless
    with pytest.raises(StoreError, match="closed"):
        store.search("mill", question_vector("mill"), 5)
    for later in (store.items(["alpha"]), store.counts()):
        with pytest.raises(StoreError, match="closed"):
            await later


async def test_keyword_candidates_carry_the_cosine_and_a_positive_score(contract_store):
    store = contract_store
    entries = [doc("a", "Engines", "The steam engine drove the mill.", path=("Tech", "History")),
               doc("b", "Gardens", "Roses need sun."), doc("c", "Rivers", "Rivers need rain.")]
    await store.apply([update_for(entry) for entry in entries], [])
    vector = question_vector("steam engine")
    hits = await keyword_hits(store, "Who built the steam engine?", vector, 5)
    assert [hit.item_id for hit in hits] == ["a"]
    stored = toy_vectors([passages_for(entries[0])[0].embedding_input], DIM)[0]
    assert hits[0].similarity == pytest.approx(float(stored @ vector), abs=1e-5)
    assert hits[0].keyword_score > 0
    assert hits[0].path == ("Tech", "History")
    # the path and the title are searchable too
    assert [hit.item_id for hit in await keyword_hits(store, "history", vector, 5)] == ["a"]
    assert [hit.item_id for hit in await keyword_hits(store, "gardens", vector, 5)] == ["b"]


async def test_title_and_heading_words_weigh_more_than_body_words(contract_store):
    await contract_store.apply([
        update_for(doc("body", "Misc", "a note about lighthouses and more words here")),
        update_for(doc("title", "Lighthouses", "a note about coasts and more words here")),
    ], [])
    hits = await keyword_hits(contract_store, "lighthouses", question_vector("x"), 5)
    assert [hit.item_id for hit in hits] == ["title", "body"]


@pytest.mark.parametrize("question", [
    '"unbalanced quote', 'steam AND engine', 'NEAR(steam engine)', 'steam*', '-engine', 'title:steam',
    '(steam) OR (', 'engine)', '^steam', '', '   ', '?!.,;', '"" ""', '+', 'steam - engine: "x"',
    'NOT', 'AND OR NOT', '{title}: steam', 'steam_engine', '___', '\x00 steam', "steam's <-> !engine & |",
])
async def test_no_question_is_a_keyword_syntax_error(contract_store, question):
    await contract_store.apply([update_for(doc("a", "Engines", "The steam engine drove the mill."))], [])
    hits = await keyword_hits(contract_store, question, question_vector("steam"), 5)
    assert isinstance(hits, list)
    if "steam" in question.lower():
        assert [hit.item_id for hit in hits] == ["a"]


async def test_german_umlauts_and_sharp_s(contract_store):
    await contract_store.apply([
        update_for(doc("de", "Dampfmaschine", "Die Straße führte über die Brücke zur Mühle.")),
        update_for(doc("en", "Bridge", "The road led over the bridge to the mill."))], [])
    vector = question_vector("x")
    for question in ("Brücke", "brucke", "BRÜCKE", "Straße", "strasse", "STRASSE", "muhle",
                     "Welche Straße führt zur Mühle?"):
        hits = await keyword_hits(contract_store, question, vector, 5)
        assert [hit.item_id for hit in hits] == ["de"], question


async def test_cjk_text_is_found_by_words_inside_a_run(contract_store):
    store = contract_store
    await store.apply([update_for(doc("ja", "東京", "東京は日本の首都です。人口は多い。")),
                       update_for(doc("zh", "北京", "北京是中国的首都。")),
                       update_for(doc("en", "Paris", "Paris is the capital of France."))], [])
    vector = question_vector("x")
    assert {hit.item_id for hit in await keyword_hits(store, "首都", vector, 5)} == {"ja", "zh"}
    hits = await keyword_hits(store, "日本の首都はどこですか", vector, 5)
    assert hits[0].item_id == "ja"
    assert [hit.item_id for hit in await keyword_hits(store, "中国", vector, 5)] == ["zh"]
    assert [hit.item_id for hit in await keyword_hits(store, "capital", vector, 5)] == ["en"]


async def test_the_store_state_table(contract_store):
    assert await contract_store.get_state("last_poll") is None
    await contract_store.set_state("last_poll", "2026-11-30T10:00:00Z")
    assert await contract_store.get_state("last_poll") == "2026-11-30T10:00:00Z"
    await contract_store.set_state("last_poll", "2026-12-01T10:00:00Z")
    assert await contract_store.get_state("last_poll") == "2026-12-01T10:00:00Z"


def _later(store: Store) -> LaterVectors:
    if not isinstance(store, LaterVectors):
        pytest.skip("this store takes no passages before their vectors (LaterVectors)")
    return store


async def test_passages_stored_without_vectors_are_found_by_keywords_then_by_vector(contract_store):
    store = _later(contract_store)
    entry = numbered(1)
    waiting = ItemUpdate(entry, passages_for(entry), None)
    await contract_store.apply([waiting], [])
    assert await contract_store.counts() == (1, 2)
    pending = await store.pending(10)
    assert [(p.item_id, p.ordinal) for p in pending] == [("item-1", 0), ("item-1", 1)]
    assert [p.embedding_input for p in pending] == [p.embedding_input for p in passages_for(entry)]
    vector = question_vector("engine")
    found = await keyword_hits(contract_store, "engine part", vector, 5)
    assert found and all(np.isnan(hit.similarity) for hit in found)  # no cosine yet: NaN
    assert await vector_hits(contract_store, vector, 5) == []
    vectors = toy_vectors([p.embedding_input for p in pending], DIM)
    await store.set_vectors([("item-1", 0, vectors[0])])
    assert [(p.item_id, p.ordinal) for p in await store.pending(10)] == [("item-1", 1)]
    assert [hit.passage_key for hit in await vector_hits(contract_store, vector, 5)] == [
        hit.passage_key for hit in found if hit.text == pending[0].text]
    await store.set_vectors([("item-1", 1, vectors[1]), ("item-1", 0, -vectors[0]), ("gone", 0, vectors[0])])
    assert await store.pending(10) == []  # a passage with a vector keeps it; an unknown one is skipped
    found = await keyword_hits(contract_store, "engine part", vector, 5)
    cosines = {hit.text: hit.similarity for hit in found}
    assert cosines[pending[0].text] == pytest.approx(float(vectors[0] @ vector), abs=1e-5)


async def test_passage_texts_pages_through_every_passage(contract_store):
    store = _later(contract_store)
    await contract_store.apply([update_for(numbered(n)) for n in range(3)], [])
    seen, after = [], 0
    while rows := await store.passage_texts(after, 4):
        seen.extend(text for _, text in rows)
        after = rows[-1][0]
    assert sorted(seen) == sorted(p.text for n in range(3) for p in passages_for(numbered(n)))


def anchored() -> Item:
    """An item whose first section has an anchor and is long enough to be split in two passages."""
    cranes = "\n\n".join(f"The harbour crane {n} lifts containers onto ships at the quay." for n in range(24))
    return Item(id="guide", title="Guide", url="https://example.test/guide", version="1", sections=(
        Section(cranes, "Cranes", anchor="cranes"),
        Section("The lighthouse keeper logs every ship.", "Keepers"),
    ))


async def test_a_sections_anchor_comes_back_with_each_of_its_passages(contract_store):
    """The anchor a connector sent with a section (``{#id}`` of its heading) is on every candidate
    of the section's passages, by keywords and by vector, and on no other; a store that takes
    passages before their vectors keeps it on those too."""
    store = contract_store
    passages = passages_for(anchored())
    assert [p.anchor for p in passages] == ["cranes", "cranes", None]
    await store.apply([update_for(anchored())], [])
    vector = question_vector("harbour crane containers")
    by_keyword = await keyword_hits(store, "crane lighthouse", vector, 10)
    by_vector = await vector_hits(store, vector, 10)
    for found in (by_keyword, by_vector):
        assert sorted((hit.heading or "", hit.anchor or "") for hit in found) == [
            ("Cranes", "cranes"), ("Cranes", "cranes"), ("Keepers", "")]
        assert {hit.url for hit in found} == {"https://example.test/guide"}  # the item's, unchanged
    if isinstance(store, LaterVectors):
        await store.apply([ItemUpdate(anchored(), passages, None)], [])
        assert [p.anchor for p in await store.pending(10)] == ["cranes", "cranes", None]

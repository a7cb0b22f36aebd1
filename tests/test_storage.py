"""The builtin sqlite store: schema, transactions, keyword and vector search, the vector file."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import subprocess
import sys
import threading

import numpy as np
import pytest
from passageway_store_postgres.store import PostgresStore
from passageway_store_postgres.testing import fresh_schema, server_uri

from passageway.builtin import keyword_workers
from passageway.builtin.storage import MIGRATIONS, SqliteStore, _similarities
from passageway.kernel.chunking import passages_for
from passageway.kernel.errors import StoreError
from passageway.kernel.plugins import build_plugin_manager, collect_registries
from passageway.kernel.records import Item, Passage, Section
from passageway.kernel.store import ItemUpdate, Store
from passageway.kernel.textsearch import match_terms
from passageway.testing import store_contract
from passageway.testing.store_contract import *  # noqa: F403  (the contract tests, run for both stores)
from passageway.testing.toy_embedder import toy_vectors
from tests.sync_helpers import item

DIM = 64


def update_for(entry: Item) -> ItemUpdate:
    passages = passages_for(entry)
    return ItemUpdate(entry, passages, toy_vectors([p.embedding_input for p in passages], DIM))


@pytest.fixture(params=["sqlite", "postgres"])
async def contract_store(request, tmp_path):
    """The store under the contract tests (passageway.testing.store_contract): each store in turn."""
    if request.param == "sqlite":
        opened = SqliteStore(tmp_path / "notes.db", "notes")
    else:
        try:
            dsn = server_uri()
        except RuntimeError as error:
            pytest.skip(str(error))
        opened = PostgresStore(dsn, "notes", schema_name=fresh_schema())
    await opened.open()
    await opened.reset("toy-hash-64", DIM)
    yield opened
    await opened.close()


@pytest.fixture
async def store(tmp_path):
    opened = SqliteStore(tmp_path / "notes.db", "notes")
    await opened.open()
    await opened.reset("toy-hash-64", DIM)
    yield opened
    await opened.close()


def doc(item_id: str, title: str, *texts: str, path: tuple[str, ...] = ()) -> Item:
    return Item(id=item_id, title=title, url=f"https://example.test/{item_id}", version="1",
                sections=tuple(Section(text, f"Section {n}") for n, text in enumerate(texts)), path=path)


def question_vector(text: str) -> np.ndarray:
    return toy_vectors([text], DIM)[0]


async def test_registered_as_sqlite_and_satisfies_the_protocol(tmp_path):
    registries = collect_registries(build_plugin_manager({}, load_entry_points=False))
    factory = registries.stores.get("sqlite")
    made = factory(tmp_path / "src.db", "src")
    assert isinstance(made, Store)
    assert made.source == "src"


async def test_a_new_index_is_wal_migrated_and_records_no_embedder(tmp_path):
    opened = SqliteStore(tmp_path / "new.db", "new")
    await opened.open()
    assert await opened.embedder() is None
    await opened.close()
    await opened.close()  # twice is harmless
    connection = sqlite3.connect(tmp_path / "new.db")
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert connection.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    connection.close()


async def test_a_newer_schema_or_a_broken_file_is_a_store_error(tmp_path):
    newer = tmp_path / "newer.db"
    connection = sqlite3.connect(newer)
    connection.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    connection.close()
    with pytest.raises(StoreError, match="newer passageway"):
        await SqliteStore(newer, "newer").open()
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"this is not sqlite" * 200)
    with pytest.raises(StoreError, match="delete the file"):
        await SqliteStore(broken, "broken").open()


async def test_writes_keep_the_file_intact_and_a_failing_one_rolls_back(store):
    # the contract tests (passageway.testing.store_contract) check what is stored; this checks the file
    await store.apply([update_for(item(n)) for n in range(3)], [])
    await store.apply([update_for(item(1, "2", sections=3))], ["item-0"])
    assert await store.check_integrity() == []
    duplicate = Passage("item-3", 0, None, "x", "t: x", "d" * 64)
    bad = ItemUpdate(item(3), [duplicate, duplicate], toy_vectors(["a", "b"], DIM))  # same ordinal twice
    with pytest.raises(sqlite3.IntegrityError):
        await store.apply([update_for(item(4)), bad], ["item-1"])
    assert await store.versions() == {"item-1": "2", "item-2": "1"}
    assert await store.check_integrity() == []


async def test_search_side_by_side_gives_the_same_lists(store, monkeypatch):
    # 0: even this small index runs its vector search in the store's reader thread meanwhile
    monkeypatch.setattr("passageway.builtin.storage.SIDE_BY_SIDE_FROM", 0)
    await store_contract.test_search_gives_both_lists_from_any_thread(store)  # the contract test too


def held_up(monkeypatch, store: SqliteStore, method: str) -> tuple[threading.Event, threading.Event]:
    """Make ``store.<method>`` wait, once started (``entered``), until ``release`` is set."""
    entered, release = threading.Event(), threading.Event()
    original = getattr(store, method)

    def slow(*arguments):
        entered.set()
        release.wait(5)
        return original(*arguments)

    monkeypatch.setattr(store, method, slow)
    return entered, release


async def close_while_held(store: SqliteStore, release: threading.Event) -> None:
    closing = asyncio.ensure_future(store.close())
    await asyncio.sleep(0.2)
    assert not closing.done()  # the read still holds its connection
    release.set()
    await closing


async def test_close_waits_for_a_running_search_and_later_searches_fail(store, monkeypatch):
    await store.apply([update_for(doc("alpha", "Alpha", "the mill by the river"))], [])
    vector = question_vector("mill river")
    entered, release = held_up(monkeypatch, store, "_vector_search")
    results: list[object] = []
    thread = threading.Thread(target=lambda: results.append(store.search("mill", vector, 5)))
    thread.start()
    assert entered.wait(5)
    await close_while_held(store, release)
    thread.join()
    keyword, by_vector = results[0]
    assert [hit.item_id for hit in keyword] == [hit.item_id for hit in by_vector] == ["alpha"]
    with pytest.raises(StoreError, match="closed"):
        store.search("mill", vector, 5)


async def test_close_waits_for_a_running_lookup_and_later_lookups_fail(store, monkeypatch):
    await store.apply([update_for(doc("alpha", "Alpha", "the mill by the river"))], [])
    entered, release = held_up(monkeypatch, store, "_items")
    lookup = asyncio.ensure_future(store.items(["alpha"]))
    while not entered.is_set():
        await asyncio.sleep(0.01)
    await close_while_held(store, release)
    assert [found.item_id for found in await lookup] == ["alpha"]
    for later in (store.items(["alpha"]), store.counts(), store.vector_search(question_vector("x"), 5)):
        with pytest.raises(StoreError, match="closed"):
            await later


async def test_vector_hits_come_from_the_row_cache_and_follow_updates(store):
    await store.apply([update_for(doc("tesla", "Tesla", "alternating current induction motor")),
                       update_for(doc("bread", "Bread", "flour water yeast salt oven"))], [])
    vector = question_vector("induction motor current")
    first = await store.vector_search(vector, 2)
    assert set(store._row_cache) == {hit.passage_key for hit in first}
    assert await store.vector_search(vector, 2) == first  # the second time from the cache
    # an update stores the item's passages under new keys; the old rows leave the cache
    await store.apply([update_for(doc("tesla", "Nikola Tesla", "alternating current induction motor"))], [])
    updated = await store.vector_search(vector, 2)
    assert updated[0].title == "Nikola Tesla"
    assert first[0].passage_key not in store._row_cache
    await store.apply([], ["bread"])
    assert [hit.item_id for hit in await store.vector_search(vector, 2)] == ["tesla"]
    assert set(store._row_cache) == {updated[0].passage_key}
    await store.reset("toy-hash-64", DIM)
    assert store._row_cache == {} and await store.vector_search(vector, 2) == []


async def test_a_full_row_cache_changes_no_result(store, monkeypatch):
    entries = [doc(f"n{number}", f"Note {number}", f"mill river wheel {number}") for number in range(6)]
    await store.apply([update_for(entry) for entry in entries], [])
    vector = question_vector("mill river wheel")
    monkeypatch.setattr("passageway.builtin.storage.ROW_CACHE_LIMIT", 2)
    hits = await store.vector_search(vector, 6)
    assert len(store._row_cache) == 2 and len(hits) == 6
    assert await store.vector_search(vector, 6) == hits


def test_similarities_give_zero_for_a_missing_or_foreign_vector():
    vector = np.array([0.6, 0.8], dtype=np.float32)
    same = np.array([1.0, 0.0], dtype="<f4").tobytes()
    other = np.array([1.0, 0.0, 0.0], dtype="<f4").tobytes()
    assert _similarities([same, same], vector) == pytest.approx([0.6, 0.6])
    assert _similarities([same, other, None], vector) == pytest.approx([0.6, 0.0, 0.0])
    assert _similarities([], vector) == []


async def budget_store(tmp_path, budget: int) -> SqliteStore:
    """Five passages with "alpha", two with "gamma", one with "beta"."""
    opened = SqliteStore(tmp_path / f"budget-{budget}.db", "budget", keyword_row_budget=budget)
    await opened.open()
    await opened.reset("toy-hash-64", DIM)
    texts = ["alpha beta", "alpha gamma", "alpha gamma", "alpha", "alpha"]
    await opened.apply([update_for(doc(f"n{n}", f"Note {n}", text)) for n, text in enumerate(texts)], [])
    return opened


async def test_the_row_budget_leaves_out_the_commonest_terms_of_a_large_index(tmp_path):
    store = await budget_store(tmp_path, 3)  # five passages: more than the budget
    vector = question_vector("x")

    async def found(question: str) -> set[str]:
        return {hit.item_id for hit in await store.keyword_search(question, vector, 10)}

    # beta (1 row) and gamma (2 rows) fit within 3 rows; alpha (5 rows) would exceed it
    assert await found("alpha beta gamma") == {"n0", "n1", "n2"}
    assert await found("alpha beta") == {"n0"}
    # the rarest term alone is over the budget: no keyword search at all
    assert await found("alpha") == set()
    await store.close()


async def test_without_a_budget_or_within_it_every_term_is_searched(tmp_path):
    vector = question_vector("x")
    for budget in (0, 5, 50):  # off; exactly the index's size; more than the index holds
        store = await budget_store(tmp_path, budget)
        hits = await store.keyword_search("alpha beta", vector, 10)
        assert {hit.item_id for hit in hits} == {"n0", "n1", "n2", "n3", "n4"}, budget
        assert hits[0].item_id == "n0"  # the passage with both words ranks first
        await store.close()


# -- a large index's keyword search in key ranges (worker processes) ---------------------------

WORDS = ("mill", "river", "wheel", "stone", "flour", "bread", "oven", "salt", "water", "grain",
         "barley", "rye", "wind", "sail", "gear", "shaft")


@pytest.fixture
def workers(monkeypatch):
    """A pool of this test's own, and three key ranges however many cores run the test."""
    pool = keyword_workers.Workers()
    monkeypatch.setattr("passageway.builtin.storage.WORKERS", pool)
    monkeypatch.setattr("passageway.builtin.storage.parts", lambda: 3)
    monkeypatch.setattr("passageway.builtin.keyword_workers.parts", lambda: 3)
    yield pool
    pool.shutdown()


async def many_words_store(path, seed: int = 3) -> SqliteStore:
    """Forty items of one to three passages of random mill words (scores of every kind)."""
    rng = np.random.default_rng(seed)
    opened = SqliteStore(path, "mills")
    await opened.open()
    await opened.reset("toy-hash-64", DIM)
    entries = [doc(f"m{n}", f"Mill {n} {WORDS[n % len(WORDS)]}",
                   *(" ".join(rng.choice(WORDS, size=rng.integers(3, 30)))
                     for _ in range(rng.integers(1, 4))))
               for n in range(40)]
    await opened.apply([update_for(entry) for entry in entries], [])
    return opened


QUESTIONS = ("mill", "river wheel", "bread oven salt", "barley rye wind sail", "gear shaft stone water",
             "flour", "nothing matches this")


async def keyword_lists(store: SqliteStore, split: bool) -> list[list[tuple[int, float]]]:
    store.keyword_split_from = 1 if split else 1 << 62
    vector = question_vector("x")
    return [[(hit.passage_key, round(hit.keyword_score, 9))
             for hit in await store.keyword_search(question, vector, 7)] for question in QUESTIONS]


async def test_a_keyword_search_in_key_ranges_gives_the_list_of_one_query(tmp_path, workers):
    store = await many_words_store(tmp_path / "mills.db")
    whole = await keyword_lists(store, split=False)
    assert sum(map(len, whole)) > 30 and any(len(found) == 7 for found in whole)
    assert await keyword_lists(store, split=True) == whole
    # the other ranges were ranked in a worker process: this one never opened a connection there
    assert keyword_workers._open_files == {}
    assert workers._pool is not None
    assert any(process.is_alive() for process in workers._pool._processes.values())
    # deleted items leave both lists alike
    await store.apply([], ["m1", "m2", "m3"])
    assert await keyword_lists(store, split=True) == await keyword_lists(store, split=False)
    await store.close()


async def test_a_dead_worker_costs_speed_not_answers(tmp_path, workers, caplog, monkeypatch):
    store = await many_words_store(tmp_path / "mills.db")
    whole = await keyword_lists(store, split=False)
    assert await keyword_lists(store, split=True) == whole
    first = workers._pool
    for process in first._processes.values():
        process.kill()
    caplog.set_level(logging.WARNING, logger="passageway.storage")
    assert await keyword_lists(store, split=True) == whole
    assert "keyword worker process died" in caplog.text
    # no new workers at once: the next searches rank in this process
    assert await keyword_lists(store, split=True) == whole
    assert workers._pool is None
    # after the delay, a new pool takes over
    monkeypatch.setattr(workers, "_restart_at", 0.0)
    assert await keyword_lists(store, split=True) == whole
    assert workers._pool is not None and workers._pool is not first
    await store.close()


async def test_a_part_that_fails_in_a_worker_runs_in_the_thread(tmp_path, workers, caplog):
    store = await many_words_store(tmp_path / "mills.db")
    vector = question_vector("x")

    def keys(split: bool) -> list[list[int]]:  # in this thread, on its connection once opened
        store.keyword_split_from = 1 if split else 1 << 62
        return [[hit.passage_key for hit in store._keyword_search(match_terms(question), vector, 7)]
                for question in QUESTIONS]

    whole = keys(split=False)
    store.path = tmp_path / "no such folder" / "mills.db"  # only the workers open it by its name
    caplog.set_level(logging.WARNING, logger="passageway.storage")
    assert keys(split=True) == whole
    assert keys(split=True) == whole
    assert caplog.text.count("failed in a worker process and ran in the server instead") == 1
    assert "unable to open database file" in caplog.text
    store.path = tmp_path / "mills.db"
    await store.close()


async def test_without_worker_processes_the_ranges_are_ranked_in_the_thread(tmp_path, workers, monkeypatch,
                                                                           caplog):
    def no_processes(*args, **kwargs):
        raise OSError("no semaphores here")

    monkeypatch.setattr("passageway.builtin.keyword_workers.ProcessPoolExecutor", no_processes)
    caplog.set_level(logging.WARNING, logger="passageway.storage")
    store = await many_words_store(tmp_path / "mills.db")
    assert await keyword_lists(store, split=True) == await keyword_lists(store, split=False)
    assert caplog.text.count("worker processes cannot start here (no semaphores here)") == 1
    await store.close()


async def test_workers_reopen_an_index_file_made_anew_at_the_same_path(tmp_path, workers):
    path = tmp_path / "mills.db"
    first = await many_words_store(path, seed=3)
    await keyword_lists(first, split=True)  # a worker now has the file open
    await first.close()
    for stale in tmp_path.glob("mills.*"):
        stale.unlink()
    second = await many_words_store(path, seed=4)
    assert await keyword_lists(second, split=True) == await keyword_lists(second, split=False)
    await second.close()


async def test_one_core_or_a_small_index_ranks_in_one_query(tmp_path, workers, monkeypatch):
    store = await many_words_store(tmp_path / "mills.db")
    store.keyword_split_from = 41  # more passages than the forty items' one to three each
    assert store._splits_keyword_search()
    store.keyword_split_from = 1_000
    assert not store._splits_keyword_search()
    store.keyword_split_from = 1
    monkeypatch.setattr("passageway.builtin.storage.parts", lambda: 1)
    assert not store._splits_keyword_search()
    await store.close()


async def test_a_split_search_counts_terms_in_workers_and_keeps_the_same_budget(tmp_path, workers):
    store = await many_words_store(tmp_path / "mills.db")
    kept: set[int] = set()
    for budget in (20, 40, 60, 80, 120):  # below and above the words' match counts
        store.keyword_row_budget = budget
        for question in QUESTIONS:
            store.keyword_split_from = 1 << 62
            whole = store._budgeted_query(match_terms(question))
            store.keyword_split_from = 1
            assert store._budgeted_query(match_terms(question)) == whole, (budget, question)
            kept.add(len(whole.split(" OR ")) if whole else 0)
    assert kept >= {0, 1, 2}  # budgets that kept no term, one term, and more
    await store.close()


async def _results(path) -> list[tuple[str, float]]:
    reopened = SqliteStore(path, "notes")
    await reopened.open()
    try:
        hits = await reopened.vector_search(question_vector("river engine garden"), 40)
        assert await reopened.check_integrity() == []
        # ties between items of equal text come back in any order
        return sorted(((hit.item_id, round(hit.similarity, 5)) for hit in hits), key=lambda x: (-x[1], x[0]))
    finally:
        await reopened.close()


async def _filled(tmp_path) -> tuple[SqliteStore, list[tuple[str, float]]]:
    path = tmp_path / "notes.db"
    filled = SqliteStore(path, "notes")
    await filled.open()
    await filled.reset("toy-hash-64", DIM)
    await filled.apply([update_for(item(n)) for n in range(30)], [])
    await filled.close()
    return filled, await _results(path)


async def test_a_deleted_vector_file_is_rebuilt_with_the_same_results(tmp_path):
    filled, before = await _filled(tmp_path)
    assert filled.vector_path.exists()
    filled.vector_path.unlink()
    assert await _results(filled.path) == before
    assert filled.vector_path.exists()


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
async def test_a_damaged_vector_file_is_detected_and_rebuilt(tmp_path, damage):
    filled, before = await _filled(tmp_path)
    data = filled.vector_path.read_bytes()
    if damage == "truncate":
        filled.vector_path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        filled.vector_path.write_bytes(bytes(reversed(data)))  # same size, other bytes
    else:
        filled.vector_path.write_bytes(b"")
    assert await _results(filled.path) == before


async def test_an_outdated_vector_file_catches_up_with_the_database(tmp_path, caplog, monkeypatch):
    filled, _ = await _filled(tmp_path)
    reopened = SqliteStore(filled.path, "notes")
    await reopened.open()
    # The process dies before it saves the vector file again: the file and its record stay old.
    monkeypatch.setattr(reopened, "_save_vector_index", lambda: None)
    await reopened.apply([update_for(item(n, "2", sections=1)) for n in range(10)], ["item-29"])
    await reopened.close()
    monkeypatch.undo()
    caplog.set_level(logging.INFO, logger="passageway.storage")
    after = await _results(filled.path)
    assert "added 10 and removed 22 vectors" in caplog.text  # caught up, not rebuilt from scratch
    assert "rebuilding" not in caplog.text
    filled.vector_path.unlink()
    assert await _results(filled.path) == after  # the same as a rebuild from the database
    assert "item-29" not in {item_id for item_id, _ in after}



async def test_searches_work_while_a_missing_vector_file_is_rebuilt_after_open(tmp_path):
    filled, before = await _filled(tmp_path)
    filled.vector_path.unlink()
    reopened = SqliteStore(filled.path, "notes")
    release = threading.Event()
    build = reopened._build_graph_from_flat

    def slow_build() -> None:
        release.wait(10)
        build()

    reopened._build_graph_from_flat = slow_build  # type: ignore[method-assign]
    await reopened.open()  # returns before the graph is built
    try:
        assert not filled.vector_path.exists()
        hits = await reopened.vector_search(question_vector("river engine garden"), 40)
        during = sorted(((hit.item_id, round(hit.similarity, 5)) for hit in hits),
                        key=lambda pair: (-pair[1], pair[0]))
        assert during == before  # the exact stand-in answers the same
        assert await reopened.keyword_search("river", question_vector("river"), 5)
        release.set()
        await reopened.wait_ready()
        assert filled.vector_path.exists()
    finally:
        release.set()
        await reopened.close()
    assert await _results(filled.path) == before



def test_onnxruntime_can_load_after_a_store_has_used_usearch(tmp_path):
    # usearch 2.26 then onnxruntime 1.32 in one process is a segfault; the store imports them in
    # the order that works. A child process, because a crash would take pytest with it.
    script = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from passageway.builtin.storage import SqliteStore\n"
        "async def main():\n"
        "    store = SqliteStore(Path(sys.argv[1]) / 'x.db', 'x')\n"
        "    await store.open()\n"
        "    await store.reset('toy', 4)\n"
        "    await store.close()\n"
        "asyncio.run(main())\n"
        "import onnxruntime\n"
        "print('loaded', onnxruntime.__version__)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("loaded")


# -- the vector cache ---------------------------------------------------------------------------


async def test_the_vector_cache_round_trips_and_belongs_to_one_embedder(tmp_path):
    from passageway.kernel.vector_cache import VectorCache, cache_path

    path = cache_path(tmp_path, "org/model: v1", 4)
    assert path == tmp_path / "vectors" / "org_model_v1-4.db"
    cache = VectorCache(path, "org/model: v1", 4)
    await cache.open()
    vectors = {"a" * 64: np.array([1, 0, 0, 0], dtype=np.float32),
               "b" * 64: np.array([0, 1, 0, 0], dtype=np.float32)}
    await cache.put_many(vectors)
    found = await cache.get_many(["a" * 64, "c" * 64, "a" * 64])
    assert list(found) == ["a" * 64] and found["a" * 64].tolist() == [1, 0, 0, 0]
    assert await cache.count() == 2
    await cache.close()
    await cache.close()
    other = VectorCache(path, "another-model", 4)
    with pytest.raises(StoreError, match="belongs to the embedder"):
        await other.open()
    await other.close()

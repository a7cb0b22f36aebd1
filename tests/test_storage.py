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

from passageway import hookimpl
from passageway.builtin.storage import SqliteStore
from passageway.builtin.storage.keyword import similarities
from passageway.builtin.storage.tables import MIGRATIONS
from passageway.kernel.errors import StoreError
from passageway.kernel.plugins import build_plugin_manager, collect_registries
from passageway.kernel.records import Item, Passage, Section
from passageway.kernel.store import ItemUpdate, Store
from passageway.kernel.text.chunking import passages_for
from passageway.testing import MemoryVectorCache, store_contract
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


async def test_an_index_from_before_anchors_is_migrated_and_keeps_anchors_across_a_restart(tmp_path):
    """A file at schema 2 (no anchor column: made here by dropping it from a fresh one, which
    leaves the tables exactly as schema 2 wrote them) opens, its passages search as before with no
    anchor, and an item written again keeps its sections' anchors after a restart."""
    path = tmp_path / "old.db"
    before = SqliteStore(path, "old")
    await before.open()
    await before.reset("toy-hash-64", DIM)
    plain = doc("mill", "The old mill", "The mill grinds grain.")
    await before.apply([update_for(plain)], [])
    await before.close()
    connection = sqlite3.connect(path)
    connection.execute("ALTER TABLE passages DROP COLUMN anchor")
    connection.execute("PRAGMA user_version = 2")
    connection.close()

    store = SqliteStore(path, "old")
    await store.open()
    try:
        [hit] = await store_contract.keyword_hits(store, "mill grain", question_vector("mill"), 5)
        assert (hit.item_id, hit.anchor) == ("mill", None)
        await store.apply([update_for(store_contract.anchored())], [])
    finally:
        await store.close()
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) == 3
    connection.close()
    again = SqliteStore(path, "old")
    await again.open()
    try:
        found = await store_contract.vector_hits(again, question_vector("harbour crane"), 10)
    finally:
        await again.close()
    assert sorted((hit.item_id, hit.anchor or "") for hit in found) == [
        ("guide", ""), ("guide", "cranes"), ("guide", "cranes"), ("mill", "")]


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


def held_up(monkeypatch, store: SqliteStore, method: str) -> tuple[threading.Event, threading.Event]:
    """Make ``store.<method>`` wait, once started (``entered``), until ``release`` is set."""
    entered, release = threading.Event(), threading.Event()
    original = getattr(store, method)

    def slow(*arguments):
        entered.set()
        release.wait(120)  # set by close_while_held; the bound only ends a broken test
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
    for later in (store.items(["alpha"]), store.counts()):
        with pytest.raises(StoreError, match="closed"):
            await later


async def test_vector_hits_come_from_the_row_cache_and_follow_updates(store):
    await store.apply([update_for(doc("tesla", "Tesla", "alternating current induction motor")),
                       update_for(doc("bread", "Bread", "flour water yeast salt oven"))], [])
    vector = question_vector("induction motor current")
    first = await store_contract.vector_hits(store, vector, 2)
    assert set(store._row_cache.rows) == {hit.passage_key for hit in first}
    assert await store_contract.vector_hits(store, vector, 2) == first  # the second time from the cache
    # an update stores the item's passages under new keys; the old rows leave the cache
    await store.apply([update_for(doc("tesla", "Nikola Tesla", "alternating current induction motor"))], [])
    updated = await store_contract.vector_hits(store, vector, 2)
    assert updated[0].title == "Nikola Tesla"
    assert first[0].passage_key not in store._row_cache.rows
    await store.apply([], ["bread"])
    assert [hit.item_id for hit in await store_contract.vector_hits(store, vector, 2)] == ["tesla"]
    assert set(store._row_cache.rows) == {updated[0].passage_key}
    await store.reset("toy-hash-64", DIM)
    assert store._row_cache.rows == {} and await store_contract.vector_hits(store, vector, 2) == []


async def test_a_full_row_cache_changes_no_result(store, monkeypatch):
    entries = [doc(f"n{number}", f"Note {number}", f"mill river wheel {number}") for number in range(6)]
    await store.apply([update_for(entry) for entry in entries], [])
    vector = question_vector("mill river wheel")
    monkeypatch.setattr("passageway.builtin.storage.rows.ROW_CACHE_LIMIT", 2)
    hits = await store_contract.vector_hits(store, vector, 6)
    assert len(store._row_cache.rows) == 2 and len(hits) == 6
    assert await store_contract.vector_hits(store, vector, 6) == hits


def test_similarities_give_zero_for_a_missing_or_foreign_vector():
    vector = np.array([0.6, 0.8], dtype=np.float32)
    same = np.array([1.0, 0.0], dtype="<f4").tobytes()
    other = np.array([1.0, 0.0, 0.0], dtype="<f4").tobytes()
    assert similarities([same, same], vector) == pytest.approx([0.6, 0.6])
    assert similarities([same, other, None], vector) == pytest.approx([0.6, 0.0, 0.0])
    assert similarities([], vector) == []


async def budget_store(tmp_path, monkeypatch, budget: int) -> SqliteStore:
    """Five passages with "alpha", two with "gamma", one with "beta"."""
    monkeypatch.setattr("passageway.builtin.storage.row_budget.KEYWORD_ROW_BUDGET", budget)
    opened = SqliteStore(tmp_path / f"budget-{budget}.db", "budget")
    await opened.open()
    await opened.reset("toy-hash-64", DIM)
    texts = ["alpha beta", "alpha gamma", "alpha gamma", "alpha", "alpha"]
    await opened.apply([update_for(doc(f"n{n}", f"Note {n}", text)) for n, text in enumerate(texts)], [])
    return opened


async def test_the_row_budget_leaves_out_the_commonest_terms_of_a_large_index(tmp_path, monkeypatch):
    store = await budget_store(tmp_path, monkeypatch, 3)  # five passages: more than the budget
    vector = question_vector("x")

    async def found(question: str) -> set[str]:
        return {hit.item_id for hit in await store_contract.keyword_hits(store, question, vector, 10)}

    # beta (1 row) and gamma (2 rows) fit within 3 rows; alpha (5 rows) would exceed it
    assert await found("alpha beta gamma") == {"n0", "n1", "n2"}
    assert await found("alpha beta") == {"n0"}
    # the rarest term alone is over the budget: no keyword search at all
    assert await found("alpha") == set()
    await store.close()


async def test_without_a_budget_or_within_it_every_term_is_searched(tmp_path, monkeypatch):
    vector = question_vector("x")
    for budget in (0, 5, 50):  # off; exactly the index's size; more than the index holds
        store = await budget_store(tmp_path, monkeypatch, budget)
        hits = await store_contract.keyword_hits(store, "alpha beta", vector, 10)
        assert {hit.item_id for hit in hits} == {"n0", "n1", "n2", "n3", "n4"}, budget
        assert hits[0].item_id == "n0"  # the passage with both words ranks first
        await store.close()


async def _results(path) -> list[tuple[str, float]]:
    reopened = SqliteStore(path, "notes")
    await reopened.open()
    try:
        hits = await store_contract.vector_hits(reopened, question_vector("river engine garden"), 40)
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
    assert filled.vectors.path.exists()
    filled.vectors.path.unlink()
    assert await _results(filled.path) == before
    assert filled.vectors.path.exists()


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
async def test_a_damaged_vector_file_is_detected_and_rebuilt(tmp_path, damage):
    filled, before = await _filled(tmp_path)
    data = filled.vectors.path.read_bytes()
    if damage == "truncate":
        filled.vectors.path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        filled.vectors.path.write_bytes(bytes(reversed(data)))  # same size, other bytes
    else:
        filled.vectors.path.write_bytes(b"")
    assert await _results(filled.path) == before


async def test_an_outdated_vector_file_catches_up_with_the_database(tmp_path, caplog, monkeypatch):
    filled, _ = await _filled(tmp_path)
    reopened = SqliteStore(filled.path, "notes")
    await reopened.open()
    # The process dies before it saves the vector file again: the file and its record stay old.
    monkeypatch.setattr(reopened.vectors, "save", lambda connection: None)
    await reopened.apply([update_for(item(n, "2", sections=1)) for n in range(10)], ["item-29"])
    await reopened.close()
    monkeypatch.undo()
    caplog.set_level(logging.INFO, logger="passageway.storage")
    after = await _results(filled.path)
    assert "added 10 and removed 22 vectors" in caplog.text  # caught up, not rebuilt from scratch
    assert "rebuilding" not in caplog.text
    filled.vectors.path.unlink()
    assert await _results(filled.path) == after  # the same as a rebuild from the database
    assert "item-29" not in {item_id for item_id, _ in after}



async def test_searches_work_while_a_missing_vector_file_is_rebuilt_after_open(tmp_path):
    filled, before = await _filled(tmp_path)
    filled.vectors.path.unlink()
    reopened = SqliteStore(filled.path, "notes")
    release = threading.Event()
    build = reopened.vectors.build_graph

    def slow_build(connection) -> None:
        release.wait(10)
        build(connection)

    reopened.vectors.build_graph = slow_build  # type: ignore[method-assign]
    await reopened.open()  # returns before the graph is built
    try:
        assert not filled.vectors.path.exists()
        hits = await store_contract.vector_hits(reopened, question_vector("river engine garden"), 40)
        during = sorted(((hit.item_id, round(hit.similarity, 5)) for hit in hits),
                        key=lambda pair: (-pair[1], pair[0]))
        assert during == before  # the exact stand-in answers the same
        assert await store_contract.keyword_hits(reopened, "river", question_vector("river"), 5)
        release.set()
        await reopened.wait_ready()
        assert filled.vectors.path.exists()
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
    from passageway.builtin.storage.vector_cache import SqliteVectorCache, cache_path

    path = cache_path(tmp_path, "org/model: v1", 4)
    assert path == tmp_path / "vectors" / "org_model_v1-4.db"
    cache = SqliteVectorCache(path, "org/model: v1", 4)
    await cache.open()
    vectors = {"a" * 64: np.array([1, 0, 0, 0], dtype=np.float32),
               "b" * 64: np.array([0, 1, 0, 0], dtype=np.float32)}
    await cache.put_many(vectors)
    found = await cache.get_many(["a" * 64, "c" * 64, "a" * 64])
    assert list(found) == ["a" * 64] and found["a" * 64].tolist() == [1, 0, 0, 0]
    assert await cache.count() == 2
    await cache.close()
    await cache.close()
    other = SqliteVectorCache(path, "another-model", 4)
    with pytest.raises(StoreError, match="belongs to the embedder"):
        await other.open()
    await other.close()



class _OwnCachePlugin:
    """Answers the vector cache hook for its own store only."""

    def __init__(self, store: str) -> None:
        self.store = store
        self.cache = MemoryVectorCache()

    @hookimpl
    def passageway_vector_cache(self, store, folder, embedder_name, dim):  # type: ignore[no-untyped-def]
        return self.cache if store == self.store else None


def test_the_builtin_vector_cache_answers_for_any_store_a_plugin_for_its_own(tmp_path):
    from passageway.builtin.storage.vector_cache import SqliteVectorCache

    plugin = _OwnCachePlugin("mine")
    manager = build_plugin_manager({}, extra=(("mine", plugin),), load_entry_points=False)
    ask = manager.hook.passageway_vector_cache
    assert ask(store="mine", folder=tmp_path, embedder_name="org/m", dim=4) is plugin.cache
    for store in ("sqlite", "postgres"):
        default = ask(store=store, folder=tmp_path, embedder_name="org/m", dim=4)
        assert isinstance(default, SqliteVectorCache)
        assert default.path == tmp_path / "vectors" / "org_m-4.db"


async def test_the_kernel_takes_its_vector_cache_from_the_hook(tmp_path):
    from passageway.kernel.app import Kernel
    from passageway.kernel.config import load_settings
    from passageway.testing.toy_embedder import plugin as toy_plugin
    from tests.server_helpers import write_instance

    environ = write_instance(tmp_path)
    plugin = _OwnCachePlugin("sqlite")  # the store this instance uses
    manager = build_plugin_manager(environ, extra=(("toy", toy_plugin), ("mine", plugin)),
                                   load_entry_points=False)
    async with Kernel.open(load_settings(environ), manager, environ) as kernel:
        assert await kernel.sync_once() == {"notes": None}
        assert kernel.vector_cache is plugin.cache and plugin.cache.opened
        counts = await kernel.sources["notes"].store.counts()
    assert len(plugin.cache.vectors) == counts[1] > 0  # every passage's vector went to the plugin's cache
    assert plugin.cache.closed
    assert not (tmp_path / "data" / "vectors").exists()  # and no file of the builtin cache was made


async def test_a_full_disk_during_a_write_is_reported_as_a_full_disk(store):
    # Issue 32.13: a re-sync on a full disk said "cannot rollback - no transaction is active".
    await store.apply([update_for(item(0))], [])
    limit = await store._write(lambda: store._writer.execute("PRAGMA page_count").fetchone()[0] + 1)
    await store._write(lambda: store._writer.execute(f"PRAGMA max_page_count = {limit}"))
    with pytest.raises(StoreError, match="the disk is full") as caught:
        await store.apply([update_for(item(n, sections=40)) for n in range(1, 30)], [])
    assert "rollback" not in str(caught.value) and "'notes'" in str(caught.value)
    await store._write(lambda: store._writer.execute("PRAGMA max_page_count = 1073741823"))
    await store.apply([update_for(item(1))], [])  # the store goes on once there is room
    assert set(await store.versions()) == {"item-0", "item-1"}
    assert await store.check_integrity() == []

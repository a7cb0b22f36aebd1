"""The postgres store beyond the shared contract: migrations, servers sharing one index, and a
lost connection during a search (the contract itself runs in tests/test_storage.py)."""

from __future__ import annotations

import asyncio

import numpy as np
import psycopg
import pytest
from passageway_store_postgres.store import PostgresStore
from passageway_store_postgres.testing import fresh_schema

from passageway import StoreError
from passageway.testing import DIM, doc, question_vector, update_for


@pytest.fixture
async def opened(dsn):
    store = PostgresStore(dsn, "notes", schema_name=fresh_schema())
    await store.open()
    await store.reset("toy-hash-64", DIM)
    yield store
    await store.close()


async def test_migrations_are_recorded_per_scope_and_a_newer_schema_is_refused(dsn):
    schema_name = fresh_schema()
    first, second = PostgresStore(dsn, "notes", schema_name=schema_name), PostgresStore(
        dsn, "wiki", schema_name=schema_name)
    await asyncio.gather(first.open(), second.open())  # two servers migrating at once
    with psycopg.connect(dsn) as connection:
        rows = connection.execute(
            f"SELECT scope, version FROM {schema_name}.migrations ORDER BY scope, version").fetchall()
        per_source = [(scope, version) for scope in ("notes", "wiki") for version in range(1, 5)]
        assert rows == [("", 1), ("", 2), *per_source]
        connection.execute(f"INSERT INTO {schema_name}.migrations (scope, version) VALUES ('wiki', 9)")
    await asyncio.gather(first.close(), second.close())
    with pytest.raises(StoreError, match="newer passageway"):
        await PostgresStore(dsn, "wiki", schema_name=schema_name).open()


async def test_two_servers_on_one_schema_share_the_index(dsn):
    schema_name = fresh_schema()
    writer, reader = (PostgresStore(dsn, "notes", schema_name=schema_name) for _ in range(2))
    await writer.open()
    await reader.open()
    try:
        await writer.reset("toy-hash-64", DIM)
        await writer.apply([update_for(doc("mill", "Mill", "the mill by the river"))], [])
        assert await reader.embedder() == ("toy-hash-64", DIM)
        assert await reader.versions() == {"mill": "1"}
        keyword, _ = await asyncio.to_thread(reader.search, "river", question_vector("river"), 5)
        assert [hit.item_id for hit in keyword] == ["mill"]
    finally:
        await writer.close()
        await reader.close()


async def test_an_unreachable_database_is_a_store_error_naming_the_source():
    store = PostgresStore("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2", "notes")
    with pytest.raises(StoreError, match="'notes': the PostgreSQL index cannot be opened"):
        await store.open()


async def test_a_search_whose_connection_was_dropped_is_tried_once_more(opened, dsn):
    await opened.apply([update_for(doc("mill", "Mill", "the mill by the river"))], [])
    vector = question_vector("river")
    before = await asyncio.to_thread(opened.search, "river", vector, 5)
    with psycopg.connect(dsn, autocommit=True) as admin:
        ended = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                              "WHERE application_name = 'passageway notes'").fetchone()
    assert ended is not None and ended[0] >= 1
    assert await asyncio.to_thread(opened.search, "river", vector, 5) == before


async def test_a_second_lost_connection_is_a_store_error_not_silence(opened, monkeypatch):
    calls = []

    def lost(function):
        calls.append(function)
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(opened, "_read", lost)
    with pytest.raises(StoreError, match="'notes': the PostgreSQL connection failed twice"):
        await asyncio.to_thread(opened.search, "river", question_vector("river"), 5)
    assert len(calls) == 2


async def test_the_row_budget_leaves_out_the_commonest_terms_of_a_large_index(opened):
    texts = ["alpha beta", "alpha gamma", "alpha gamma", "alpha", "alpha"]
    await opened.apply([update_for(doc(f"n{n}", f"Note {n}", text)) for n, text in enumerate(texts)], [])
    await opened.analyze()
    opened.keyword_row_budget = 3  # five passages: "alpha" in all, "gamma" in two, "beta" in one
    hits, _ = await asyncio.to_thread(opened.search, "alpha gamma beta", question_vector("x"), 10)
    assert sorted(hit.item_id for hit in hits) == ["n0", "n1", "n2"]
    opened.keyword_row_budget = 0
    hits, _ = await asyncio.to_thread(opened.search, "alpha gamma beta", question_vector("x"), 10)
    assert len(hits) == 5


async def test_a_question_vector_of_another_dimension_is_a_store_error(opened):
    await opened.apply([update_for(doc("mill", "Mill", "the mill by the river"))], [])
    with pytest.raises(StoreError, match="dimension"):
        await asyncio.to_thread(opened.search, "river", np.ones(8, dtype=np.float32) / np.sqrt(8), 5)
    with pytest.raises(StoreError, match="dimension"):
        await asyncio.to_thread(opened.search, "", np.ones(8, dtype=np.float32) / np.sqrt(8), 5)


async def test_while_the_database_is_away_a_search_fails_fast_and_the_store_says_so(quick_outage):
    # Issue 38.7: during an outage each /recall waited the 10 s connect timeout, then answered 503.
    from passageway_store_postgres import store as store_module
    from passageway_store_postgres.testing import StoppableServer

    try:
        database = StoppableServer()
    except RuntimeError as error:
        pytest.skip(str(error))
    store = PostgresStore(database.uri, "notes", schema_name=fresh_schema())
    await store.open()
    try:
        await store.reset("toy-hash-64", DIM)
        await store.apply([update_for(doc("mill", "Mill", "the mill by the river"))], [])
        vector = question_vector("river")
        assert store.unreachable is None
        database.stop()
        with pytest.raises(StoreError, match="'notes'"):
            await asyncio.to_thread(store.search, "river", vector, 5)  # finds out: waits its timeout
        assert store.unreachable is not None and "PostgreSQL" in store.unreachable
        waits: list[float] = []
        pool = store._pool
        assert pool is not None
        asked = pool.connection

        def counted(timeout=None):  # type: ignore[no-untyped-def]
            waits.append(timeout)
            return asked(timeout=timeout)

        pool.connection = counted  # type: ignore[method-assign]
        for _ in range(3):
            with pytest.raises(StoreError, match="'notes'"):
                await asyncio.to_thread(store.search, "river", vector, 5)
        # Each search while it is known to be away asks the pool once, for a short wait.
        assert waits and all(wait == store_module.AWAY_WAIT for wait in waits)
        assert len(waits) == 3 and quick_outage >= store_module.AWAY_WAIT * 10  # the shipped timeout
        database.start()
        for _ in range(200):  # the pool connects again in the background
            try:
                keyword, _ = await asyncio.to_thread(store.search, "river", vector, 5)
                break
            except StoreError:
                await asyncio.sleep(0.1)
        assert [hit.item_id for hit in keyword] == ["mill"] and store.unreachable is None
    finally:
        await store.close()

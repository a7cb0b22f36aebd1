"""A bulk load fills an index exactly as the sync's writes do (sections' anchors included), with both
indexes built after."""

from __future__ import annotations

import asyncio

import numpy as np
import psycopg
import pytest
from passageway_store_postgres.bulk import vector_bytes
from passageway_store_postgres.store import PostgresStore
from passageway_store_postgres.testing import fresh_schema

from passageway import StoreError
from passageway.testing import DIM, doc, question_vector, update_for
from passageway.testing.store_contract import anchored

ITEMS = [doc("mill", "The old mill", "The mill grinds grain.", "Grain came by boat.", path=("Guides",)),
         doc("river", "Rivers", "A river carries boats to the mill."),
         doc("bakery", "Bäckerei", "Brot aus Mehl von der Mühle."), anchored()]


def test_vector_bytes_are_pgvectors_binary_form():
    assert vector_bytes(np.array([1.0, -2.0], dtype=np.float32)) == (
        b"\x00\x02\x00\x00" + np.array([1.0, -2.0], dtype=">f4").tobytes())


async def test_a_bulk_load_gives_the_same_searches_as_apply(dsn):
    applied = PostgresStore(dsn, "notes", schema_name=fresh_schema())
    loaded = PostgresStore(dsn, "notes", schema_name=fresh_schema())
    for store in (applied, loaded):
        await store.open()
        await store.reset("toy-hash-64", DIM)
    try:
        await applied.apply([update_for(item) for item in ITEMS], [])
        bulk = loaded.bulk_load(maintenance_work_mem="64MB", parallel_workers=0)
        await asyncio.to_thread(bulk.begin)
        try:
            await asyncio.to_thread(bulk.add, [update_for(item) for item in ITEMS[:2]])
            await asyncio.to_thread(bulk.add, [update_for(item) for item in ITEMS[2:]])
            await asyncio.to_thread(bulk.finish)
        finally:
            bulk.close()
        assert bulk.passages == 7
        assert await loaded.counts() == await applied.counts() == (4, 7)
        for question in ("mill grain", "muhle brot", "boats", "harbour crane"):
            found = [await asyncio.to_thread(store.search, question, question_vector(question), 5)
                     for store in (applied, loaded)]
            as_rows = [[[(c.item_id, c.text, c.anchor, round(c.keyword_score, 6), round(c.similarity, 6))
                         for c in listed] for listed in both] for both in found]
            assert as_rows[0][0], question
            assert as_rows[1] == as_rows[0], question
        with psycopg.connect(dsn) as connection:
            indexes = {row[0] for row in connection.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = %s", (loaded.schema_name,))}
        assert {"passages:notes:vector", "words:notes:words"} <= indexes
        again = loaded.bulk_load()
        with pytest.raises(StoreError, match="empty index"):
            await asyncio.to_thread(again.begin)
        again.close()
    finally:
        await applied.close()
        await loaded.close()

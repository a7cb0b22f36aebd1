"""Indexes written by earlier source migrations upgrade in place: version 2 (words and length in
the passages table) to a words table of their own, version 3 to passages with an anchor."""

from __future__ import annotations

import asyncio

import psycopg
from passageway_store_postgres import schema
from passageway_store_postgres.keyword import vector_literal, words_text
from passageway_store_postgres.store import PostgresStore
from passageway_store_postgres.testing import fresh_schema
from psycopg import sql

from passageway.testing import DIM, doc, question_vector, update_for
from passageway.testing.store_contract import anchored

ITEMS = [doc("mill", "The old mill", "The mill grinds grain.", "Grain came by boat.", path=("Guides",)),
         doc("river", "Rivers", "A river carries boats to the mill, boats and boats."),
         doc("bakery", "Bäckerei", "Brot aus Mehl von der Mühle.")]
QUESTIONS = ("mill grain", "muhle brot", "boats river", "guides")


def write_as_version_2(dsn: str, store: PostgresStore) -> None:
    """The vector column fixed to :data:`DIM` and the rows of :data:`ITEMS` as version 2's
    ``reset`` and ``apply`` wrote them: the words in the passages table."""
    names = store.names
    config = sql.Literal(f"{store.schema_name}.{schema.TEXT_CONFIG}")
    words = schema.words_expression(config, [sql.Placeholder()] * 4)
    with psycopg.connect(dsn) as connection, connection.transaction():
        connection.execute(names.search_path())
        for statement in schema.reset_statements(names, DIM)[1:4]:  # not TRUNCATE: no words table yet
            connection.execute(statement)
        for key, value in (("embedder_name", "toy-hash-64"), ("embedder_dim", str(DIM)), ("generation", "1")):
            connection.execute(names.format(
                "INSERT INTO {state} (source, key, value) VALUES ('notes', %s, %s)"), (key, value))
        for update in map(update_for, ITEMS):
            item = update.item
            connection.execute(names.format(
                "INSERT INTO {items} (id, title, url, version, path) VALUES (%s, %s, %s, %s, %s)"),
                (item.id, item.title, item.url, item.version, list(item.path)))
            for passage, vector in zip(update.passages, update.vectors, strict=True):
                connection.execute(sql.SQL(
                    "INSERT INTO {} (item, ordinal, heading, text, digest, vector, words) "
                    "VALUES (%s, %s, %s, %s, %s, %s::vector, {})").format(names.passages, words),
                    (item.id, passage.ordinal, passage.heading, passage.text, passage.digest,
                     vector_literal(vector), words_text(item.title), words_text(passage.heading or ""),
                     words_text(schema.PATH_SEPARATOR.join(item.path)), words_text(passage.text)))


async def found(store: PostgresStore) -> list[object]:
    lists = []
    for question in QUESTIONS:
        keyword, nearest = await asyncio.to_thread(store.search, question, question_vector(question), 5)
        lists.append([[(c.item_id, c.text, round(c.keyword_score, 6), round(c.similarity, 6)) for c in listed]
                      for listed in (keyword, nearest)])
    return lists


async def test_an_index_of_version_2_upgrades_in_place_and_searches_the_same(dsn, monkeypatch):
    old_schema = fresh_schema()
    with monkeypatch.context() as patched:
        patched.setattr(schema, "SOURCE_MIGRATIONS", schema.SOURCE_MIGRATIONS[:2])
        old = PostgresStore(dsn, "notes", schema_name=old_schema)
        await old.open()
        await old.close()
    write_as_version_2(dsn, old)

    upgraded = PostgresStore(dsn, "notes", schema_name=old_schema)
    built = PostgresStore(dsn, "notes", schema_name=fresh_schema())
    for store in (upgraded, built):
        await store.open()
    try:
        await built.reset("toy-hash-64", DIM)
        await built.apply([update_for(item) for item in ITEMS], [])
        with psycopg.connect(dsn) as connection:
            versions = connection.execute(f"SELECT version FROM {old_schema}.migrations "
                                          "WHERE scope = 'notes' ORDER BY version").fetchall()
            # Whether VACUUM could mark the page all-visible depends on the transactions open
            # elsewhere on the server (autovacuum's among them); that it ran does not.
            vacuumed = connection.execute("SELECT last_vacuum IS NOT NULL FROM pg_stat_user_tables "
                                          "WHERE schemaname = %s AND relname = 'words:notes'",
                                          (old_schema,)).fetchone()
            columns = {row[0] for row in connection.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = %s "
                "AND table_name = 'passages:notes'", (old_schema,))}
        assert versions == [(1,), (2,), (3,), (4,)]
        assert "words" not in columns and "length" not in columns
        assert vacuumed == (True,)  # after the migration that rewrote the words table
        assert await upgraded.counts() == await built.counts() == (3, 4)
        before = await found(upgraded)
        assert all(keyword for keyword, _ in before)
        assert before == await found(built)
        # the upgraded index keeps working: a rewritten item replaces its words, a deleted one goes
        await upgraded.apply([update_for(doc("mill", "The old mill", "A windmill now."))], ["bakery"])
        hits, _ = await asyncio.to_thread(upgraded.search, "grain windmill brot", question_vector("x"), 5)
        assert [(hit.item_id, hit.text) for hit in hits] == [("mill", "A windmill now.")]
    finally:
        await upgraded.close()
        await built.close()


async def test_an_index_of_version_3_gets_anchors_and_keeps_them_across_a_restart(dsn):
    """A version 3 index (no anchor column: made by dropping it from a fresh one) opens, searches
    its old passages without anchors, and keeps the anchors of an item written after it."""
    schema_name = fresh_schema()
    old = PostgresStore(dsn, "notes", schema_name=schema_name)
    await old.open()
    await old.reset("toy-hash-64", DIM)
    await old.apply([update_for(ITEMS[0])], [])
    await old.close()
    with psycopg.connect(dsn) as connection:
        connection.execute(old.names.format("ALTER TABLE {passages} DROP COLUMN anchor"))
        connection.execute(f"DELETE FROM {schema_name}.migrations WHERE scope = 'notes' AND version = 4")

    upgraded = PostgresStore(dsn, "notes", schema_name=schema_name)
    await upgraded.open()
    try:
        hits, _ = await asyncio.to_thread(upgraded.search, "mill grain", question_vector("mill"), 5)
        assert {(hit.item_id, hit.anchor) for hit in hits} == {("mill", None)}
        await upgraded.apply([update_for(anchored())], [])
    finally:
        await upgraded.close()
    restarted = PostgresStore(dsn, "notes", schema_name=schema_name)
    await restarted.open()
    try:
        _, nearest = await asyncio.to_thread(restarted.search, "", question_vector("harbour crane"), 10)
    finally:
        await restarted.close()
    assert sorted((hit.item_id, hit.anchor or "") for hit in nearest) == [
        ("guide", ""), ("guide", "cranes"), ("guide", "cranes"), ("mill", ""), ("mill", "")]

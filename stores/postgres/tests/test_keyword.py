"""Keyword search in the postgres store scores and splits words as the sqlite store's FTS5 does."""

from __future__ import annotations

import asyncio

from passageway_store_postgres.keyword import RANK_WEIGHTS, words_text
from passageway_store_postgres.store import PostgresStore
from passageway_store_postgres.testing import fresh_schema

from passageway import StoreContext
from passageway.kernel.plugins import build_plugin_manager, collect_registries
from passageway.testing import DIM, doc, question_vector, update_for

ITEMS = [
    doc("mill", "The old mill", "The mill by the river grinds grain.", "Grain came by boat.",
        path=("Guides", "Water-mills")),
    doc("river", "Rivers", "A river carries water, and the river carries boats, boats, boats."),
    doc("bakery", "Bakery", "Bread needs flour; flour comes from grain ground at a mill."),
    doc("notes", "Notes", "See docs/water-mill.md and https://example.com/mill-history for more."),
    doc("strasse", "Straße", "Die Mühle an der Straße mahlt Getreide. Über die Brücke zur Mühle."),
    doc("long", "Long", " ".join(["filler words about nothing in particular"] * 12) + " mill."),
]
QUESTIONS = ["mill river", "grain boats", "mühle strasse", "water mill history", "flour", "md"]


def test_words_are_split_where_fts5_splits_them():
    assert words_text("docs/scale-out.md, e.g. x86_64") == "docs scale out md e g x86 64"
    assert words_text("Straße über") == "Strasse über"
    assert words_text("東京タワー") == "東 京 タ ワ ー"


def test_rank_weights_are_half_the_column_weights():
    assert RANK_WEIGHTS == "{0.5, 0.5, 0.75, 1.0}"  # text, path, heading, title: 1, 1, 1.5, 2


async def test_keyword_candidates_and_scores_match_the_sqlite_store(dsn, tmp_path):
    sqlite_store = collect_registries(build_plugin_manager({})).stores.get("sqlite")
    sqlite = sqlite_store(tmp_path / "index.db", "notes", StoreContext())
    postgres = PostgresStore(dsn, "notes", schema_name=fresh_schema())
    stores = (sqlite, postgres)
    for store in stores:
        await store.open()
        await store.reset("toy-hash-64", DIM)
        await store.apply([update_for(item) for item in ITEMS], [])
    try:
        for question in QUESTIONS:
            found = []
            for store in stores:
                keyword, _ = await asyncio.to_thread(store.search, question, question_vector(question), 10)
                found.append([(candidate.item_id, candidate.heading, candidate.text[:20],
                               round(candidate.keyword_score, 6)) for candidate in keyword])
            assert found[0], question
            assert found[1] == found[0], question
    finally:
        for store in stores:
            await store.close()

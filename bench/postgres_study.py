"""Where a question's time goes in the ``postgres`` store's 1,000,000-passage synthetic index.

    PG_DSN=... uv run python bench/postgres_study.py --keep DIR --dsn-env PG_DSN
    PG_DSN=... uv run python bench/postgres_study.py --keep DIR --dsn-env PG_DSN --ef-search 100,200,400
    PG_DSN=... uv run python bench/postgres_study.py --keep DIR --dsn-env PG_DSN --layouts

It reads the index ``bench/postgres.py --stores postgres --keep DIR --dsn-env PG_DSN`` kept (the
schema ``bench_keep_<size>``) and asks its 200 questions again, straight in SQL:

* always: the sizes of the largest tables and indexes; the keyword query and the vector query,
  each alone per question (p50 / p95), how many of the question's terms the row budget keeps, and
  how many of the 100 questions made near a stored passage find it (top cosine at least 0.85, the
  gate of ``bench/recall.py``'s ``GivenVectorEmbedder``);
* ``--ef-search``: the vector query at other values of pgvector's ``hnsw.ef_search``;
* ``--layouts``, on an index still at source migration 2 (built by ``bench/postgres.py`` at
  commit ``167501c`` or before; opening it with the current store upgrades it): version 2's keyword
  statement, which ranks the passages' rows, against the current one on a copy of the words in
  the narrow table migration 3 creates, each question to both in turn, each next to the vector
  query on a second connection as ``PostgresStore.search`` runs them. The copy is dropped at the
  end.
"""

from __future__ import annotations

import argparse
import copy
import os
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import common.corpus
import common.measure
import common.synthetic
import numpy as np
import psycopg
from passageway_store_postgres import keyword, schema
from passageway_store_postgres.budget import KEYWORD_ROW_BUDGET, statistics_of, within_budget
from passageway_store_postgres.store import EF_SEARCH, vector_literal
from psycopg import sql

from passageway import query_terms

GATE = 0.85
COPY = "study_words"


def connect(dsn: str, names: schema.Names) -> psycopg.Connection[Any]:
    connection = psycopg.connect(dsn, autocommit=True)
    connection.execute(names.search_path())
    connection.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
    connection.execute("SET jit = off")
    return connection


def timed(connection: psycopg.Connection[Any], statement: Any, parameters: dict[str, Any]
          ) -> tuple[float, list[Any]]:
    started = time.perf_counter()
    rows = connection.execute(statement, parameters).fetchall()
    return time.perf_counter() - started, rows


def spread(label: str, seconds: list[float]) -> str:
    return (f"{label}: p50 {common.measure.ms(common.measure.percentile(seconds, 0.5))} / "
            f"p95 {common.measure.ms(common.measure.percentile(seconds, 0.95))} ms")


def vector_statement(names: schema.Names) -> sql.Composed:
    return sql.SQL(
        "SELECT " + keyword.COLUMNS + ", 1 - (p.vector <=> %(vector)s::vector) AS similarity "
        "FROM {passages} p JOIN {items} i ON i.id = p.item "
        "ORDER BY p.vector <=> %(vector)s::vector LIMIT %(limit)s"
    ).format(passages=names.passages, items=names.items)


def keyword_texts(question: str, statistics: tuple[float, dict[str, float], float]) -> list[str]:
    rows, fractions, _ = statistics
    kept = within_budget(query_terms(question), rows, fractions, KEYWORD_ROW_BUDGET)
    return [text for term in kept if (text := keyword.tsquery_text([term])) is not None]


def alone(connection: psycopg.Connection[Any], names: schema.Names, asked: list[tuple[str, np.ndarray]],
          statistics: tuple[float, dict[str, float], float], statement: Any) -> None:
    """Each question's keyword query, then its vector query, on one connection."""
    kept, keyword_times, vector_times, near = [], [], [], 0
    for number, (question, vector) in enumerate(asked):
        texts, literal = keyword_texts(question, statistics), vector_literal(vector)
        kept.append(len(texts))
        if texts:
            keyword_times.append(timed(connection, statement, keyword.bm25_parameters(
                texts, statistics[0], statistics[2], literal, 50))[0])
        seconds, rows = timed(connection, vector_statement(names), {"vector": literal, "limit": 50})
        vector_times.append(seconds)
        near += number % 2 == 0 and bool(rows) and rows[0][-1] >= GATE
    print(spread("keyword query alone", keyword_times))
    print(spread(f"vector query alone (ef_search {EF_SEARCH})", vector_times))
    print(f"terms the row budget keeps, questions: {dict(sorted({k: kept.count(k) for k in kept}.items()))}")
    print(f"questions made near a stored passage whose vector query finds it: {near}/{len(asked[::2])}")


def ef_search(connection: psycopg.Connection[Any], names: schema.Names, asked: list[tuple[str, np.ndarray]],
              values: list[int]) -> None:
    for value in values:
        connection.execute(f"SET hnsw.ef_search = {int(value)}")
        times, near = [], 0
        for number, (_, vector) in enumerate(asked):
            seconds, rows = timed(connection, vector_statement(names),
                                  {"vector": vector_literal(vector), "limit": 50})
            times.append(seconds)
            near += number % 2 == 0 and bool(rows) and rows[0][-1] >= GATE
        print(spread(f"ef_search {value}: near passage found {near}/{len(asked[::2])}, vector query", times))
    connection.execute(f"SET hnsw.ef_search = {EF_SEARCH}")


def layouts(dsn: str, names: schema.Names, asked: list[tuple[str, np.ndarray]]) -> None:
    first, second = connect(dsn, names), connect(dsn, names)
    if first.execute("SELECT to_regclass(%s)", (f'{names.schema_name}."{names.words_name}"',)).fetchone()[0]:
        sys.exit(f"{names.schema_name} is past source migration 2; --layouts needs an index built before it")
    narrow = sql.Identifier(names.schema_name, COPY)
    started = time.perf_counter()
    for statement in ("CREATE TABLE {copy} AS SELECT key, length, words FROM {passages}",
                      "ALTER TABLE {copy} ADD PRIMARY KEY (key)",
                      "CREATE INDEX ON {copy} USING gin (words) WITH (fastupdate = off)",
                      "VACUUM (ANALYZE) {copy}", "SELECT pg_prewarm({name}::regclass)"):
        first.execute(sql.SQL(statement).format(copy=narrow, passages=names.passages,
                                                name=sql.Literal(f"{names.schema_name}.{COPY}")))
    print(f"narrow copy of the words made in {time.perf_counter() - started:.0f} s")
    try:
        wide = copy.copy(names)
        wide.words, wide.words_name = names.passages, names.passages_name
        statistics = statistics_of(first, wide)
        config = sql.Literal(f"{names.schema_name}.{schema.TEXT_CONFIG}")
        current = keyword.bm25_statement(narrow, names.passages, names.items, config)
        version_2 = sql.SQL(keyword.bm25_statement(names.passages, names.passages, names.items, config)
                            .as_string(first).replace(" MATERIALIZED", ""))
        statements = {"version 2 (passages table)": version_2, "version 3 (words table)": current}
        pool = ThreadPoolExecutor(1)
        results: dict[str, list[float]] = {label: [] for label in statements}
        same = 0
        for number, (question, vector) in enumerate([asked[0], *asked]):
            texts, literal = keyword_texts(question, statistics), vector_literal(vector)
            parameters = keyword.bm25_parameters(texts, statistics[0], statistics[2], literal, 50)
            lists = []
            for label in (list(statements) if number % 2 else list(statements)[::-1]):
                started = time.perf_counter()
                nearest = pool.submit(timed, second, vector_statement(names),
                                      {"vector": literal, "limit": 50})
                rows = timed(first, statements[label], parameters)[1] if texts else []
                nearest.result()
                if number:  # the first is a warm-up
                    results[label].append(time.perf_counter() - started)
                lists.append([row[0] for row in rows])
            same += number > 0 and lists[0] == lists[1]
        for label, seconds in results.items():
            print(spread(f"{label}: keyword and vector query on two connections", seconds))
        print(f"same keyword candidates: {same}/{len(asked)}")
    finally:
        first.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(narrow))
        first.close()
        second.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, required=True, metavar="DIR", help="bench/postgres.py's --keep")
    parser.add_argument("--dsn-env", required=True, metavar="NAME", help="a variable holding the DSN")
    parser.add_argument("--size", type=int, default=1_000_000, help="the synthetic index's passages")
    parser.add_argument("--ef-search", default="", metavar="N,N", help="hnsw.ef_search values to try")
    parser.add_argument("--layouts", action="store_true", help="version 2's keyword query against 3's")
    args = parser.parse_args()
    dsn = os.environ[args.dsn_env]
    names = schema.Names(f"bench_keep_{args.size}", "scale")
    vocabulary = common.synthetic.synthetic_vocabulary(random.Random(11))
    samples = np.load(args.keep / f"postgres-{args.size}.samples.npy")
    asked = common.synthetic.scale_questions(random.Random(args.size), vocabulary, samples, 200, 384)
    print(f"`uv run python bench/postgres_study.py {' '.join(sys.argv[1:])}` "
          f"({common.measure.commit()}, load average {os.getloadavg()[0]:.2f})")
    connection = connect(dsn, names)
    connection.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    sizes = connection.execute(
        "SELECT c.relname, pg_size_pretty(pg_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind IN ('r', 'i') "
        "ORDER BY pg_relation_size(c.oid) DESC LIMIT 6", (names.schema_name,)).fetchall()
    print("largest relations: " + ", ".join(f"{name} {size}" for name, size in sizes))
    if args.layouts:
        layouts(dsn, names, asked)
    else:
        statement = keyword.bm25_statement(names.words, names.passages, names.items,
                                           sql.Literal(f"{names.schema_name}.{schema.TEXT_CONFIG}"))
        alone(connection, names, asked, statistics_of(connection, names), statement)
    if args.ef_search:
        ef_search(connection, names, asked, [int(value) for value in args.ef_search.split(",")])
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    connection.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The ``postgres`` store: one source's index in PostgreSQL tables, searched with pgvector and
full-text search (see :mod:`passageway_store_postgres.schema` for the tables).

The store speaks to the database with psycopg's blocking API through a connection pool of
``pool_size`` connections. Its ``async`` methods run that work in a thread pool of the same size,
so the event loop never waits on the network; ``search`` runs in the calling thread (recall's
worker), as the store contract asks. Several servers may open the same source at once: the
tables are the truth, nothing is cached in memory, and each write is one transaction.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np
import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from passageway import Candidate, ItemUpdate, StoredItem, StoreError, check_updates, query_terms
from passageway_store_postgres import keyword, schema
from passageway_store_postgres.budget import KEYWORD_ROW_BUDGET, Statistics, statistics_of, within_budget
from passageway_store_postgres.bulk import BulkLoad
from passageway_store_postgres.keyword import vector_literal
from passageway_store_postgres.lead import Lead, lead_key, leader_of
from passageway_store_postgres.schema import PATH_SEPARATOR, Names

T = TypeVar("T")

EF_SEARCH = 100
"""pgvector's ``hnsw.ef_search`` (candidate list of the graph walk): at least recall's 50
candidates, with room for accuracy."""
CONNECT_TIMEOUT = 10.0
AWAY_WAIT = 0.5
"""A call's wait for a connection while the database is away (:attr:`PostgresStore.unreachable`)."""
RECONNECT_SECONDS = 8.0
SIDE_BY_SIDE_FROM = 50_000
"""From this many passages on, a search runs its keyword and vector queries on two connections at
once; below, both go in one round trip on one connection (cheaper than a second's hand-over)."""


class ConnectionLost(StoreError):
    """The database went away under a query; a search tries once more on a fresh connection."""


class PostgresStore:
    """One source's index in the schema ``schema`` of the database at ``dsn``."""

    def __init__(self, dsn: str, source: str, *, schema_name: str = "passageway", pool_size: int = 4) -> None:
        self.source = source
        self.schema_name = schema_name
        self.names = Names(schema_name, source)
        if self.names.longest > 63:
            raise StoreError(
                f"source {source!r}: the name is too long for a PostgreSQL table name (at most 63 bytes "
                "with its prefix); choose a shorter source name"
            )
        self._dsn = dsn
        self._pool_size = max(1, pool_size)
        self._pool: ConnectionPool | None = None
        self._threads = ThreadPoolExecutor(max_workers=self._pool_size, thread_name_prefix=f"pg-{source}")
        self._closed = False
        self._unreachable: str | None = None
        self._lock = threading.Lock()
        self.keyword_row_budget = KEYWORD_ROW_BUDGET  # 0: none (bench/postgres.py compares)
        self._word_statistics = Statistics(lambda connection: statistics_of(connection, self.names))
        self._lead_key = lead_key(schema_name, source)
        self._lead = Lead(dsn, self._lead_key, int(CONNECT_TIMEOUT))
        self._config = sql.Literal(f"{schema_name}.{schema.TEXT_CONFIG}")
        self._words = schema.words_expression(self._config, [sql.Placeholder()] * 4)

    # -- connections --------------------------------------------------------------------------

    def _configure(self, connection: psycopg.Connection[Any]) -> None:
        connection.execute(self.names.search_path())
        connection.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
        # JIT compilation of the keyword query on a large index costs more than the query.
        connection.execute("SET jit = off")
        connection.commit()

    @property
    def unreachable(self) -> str | None:
        """Why the database is away (no connection within :data:`CONNECT_TIMEOUT`), or ``None``; while
        away a call waits :data:`AWAY_WAIT` (recall fails fast), and one that connects ends it."""
        return self._unreachable

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        pool = self._pool
        if self._closed or pool is None:
            raise StoreError(f"the index of source {self.source!r} is closed")
        away = self._unreachable
        try:
            with pool.connection(timeout=AWAY_WAIT if away else CONNECT_TIMEOUT) as connection:
                self._unreachable = None
                yield connection
        except PoolClosed:
            raise StoreError(f"the index of source {self.source!r} is closed") from None
        except PoolTimeout:
            self._unreachable = away or (
                f"source {self.source!r}: no connection to PostgreSQL within {CONNECT_TIMEOUT:g} s; "
                "check that the server is up and [store] dsn points at it")
            raise StoreError(self._unreachable) from None
        except psycopg.OperationalError as error:
            # Lost under a query (a restart, the network): the pool drops it, the next call connects.
            raise ConnectionLost(
                f"source {self.source!r}: the PostgreSQL connection was lost ({_first_line(error)}); "
                "check that the server is up"
            ) from None

    async def _run(self, function: Callable[..., T], *args: Any) -> T:
        if self._closed:
            raise StoreError(f"the index of source {self.source!r} is closed")
        return await asyncio.get_running_loop().run_in_executor(self._threads, function, *args)

    # -- lifecycle ----------------------------------------------------------------------------

    async def open(self) -> None:
        await self._run(self._open)

    def _open(self) -> None:
        with self._lock:
            if self._pool is not None:
                return
            # The schema must exist before a connection's search_path can point at it.
            try:
                with psycopg.connect(self._dsn, connect_timeout=int(CONNECT_TIMEOUT)) as connection:
                    schema.migrate(connection, self.names, self.source)
            except psycopg.Error as error:
                raise StoreError(
                    f"source {self.source!r}: the PostgreSQL index cannot be opened: "
                    f"{_first_line(error)}. Check [store] dsn and that the vector and unaccent "
                    "extensions are available (CREATE EXTENSION needs the right to create them)"
                ) from None
            pool = ConnectionPool(
                self._dsn, min_size=1, max_size=self._pool_size, open=False,
                # psycopg_pool retries a lost server with a doubling delay until this; a short one
                # lets the next query start afresh, so service resumes soon after the server does.
                reconnect_timeout=RECONNECT_SECONDS,
                configure=self._configure, name=f"passageway-{self.source}",
                # autocommit: a read is no transaction, so handing a connection back to the pool
                # costs no ROLLBACK round trip (writes open theirs with connection.transaction())
                kwargs={"application_name": f"passageway {self.source}", "autocommit": True},
            )
            pool.open(wait=True, timeout=CONNECT_TIMEOUT)
            self._pool = pool

    async def close(self) -> None:
        """Close the pool once running searches are done; closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        pool, self._pool = self._pool, None
        try:
            await asyncio.get_running_loop().run_in_executor(self._threads, self._lead.drop)
            if pool is not None:
                await asyncio.get_running_loop().run_in_executor(self._threads, pool.close)
        finally:
            self._threads.shutdown(wait=True)

    # -- which server syncs -----------------------------------------------------------------

    async def lead(self, replica: str) -> bool:
        """Whether this server (``replica``) is, or has now become, the one that syncs (:mod:`.lead`)."""
        return await self._run(self._lead.take, replica)

    async def leader(self) -> str | None:
        """The ``replica`` name of the server that syncs this source now, or None."""
        return await self._run(self._read, lambda connection: leader_of(connection, self._lead_key))

    # -- state --------------------------------------------------------------------------------

    def _state(self, connection: psycopg.Connection[Any], key: str) -> str | None:
        row = connection.execute(
            self.names.format("SELECT value FROM {state} WHERE source = %s AND key = %s"),
            (self.source, key)).fetchone()
        return None if row is None else str(row[0])

    def _set_state(self, connection: psycopg.Connection[Any], key: str, value: str) -> None:
        connection.execute(
            self.names.format("INSERT INTO {state} (source, key, value) VALUES (%s, %s, %s) "
                              "ON CONFLICT (source, key) DO UPDATE SET value = EXCLUDED.value"),
            (self.source, key, value))

    async def get_state(self, key: str) -> str | None:
        return await self._run(self._read, lambda connection: self._state(connection, key))

    async def set_state(self, key: str, value: str) -> None:
        await self._run(self._write, lambda connection: self._set_state(connection, key, value))

    async def embedder(self) -> tuple[str, int] | None:
        return await self._run(self._read, self._embedder)

    def _embedder(self, connection: psycopg.Connection[Any]) -> tuple[str, int] | None:
        name = self._state(connection, "embedder_name")
        dim = self._state(connection, "embedder_dim")
        return None if name is None or dim is None else (name, int(dim))

    def _read(self, function: Callable[[psycopg.Connection[Any]], T]) -> T:
        with self._connection() as connection:  # autocommit: nothing to end afterwards
            return function(connection)

    def _write(self, function: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``function`` in one transaction: all of it is stored, or nothing."""
        with self._connection() as connection, connection.transaction():
            return function(connection)

    async def reset(self, embedder_name: str, dim: int) -> None:
        await self._run(self._write, lambda connection: self._reset(connection, embedder_name, dim))
        self._word_statistics.forget()  # after the commit, or a search between could keep the old

    def _reset(self, connection: psycopg.Connection[Any], embedder_name: str, dim: int) -> None:
        generation = int(self._state(connection, "generation") or 0) + 1
        for statement in schema.reset_statements(self.names, dim):
            connection.execute(statement, {"source": self.source})
        self._set_state(connection, "embedder_name", embedder_name)
        self._set_state(connection, "embedder_dim", str(dim))
        self._set_state(connection, "generation", str(generation))

    # -- writes -------------------------------------------------------------------------------

    async def versions(self) -> dict[str, str]:
        return await self._run(self._read, lambda connection: dict(
            connection.execute(self.names.format("SELECT id, version FROM {items}")).fetchall()))

    async def apply(self, updates: Sequence[ItemUpdate], deletions: Sequence[str]) -> None:
        if not updates and not deletions:
            return
        await self._run(
            self._write, lambda connection: self._apply(connection, list(updates), list(deletions)))
        self._word_statistics.forget()

    def _apply(self, connection: psycopg.Connection[Any], updates: list[ItemUpdate],
               deletions: list[str]) -> None:
        recorded = self._embedder(connection)
        check_updates(updates, None if recorded is None else recorded[1], self.source)
        gone = list(dict.fromkeys([*deletions, *(update.item.id for update in updates)]))
        names = self.names
        if gone:  # passages go with their item (ON DELETE CASCADE)
            connection.execute(names.format("DELETE FROM {items} WHERE id = ANY(%s)"), (gone,))
        with connection.cursor() as cursor:
            cursor.executemany(
                names.format("INSERT INTO {items} (id, title, url, version, weight, path, labels, links, "
                             "updated) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"),
                [(u.item.id, u.item.title, u.item.url, u.item.version, float(u.item.weight),
                  list(u.item.path), list(u.item.labels), list(u.item.links), u.item.updated)
                 for u in updates])
            insert = sql.SQL(
                "WITH p AS (INSERT INTO {} (item, ordinal, heading, text, digest, vector, anchor) "
                "VALUES (%s, %s, %s, %s, %s, %s::vector, %s) RETURNING key) "
                "INSERT INTO {} (key, words) SELECT key, {} FROM p").format(
                    names.passages, names.words, self._words)
            rows = [row for update in updates for row in keyword.passage_rows(update, PATH_SEPARATOR)]
            if rows:
                cursor.executemany(insert, rows)
        generation = int(self._state(connection, "generation") or 0) + 1
        self._set_state(connection, "generation", str(generation))

    # -- searches -----------------------------------------------------------------------------

    def _keyword_query(self, connection: psycopg.Connection[Any], question: str, vector: str,
                       limit: int) -> tuple[sql.Composed, dict[str, object]] | None:
        """The BM25 search of :mod:`.keyword` for the question's terms within the row budget, or
        None when no term is left."""
        terms = query_terms(question)
        if not terms:
            return None
        rows, fractions, average = self._word_statistics.current(connection)
        kept = within_budget(terms, rows, fractions, self.keyword_row_budget)
        texts = [text for term in kept if (text := keyword.tsquery_text([term])) is not None]
        if not texts:
            return None
        names = self.names
        statement = keyword.bm25_statement(names.words, names.passages, names.items, self._config)
        return statement, keyword.bm25_parameters(texts, rows, average, vector, limit)

    def _vector_query(self, vector: str, limit: int) -> tuple[sql.Composed, dict[str, object]]:
        return sql.SQL(
            "SELECT " + keyword.COLUMNS + ", 1 - (p.vector <=> %(vector)s::vector) AS similarity "
            "FROM {passages} p JOIN {items} i ON i.id = p.item "
            "ORDER BY p.vector <=> %(vector)s::vector LIMIT %(limit)s"
        ).format(passages=self.names.passages, items=self.names.items), {"vector": vector, "limit": limit}

    def _keyword_rows(self, connection: psycopg.Connection[Any], question: str, vector: str,
                      limit: int) -> list[Candidate]:
        query = self._keyword_query(connection, question, vector, limit)
        return [] if query is None else self._keyword_candidates(connection.execute(*query).fetchall())

    def _keyword_candidates(self, rows: list[Any]) -> list[Candidate]:
        source = self.source
        return [keyword.candidate(source, row[:-2], rank, row[-2], row[-1]) for rank, row in enumerate(rows)]

    def _vector_rows(self, connection: psycopg.Connection[Any], vector: str, limit: int) -> list[Candidate]:
        return self._vector_candidates(connection.execute(*self._vector_query(vector, limit)).fetchall())

    def _vector_candidates(self, rows: list[Any]) -> list[Candidate]:
        return [keyword.candidate(self.source, row[:-1], rank, 0.0, row[-1]) for rank, row in enumerate(rows)]

    def _both_rows(self, connection: psycopg.Connection[Any], question: str, vector: str, limit: int
                   ) -> tuple[list[Candidate], list[Candidate]]:
        """Both searches on one connection, sent together (psycopg's pipeline mode): one round
        trip to the server."""
        keyword_query = self._keyword_query(connection, question, vector, limit)
        with connection.pipeline():
            found = None if keyword_query is None else connection.execute(*keyword_query)
            nearest = connection.execute(*self._vector_query(vector, limit))
            keyword_rows = [] if found is None else found.fetchall()
            vector_rows = nearest.fetchall()
        return self._keyword_candidates(keyword_rows), self._vector_candidates(vector_rows)

    def _searching(self, function: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``function`` on a pooled connection, tried once more on a fresh one when it was lost (a
        restart, the network); a second loss is a StoreError: recall reports a failing source."""
        for attempt in (1, 2):
            try:
                return self._read(function)
            except (psycopg.OperationalError, ConnectionLost) as error:
                if attempt == 2 or self._closed:
                    raise StoreError(
                        f"source {self.source!r}: the PostgreSQL connection failed twice: "
                        f"{_first_line(error) if isinstance(error, psycopg.Error) else error}"
                    ) from None
            except psycopg.Error as error:
                if "different vector dimensions" in str(error):  # pgvector's check, no query of ours
                    raise StoreError(
                        f"the question vector's dimension is not the one the index of source "
                        f"{self.source!r} holds ({_first_line(error)}); it must be rebuilt for this "
                        "embedder") from None
                raise StoreError(f"search in source {self.source!r} failed: {_first_line(error)}") from None
        raise AssertionError("unreachable")

    def search(self, question: str, vector: np.ndarray, limit: int
               ) -> tuple[list[Candidate], list[Candidate]]:
        """Both searches in the calling thread (recall's), sent together on one connection; on an
        index of :data:`SIDE_BY_SIDE_FROM` passages or more, at once on two connections instead
        (PostgreSQL runs each in a process of its own, so they share the cores)."""
        question_vector = np.asarray(vector, dtype=np.float32).reshape(-1)
        if self._closed:
            raise StoreError(f"the index of source {self.source!r} is closed")
        if limit <= 0:
            return [], []
        literal = vector_literal(question_vector)
        if self._word_statistics.rows < SIDE_BY_SIDE_FROM:
            return self._searching(lambda connection: self._both_rows(connection, question, literal, limit))
        nearest = self._threads.submit(
            self._searching, lambda connection: self._vector_rows(connection, literal, limit))
        try:
            keyword = self._searching(
                lambda connection: self._keyword_rows(connection, question, literal, limit))
        except BaseException:
            nearest.cancel()
            raise
        return keyword, nearest.result()

    async def items(self, item_ids: Sequence[str]) -> list[StoredItem]:
        wanted = list(dict.fromkeys(item_ids))
        if not wanted:
            return []
        rows = await self._run(self._read, lambda connection: connection.execute(
            self.names.format("SELECT id, title, url FROM {items} WHERE id = ANY(%s)"), (wanted,)).fetchall())
        found = {item_id: StoredItem(item_id, title, url) for item_id, title, url in rows}
        return [found[item_id] for item_id in wanted if item_id in found]

    async def counts(self) -> tuple[int, int]:
        def count(connection: psycopg.Connection[Any]) -> tuple[int, int]:
            row = connection.execute(self.names.format(
                "SELECT (SELECT count(*) FROM {items}), (SELECT count(*) FROM {passages})")).fetchone()
            assert row is not None
            return int(row[0]), int(row[1])

        return await self._run(self._read, count)

    async def passages_of(self, item_id: str) -> list[tuple[int, str | None, str, str]]:
        """``(ordinal, heading, text, digest)`` of one item's passages, in order (the ``read`` tool)."""
        return await self._run(self._read, lambda connection: [tuple(row) for row in connection.execute(
            self.names.format("SELECT ordinal, heading, text, digest FROM {passages} WHERE item = %s "
                              "ORDER BY ordinal"), (item_id,)).fetchall()])  # type: ignore[misc]

    async def analyze(self) -> None:
        """Refresh PostgreSQL's statistics of this source's tables now (for a benchmark's fresh index)."""
        def analyze(connection: psycopg.Connection[Any]) -> None:
            connection.execute(self.names.format("ANALYZE {items}"))
            connection.execute(self.names.format("ANALYZE {passages}"))
            connection.execute(self.names.format("ANALYZE {words}"))

        await self._run(self._write, analyze)

    def bulk_load(self, **options: Any) -> BulkLoad:
        """A :class:`~.bulk.BulkLoad` into this source (a large first load), with ``options``."""
        return BulkLoad(self._dsn, self.names, self.source, self._config,
                        finished=self._word_statistics.forget, **options)


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]

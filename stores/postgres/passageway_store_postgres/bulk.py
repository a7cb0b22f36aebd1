"""Fill an empty source index fast: rows copied in PostgreSQL's binary COPY format, the indexes
built once after the load.

:meth:`PostgresStore.apply` inserts row by row into tables whose HNSW graph and word index are
updated by every row; that is right for a sync's small batches, and about 100 passages a second
for a large first load on a small machine. A :class:`BulkLoad` drops both indexes, copies items
directly and passages through a temporary staging table (their ``tsvector`` is computed by one
``INSERT ... SELECT`` per batch, in the same text configuration as ``apply``), and then builds the
word index and the HNSW graph once, with ``maintenance_work_mem`` raised and parallel workers, as
pgvector's documentation advises for a bulk load. ``bench/postgres.py`` uses it for the synthetic
indexes; the sync does not (the store protocol has no "first build" call).

The load commits per batch with ``synchronous_commit`` off (a crash loses the last batches, which
a rerun rewrites: the index counts as built only after :meth:`BulkLoad.finish`). Searches during
the load are slow (no indexes) but correct.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from passageway import ItemUpdate, StoreError
from passageway_store_postgres import schema
from passageway_store_postgres.keyword import words_text
from passageway_store_postgres.schema import PATH_SEPARATOR, Names

_STAGING = sql.Identifier("passageway_bulk_passages")
_STAGING_COLUMNS = (
    ("item", "text"), ("ordinal", "int4"), ("heading", "text"), ("text", "text"), ("digest", "text"),
    ("vector", "vector"), ("title_words", "text"), ("heading_words", "text"), ("path_words", "text"),
    ("text_words", "text"), ("anchor", "text"),
)
_ITEM_TYPES = ["text", "text", "text", "text", "float8", "text[]", "text[]", "text[]", "text"]


def vector_bytes(vector: np.ndarray) -> bytes:
    """pgvector's binary form of a vector: its dimension and a reserved word (int16 each), then
    the values as big-endian float32."""
    values = np.asarray(vector, dtype=">f4").reshape(-1)
    return struct.pack(">hh", len(values), 0) + values.tobytes()


class BulkLoad:
    """One bulk load into a source's tables (``names``), on a connection of its own
    (:meth:`PostgresStore.bulk_load` makes one).

    Call :meth:`begin` once (the source must have been reset), :meth:`add`
    per batch, then :meth:`finish`; :meth:`close` in any case. The methods block: run them in a
    thread.

    :param maintenance_work_mem: PostgreSQL's memory for building the indexes (the HNSW graph is
        built fastest when it fits: about dimension × 4 + 200 bytes a passage).
    :param parallel_workers: ``max_parallel_maintenance_workers`` for the builds.
    :param finished: called when the load is complete (the store forgets its word statistics).
    """

    def __init__(self, dsn: str, names: Names, source: str, text_config: sql.Composable, *,
                 finished: Callable[[], None] = lambda: None, maintenance_work_mem: str = "1GB",
                 parallel_workers: int = 2) -> None:
        self._dsn, self._names, self._source, self._text_config = dsn, names, source, text_config
        self._finished = finished
        self._settings = {"maintenance_work_mem": maintenance_work_mem,
                          "max_parallel_maintenance_workers": str(int(parallel_workers)),
                          "synchronous_commit": "off"}
        self._connection: psycopg.Connection[Any] | None = None
        self.passages = 0

    def _open(self) -> psycopg.Connection[Any]:
        if self._connection is None:
            raise StoreError("a bulk load must begin before rows are added")
        return self._connection

    def begin(self) -> None:
        """Connect, drop the source's two indexes and create the staging table."""
        names = self._names
        connection = psycopg.connect(self._dsn, connect_timeout=10, autocommit=True)
        self._connection = connection
        connection.execute(names.search_path())
        for name, value in self._settings.items():
            connection.execute(sql.SQL("SELECT set_config({}, {}, false)").format(
                sql.Literal(name), sql.Literal(value)))
        with connection.transaction():
            if connection.execute(names.format("SELECT 1 FROM {passages} LIMIT 1")).fetchone():
                raise StoreError(f"source {self._source!r}: a bulk load needs an empty index; "
                                 "reset it first")
            for index in (names.vector_index_qualified, names.words_table_index_qualified):
                connection.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(index))
            columns = sql.SQL(", ").join(sql.SQL("{} {}").format(sql.Identifier(name), sql.SQL(kind))
                                         for name, kind in _STAGING_COLUMNS)
            connection.execute(sql.SQL("CREATE TEMPORARY TABLE {} ({})").format(_STAGING, columns))

    def add(self, updates: Sequence[ItemUpdate]) -> None:
        """Copy one batch of new items and their passages, in one transaction."""
        connection, names = self._open(), self._names
        copy_items = names.format("COPY {items} (id, title, url, version, weight, path, labels, links, "
                                  "updated) FROM STDIN (FORMAT BINARY)")
        with connection.transaction(), connection.cursor() as cursor:
            with cursor.copy(copy_items) as copy:
                copy.set_types(_ITEM_TYPES)
                for update in updates:
                    item = update.item
                    copy.write_row((item.id, item.title, item.url, item.version, float(item.weight),
                                    list(item.path), list(item.labels), list(item.links), item.updated))
            staging_types = ["bytea" if kind == "vector" else kind for _, kind in _STAGING_COLUMNS]
            with cursor.copy(sql.SQL("COPY {} FROM STDIN (FORMAT BINARY)").format(_STAGING)) as copy:
                # The vector column takes pgvector's binary form, written here as bytes.
                copy.set_types(staging_types)
                for update in updates:
                    item = update.item
                    title = words_text(item.title)
                    path = words_text(PATH_SEPARATOR.join(item.path))
                    for passage, vector in zip(update.passages, update.vectors, strict=True):
                        copy.write_row((item.id, passage.ordinal, passage.heading, passage.text,
                                        passage.digest, vector_bytes(vector), title,
                                        words_text(passage.heading or ""), path, words_text(passage.text),
                                        passage.anchor))
                        self.passages += 1
            words = schema.words_expression(self._text_config, [sql.Identifier(name) for name in (
                "title_words", "heading_words", "path_words", "text_words")])
            cursor.execute(sql.SQL(  # the passages, then their words under the keys just given
                "WITH p AS (INSERT INTO {passages} (item, ordinal, heading, text, digest, vector, anchor) "
                "SELECT item, ordinal, heading, text, digest, vector, anchor FROM {staging} "
                "RETURNING key, item, ordinal) "
                "INSERT INTO {words} (key, words) SELECT p.key, {expression} FROM p "
                "JOIN {staging} s USING (item, ordinal) ORDER BY p.key").format(
                    passages=names.passages, staging=_STAGING, words=names.words, expression=words))
            cursor.execute(sql.SQL("TRUNCATE {}").format(_STAGING))

    def finish(self) -> None:
        """Build the word index and the HNSW graph, vacuum and analyse, and raise the source's
        generation."""
        connection, names = self._open(), self._names
        connection.execute(names.format(schema.WORDS_INDEX))
        connection.execute(names.format(schema.VECTOR_INDEX))
        # VACUUM too: it sets the rows' hint bits and the visibility map now, or the first
        # searches would write every page they read.
        connection.execute(names.format("VACUUM (ANALYZE) {items}"))
        connection.execute(names.format("VACUUM (ANALYZE) {passages}"))
        connection.execute(names.format("VACUUM (ANALYZE) {words}"))
        connection.execute(names.format(
            "UPDATE {state} SET value = (value::bigint + 1)::text WHERE source = %s AND key = 'generation'"),
            (self._source,))
        self._finished()

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

"""The tables of the ``postgres`` store and their numbered migrations, recorded in the database.

Everything lives in one schema (``[store] schema``, default ``passageway``):

* ``migrations(scope, version, applied)``: one row per migration applied. ``scope`` is ``''``
  for the schema's shared objects and a source's name for that source's tables, so a source added
  later is migrated on its own and a newer passageway finds exactly what is missing.
* ``state(source, key, value)``: what the sync keeps per source (``last_poll``), the embedder
  that built the index (``embedder_name``, ``embedder_dim``) and ``generation`` (raised by every
  write).
* the text search configuration ``passageway_words``: the ``simple`` parser and dictionary
  (no stemming, no stopwords: German and English alike) after ``unaccent``, so case and accents
  do not matter (``Über`` finds ``uber``).
* per source, ``"items:<source>"``, ``"passages:<source>"`` and ``"words:<source>"``. A passage's
  ``key`` is its stable number (never reused); ``anchor`` the id of its section's heading in the
  page, or NULL; ``vector`` is a pgvector column, fixed to the
  embedder's dimension by :func:`reset_statements` together with its HNSW index (cosine). Its
  words live in the narrow table ``"words:<source>"`` (one row per passage, deleted with it):
  ``words`` is the weighted ``tsvector`` of title (A), heading (B), path (C) and text (D), with a
  GIN index; ``length`` is its number of words (``word_count``, kept by PostgreSQL), for BM25
  (:mod:`.keyword`). A keyword search reads the row of every passage it ranks (thousands on a
  large index): in this table a dozen fit on a page, where the passages table, whose rows carry
  the text and the vector, holds three, and the table stays small enough to remain in memory.

The extensions ``vector`` and ``unaccent`` are created if missing (in ``public``, or wherever an
administrator created them before: connections put their schemas on the ``search_path``).
Migrations run in one transaction under an advisory lock, so servers started together against
one database migrate it once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from passageway import StoreError

TEXT_CONFIG = "passageway_words"
PATH_SEPARATOR = " › "
"""Between an item's path parts in the words of its passages."""
MIGRATION_LOCK = 0x70617373  # pg_advisory_xact_lock key while migrating ("pass")

SHARED_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: the state table and the text search configuration
    (
        "CREATE TABLE {schema}.state (source text NOT NULL, key text NOT NULL, value text NOT NULL, "
        "PRIMARY KEY (source, key))",
        f"CREATE TEXT SEARCH CONFIGURATION {{schema}}.{TEXT_CONFIG} (COPY = pg_catalog.simple)",
        f"ALTER TEXT SEARCH CONFIGURATION {{schema}}.{TEXT_CONFIG} "
        "ALTER MAPPING FOR hword, hword_part, word WITH {unaccent}, simple",
    ),
    # 2: a tsvector's number of words (its positions), for BM25's length term
    (
        "CREATE FUNCTION {schema}.word_count(tsvector) RETURNS integer LANGUAGE sql IMMUTABLE "
        "PARALLEL SAFE RETURN (SELECT coalesce(sum(greatest(cardinality(positions), 1)), 0)::integer "
        "FROM pg_catalog.unnest($1))",
    ),
)

SOURCE_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: a source's items and passages
    (
        "CREATE TABLE {items} (id text PRIMARY KEY, title text NOT NULL, url text NOT NULL, "
        "version text NOT NULL, weight double precision NOT NULL DEFAULT 1.0, "
        "path text[] NOT NULL DEFAULT '{{}}', labels text[] NOT NULL DEFAULT '{{}}', "
        "links text[] NOT NULL DEFAULT '{{}}', updated text)",
        "CREATE TABLE {passages} (key bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
        "item text NOT NULL REFERENCES {items} (id) ON DELETE CASCADE, ordinal integer NOT NULL, "
        "heading text, text text NOT NULL, digest text NOT NULL, vector vector NOT NULL, "
        "words tsvector NOT NULL, UNIQUE (item, ordinal))",
        "CREATE INDEX {words_index} ON {passages} USING gin (words)",
    ),
    # 2: each passage's number of words, kept by PostgreSQL; the word index without a pending
    # list (GIN's fastupdate makes every search read the list of recent writes until a vacuum);
    # rows kept whole in the table up to a page (by default a row over 2 kB moves its vector to
    # the TOAST table, and every vector read becomes an index lookup there)
    (
        "ALTER TABLE {passages} ADD COLUMN length integer NOT NULL "
        "GENERATED ALWAYS AS ({schema}.word_count(words)) STORED",
        "ALTER INDEX {words_index_qualified} SET (fastupdate = off)",
        "ALTER TABLE {passages} SET (toast_tuple_target = 8160)",
    ),
    # 3: the words and length of each passage move to a narrow table of their own (see the module
    # docstring), filled from the passages table, so an existing index upgrades in place. Writes
    # wait (SHARE lock) so that none is missed by the copy; searches go on until the columns are
    # dropped, the last step. ANALYZE gives the row budget its word statistics at once (budget.py).
    (
        "LOCK TABLE {passages} IN SHARE MODE",
        "CREATE TABLE {words} (key bigint PRIMARY KEY REFERENCES {passages} (key) ON DELETE CASCADE, "
        "words tsvector NOT NULL, length integer NOT NULL "
        "GENERATED ALWAYS AS ({schema}.word_count(words)) STORED)",
        "INSERT INTO {words} (key, words) SELECT key, words FROM {passages}",
        "CREATE INDEX {words_table_index} ON {words} USING gin (words) WITH (fastupdate = off)",
        "ANALYZE {words}",
        "ALTER TABLE {passages} DROP COLUMN length, DROP COLUMN words",
    ),
    # 4: the section's anchor (the id of its heading), which the answer links the passage with;
    # nullable without a default, so PostgreSQL only changes the catalogue, not the rows
    ("ALTER TABLE {passages} ADD COLUMN anchor text",),
)

AFTER_SOURCE_MIGRATION = {3: "VACUUM {words}"}
"""What runs once a source migration has committed, outside its transaction (VACUUM cannot run in
one): after migration 3 the rows just copied get their hint bits and the visibility map, or the
first searches would write every page they read (as after a bulk load, see :mod:`.bulk`)."""

VECTOR_INDEX = "CREATE INDEX {vector_index} ON {passages} USING hnsw (vector vector_cosine_ops)"
"""pgvector's HNSW graph over the vectors by cosine distance (its defaults: m 16, ef_construction 64)."""
WORDS_INDEX = "CREATE INDEX {words_table_index} ON {words} USING gin (words) WITH (fastupdate = off)"
"""The word index, as migration 3 creates it (a bulk load drops it and builds it again at the end)."""


def words_expression(config: sql.Composable, parts: Sequence[sql.Composable]) -> sql.Composed:
    """A passage's weighted ``tsvector`` in the text configuration ``config``: the four ``parts``
    (SQL values: title, heading, path, text) weighted A, B, C and D."""
    return sql.SQL(" || ").join(
        sql.SQL("setweight(to_tsvector({}, {}), {})").format(config, part, sql.Literal(weight))
        for part, weight in zip(parts, "ABCD", strict=True))


class Names:
    """The quoted SQL names of one source's objects in ``schema``."""

    def __init__(self, schema: str, source: str) -> None:
        self.schema_name = schema
        self.extension_schemas: list[str] = ["public"]  # filled in by the store when it opens
        self.schema = sql.Identifier(schema)
        self.items = sql.Identifier(schema, f"items:{source}")
        self.passages = sql.Identifier(schema, f"passages:{source}")
        self.passages_name = f"passages:{source}"
        self.words = sql.Identifier(schema, f"words:{source}")
        self.words_name = f"words:{source}"
        self.words_table_index = sql.Identifier(f"words:{source}:words")
        self.words_table_index_qualified = sql.Identifier(schema, f"words:{source}:words")
        self.words_index = sql.Identifier(f"passages:{source}:words")  # migrations 1 and 2 only
        self.vector_index = sql.Identifier(f"passages:{source}:vector")
        self.vector_index_qualified = sql.Identifier(schema, f"passages:{source}:vector")
        self.words_index_qualified = sql.Identifier(schema, f"passages:{source}:words")
        self.state = sql.Identifier(schema, "state")
        self.text_config = sql.Identifier(schema, TEXT_CONFIG)
        self.longest = max(len(f"passages:{source}:words".encode()), len(schema.encode()))

    def format(self, statement: str) -> sql.Composed:
        return sql.SQL(statement).format(  # type: ignore[arg-type]  # statements are constants
            schema=self.schema, items=self.items, passages=self.passages, words=self.words,
            words_index=self.words_index, words_index_qualified=self.words_index_qualified,
            words_table_index=self.words_table_index,
            vector_index=self.vector_index, state=self.state, text_config=self.text_config,
            unaccent=sql.Identifier(self.extension_schemas[-1], "unaccent"),
        )

    def search_path(self) -> sql.Composed:
        schemas = list(dict.fromkeys([self.schema_name, *self.extension_schemas, "public"]))
        return sql.SQL("SET search_path TO {}").format(sql.SQL(", ").join(map(sql.Identifier, schemas)))


def reset_statements(names: Names, dim: int) -> list[sql.Composed]:
    """Empty a source's tables and fix its vector column and HNSW index to ``dim``."""
    return [
        names.format("TRUNCATE {words}, {passages}, {items}"),
        sql.SQL("DROP INDEX IF EXISTS {}").format(names.vector_index_qualified),
        names.format(f"ALTER TABLE {{passages}} ALTER COLUMN vector TYPE vector({int(dim)})"),
        names.format(VECTOR_INDEX),
        names.format("DELETE FROM {state} WHERE source = %(source)s"),
    ]


def migrate(connection: psycopg.Connection[Any], names: Names, source: str) -> None:
    """Create the schema, the extensions and what the migrations of the shared objects and of
    ``source`` add that the database lacks, in one transaction; fill in ``names.extension_schemas``;
    then run :data:`AFTER_SOURCE_MIGRATION` of the source migrations it applied.

    :raises StoreError: the database was migrated by a newer passageway.
    """
    after = []
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        connection.execute(names.format("CREATE SCHEMA IF NOT EXISTS {schema}"))
        connection.execute(names.format(
            "CREATE TABLE IF NOT EXISTS {schema}.migrations (scope text NOT NULL, version integer "
            "NOT NULL, applied timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (scope, version))"))
        connection.execute(sql.SQL("SET LOCAL search_path TO public, {}").format(names.schema))
        for extension in ("vector", "unaccent"):
            connection.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")
        found = dict(connection.execute(
            "SELECT e.extname, n.nspname FROM pg_extension e JOIN pg_namespace n "
            "ON n.oid = e.extnamespace WHERE e.extname IN ('vector', 'unaccent')").fetchall())
        names.extension_schemas = [str(found["vector"]), str(found["unaccent"])]
        connection.execute(names.search_path())
        scopes = (("", SHARED_MIGRATIONS), (source, SOURCE_MIGRATIONS))
        for scope, migrations in scopes:
            row = connection.execute(
                names.format(
                    "SELECT coalesce(max(version), 0) FROM {schema}.migrations WHERE scope = %s"),
                (scope,)).fetchone()
            applied = int(row[0]) if row else 0
            if applied > len(migrations):
                raise StoreError(
                    f"the PostgreSQL schema {names.schema_name!r} was migrated by a newer passageway "
                    f"({scope or 'shared'} version {applied}, this one knows {len(migrations)}); "
                    "upgrade passageway, or point [store] schema at another schema"
                )
            for number in range(applied + 1, len(migrations) + 1):
                for statement in migrations[number - 1]:
                    connection.execute(names.format(statement))
                if migrations is SOURCE_MIGRATIONS and number in AFTER_SOURCE_MIGRATION:
                    after.append(names.format(AFTER_SOURCE_MIGRATION[number]))
                connection.execute(
                    names.format("INSERT INTO {schema}.migrations (scope, version) VALUES (%s, %s)"),
                    (scope, number))
    if after:
        connection.commit()  # nothing left open: autocommit can only change between transactions
        autocommit, connection.autocommit = connection.autocommit, True
        try:
            for statement in after:
                connection.execute(statement)
        finally:
            connection.autocommit = autocommit

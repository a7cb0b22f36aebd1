"""The entry point ``postgres`` of the ``passageway`` group: registers the ``postgres`` store.

Selected with ``PASSAGEWAY_STORE=postgres``; its settings are the ``[store]`` table of
``passageway.toml`` (see :data:`SETTINGS` and this package's README)::

    [store]
    dsn = "env:PASSAGEWAY_POSTGRES_DSN"   # required: a reference, the DSN holds a password
    schema = "passageway"                 # the schema that holds every table
    pool_size = 4                         # connections per source
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from passageway import SECRET_REFERENCE, ConfigError, StoreContext, hookimpl, resolve_secrets
from passageway_store_postgres.store import PostgresStore

SETTINGS: dict[str, str] = {
    "dsn": "the connection string, as an env:NAME reference to a variable that holds it (required)",
    "schema": "the PostgreSQL schema that holds every table (default passageway)",
    "pool_size": "connections per source, 1 to 64 (default 4)",
}
SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}\Z")


def store_settings(settings: Mapping[str, Any], environ: Mapping[str, str]) -> tuple[str, str, int]:
    """``(dsn, schema, pool_size)`` from a ``[store]`` table.

    :raises ConfigError: a key is unknown, a value has the wrong form, or the DSN's variable is unset.
    """
    for key in settings:
        if key not in SETTINGS:
            raise ConfigError(
                f"[store]: unknown key {key!r} for the postgres store; the keys are: {', '.join(SETTINGS)}")
    reference = settings.get("dsn")
    match = SECRET_REFERENCE.match(reference) if isinstance(reference, str) else None
    if match is None:
        raise ConfigError(
            "[store]: `dsn` is required and must be a reference written \"env:NAME\" (for example "
            "dsn = \"env:PASSAGEWAY_POSTGRES_DSN\"), never the connection string itself")
    dsn = resolve_secrets({"dsn": match.group(1)}, environ, "[store]")["dsn"]
    schema_name = settings.get("schema", "passageway")
    if not isinstance(schema_name, str) or not SCHEMA_NAME.match(schema_name):
        raise ConfigError(
            "[store]: `schema` is a lower-case name of letters, digits and _ (at most 63), "
            f"got {schema_name!r}")
    pool_size = settings.get("pool_size", 4)
    if isinstance(pool_size, bool) or not isinstance(pool_size, int) or not 1 <= pool_size <= 64:
        raise ConfigError(f"[store]: `pool_size` is a whole number from 1 to 64, got {pool_size!r}")
    return dsn, schema_name, pool_size


def postgres_store(path: Path, source: str, context: StoreContext | None = None) -> PostgresStore:
    """The factory registered as ``postgres``; ``path`` is not used (the index is in the database)."""
    context = context or StoreContext()
    dsn, schema_name, pool_size = store_settings(context.settings, context.environ)
    return PostgresStore(dsn, source, schema_name=schema_name, pool_size=pool_size)


@hookimpl
def passageway_register_stores(register: Callable[[str, Callable[..., Any]], None]) -> None:
    register("postgres", postgres_store)

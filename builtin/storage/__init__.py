"""Builtin plugin: the ``sqlite`` store, one SQLite file per source plus a usearch vector file.

The package holds the store's whole implementation, one module per job:

* :mod:`.store`: :class:`SqliteStore`, which ties the parts together (threads, lifecycle, the
  :class:`~passageway.kernel.store.Store` methods);
* :mod:`.tables`: the schema and its migrations, state, and writes;
* :mod:`.vector_file`: the usearch index in memory and its file (checksum, catch-up, rebuild);
* :mod:`.keyword`: keyword search with FTS5's BM25, and how a question becomes a safe FTS5 query
  (the text rules every store shares are ``passageway.index_text`` and ``passageway.query_terms``);
* :mod:`.row_budget`: the one large-index path (a budget of matching rows per keyword search);
* :mod:`.rows`: candidate rows and their cache for vector hits;
* :mod:`.vector_cache`: vectors by passage digest, per embedder, outliving every index.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from passageway import hookimpl
from passageway.builtin.storage.store import SqliteStore
from passageway.builtin.storage.vector_cache import SqliteVectorCache
from passageway.kernel.errors import ConfigError
from passageway.kernel.store import StoreContext

__all__ = ["SqliteStore", "sqlite_store"]


def sqlite_store(path: Path, source: str, context: StoreContext | None = None) -> SqliteStore:
    """The factory registered as ``sqlite``: the index of ``source`` in the file ``path``.

    :raises ConfigError: ``[store]`` holds a setting (the sqlite store has none).
    """
    if context is not None and context.settings:
        raise ConfigError(
            f"[store] has {', '.join(sorted(context.settings))}, but the sqlite store takes no settings; "
            "remove the [store] table or set PASSAGEWAY_STORE to the store it was written for"
        )
    return SqliteStore(path, source)


@hookimpl
def passageway_register_stores(register: Callable[[str, Callable[..., Any]], None]) -> None:
    register("sqlite", sqlite_store)


@hookimpl
def passageway_vector_cache(folder: Path, embedder_name: str, dim: int) -> SqliteVectorCache:
    """The default cache for every store: a SQLite file in ``folder`` (see :mod:`.vector_cache`)."""
    return SqliteVectorCache.for_embedder(folder, embedder_name, dim)

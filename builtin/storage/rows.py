"""Candidate rows: the columns a :class:`~passageway.kernel.store.Candidate` needs from a passage
and its item, and the ``sqlite`` store's cache of them for vector hits.

A vector search finds passage keys; their rows come from SQL or from :class:`RowCache`. On the
sample corpus that SQL took most of a vector search (docs/performance.md, "Recall"), so a store
keeps up to :data:`ROW_CACHE_LIMIT` rows in memory. A passage's row never changes while its key
exists, because an updated item's passages are deleted and stored again under new keys (keys are
never reused), so the cache only has to drop deleted keys; once full, it takes no more rows.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from passageway.kernel.store import Candidate

COLUMNS = ("p.key, p.item, p.heading, p.text, i.title, i.url, i.weight, i.path, i.labels, i.links, i.updated,"
           " p.anchor")
"""What a candidate needs from a passage row and its item's row, in :func:`candidate`'s order."""

ROW_CACHE_LIMIT = 10_000
"""How many passages' rows a store keeps in memory for vector hits."""


def candidate(source: str, row: Sequence[Any], rank: int, keyword_score: float, similarity: float
              ) -> Candidate:
    key, item_id, heading, text, title, url, weight, path, labels, links, updated, anchor = row
    # Positional: keyword arguments cost measurably here, with up to 200 candidates a question.
    return Candidate(
        source, key, item_id, title, url, heading, text, similarity, rank, keyword_score,
        float(weight), _strings(path), _strings(labels), _strings(links), updated, anchor,
    )


def _strings(stored: str) -> tuple[str, ...]:
    """A JSON list of strings from the items table as a tuple (most are empty: no parsing)."""
    return () if stored == "[]" else tuple(json.loads(stored))


def fetch(connection: sqlite3.Connection, keys: list[int]) -> dict[int, tuple[Any, ...]]:
    """The candidate rows of the passages ``keys`` that exist, by key."""
    marks = ",".join("?" * len(keys))
    return {
        row[0]: row
        for row in connection.execute(
            f"SELECT {COLUMNS} FROM passages p JOIN items i ON i.id = p.item "  # noqa: S608
            f"WHERE p.key IN ({marks})", keys,
        )
    }


class RowCache:
    """Candidate rows by passage key, for vector hits; safe to use from any thread."""

    def __init__(self) -> None:
        self.rows: dict[int, tuple[Any, ...]] = {}
        self._lock = threading.Lock()

    def get(self, connection: sqlite3.Connection, keys: list[int]) -> dict[int, tuple[Any, ...]]:
        """The rows of ``keys`` that still exist: cached ones, the rest from the database (which
        then join the cache while there is room)."""
        cache = self.rows
        found = {key: cache[key] for key in keys if key in cache}
        missing = [key for key in keys if key not in found]
        if not missing:
            return found
        fetched = fetch(connection, missing)
        found.update(fetched)
        with self._lock:
            room = ROW_CACHE_LIMIT - len(cache)
            for key, row in itertools.islice(fetched.items(), max(room, 0)):
                cache[key] = row
        return found

    def forget(self, keys: Iterable[int] | None) -> None:
        """Drop deleted passages (all of them for None)."""
        with self._lock:
            if keys is None:
                self.rows.clear()
            else:
                for key in keys:
                    self.rows.pop(key, None)

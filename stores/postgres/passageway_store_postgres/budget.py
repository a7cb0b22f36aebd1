"""The keyword row budget: leave out the question's commonest words on a large index.

Ranking costs PostgreSQL a few microseconds per matching passage (it reads each one's
``tsvector``), and a word found in most passages of a large index matches hundreds of thousands
of them while telling them apart least. As the sqlite store does with its own budget, the terms
are taken from the rarest up while the passages they match add up to at most
:data:`KEYWORD_ROW_BUDGET`; when even the rarest matches more, there is no keyword search (vector
search still runs). An index of at most the budget's number of passages is searched whole.

How many passages a term matches is estimated from PostgreSQL's own statistics of the words
table's ``words`` column (``pg_stats.most_common_elems``, which ``ANALYZE`` and autovacuum keep),
read at most every :data:`STATISTICS_SECONDS`, so the estimate costs no query per question. A
term that is not among the common elements matches fewer passages than the least common one
listed. The average passage length BM25 needs is read with them, from a sample of about
:data:`LENGTH_SAMPLE` passages.
"""

from __future__ import annotations

import threading
import time
import unicodedata
from collections.abc import Callable
from typing import Any

from passageway_store_postgres.schema import Names

KEYWORD_ROW_BUDGET = 5_000
"""At most this many matching passages are ranked per keyword search (docs/scale-out.md)."""
STATISTICS_SECONDS = 60.0
LENGTH_SAMPLE = 20_000


def lexeme(term: str) -> str:
    """A question term as the text configuration stores it, near enough for an estimate: lower
    case, accents taken off (``unaccent``)."""
    decomposed = unicodedata.normalize("NFKD", term.casefold())
    return "".join(character for character in decomposed if not unicodedata.combining(character))


class Statistics:
    """A source's passage count, common-word fractions and average passage length (in words),
    refreshed by ``read`` when stale, or at the next search after :meth:`forget`."""

    def __init__(self, read: Callable[[Any], tuple[float, dict[str, float], float]]) -> None:
        self._read = read
        self._lock = threading.Lock()
        self._at: float | None = None
        self.rows = 0.0
        self.fractions: dict[str, float] = {}
        self.average = 1.0

    def current(self, connection: Any) -> tuple[float, dict[str, float], float]:
        """The statistics, read on ``connection`` when older than :data:`STATISTICS_SECONDS`."""
        with self._lock:
            if self._at is None or time.monotonic() - self._at >= STATISTICS_SECONDS:
                self.rows, self.fractions, self.average = self._read(connection)
                self._at = time.monotonic()
            return self.rows, self.fractions, self.average

    def forget(self) -> None:
        """Read them again at the next search (this server has just written the index)."""
        with self._lock:
            self._at = None


def within_budget(terms: list[str], rows: float, fractions: dict[str, float],
                  budget: int = KEYWORD_ROW_BUDGET) -> list[str]:
    """The terms to search for, in their order: all of them on a small index, else the rarest
    whose estimated matches add up to at most ``budget``."""
    if not budget or rows <= budget:
        return terms
    floor = min(fractions.values(), default=0.0)
    estimated = sorted((fractions.get(lexeme(term), floor) * rows, number)
                       for number, term in enumerate(terms))
    kept, total = set(), 0.0
    for count, number in estimated:
        if total + count > budget:
            break
        kept.add(number)
        total += count
    return [term for number, term in enumerate(terms) if number in kept]


def statistics_of(connection: Any, names: Names) -> tuple[float, dict[str, float], float]:
    """A source's passage count, common-word fractions and average length, from PostgreSQL's
    statistics of its words table; counted exactly on a small or never analysed table."""
    row = connection.execute(
        "SELECT c.reltuples, s.most_common_elems::text::text[], s.most_common_elem_freqs "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_stats s "
        "ON s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = 'words' "
        "WHERE n.nspname = %s AND c.relname = %s",
        (names.schema_name, names.words_name)).fetchone()
    fractions = dict(zip(row[1] or [], row[2] or [], strict=False)) if row else {}
    if row is None or row[0] is None or row[0] < LENGTH_SAMPLE:  # small, or never analysed: count
        counted = connection.execute(names.format("SELECT count(*), avg(length) FROM {words}")).fetchone()
        return float(counted[0]), fractions, float(counted[1] or 1.0)
    share = 100.0 * LENGTH_SAMPLE / float(row[0])
    sampled = connection.execute(names.format(
        "SELECT avg(length) FROM {words} TABLESAMPLE SYSTEM (%s)"), (share,)).fetchone()
    return float(row[0]), fractions, float(sampled[0]) if sampled and sampled[0] else 1.0

"""The large-index path of the ``sqlite`` store's keyword search: a budget of matching rows.

BM25 costs about a microsecond per matching row, and a common word of a large index matches tens
or hundreds of thousands. So on an index of more passages than the budget, a keyword search
takes the question's terms from the rarest up while the rows they match add up to at most
:data:`KEYWORD_ROW_BUDGET`; the common words left out are the ones BM25 weighs least. When even
the rarest term matches more rows than the budget, there is no keyword search (the words barely
tell passages apart; vector search still runs). An index of at most the budget's number of
passages cannot exceed it and is searched whole, so the budget never runs there. The
measurements behind it are in docs/performance.md ("Synthetic indexes").
"""

from __future__ import annotations

import sqlite3

KEYWORD_ROW_BUDGET = 50_000
"""The switch: at most this many matching rows are scored per keyword search; 0 turns the budget
off (``bench/recall.py --budget-sweep`` sets it between runs)."""

_COUNT = "SELECT count(*) FROM (SELECT 1 FROM passage_words WHERE passage_words MATCH ? LIMIT ?)"


def match_expression(connection: sqlite3.Connection, terms: list[str], passages: int) -> str | None:
    """The ``MATCH`` expression for ``terms`` (quoted FTS5 strings) within the budget, or None
    when no term fits. Counting a term's rows stops past the budget."""
    budget = KEYWORD_ROW_BUDGET
    if budget and passages > budget:
        counted = sorted(
            (connection.execute(_COUNT, (term, budget + 1)).fetchone()[0], position, term)
            for position, term in enumerate(terms)
        )
        kept, total = [], 0
        for count, _, term in counted:
            if total + count > budget:
                break
            kept.append(term)
            total += count
        terms = kept
    return " OR ".join(terms) or None

"""The ``sqlite`` store's keyword search: FTS5's BM25 over the ``passage_words`` table.

A question is never passed to FTS5 as written: :func:`match_terms` keeps only its terms
(:func:`passageway.query_terms`, the rule every store shares) and quotes each one, so quotes,
``AND``, ``NEAR(``, ``*``, ``-``, ``:`` or parentheses in a question are plain text and can never
be an FTS5 syntax error. The quoted terms are joined by ``OR``; on a large index
the commonest of them may be left out (:mod:`passageway.builtin.storage.row_budget`).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from passageway.builtin.storage import row_budget
from passageway.builtin.storage.rows import COLUMNS
from passageway.kernel.text.keyword_text import BM25_WEIGHTS, CJK_CHARACTER, query_terms

# Rank inside the full-text table first and join only the best rows: joining every match before
# sorting cost most of the time on large indexes. FTS5's bm25 is lower for better matches.
_RANKED = (
    f"SELECT {COLUMNS}, p.vector, best.score FROM ("  # noqa: S608 (fixed text)
    f"SELECT rowid, bm25(passage_words, {', '.join(map(str, BM25_WEIGHTS))}) AS score "
    "FROM passage_words WHERE passage_words MATCH ? ORDER BY score LIMIT ?) AS best "
    "JOIN passages p ON p.key = best.rowid JOIN items i ON i.id = p.item ORDER BY best.score"
)


def ranked_rows(connection: sqlite3.Connection, terms: list[str], limit: int, passages: int
                ) -> list[tuple[Any, ...]]:
    """The ``limit`` best passages for ``terms`` in an index of ``passages`` passages: each row
    holds the candidate columns (:data:`~passageway.builtin.storage.rows.COLUMNS`), the stored
    vector and the BM25 score, best first."""
    query = row_budget.match_expression(connection, terms, passages)
    if query is None:
        return []
    return connection.execute(_RANKED, (query, limit)).fetchall()


def similarities(blobs: Sequence[bytes | None], vector: np.ndarray) -> list[float]:
    """The cosine of ``vector`` with each stored unit vector, in one matrix product instead of one
    per passage: NaN for a passage still waiting for its vector (an empty blob; the gate then
    judges it by its words), 0.0 where one is missing or has another dimension."""
    if not blobs:
        return []
    width = vector.shape[0] * 4
    if all(blob is not None and len(blob) == width for blob in blobs):
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)  # type: ignore[arg-type]
        return (matrix @ vector).tolist()  # type: ignore[no-any-return]
    return [
        float(np.frombuffer(blob, dtype="<f4") @ vector) if blob is not None and len(blob) == width
        else math.nan if blob is not None and not blob else 0.0
        for blob in blobs
    ]


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def match_terms(question: str, prefix: bool = False) -> list[str]:
    """The question's terms as FTS5 strings, each safe to use alone as a ``MATCH`` expression.

    Each term is a quoted string (a CJK pair becomes the phrase ``"x y"``, matching the spaced
    form :func:`passageway.index_text` stores). ``prefix`` appends ``*`` to words of four or more letters
    (measured in ``docs/index-and-sync.md``; off by default).
    """
    parts = []
    for term in query_terms(question):
        if CJK_CHARACTER.search(term):
            parts.append(_quote(" ".join(term)))
        elif prefix and len(term) >= 4:
            parts.append(_quote(term) + "*")
        else:
            parts.append(_quote(term))
    return parts

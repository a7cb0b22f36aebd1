"""The ``sqlite`` store's keyword search: FTS5's BM25 over the ``passage_words`` table.

A question reaches FTS5 only as the quoted terms of
:func:`passageway.builtin.storage.textsearch.match_terms`, joined by ``OR``; on a large index
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

BM25_WEIGHTS = (2.0, 1.0, 1.5, 1.0)
"""FTS5 ``bm25()`` column weights for title, path, heading and text: a word in the title or
heading says more about a passage than the same word in its body."""

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

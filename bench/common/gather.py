"""Asking the stores for a question's candidates with and without their row caches, side by side.

``bench/recall.py`` compares the two on the sample corpus (``--compare-gather``) and on each
synthetic index (:mod:`common.recall_scale`), so the comparison and its table rows live here, once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from common.measure import ms, percentile

GATHER_HEADER = (
    "Asking the stores for a question's candidates (`gather_candidates`, the question's vector "
    "given) with and without the stores' row caches (`ROW_CACHE_LIMIT` in "
    "`builtin/storage/rows.py`), taking turns question by question.",
    "",
    "| Index | with row cache p50 / p95 ms | without row cache p50 / p95 ms |",
    "| --- | ---: | ---: |",
)

GATHER_WAYS = ("with row cache", "without row cache")


async def compare_gather_ways(stores: Sequence[Any], asked: Sequence[tuple[str, Any]]
                              ) -> dict[str, list[float]]:
    """The time to ask ``stores`` in each of :data:`GATHER_WAYS`, taking turns question by
    question (without: the row caches set aside and their limit 0)."""
    from passageway.builtin.storage import rows
    from passageway.kernel.query.search import gather_candidates

    limit = rows.ROW_CACHE_LIMIT
    caches = [store._row_cache for store in stores]
    times: dict[str, list[float]] = {way: [] for way in GATHER_WAYS}
    try:
        for question, given in asked:
            vector = np.asarray(given, dtype=np.float32).reshape(-1)
            for way in GATHER_WAYS:
                without = way == "without row cache"
                rows.ROW_CACHE_LIMIT = 0 if without else limit
                for store, cache in zip(stores, caches, strict=True):
                    store._row_cache = rows.RowCache() if without else cache
                started = time.perf_counter()
                await gather_candidates(question, vector, stores)
                times[way].append(time.perf_counter() - started)
    finally:
        rows.ROW_CACHE_LIMIT = limit
        for store, cache in zip(stores, caches, strict=True):
            store._row_cache = cache
    return times


async def gather_rows(name: str, stores: Sequence[Any], times: dict[str, list[float]]) -> str:
    cells = " | ".join(f"{ms(percentile(times[way], 0.5))} / {ms(percentile(times[way], 0.95))}"
                       for way in GATHER_WAYS)
    stores_text = "1 store" if len(stores) == 1 else f"{len(stores)} stores"
    return f"| {name} ({stores_text}, {len(times[GATHER_WAYS[0]])} questions) | {cells} |"

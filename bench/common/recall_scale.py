"""Part 2 of ``bench/recall.py``: recall on synthetic indexes of 100k to 1M passages.

Builds indexes of random unit vectors (dimension 384) and generated text with the ``sqlite``
store (:mod:`common.synthetic`) and times, per question with its vector given (so the embedding
is excluded): the keyword search alone, both store searches, and the whole recall; optionally
each keyword row budget (``--budget-sweep``) and the row caches (``--compare-gather``). Kept out
of the script because it shares nothing with part 1 but the table it prints into.
"""

from __future__ import annotations

import contextlib
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from common.gather import GATHER_HEADER, compare_gather_ways, gather_rows
from common.measure import log, ms, percentile
from common.synthetic import GivenVectorEmbedder, scale_index, scale_questions, synthetic_vocabulary


async def measure_scale(store: Any, asked: list[tuple[str, np.ndarray]], dim: int) -> dict[str, Any]:
    """Per question: the keyword search alone, both store searches, and the whole recall."""
    from passageway.builtin.storage.keyword import match_terms
    from passageway.kernel.plugins import build_plugin_manager, collect_registries
    from passageway.kernel.query.search import keyword_query
    from passageway.kernel.ranking import CANDIDATES
    from passageway.testing.recall import recall_over as recall

    ranker = collect_registries(build_plugin_manager({}, load_entry_points=False)).rankers.get("hybrid")()
    embedder = GivenVectorEmbedder(dim)
    embedder.next = asked[0][1]
    await recall("warm up", [store], embedder, ranker)
    result: dict[str, Any] = {"keyword": [], "searches": [], "recall": [], "lists": [], "hits": []}
    for question, vector in asked:
        embedder.next = vector
        query = keyword_query(question)
        started = time.perf_counter()  # the store alone, in this thread
        found = store._keyword_search(match_terms(query), vector, CANDIDATES)
        result["keyword"].append(time.perf_counter() - started)
        started = time.perf_counter()
        store.search(query, vector, CANDIDATES)  # both searches, as recall asks them
        result["searches"].append(time.perf_counter() - started)
        started = time.perf_counter()
        answer = await recall(question, [store], embedder, ranker)
        result["recall"].append(time.perf_counter() - started)
        result["lists"].append([candidate.passage_key for candidate in found])
        result["hits"].append([(hit.item_id, hit.heading) for hit in answer.hits])
    return result


async def scale_part(
    sizes: Sequence[int], queries: int, keep: Path | None, budgets: Sequence[int], dim: int = 384,
    compare_gather: bool = False,
) -> list[str]:
    rng = random.Random(11)
    vocabulary = synthetic_vocabulary(rng)
    lines = ["| Synthetic index | build s | store searches p50 / p95 ms | recall p50 ms | recall p95 ms "
             "| target p95 | answered |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    sweeps: list[str] = []
    gathers: list[str] = []
    for size in sizes:
        with contextlib.ExitStack() as stack:
            if keep is None:
                folder = Path(stack.enter_context(
                    tempfile.TemporaryDirectory(prefix=f"passageway-bench-scale-{size}-")
                ))
            else:
                folder = keep
                folder.mkdir(parents=True, exist_ok=True)
            store, build_seconds, samples = await scale_index(folder, size, dim, vocabulary)
            asked = scale_questions(rng, vocabulary, samples, queries, dim)
            measured = await measure_scale(store, asked, dim)
            target = 0.020 if size <= 100_000 else 0.050
            latencies, searches = measured["recall"], measured["searches"]
            p95 = percentile(latencies, 0.95)
            built = "reused" if build_seconds is None else f"{build_seconds:.0f}"
            answered = sum(1 for hits in measured["hits"] if hits)
            lines.append(
                f"| {size:,} passages | {built} | {ms(percentile(searches, 0.5))} / "
                f"{ms(percentile(searches, 0.95))} | {ms(percentile(latencies, 0.5))} | {ms(p95)} | "
                f"{ms(target)} ({'met' if p95 <= target else 'NOT met'}) | {answered}/{queries} |"
            )
            if budgets:
                sweeps += await budget_sweep(store, asked, dim, size, budgets)
            if compare_gather:
                log(f"  {size:,} passages: with and without the row cache ...")
                gathers.append(await gather_rows(f"{size:,} passages", [store],
                                           await compare_gather_ways([store], asked)))
            await store.close()
    if gathers:
        sweeps += [*GATHER_HEADER, *gathers, ""]
    return lines + (["", *sweeps] if sweeps else [])


async def budget_sweep(
    store: Any, asked: list[tuple[str, np.ndarray]], dim: int, size: int, budgets: Sequence[int]
) -> list[str]:
    """The keyword row budget's sweep: time against agreement with the unbudgeted search."""
    from passageway.builtin.storage import row_budget

    default = row_budget.KEYWORD_ROW_BUDGET
    row_budget.KEYWORD_ROW_BUDGET = 0
    log(f"  budget sweep on {size:,} passages: the unbudgeted search first ...")
    exact = await measure_scale(store, asked, dim)
    lines = [
        f"Keyword row budget on {size:,} passages ({len(asked)} questions; 0 = no budget; "
        f"\"top 50 kept\": the share of the unbudgeted keyword list's 50 passages still in it; "
        f"\"same hits\": questions answered with the same passages or silent alike):",
        "",
        "| budget | keyword search p50 / p95 ms | recall p50 / p95 ms | top 50 kept | same hits | answered |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for budget in budgets:
        row_budget.KEYWORD_ROW_BUDGET = budget
        log(f"  budget {budget} ...")
        result = exact if budget == 0 else await measure_scale(store, asked, dim)
        kept = [
            len(set(mine) & set(theirs)) / len(theirs)
            for mine, theirs in zip(result["lists"], exact["lists"], strict=True) if theirs
        ]
        same = sum(mine == theirs for mine, theirs in zip(result["hits"], exact["hits"], strict=True))
        answered = sum(1 for hits in result["hits"] if hits)
        marker = " (default)" if budget == default else ""
        lines.append(
            f"| {budget:,}{marker} | {ms(percentile(result['keyword'], 0.5))} / "
            f"{ms(percentile(result['keyword'], 0.95))} | {ms(percentile(result['recall'], 0.5))} / "
            f"{ms(percentile(result['recall'], 0.95))} | {sum(kept) / max(1, len(kept)):.1%} | "
            f"{same}/{len(asked)} | {answered}/{len(asked)} |"
        )
    row_budget.KEYWORD_ROW_BUDGET = default
    return [*lines, ""]

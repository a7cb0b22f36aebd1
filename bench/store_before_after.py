"""The ``sqlite`` store of an older checkout against this one, question by question, in one process.

    git archive 866b258 | tar -x -C /tmp/before        # the store before the split of issue 19
    uv run python bench/store_before_after.py --before /tmp/before --keep /tmp/scale
    uv run python bench/store_before_after.py --before /tmp/before --corpus

Loads the older store (``builtin/storage.py`` with ``builtin/keyword_workers.py``, the layout
before issue 19) from the folder ``--before`` under other module names, opens both stores on the
same synthetic index (built with ``bench/recall.py --keep``, or here if missing) and asks every
question of ``bench/recall.py``'s synthetic set of both, taking turns (the order swaps every
question), with the question's vector given: the whole recall (``kernel/query/recall.py`` and the
``hybrid`` ranker) per store. Also checks that both give the same candidate lists. Taking turns
within one process is what makes the comparison fair on a machine whose speed drifts.

``--corpus`` does the same on the sample corpus instead (``corpus/en`` and ``corpus/de``, indexed
by the kernel with the built-in model as ``bench/recall.py`` does; the 100 questions of
``corpus/questions.toml``, embedded once beforehand): recall's own time, the embedding left out.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import random
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import common.corpus
import common.measure
import common.synthetic

OLD_NAMES = {  # module name in the older checkout -> the name it is loaded under here
    "passageway.builtin.keyword_workers": "before_keyword_workers",
    "passageway.builtin.storage": "before_storage",
}


def load_older_store(folder: Path) -> Any:
    """The older checkout's ``SqliteStore`` class, its imports pointed at the renamed modules
    (written to a temporary folder on ``sys.path``, so that its worker processes find them)."""
    modules = Path(tempfile.mkdtemp(prefix="passageway-before-"))
    sys.path.insert(0, str(modules))
    for old, new in OLD_NAMES.items():
        text = (folder / (old.replace("passageway.", "").replace(".", "/") + ".py")).read_text("utf-8")
        for other_old, other_new in OLD_NAMES.items():
            text = text.replace(f"from {other_old} import", f"from {other_new} import")
        # kernel/textsearch.py is now kernel/text/keyword_text.py, its FTS5 quoting in the store's package
        text = text.replace("from passageway.kernel.textsearch import match_terms",
                            "from passageway.builtin.storage.keyword import match_terms")
        text = text.replace("from passageway.kernel.textsearch import",
                            "from passageway.kernel.text.keyword_text import")
        (modules / f"{new}.py").write_text(text, "utf-8")
    loaded: ModuleType | None = None
    for new in OLD_NAMES.values():
        spec = importlib.util.spec_from_file_location(new, modules / f"{new}.py")
        assert spec is not None and spec.loader is not None
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[new] = loaded
        spec.loader.exec_module(loaded)
    assert loaded is not None
    return loaded.SqliteStore


def lists(candidates: Any) -> list[tuple[int, float, float]]:
    return [(hit.passage_key, round(hit.keyword_score, 6), round(hit.similarity, 5)) for hit in candidates]


async def interleave(stores: dict[str, list[Any]], asked: list[tuple[str, Any]], rounds: int,
                     embedder: Any) -> tuple[dict[str, list[float]], int]:
    """Recall's time per question for each side's stores, taking turns (the order swaps every
    question), and how many questions got other candidate lists from the two sides."""
    from passageway.kernel.plugins import build_plugin_manager, collect_registries
    from passageway.kernel.query.search import keyword_query
    from passageway.kernel.ranking import CANDIDATES
    from passageway.testing.recall import recall_over as recall

    ranker = collect_registries(build_plugin_manager({}, load_entry_points=False)).rankers.get("hybrid")()
    differing = 0
    for question, vector in asked:  # warm up, and the same lists from both
        query = keyword_query(question)
        found = [[tuple(map(lists, store.search(query, vector, CANDIDATES))) for store in side]
                 for side in stores.values()]
        differing += found[0] != found[1]
    common.measure.log(f"asking {len(asked)} questions {rounds} times, taking turns ...")
    times: dict[str, list[float]] = {name: [] for name in stores}
    for round_number in range(rounds):
        for number, (question, vector) in enumerate(asked):
            order = list(stores) if (number + round_number) % 2 == 0 else list(reversed(stores))
            for name in order:
                embedder.next = vector
                started = time.perf_counter()
                await recall(question, stores[name], embedder, ranker)
                times[name].append(time.perf_counter() - started)
    return times, differing


def table(title: str, times: dict[str, list[float]]) -> list[str]:
    lines = [title, "", "| Store | recall p50 ms | recall p95 ms |", "| --- | ---: | ---: |"]
    for name, measured in times.items():
        lines.append(f"| {name} | {common.measure.ms(common.measure.percentile(measured, 0.5))} | "
                     f"{common.measure.ms(common.measure.percentile(measured, 0.95))} |")
    ratio = common.measure.percentile(times["after"], 0.95) / common.measure.percentile(times["before"], 0.95)
    middle = common.measure.percentile(times["after"], 0.5) / common.measure.percentile(times["before"], 0.5)
    return [*lines, "", f"after / before: {middle:.2f} at p50, {ratio:.2f} at p95.", ""]


async def open_both(older_class: Any, paths: list[Path]) -> dict[str, list[Any]]:
    from passageway.builtin.storage import SqliteStore

    stores = {"before": [older_class(path, path.stem) for path in paths],
              "after": [SqliteStore(path, path.stem) for path in paths]}
    for side in stores.values():
        for store in side:
            await store.open()
            await store.wait_ready()
    return stores


async def close_both(stores: dict[str, list[Any]]) -> None:
    for side in stores.values():
        for store in side:
            await store.close()
    sys.modules["before_keyword_workers"].WORKERS.shutdown()  # the older store's processes


async def compare_synthetic(older_class: Any, keep: Path, size: int, queries: int, rounds: int) -> list[str]:
    dim = 384
    rng = random.Random(11)
    vocabulary = common.synthetic.synthetic_vocabulary(rng)
    built, _, samples = await common.synthetic.scale_index(keep, size, dim, vocabulary)
    await built.close()
    asked = common.synthetic.scale_questions(rng, vocabulary, samples, queries, dim)
    stores = await open_both(older_class, [keep / f"scale-{size}.db"])
    try:
        times, differing = await interleave(stores, asked, rounds, common.synthetic.GivenVectorEmbedder(dim))
    finally:
        await close_both(stores)
    return table(f"{size:,} passages, {len(asked)} questions asked {rounds} times of each store, taking "
                 f"turns; candidate lists differing between the two: {differing} of {len(asked)}.", times)


async def compare_corpus(older_class: Any, rounds: int) -> list[str]:
    from passageway.kernel.plugins import build_plugin_manager

    with tempfile.TemporaryDirectory(prefix="passageway-bench-before-after-") as temporary:
        folder = Path(temporary)
        settings, environ = common.corpus.corpus_settings(folder)
        manager = build_plugin_manager(environ)
        async with common.corpus.open_bench_kernel(settings, manager, environ) as kernel:
            if kernel.embedder_error:
                raise SystemExit(f"the embedder cannot start: {kernel.embedder_error}")
            common.measure.log("building the sample corpus index ...")
            errors = await kernel.sync_once()
            if any(errors.values()):
                raise SystemExit(f"the corpus did not build: {errors}")
            embedder = common.synthetic.GivenVectorEmbedder(kernel.embedder.dim)
            embedder.min_similarity = kernel.embedder.min_similarity
            asked = [(question, (await kernel.embedder.embed([question], "query"))[0])
                     for question in common.corpus.questions()]
        paths = sorted((folder / "data").glob("*.db"))
        stores = await open_both(older_class, paths)
        try:
            times, differing = await interleave(stores, asked, rounds, embedder)
        finally:
            await close_both(stores)
    return table(f"Sample corpus ({len(paths)} sources), {len(asked)} questions asked {rounds} times of "
                 f"each side, taking turns, the question's vector given; candidate lists differing "
                 f"between the two: {differing} of {len(asked)}.", times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True,
                        help="a checkout of the older commit (with builtin/storage.py)")
    parser.add_argument("--keep", type=Path, help="the folder of the kept synthetic index")
    parser.add_argument("--corpus", action="store_true", help="the sample corpus, not a synthetic index")
    parser.add_argument("--scale", type=int, default=100_000, help="the synthetic index's size (passages)")
    parser.add_argument("--scale-queries", type=int, default=200, help="questions")
    parser.add_argument("--rounds", type=int, default=3, help="times each question is asked of each store")
    args = parser.parse_args()
    if not args.corpus and args.keep is None:
        parser.error("--keep DIR is needed for the synthetic index (or --corpus)")
    import logging
    import os
    import platform
    from datetime import UTC, datetime

    logging.basicConfig(level=logging.WARNING)
    load_before = os.getloadavg()[0]
    lines = [
        f"`uv run python bench/store_before_after.py {' '.join(sys.argv[1:])}`",
        f"on {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M')} UTC, commit {common.measure.commit()}; "
        f"machine gauge {common.measure.python_gauge_ms():.0f} ms.",
        "",
    ]
    older_class = load_older_store(args.before)
    if args.corpus:
        lines += asyncio.run(compare_corpus(older_class, args.rounds))
    else:
        args.keep.mkdir(parents=True, exist_ok=True)
        lines += asyncio.run(compare_synthetic(older_class, args.keep, args.scale, args.scale_queries,
                                               args.rounds))
    lines.append(f"Load average (1 min) before the run {load_before:.2f}, after {os.getloadavg()[0]:.2f}.")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

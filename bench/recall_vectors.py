"""What the duplicate rule and excerpts by meaning add to a question's time, side by side.

Builds both corpus folders with the real kernel (``passageway eval``'s engine), then asks the
questions of ``corpus/questions.toml`` through the real ``recall`` twice in turns, question by
question: with the vector cache (duplicates by cosine, excerpts by meaning) and without it
(duplicates by digest, the word rule). Question vectors are embedded once beforehand, so only
the query path is timed.

Run::

    uv run python bench/recall_vectors.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import ROOT
from common.replay import config_text

from passageway.builtin.eval.cases import load_cases
from passageway.builtin.eval.engine import KernelEngine
from passageway.kernel.config import load_settings
from passageway.testing.recall import recall_over as recall


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="passageway-recall-vectors-"))
    config = folder / "passageway.toml"
    config.write_text(config_text(), encoding="utf-8")
    cases = load_cases([ROOT / "corpus" / "questions.toml"]).cases
    async with KernelEngine.open(load_settings(config_path=config), data_dir=folder / "data",
                                 progress=lambda line: None) as engine:
        await engine.build()
        stores = [source.store for source in engine.kernel.sources.values() if source.store is not None]
        ranker = engine.ranker("hybrid")
        cache = engine.kernel.vector_cache
        for case in cases:  # embeds each question once (the engine's embedder keeps its vector)
            await recall(case.query, stores, engine.embedder, ranker, vector_cache=cache)
        times: dict[str, list[float]] = {"with the vector cache": [], "without": []}
        for _ in range(args.rounds):
            for case in cases:
                for label, lookup in (("with the vector cache", cache), ("without", None)):
                    started = time.perf_counter()
                    await recall(case.query, stores, engine.embedder, ranker, vector_cache=lookup)
                    times[label].append(time.perf_counter() - started)
    print(f"{len(cases)} questions × {args.rounds} rounds, both corpus folders, hybrid ranker\n")
    print("| Recall | p50 | p95 |")
    print("| --- | ---: | ---: |")
    for label, values in times.items():
        median, p95 = 1000 * statistics.median(values), 1000 * np.percentile(values, 95)
        print(f"| {label} | {median:.1f} ms | {p95:.1f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

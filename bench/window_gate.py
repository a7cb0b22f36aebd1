"""The best-window gate signal on every published set: would switching it on keep hit@3 and
silence no worse than today's gate on each of them? (docs/gate-levels.md, "Signals tried")

``bench/gate_levels.py`` shows the signal moving the curve on held-out articles. Switching it on
moves the default too, and the published sets must stay no worse at the new default. This replays
each set's candidates (asked once, through the real kernel) through the real ``recall`` at the
thresholds around the default, with the passage cosine alone (``none``) and with each passage's
best two-sentence window when that is higher (``window``, less ``--deltas``):

* ``both``: ``corpus/questions.toml`` and ``near-topic.toml``, both folders (the headline block);
* ``cross``: its German questions against ``corpus/en`` only;
* ``long``: the headline questions bare and buried in pastes (``corpus/long-prompts.toml``);
* ``all`` and ``all, cross``: ``corpus/questions-all.toml`` with ``near-topic.toml``, both folders
  and German against ``corpus/en``.

Each cell is hit@3 / silence in percent.

Run::

    uv run python bench/window_gate.py --data-dir /tmp/passageway-gate-levels
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import attrs
import numpy as np
from common import ROOT
from common.replay import Asked, Vectors, best_windows, corpus_engine, rates, replay, signal

from passageway.builtin.eval.cases import load_cases
from passageway.kernel.query.recall import question_for
from passageway.kernel.query.search import gather_candidates
from passageway.kernel.text.chunking import digest_of
from passageway.kernel.text.windows import flat, window_texts

THRESHOLDS = (0.865, 0.87, 0.875, 0.88, 0.885)
CORPUS = ROOT / "corpus"
SETS = {
    "both": ["questions.toml", "near-topic.toml"],
    "long": ["questions.toml", "near-topic.toml", "long-prompts.toml"],
    "all": ["questions-all.toml", "near-topic.toml"],
}


def english_only(asked: list[Asked]) -> list[Asked]:
    """The German questions with ``corpus/en``'s candidates only (each source is its own store,
    so these are exactly what an index of ``corpus/en`` alone returns)."""
    return [
        attrs.evolve(entry, keyword=[c for c in entry.keyword if c.source == "corpus-en"],
                     by_vector=[c for c in entry.by_vector if c.source == "corpus-en"])
        for entry in asked if entry.case.group_label.endswith("de")
    ]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--deltas", default="0,0.01", help="window cosine less these, comma-separated")
    args = parser.parse_args()
    async with corpus_engine(args.data_dir, "window-gate") as engine:
        stores = [s.store for s in engine.kernel.sources.values() if s.store is not None]
        cache = engine.kernel.vector_cache
        vectors: dict[str, np.ndarray] = {}
        sets: dict[str, list[Asked]] = {}
        for name, files in SETS.items():
            asked = []
            for case in load_cases([CORPUS / file for file in files]).cases:
                question = question_for(case.query, engine.embedder).text
                if question not in vectors:
                    embedded = await engine.embedder.embed([question], "query")
                    vectors[question] = np.asarray(embedded, dtype=np.float32).reshape(-1)
                keyword, by_vector, _ = await gather_candidates(question, vectors[question], stores)
                asked.append(Asked(case, question, vectors[question], keyword, by_vector, 0))
            sets[name] = asked
        sets = {"both": sets["both"], "cross": english_only(sets["both"]), "long": sets["long"],
                "all": sets["all"], "all, cross": english_only(sets["all"])}
        every = [entry for asked in sets.values() for entry in asked]
        digests = list({digest_of(text) for entry in every for c in entry.keyword + entry.by_vector
                        for text in window_texts(flat(c.text))})
        found = dict(await cache.get_many(digests))
        embedder = Vectors(engine.embedder, vectors)
        ranker = engine.ranker("hybrid")
        print(f"{engine.embedder.name}, hybrid ranker; hit@3 / silence (%) at each threshold\n")
        print("| Set | Signal | " + " | ".join(str(t) for t in THRESHOLDS) + " |")
        print("| --- | --- | " + " | ".join("---:" for _ in THRESHOLDS) + " |")
        for name, asked in sets.items():
            windows = best_windows(asked, found)
            variants: list[tuple[str, float | None]] = [("none", None)]
            for delta in (float(value) for value in args.deltas.split(",") if value):
                variants.append((f"window − {delta:g}" if delta else "window", delta))
            for label, delta in variants:
                def adjust(number: int, entry: Asked, delta: float | None = delta,  # type: ignore[no-untyped-def]
                           windows: dict = windows):
                    return signal("window", delta, number, entry, windows)

                cells = []
                for threshold in THRESHOLDS:
                    chosen = None if delta is None else adjust
                    result = rates(await replay(asked, embedder, ranker, cache, threshold, chosen))
                    cells.append(f"{result.hit3:.1f} / {result.silence:.1f}")
                print(f"| {name} | {label} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

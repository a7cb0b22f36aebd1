"""The gate's operating point: the whole trade-off between answers and silence for the built-in
model, the named levels read off it, and the signals tried to move the curve itself
(docs/gate-levels.md).

It builds both corpus folders with the real kernel (``passageway eval``'s engine: the real sync,
store, embedder and vector cache, excerpt windows included), asks every question of
``corpus/questions-all.toml`` and ``corpus/near-topic.toml`` once, keeps each question's
candidates, and then replays them through the real ``recall`` (ranker, gate, duplicates,
excerpts) at every threshold, so a sweep costs no embedding.

* **The curve**: hit@3, answer@3 and silence (the unanswerable questions that get silence) at
  each threshold, all questions.
* **The levels**: each maximises a weighted sum of hit@3 and silence: ``answers`` 3:1,
  ``balanced`` 1:1 (the rule that picks a model's default), ``silence`` 1:3; the lower threshold
  on a tie. Chosen on the answerable questions of half the articles (and half the unanswerable
  questions), reported on the other half, and chosen on all.
* **Signals**, each changing the cosine the gate and the vector order see, chosen and reported
  the same way: the best window (two sentences) of the passage instead of the whole passage, the
  lead of the passage over the median candidate, and the coverage of the question's rare words.

Run (the index and the vectors are kept in DIR, so a second run embeds only the questions)::

    uv run python bench/gate_levels.py --data-dir /tmp/passageway-gate-levels
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from common.replay import (
    WEIGHTS,
    Asked,
    Replay,
    Vectors,
    best_windows,
    corpus_engine,
    halves,
    rates,
    replay,
    signal,
)

from passageway.builtin.eval.cases import load_cases
from passageway.kernel.query.recall import question_for
from passageway.kernel.query.search import gather_candidates
from passageway.kernel.store import Candidate
from passageway.kernel.text.chunking import digest_of
from passageway.kernel.text.windows import flat, window_texts
from passageway.testing.recall import recall_over as recall

ROOT = Path(__file__).resolve().parent.parent
THRESHOLDS = (0.8, 0.82, 0.83, 0.84, 0.845, 0.85, 0.855, 0.86, 0.865, 0.87, 0.875, 0.88, 0.89, 0.9)


# ---------------------------------------------------------------------------------------------
# Signals: each rewrites the candidates' cosine before the ranker and the gate see it
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Replaying
# ---------------------------------------------------------------------------------------------


def pick(sweep: dict[float, object], level: str, half: int | None) -> float:
    best = max(sweep, key=lambda t: (round(rates(sweep[t], half).weighted(level), 6), -t))
    return best


def paragraphs() -> dict[tuple[str, str], list[str]]:
    """(folder, file name) → the article's paragraphs."""
    found = {}
    for language in ("en", "de"):
        for path in sorted((ROOT / "corpus" / language).glob("*.md")):
            body = path.read_text(encoding="utf-8").split("---\n", 2)[2]
            found[(f"corpus-{language}", path.name)] = [
                part.strip() for part in body.split("\n\n") if part.strip() and not part.startswith("# ")
            ]
    return found


async def slots(asked: Sequence[Asked], embedder, ranker, cache, threshold: float) -> None:  # type: ignore[no-untyped-def]
    """How many answers spend two slots on one content (two hits of one article, one per language,
    whose excerpts come from the same paragraph), and how many left out a hit that shared no
    paragraph with the one kept, with the duplicate rule and without it."""
    import passageway.kernel.query.recall as recall_module
    from passageway.kernel.query.duplicates import distinct

    articles = paragraphs()

    def held(hit) -> frozenset[int]:  # type: ignore[no-untyped-def]
        """The paragraphs the excerpt's first and last 50 characters come from."""
        shown = hit.text.removeprefix("… ").removesuffix(" …")
        ends = (shown[:50], shown[-50:])
        return frozenset(number for number, text in enumerate(articles.get((hit.source, hit.item_id), []))
                         if any(end in " ".join(text.split()) for end in ends))

    def whole(candidate: Candidate) -> frozenset[int]:
        """The paragraphs a candidate's passage holds."""
        text = flat(candidate.text)
        return frozenset(number for number, paragraph in enumerate(
            articles.get((candidate.source, candidate.item_id), [])) if flat(paragraph) in text)

    merged: list[tuple[Candidate, Candidate]] = []

    async def recorded(ranked_list, question, vectors, **options):  # type: ignore[no-untyped-def]
        """The real rule, noting each (kept, left out) pair of passages."""
        seen = {(entry.candidate.source, entry.candidate.item_id): entry.candidate for entry in ranked_list}
        ranked, copies = await distinct(ranked_list, question, vectors, **options)
        kept = {(entry.candidate.source, entry.candidate.item_id): entry.candidate for entry in ranked}
        for key, sources in copies.items():
            for (source, item_id), candidate in seen.items():
                if source in sources and item_id == key[1] and (source, item_id) not in kept and key in kept:
                    merged.append((kept[key], candidate))
        return ranked, copies

    def off(ranked_list, question, vectors, **options):  # type: ignore[no-untyped-def]
        return distinct(ranked_list, question, vectors, cut=2.0, across=2.0, **{**options, "pool": None})

    print("\n## Two slots on one content (the default threshold, every question)\n")
    print("| Duplicate rule | Answers with two or more hits | of them spending two slots on one paragraph "
          "| hits left out that shared no paragraph with the one kept |")
    print("| --- | ---: | ---: | ---: |")
    store = Replay()
    for label, rule in (("off (the same digest only)", off), ("on", recorded)):
        recall_module.distinct = rule  # type: ignore[assignment]
        merged.clear()
        several = twice = 0
        for entry in asked:
            store.lists = (entry.keyword, entry.by_vector)
            answer = await recall(entry.question, [store], embedder, ranker, min_similarity=threshold,
                                  vector_cache=cache)
            if len(answer.hits) < 2:
                continue
            several += 1
            seen = [(hit.item_id, held(hit)) for hit in answer.hits]
            twice += any(a[0] == b[0] and a[1] & b[1] for i, a in enumerate(seen) for b in seen[i + 1:])
        pairs = {((a.source, a.passage_key), (b.source, b.passage_key)): not whole(a) & whole(b)
                 for a, b in merged}
        print(f"| {label} | {several} | {twice} | {sum(pairs.values())} of {len(pairs)} pairs |")
    recall_module.distinct = distinct  # type: ignore[assignment]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--signals", default="window,lead,rare")
    parser.add_argument("--slots-only", action="store_true",
                        help="only the count of answers that spend two slots on one content")
    args = parser.parse_args()
    cases = load_cases([ROOT / "corpus" / "questions-all.toml", ROOT / "corpus" / "near-topic.toml"]).cases
    async with corpus_engine(args.data_dir, "gate-levels") as engine:
        stores = [s.store for s in engine.kernel.sources.values() if s.store is not None]
        cache = engine.kernel.vector_cache
        asked, vectors = [], {}
        for case, half in zip(cases, halves(cases), strict=True):
            question = question_for(case.query, engine.embedder).text
            embedded = await engine.embedder.embed([question], "query")
            vector = np.asarray(embedded, dtype=np.float32).reshape(-1)
            vectors[question] = vector
            keyword, by_vector, _ = await gather_candidates(question, vector, stores)
            asked.append(Asked(case, question, vector, keyword, by_vector, half))
        embedder = Vectors(engine.embedder, vectors)
        ranker = engine.ranker("hybrid")
        print(f"{engine.embedder.name}, hybrid ranker; {len(cases)} cases "
              f"({sum(c.answerable for c in cases)} answerable); halves by article\n")

        if args.slots_only:
            await slots(asked, embedder, ranker, cache, engine.default_threshold)
            return 0
        sweep = {t: await replay(asked, embedder, ranker, cache, t) for t in THRESHOLDS}
        print("## The curve (all questions)\n")
        print("| Threshold | Hit@3 | Answer@3 | Silence |")
        print("| ---: | ---: | ---: | ---: |")
        for t in THRESHOLDS:
            r = rates(sweep[t])
            print(f"| {t} | {r.hit3:.1f} | {r.answer3:.1f} | {r.silence:.1f} |")

        print("\n## The levels\n")
        print("| Level | Weights (hit@3 : silence) | Chosen on all | Chosen on half 0 | Half 1 at it: "
              "hit@3 / answer@3 / silence |")
        print("| --- | --- | ---: | ---: | --- |")
        for level, (hits, quiet) in WEIGHTS.items():
            on_all, on_half = pick(sweep, level, None), pick(sweep, level, 0)
            held = rates(sweep[on_half], 1)
            print(f"| {level} | {hits} : {quiet} | {on_all} | {on_half} | "
                  f"{held.hit3:.1f} / {held.answer3:.1f} / {held.silence:.1f} |")

        await slots(asked, embedder, ranker, cache, engine.default_threshold)

        digests = list({digest_of(text) for entry in asked for c in entry.keyword + entry.by_vector
                        for text in window_texts(flat(c.text))})
        found = await cache.get_many(digests)
        windows = best_windows(asked, dict(found))
        print("\n## Signals (threshold chosen by the balanced rule on half 0, reported on half 1)\n")
        print("| Signal | Weight | Threshold | Half 1: hit@3 | answer@3 | silence | hit@3 + silence |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        baseline = rates(sweep[pick(sweep, "balanced", 0)], 1)
        print(f"| none | | {pick(sweep, 'balanced', 0)} | {baseline.hit3:.1f} | {baseline.answer3:.1f} | "
              f"{baseline.silence:.1f} | {baseline.hit3 + baseline.silence:.1f} |")
        tries = {"window": (0.0, 0.03), "lead": (0.5,), "rare": (0.03,)}
        for name in [n for n in args.signals.split(",") if n]:
            for weight in tries[name]:
                def adjust(number: int, entry: Asked, name: str = name, weight: float = weight):
                    return signal(name, weight, number, entry, windows)
                signal_sweep = {t: await replay(asked, embedder, ranker, cache, t, adjust)
                                for t in THRESHOLDS}
                chosen = pick(signal_sweep, "balanced", 0)
                held = rates(signal_sweep[chosen], 1)
                print(f"| {name} | {weight} | {chosen} | {held.hit3:.1f} | {held.answer3:.1f} | "
                      f"{held.silence:.1f} | {held.hit3 + held.silence:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

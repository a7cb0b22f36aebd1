"""Where an excerpt starts around the window most like the question: the rules tried, measured as
answer@3 against hit@3 (kernel/query/excerpts.py; numbers on docs/measurements.md, "Excerpts").

Every question of ``corpus/questions-all.toml``, ``corpus/questions.toml`` and
``corpus/near-topic.toml`` is asked once against both corpus folders (the real kernel: sync,
store, built-in model, vector cache with the excerpt windows), and its candidates are kept. Each
rule then replays them through the real ``recall`` at the default gate, so only the excerpts
differ between rules (hit@3 and silence are the same for all). German questions are replayed a
second time with ``corpus/en``'s candidates only: across languages, as ``corpus/measure.sh``'s
cross-language block asks them.

Rules (``limit`` is the hit's share of the 400-token budget in characters):

* ``word``: no windows, the unit chosen by the question's words alone;
* ``lead=X``: the best window, then earlier sentences while the excerpt starts at most
  ``X · limit`` before it (``X = 0``: at the best window);
* ``current``: what recall does.

Each rule's answer@3 / hit@3 is printed per block and language, and for the two halves of the
articles (a rule is chosen on one half and reported on the other).

Run (the index is kept in DIR, so a second run embeds only the questions)::

    uv run python bench/excerpt_cut.py --data-dir /tmp/passageway-excerpt-cut
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from common import ROOT
from common.replay import Asked, Replay, Vectors, corpus_engine, halves

from passageway.builtin.eval.cases import accepts, contains_answer, load_cases
from passageway.kernel.query import excerpts
from passageway.kernel.query.recall import question_for
from passageway.kernel.query.rendering import excerpt as current_rule
from passageway.kernel.query.search import gather_candidates
from passageway.kernel.text import windows
from passageway.testing.recall import recall_over as recall

Rule = Callable[[str, str, int, "excerpts.Windows | None"], str]


def lead_rule(lead: float, words_only: bool = False) -> Rule:
    """The excerpt starts at the sentence furthest before the best unit (``words_only``: chosen by
    the question's words alone, :func:`excerpts.best_start`) that is at most ``lead · limit``
    before it."""
    def excerpt(text: str, question: str, limit: int, found: excerpts.Windows | None) -> str:
        flat_text = windows.flat(text)
        if len(flat_text) <= limit:
            return flat_text
        anchor = excerpts.best_start(text, question, None if words_only else found)
        return excerpts.cut(flat_text, anchor, limit, lead, starts=excerpts.unit_starts(text))
    return excerpt


def word_rule(text: str, question: str, limit: int, found: excerpts.Windows | None) -> str:
    return current_rule(text, question, limit, None)


async def ask_all(asked: list[Asked], embedder, ranker, cache, rule: Rule | None,  # type: ignore[no-untyped-def]
                  english_only: bool) -> list[tuple[int, str, bool, bool]]:
    """(half, language group, hit@3, answer@3) of each answerable question, each excerpt cut by
    ``rule`` (None: recall's own), handed to recall as the request's ``excerpt_rule``."""
    store = Replay()
    results = []
    for entry in asked:
        case = entry.case
        if not case.answerable or (english_only and not case.group_label.startswith("de")):
            continue
        keyword, by_vector = entry.keyword, entry.by_vector
        if english_only:
            keyword = [c for c in keyword if c.source == "corpus-en"]
            by_vector = [c for c in by_vector if c.source == "corpus-en"]
        store.lists = (keyword, by_vector)
        answer = await recall(entry.question, [store], embedder, ranker, vector_cache=cache,
                              excerpt_rule=rule)
        right = [h for h in answer.hits
                 if accepts(case, item_id=h.item_id, title=h.title, heading=h.heading, url=h.url)]
        results.append((entry.half, case.group_label, bool(right),
                        any(contains_answer(case, h.text) for h in right)))
    return results


def ratio(rows: list[tuple[int, str, bool, bool]]) -> str:
    hits = sum(r[2] for r in rows)
    answers = sum(r[3] for r in rows)
    return f"{answers}/{hits} {100 * answers / hits:.1f}" if hits else "-"


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--leads", default="0,0.1,0.2,0.25,0.33,0.5")
    args = parser.parse_args()
    files = ("questions-all.toml", "questions.toml", "near-topic.toml")
    loaded = {name: load_cases([ROOT / "corpus" / name]).cases for name in files}
    async with corpus_engine(args.data_dir, "excerpt-cut") as engine:
        stores = [s.store for s in engine.kernel.sources.values() if s.store is not None]
        cache = engine.kernel.vector_cache
        blocks: dict[str, list[Asked]] = {}
        vectors: dict[str, np.ndarray] = {}
        for name in ("questions-all.toml", "questions.toml"):
            cases = [case for case in loaded[name] if case.answerable]
            asked = []
            for case, half in zip(cases, halves(cases), strict=True):
                question = question_for(case.query, engine.embedder).text
                if question not in vectors:
                    embedded = await engine.embedder.embed([question], "query")
                    vectors[question] = np.asarray(embedded, dtype=np.float32).reshape(-1)
                keyword, by_vector, _ = await gather_candidates(question, vectors[question], stores)
                asked.append(Asked(case, question, vectors[question], keyword, by_vector, half))
            blocks[name] = asked
        embedder = Vectors(engine.embedder, vectors)
        ranker = engine.ranker("hybrid")
        rules: dict[str, Rule | None] = {"current": None, "word": word_rule}
        for lead in (float(value) for value in args.leads.split(",") if value):
            rules[f"lead={lead:g}"] = lead_rule(lead)
            rules[f"word, lead={lead:g}"] = lead_rule(lead, words_only=True)
        print(f"{engine.embedder.name}, hybrid ranker, default gate; answer@3 / hit@3 (answerable "
              "questions; halves by article)\n")
        print("| Rule | all: en | all: de | all: de → en | all, half 0 | all, half 1 "
              "| headline: en | headline: de | headline: de → en |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for label, rule in rules.items():
            cells = []
            every = await ask_all(blocks["questions-all.toml"], embedder, ranker, cache, rule, False)
            across = await ask_all(blocks["questions-all.toml"], embedder, ranker, cache, rule, True)
            cells += [ratio([r for r in every if r[1] == "en"]), ratio([r for r in every if r[1] == "de"]),
                      ratio(across), ratio([r for r in every + across if r[0] == 0]),
                      ratio([r for r in every + across if r[0] == 1])]
            head = await ask_all(blocks["questions.toml"], embedder, ranker, cache, rule, False)
            head_across = await ask_all(blocks["questions.toml"], embedder, ranker, cache, rule, True)
            cells += [ratio([r for r in head if r[1] == "en"]), ratio([r for r in head if r[1] == "de"]),
                      ratio(head_across)]
            print(f"| {label} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

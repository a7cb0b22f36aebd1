"""Which passages of a hit's item its excerpt is chosen from, variants replayed side by side
(issue 35: "another passage of the right file" was shown).

Every answerable question of the documentation sets is asked once through the real kernel (the
engine of ``passageway eval``: sync, store, built-in model, vector cache with the excerpt
windows); its candidates are kept, and the real ``recall`` is replayed over them at the default
gate once per variant of the passage choice, counting answer@3 (an accepted answer in the text a
right hit shows) per project, and how often the answer was in a right hit's text before its cut.
The variants:

* ``recall before (no fold)``: recall as at 29b1d89: the hit's passage and its item's most similar
  other candidate passage, terminal output shown (``excerpts.FOLD_OUTPUT`` off);
* ``fold output``: the same with a terminal session's output left out of what is shown (the rule
  this branch keeps);
* ``neighbour W``: the hit's passage and the other candidate passage of its item with the best
  score, a passage's score being its best window cosine (its passage cosine when higher or when
  it has no windows) plus ``W`` times the share of the question's rare words it holds (each word
  weighted ``log(1 + N / n)`` over the question's N candidate passages, n of them holding it);
  ``item words W`` counts the words' rarity among the item's passages only;
* ``pair W``: the two best-scored candidate passages of the hit's item, the hit's own not kept
  unless it scores among them;
* ``two places S``: recall's passages, but when the unit holding most of the question's rare
  words is not in the excerpt, two pieces: recall's (``S`` of the room) and one at that unit;
* with ``--split BYTES`` (the markdown connector's ``SPLIT_BYTES``, every project indexed with
  it): ``one place per page`` (a page's other parts leave the ranker's list), ``merged room`` (they
  leave the answer, their room going to the hits that stay), and the first with ``neighbour W``.

Choose on the tuning projects (starship, typer), read the held-out ones (starlette, mkdocs)
without retuning. Run::

    uv run python bench/passage_choice.py --data-dir /tmp/passageway-passage-choice [--show]
    uv run python bench/passage_choice.py --data-dir /tmp/passageway-passage-split \
        --split 100000 --kinds docs
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
from common.replay import asked_engine, best_window_cosines, docs_cases
from common.transfer_recording import config_text

from passageway.builtin.eval.cases import accepts, contains_answer
from passageway.kernel.query import excerpts as excerpts_module
from passageway.kernel.query import recall as recall_module
from passageway.kernel.query.excerpts import best_start, cut, tidy, unit_starts
from passageway.kernel.query.rendering import excerpt
from passageway.kernel.text.stopwords import content_words, words
from passageway.kernel.text.windows import flat, window_plan
from passageway.testing.recall import recall_over as recall

KINDS = {"docs": ("questions.toml", ("starship", "typer", "starlette")),
         "mkdocs": ("mkdocs-questions.toml", ("mkdocs",))}
PROJECTS = ("starship", "typer", "starlette", "mkdocs")

ANSWERED: dict[str, dict[str, bool]] = {}
Chooser = Callable[[Any, Sequence[Any]], list[str]]
SCORES: dict[str, float] = {}
"""The question being replayed: each candidate passage's best window cosine."""
RARE: dict[str, float] = {}
"""The question being replayed: each candidate passage's share of the question's rare words."""
QUESTION: list[str] = [""]


def rare_shares(question: str, texts: Sequence[str]) -> dict[str, float]:
    """Each text's share of the question's content words, each word weighted ``log(1 + N / n)``
    (N texts, n of them holding it), as ``excerpts.best_start`` weighs them among units."""
    asked = set(content_words(question))
    held = {text: asked & set(words(text)) for text in texts}
    weight = {word: math.log(1 + len(held) / holding) for word in asked
              if (holding := sum(1 for unit in held.values() if word in unit))}
    total = sum(weight.values()) or 1.0
    return {text: sum(weight[word] for word in unit) / total for text, unit in held.items()}


async def question_scores(cache: Any, vector: np.ndarray, question: str, pool: Sequence[Any]) -> None:
    SCORES.clear()
    SCORES.update(await best_window_cosines(cache, vector, pool))
    RARE.clear()
    RARE.update(rare_shares(question, list({candidate.text: None for candidate in pool})))
    QUESTION[:] = [question]


def _item_passages(hit: Any, candidates: Sequence[Any]) -> list[Any]:
    item = (hit.source, hit.item_id)
    found = {c.text: c for c in candidates if (c.source, c.item_id) == item}
    found.setdefault(hit.text, hit)
    return list(found.values())


def score(candidate: Any, rare_weight: float, rare: dict[str, float]) -> float:
    return SCORES.get(candidate.text, candidate.similarity) + rare_weight * rare.get(candidate.text, 0.0)


def _in_order(chosen: Sequence[Any]) -> list[str]:
    return [c.text for c in sorted(chosen, key=lambda c: c.passage_key)]


def neighbour_by_score(rare_weight: float, item_words: bool = False) -> Chooser:
    """The hit's passage and its item's other candidate passage with the best score; with
    ``item_words`` the words' rarity is counted among the item's passages, not the whole pool."""
    def choose(hit: Any, candidates: Sequence[Any]) -> list[str]:
        passages = _item_passages(hit, candidates)
        others = [c for c in passages if c.text != hit.text]
        if not others:
            return [hit.text]
        rare = rare_shares(QUESTION[0], [c.text for c in passages]) if item_words else RARE
        best = max(others, key=lambda c: score(c, rare_weight, rare))
        return _in_order((hit, best))
    return choose


def pair_by_score(rare_weight: float) -> Chooser:
    def choose(hit: Any, candidates: Sequence[Any]) -> list[str]:
        passages = sorted(_item_passages(hit, candidates),
                          key=lambda c: -score(c, rare_weight, RARE))
        return _in_order(passages[:2])
    return choose


def with_item_windows(original: Callable) -> Callable:
    """Recall's own prefetch (which the duplicate rule reads too), with the windows of every
    candidate passage of the hits' items added, from which a variant may choose."""
    async def prefetch(cache: Any, hits: Any, candidates: Any) -> Any:
        found = await original(cache, hits, candidates)
        if found is None:
            return None
        texts = {c.text for hit in hits for c in _item_passages(hit, candidates)}
        digests = [digest for text in texts for _, digest in window_plan(flat(text))]
        found.found.update(await cache.get_many([d for d in digests if d not in found.found]))
        return found
    return prefetch


def two_places(first_share: float) -> Callable[..., str]:
    """An excerpt rule: recall's excerpt, unless the unit that holds most of the question's rare
    words (the words alone choosing) is not in it; then two pieces in the text's order, the one
    recall anchors (``first_share`` of the room) and one starting at that unit (the rest)."""
    def rule(text: str, question: str, limit: int, windows: Any) -> str:
        whole = excerpt(text, question, limit, windows)
        shown, moved = tidy(text)
        if len(shown) <= limit:
            return whole
        starts = unit_starts(text)
        by_words = best_start(text, question, None, starts)
        flat_text = flat(text)
        unit_end = [*starts[1:], len(flat_text)][starts.index(by_words)]
        unit = shown[moved(by_words):moved(unit_end)].strip()
        if not set(content_words(question)) & set(words(flat_text[by_words:unit_end])) or unit[:40] in whole:
            return whole
        anchor = best_start(text, question, windows, starts)
        moved_starts = sorted({moved(start) for start in starts})
        one = cut(shown, moved(anchor), int(limit * first_share), starts=moved_starts)
        two = cut(shown, moved(by_words), limit - len(one) - 1, lead=0.0, starts=moved_starts)
        return " ".join([one, two] if anchor <= by_words else [two, one]).replace("… …", "…")
    return rule


def page_of(candidate: Any) -> str:
    """The page a hit's item belongs to: its address without the fragment (a part of a split
    note points at its section), else its id without one."""
    return (candidate.url or candidate.item_id).split("#", 1)[0]


def first_per_page(entries: Sequence[Any]) -> list[Any]:
    seen: set[tuple[str, str]] = set()
    kept = []
    for entry in entries:
        page = (entry.candidate.source, page_of(entry.candidate))
        if page not in seen:
            seen.add(page)
            kept.append(entry)
    return kept


def one_place_per_page(original: Callable) -> Callable:
    """A page's other parts leave the ranker's list: their places go to other pages' hits."""
    async def distinct_hits(ordered: Any, question: str, found: Any, cache: Any) -> Any:
        return await original(first_per_page(ordered), question, found, cache)
    return distinct_hits


def merged_room(original: Callable) -> Callable:
    """A page's other parts leave the answer: the room they had goes to the hits that stay."""
    async def distinct_hits(ordered: Any, question: str, found: Any, cache: Any) -> Any:
        kept, copies, lookup = await original(ordered, question, found, cache)
        return first_per_page(kept), copies, lookup
    return distinct_hits


@attrs.frozen
class Variant:
    label: str
    fold: bool = False
    """``excerpts.FOLD_OUTPUT``: a terminal session's output left out of what is shown."""
    chooser: Chooser | None = None
    cutter: Callable[..., str] = excerpt
    hits_rule: Callable | None = None


def variants(weights: list[float], split: bool) -> list[Variant]:
    if split:
        return [Variant("recall before (no fold)"),
                Variant("one place per page", hits_rule=one_place_per_page),
                Variant("merged room", hits_rule=merged_room),
                *(Variant(f"one place per page, neighbour {w:g}", chooser=neighbour_by_score(w),
                          hits_rule=one_place_per_page) for w in weights)]
    return [Variant("recall before (no fold)"), Variant("fold output", fold=True),
            *(Variant(f"neighbour {w:g}", chooser=neighbour_by_score(w)) for w in weights),
            *(Variant(f"item words {w:g}", chooser=neighbour_by_score(w, True)) for w in weights),
            *(Variant(f"pair {w:g}", chooser=pair_by_score(w)) for w in weights),
            *(Variant(f"two places {share:g}", cutter=two_places(share)) for share in (0.4, 0.5, 0.6)),
            *(Variant(f"fold output, neighbour {w:g}", fold=True, chooser=neighbour_by_score(w))
              for w in weights)]


async def replay_one(variant: Variant, entry: tuple, replay: tuple, table: Counter, show: bool) -> None:
    case, question, keyword, by_vector = entry
    embedder, ranker, cache, store = replay
    cut_from: dict[str, str] = {}

    def rule(text: str, asked: str, limit: int, windows: Any) -> str:
        shown = variant.cutter(text, asked, limit, windows)
        cut_from[shown] = text
        return shown

    await question_scores(cache, embedder.vectors[question], question, [*by_vector, *keyword])
    store.lists = (keyword, by_vector)
    answer = await recall(question, [store], embedder, ranker, vector_cache=cache, excerpt_rule=rule)
    right = [h for h in answer.hits
             if accepts(case, item_id=h.item_id, title=h.title, heading=h.heading, url=h.url)]
    project = case.group_label.split("-")[0]
    answered = any(contains_answer(case, h.text) for h in right)
    table[f"{project} cases"] += 1
    table[f"{project} hit"] += bool(right)
    table[f"{project} answer"] += answered
    table[f"{project} text"] += any(contains_answer(case, tidy(cut_from.get(h.text, h.text))[0])
                                    for h in right)
    first = next(iter(ANSWERED.values()), {})
    ANSWERED.setdefault(variant.label, {})[case.query] = answered
    if show and answered != first.get(case.query, answered):
        sign = "+" if answered else "-"
        print(f"{variant.label}: {sign} {case.group_label}: {case.query} → {case.expect_text}")


async def replay_kind(kind: str, args: argparse.Namespace, table: dict[str, Counter]) -> None:
    name, projects = KINDS[kind]
    cases = docs_cases([name], projects)
    text = config_text("mkdocs" if kind == "mkdocs" else "docs")
    if args.split:
        text = text.replace("env = { FOLDER", f'env = {{ SPLIT_BYTES = "{args.split}", FOLDER')
    original = recall_module.with_neighbour, recall_module.prefetch, recall_module.distinct_hits
    fold = excerpts_module.FOLD_OUTPUT
    async with asked_engine(text, args.data_dir / kind, cases, "passage-choice") as (_, entries, replay):
        try:
            for variant in variants(args.weights, args.split > 0):
                excerpts_module.FOLD_OUTPUT = variant.fold
                recall_module.with_neighbour = variant.chooser or original[0]  # type: ignore[assignment]
                recall_module.prefetch = with_item_windows(original[1]) if variant.chooser else original[1]
                recall_module.distinct_hits = (  # type: ignore[assignment]
                    variant.hits_rule(original[2]) if variant.hits_rule else original[2])
                for entry in entries:
                    await replay_one(variant, entry, replay, table[variant.label], args.show)
        finally:
            recall_module.with_neighbour, recall_module.prefetch, recall_module.distinct_hits = original
            excerpts_module.FOLD_OUTPUT = fold


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/passageway-passage-choice"))
    parser.add_argument("--weights", type=float, nargs="+", default=[0.05, 0.1],
                        help="the rare words' weights to replay")
    parser.add_argument("--split", type=int, default=0,
                        help="index every project with the markdown connector's SPLIT_BYTES set to this")
    parser.add_argument("--show", action="store_true",
                        help="print each question a variant answers differently from the first")
    parser.add_argument("--kinds", nargs="+", choices=sorted(KINDS), default=sorted(KINDS))
    return parser.parse_args()


async def main() -> int:
    args = arguments()
    labels = [variant.label for variant in variants(args.weights, args.split > 0)]
    table: dict[str, Counter] = {label: Counter() for label in labels}
    for kind in args.kinds:
        await replay_kind(kind, args, table)
    first = next(iter(table.values()))
    shown = [project for project in PROJECTS if first[f"{project} cases"]]
    print("Each cell: answer@3 / the answer in a right hit's text before its cut / hit@3.")
    print("| Variant | " + " | ".join(f"{p} ({first[p + ' cases']})" for p in shown) + " | tuning |")
    print("| --- |" + " ---: |" * (len(shown) + 1))
    for label, counts in table.items():
        cells = [f"{counts[p + ' answer']} / {counts[p + ' text']} / {counts[p + ' hit']}" for p in shown]
        tuning = counts["starship answer"] + counts["typer answer"]
        print(f"| {label} | " + " | ".join(cells) + f" | {tuning} |")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

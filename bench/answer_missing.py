"""Where the answer goes missing when the right file is among the three (issue 35, item 5).

Every answerable question of a documentation set is asked once through the real kernel (the
engine of ``passageway eval``: sync, store, built-in model, vector cache with the excerpt windows)
and replayed through the real ``recall`` at the default gate, with an excerpt rule that records
the full text each excerpt was cut from. A question whose right file is among the three hits but
whose accepted answer is in none of their excerpts falls in one category:

* ``a`` another passage of the right file was shown: the answer is in the file, not in the
  shown passages (the hit's own and the neighbour :func:`excerpts.with_neighbour` joins to it);
* ``b`` the right passage, cut elsewhere: the answer is in the shown passages' prose;
* ``c`` the same, but the answer lies in a code block, a table or a list, or spans blocks;
* ``d`` the accepted answer is shown but not counted (it is in the hit's title, which answer@3
  does not read; the heading above the excerpt counts as shown, as answer@3 reads it), or not in
  the file as the excerpt reads it (a label problem, or markup the excerpt tidies away, such as a
  link target);
* ``e`` anything else.

``--limit N`` replays the same candidates with every excerpt given N characters instead: how many
questions a longer excerpt would answer (an upper bound for a better cut). The other options put
a variant of the passage choice in place of recall's own, one at a time (the neighbour joined to
each hit, how many, the words' weight in the anchor); the figures are in docs/performance.md,
"Where answers go missing on documentation (issue 35)".

Run (``--set docs``: starship and typer, the tuning projects; ``--set starlette`` and
``--set mkdocs`` to check)::

    uv run python bench/answer_missing.py --set docs --data-dir /tmp/passageway-answer-missing
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from common import ROOT
from common.replay import answered, asked_engine, best_window_cosines, docs_cases
from common.transfer_recording import config_text

from passageway.builtin.eval.cases import Case, accepts, contains_answer, normalise
from passageway.kernel.query import excerpts
from passageway.kernel.query import recall as recall_module
from passageway.kernel.query.excerpts import tidy
from passageway.kernel.query.rendering import excerpt as current_rule
from passageway.kernel.text.chunking import blocks
from passageway.testing.recall import recall_over as recall

SETS = {
    "docs": ("docs", ["questions.toml"], ("starship", "typer")),
    "starlette": ("docs", ["questions.toml"], ("starlette",)),
    "mkdocs": ("mkdocs", ["mkdocs-questions.toml"], ("mkdocs",)),
}


def answer_kind(case: Case, text: str) -> str:
    """Which kind of block holds the first accepted answer found in ``text`` (its tidied blocks);
    ``span`` when none holds it whole."""
    for kind, block in blocks(text):
        if contains_answer(case, tidy(block)[0]):
            return kind
    return "span"


def file_text(case: Case) -> str:
    texts = []
    for expect in case.expect:
        path = ROOT / "corpus" / "docs" / expect
        if path.is_file():
            texts.append(path.read_text(encoding="utf-8"))
    return "\n\n".join(texts)


def category(case: Case, shown_from: list[str], names: list[str]) -> tuple[str, str]:
    """The category of a question answered by the right file but not by its excerpts (``names``:
    the right hits' titles and headings, which an answer shows above each excerpt)."""
    if any(contains_answer(case, name) for name in names):
        return "d", "in a title shown, not in the text"
    if any(contains_answer(case, tidy(text)[0]) for text in shown_from):
        kind = next(answer_kind(case, text) for text in shown_from if contains_answer(case, tidy(text)[0]))
        return ("b" if kind == "paragraph" else "c"), kind
    whole = file_text(case)
    if any(contains_answer(case, tidy(block)[0]) for _, block in blocks(whole)) or \
            contains_answer(case, tidy(whole)[0]):
        return "a", ""
    raw = normalise(whole)
    if any(normalise(answer) in raw for answer in case.expect_text):
        return "d", "in the raw file, not in the tidied text"
    return "d", "not in the file"


def among(case: Case, hit: Any, keyword: list, by_vector: list) -> str:
    """Where the passage that holds the answer is among the question's candidates: ``keyword N``
    / ``vector N`` (its rank in that list, from 1), or ``not a candidate``."""
    places = []
    for name, found in (("keyword", keyword), ("vector", by_vector)):
        for rank, candidate in enumerate(found, 1):
            if candidate.item_id == hit.item_id and candidate.source == hit.source and \
                    contains_answer(case, tidy(candidate.text)[0]):
                places.append(f"{name} {rank}" + (f" ({candidate.heading})" if SHOW_HEADING else ""))
                break
    return ", ".join(places) or "not a candidate"


def fused_neighbours(k: float) -> Any:
    """The other candidate passages of a hit's item ordered by reciprocal rank fusion of their
    places in the keyword list and in the vector list (``1 / (k + rank)`` summed), cosine next."""
    def neighbours(hit: Any, candidates: Any) -> list:
        item = (hit.source, hit.item_id)
        score: dict[str, float] = {}
        found: dict[str, Any] = {}
        for candidate in candidates:
            if (candidate.source, candidate.item_id) != item or candidate.text == hit.text:
                continue
            score[candidate.text] = score.get(candidate.text, 0.0) + 1 / (k + candidate.rank + 1)
            found.setdefault(candidate.text, candidate)
        return sorted(found.values(), key=lambda c: (-score[c.text], -c.similarity))
    return neighbours


def more_neighbours(count: int) -> Any:
    """:func:`excerpts.with_neighbour` with the ``count`` most similar other passages of the item."""
    def with_neighbours(hit: Any, candidates: Any) -> list[str]:
        chosen = [hit, *excerpts._neighbours(hit, candidates)[:count]]
        return [candidate.text for candidate in sorted(chosen, key=lambda c: c.passage_key)]
    return with_neighbours


async def whole_cache(cache: Any, hits: Any, candidates: Any) -> Any:
    return cache


SHOW_HEADING = False
"""``--show``: name the heading of the passage that holds the answer too."""
BEST_WINDOW: dict[str, float] = {}
"""The question being replayed: each candidate passage's best window cosine (``--by-window``)."""


def window_neighbours(hit: Any, candidates: Any) -> list:
    """The other candidate passages of a hit's item, the one with the best window first."""
    item = (hit.source, hit.item_id)
    found = {candidate.text: candidate for candidate in candidates
             if (candidate.source, candidate.item_id) == item and candidate.text != hit.text}
    return sorted(found.values(), key=lambda c: -BEST_WINDOW.get(c.text, c.similarity))


def top_section(candidate: Any) -> str:
    return (candidate.heading or "").split(" › ")[0]


def section_neighbours(hit: Any, candidates: Any) -> list:
    """The other candidate passages of a hit's item: those of its top-level section first, each
    group most similar first."""
    item = (hit.source, hit.item_id)
    found = {candidate.text: candidate for candidate in candidates
             if (candidate.source, candidate.item_id) == item and candidate.text != hit.text}
    return sorted(found.values(), key=lambda c: (top_section(c) != top_section(hit), -c.similarity))


def keyword_first(top: int) -> Any:
    """The other candidate passages of a hit's item: those in the first ``top`` of the keyword
    list first (by that rank), then by cosine."""
    def neighbours(hit: Any, candidates: Any) -> list:
        item = (hit.source, hit.item_id)
        rank: dict[str, int] = {}
        found: dict[str, Any] = {}
        for candidate in candidates:
            if (candidate.source, candidate.item_id) != item or candidate.text == hit.text:
                continue
            if candidate.keyword_score > 0 and candidate.rank < top:
                rank[candidate.text] = min(rank.get(candidate.text, top), candidate.rank)
            found.setdefault(candidate.text, candidate)
        return sorted(found.values(), key=lambda c: (rank.get(c.text, top), -c.similarity))
    return neighbours


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=sorted(SETS), default="docs")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/passageway-answer-missing"))
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--fuse", type=float, default=0.0,
                        help="choose each hit's neighbour by fused keyword and vector ranks (k)")
    parser.add_argument("--neighbours", type=int, default=1,
                        help="how many other passages of its item each hit's excerpt is chosen from")
    parser.add_argument("--word-weight", type=float, default=None,
                        help="replaces excerpts.WORD_WEIGHT (the question's words in the anchor)")
    parser.add_argument("--by-window", action="store_true",
                        help="choose each hit's neighbour by its best window, not its passage cosine")
    parser.add_argument("--same-section", action="store_true",
                        help="choose each hit's neighbour in its top-level section first")
    parser.add_argument("--keyword-top", type=int, default=0,
                        help="choose each hit's neighbour among the keyword list's first N first")
    parser.add_argument("--show", action="store_true", help="print each missed question")
    return parser.parse_args()


def choose_rules(args: argparse.Namespace) -> None:
    """The variant asked for, put in place of recall's own (one at a time)."""
    global SHOW_HEADING
    SHOW_HEADING = args.show
    if args.neighbours != 1:
        recall_module.with_neighbour = more_neighbours(args.neighbours)  # type: ignore[assignment]
        recall_module.prefetch = whole_cache  # type: ignore[assignment]
    if args.word_weight is not None:
        excerpts.WORD_WEIGHT = args.word_weight
    rules = [(args.by_window, window_neighbours), (args.same_section, section_neighbours),
             (args.keyword_top, keyword_first(args.keyword_top)), (args.fuse, fused_neighbours(args.fuse))]
    for wanted, rule in rules:
        if wanted:
            excerpts._neighbours = rule  # type: ignore[assignment]


async def judge(entry: tuple, args: argparse.Namespace, replay: tuple) -> tuple[str, str] | None:
    """One question replayed: None when no right hit, ``("", "")`` when answered, else its
    category and detail."""
    case, question, keyword, by_vector = entry
    embedder, ranker, cache, store = replay
    cut_from: dict[str, str] = {}

    def rule(text: str, asked: str, limit: int, windows: Any) -> str:
        shown = current_rule(text, asked, args.limit or limit, windows)
        cut_from[shown] = text
        return shown

    if args.by_window:
        BEST_WINDOW.clear()
        pool = [*by_vector, *keyword]
        BEST_WINDOW.update(await best_window_cosines(cache, embedder.vectors[question], pool))
    store.lists = (keyword, by_vector)
    answer = await recall(question, [store], embedder, ranker, vector_cache=cache, excerpt_rule=rule)
    right = [h for h in answer.hits
             if accepts(case, item_id=h.item_id, title=h.title, heading=h.heading, url=h.url)]
    if not right:
        return None
    if answered(case, right):
        return "", ""
    label, detail = category(case, [cut_from.get(h.text, h.text) for h in right],
                             [f"{h.title} {h.heading or ''}" for h in right])
    if label == "a":
        detail = among(case, right[0], keyword, by_vector)
    if args.show:
        print(f"[{label} {detail}] {case.group_label}: {case.query} → {case.expect_text}")
        for h in right:
            print(f"    {h.item_id} › {h.heading}: {h.text[:300]!r}")
    return label, detail


async def main() -> int:
    args = arguments()
    choose_rules(args)
    kind, files, projects = SETS[args.set]
    cases = docs_cases(files, projects)
    index = args.data_dir / kind
    async with asked_engine(config_text(kind), index, cases, "answer-missing") as (_, entries, replay):
        judged = [await judge(entry, args, replay) for entry in entries]
    found = [verdict for verdict in judged if verdict is not None]
    missing = [verdict for verdict in found if verdict[0]]
    print(f"{args.set}: {len(cases)} answerable, hit@3 {len(found)}, answer@3 {len(found) - len(missing)}"
          f" ({100 * (len(found) - len(missing)) / len(cases):.1f} %), limit {args.limit or 'as recall'}")
    print("missing:", dict(sorted(Counter(label for label, _ in missing).items())))
    print("details:", dict(sorted(Counter(f"{label} {detail}".strip() for label, detail in missing).items())))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

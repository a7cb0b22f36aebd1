"""Where an answer is lost between the right file and the text shown (issue 35, target 3).

Every answerable question of the documentation sets (and of XQuAD with ``--kinds xquad``) is
asked once through the real kernel (the engine of ``passageway eval``: sync, store, built-in
model, vector cache with the excerpt windows) and replayed through the real ``recall`` at the
default gate, with an excerpt rule that records the text each excerpt was cut from (the hit's
passage and the neighbour ``excerpts.with_neighbour`` joins to it). Per project:

* ``hit``: a right hit among the three;
* ``file``: of those, the accepted answer is in the right file (raw, or as an excerpt shows it);
* ``passage``: the answer is in the text a right hit's excerpt was cut from (raw or shown);
* ``shown``: the answer is in a right hit's excerpt text (answer@3 before the heading counted);
* ``relaxed``: not shown, but found once backticks, emphasis, escapes and brackets are read
  away on both sides (a markup mismatch of the answer check itself);
* ``heading`` / ``header``: shown, or in a right hit's heading (and title) shown above it.

A question lost in the cut (in the passage, not in the excerpt) is ``before`` or ``after`` (the
excerpt starts after the answer, or ends before it), ``tidied`` (the answer is only in markup the
excerpt leaves out) or ``heading``; one whose passages lack the answer is ``heading`` (the hit's
heading names it), ``split`` (another passage of the same section holds it), ``section``
(another section of the item, with its rank among the question's candidates) or ``nowhere`` (no
passage holds it whole). ``--show`` prints each question lost in the cut with its excerpt
(``--show-passage``: and the text it was cut from), ``--show-other`` each of the others.

``--variants`` replays excerpt rules side by side instead (each cell answer@3, the excerpt or
the heading above it as ``passageway eval`` reads it / answer in the passages / hit@3; with
``--show``, each question a variant answers differently from the first):
the hit's own passage favoured in the anchor (``own +W``), each passage's first window
favoured (``first +W``), the excerpt started at the anchor's passage or block when the anchor's
unit still fits (``reach part``, ``reach block``), a lead of 0.2 or 0.5 of the share before the
anchor instead of a third (``lead``), the budget split by rank (``shares``); ``own not kept``
is recall before its short own passage was kept whole, ``own kept 400`` keeps one of up to 400
characters. The variants named ``[judged |shown ]RULE MARGIN`` choose which of an item's passages
becomes its hit instead (``common/hit_choice.py``: ``heading``, ``window``, ``item bm25``,
``words``, ``cosine``, ``keyword``, ``cosine+keyword`` and a few mixtures, each with the margins
0.02 to 1.0).

Run (``--kinds docs`` for starship, typer and starlette; ``mkdocs`` for the held-out project)::

    uv run python bench/shown_answers.py --data-dir /tmp/passageway-shown [--show]
    uv run python bench/shown_answers.py --kinds docs mkdocs --variants current "own +0.05"
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from common import ROOT
from common.hit_choice import MARGINS, RULES, HitChoice, note_question, rule_named, shown_only
from common.replay import asked_engine, docs_cases
from common.transfer_recording import config_text

from passageway.builtin.eval.cases import Case, accepts, contains_answer, normalise
from passageway.kernel.query import excerpts as excerpts_module
from passageway.kernel.query import recall as recall_module
from passageway.kernel.query import rendering as rendering_module
from passageway.kernel.query.excerpts import best_start, cut, joined, tidy, unit_starts
from passageway.kernel.query.rendering import excerpt
from passageway.kernel.text.chunking import blocks
from passageway.kernel.text.windows import flat
from passageway.testing.recall import recall_over as recall

KINDS = {"docs": (("questions.toml",), ("starship", "typer", "starlette")),
         "mkdocs": (("mkdocs-questions.toml", "mkdocs-pastes.toml"), ("mkdocs",)),
         "xquad": (("../questions-all.toml",), ("en", "de"))}
PROJECTS = ("starship", "typer", "starlette", "mkdocs", "en", "de")
COLUMNS = ("cases", "hit", "file", "passage", "shown", "relaxed", "heading", "header")


FLIPS: dict[str, dict[str, int]] = {}
"""Variant → question → answered (1) or not: what ``--show`` compares with the first variant."""
OWN: dict[str, tuple[int, int, list[int]]] = {}
"""A hit's joined text → its own passage's span in the flat text and where each part starts."""


def recording_neighbour(hit: Any, candidates: Any) -> list[str]:
    """``excerpts.with_neighbour``, noting which part is the hit's own (for the variants)."""
    parts = excerpts_module.with_neighbour(hit, candidates)
    offsets, offset = [], 0
    for part in parts:
        offsets.append(offset)
        offset += len(flat(part)) + 1
    own = parts.index(hit.text)
    OWN[joined(parts)] = (offsets[own], offsets[own] + len(flat(parts[own])), offsets)
    return parts


def block_starts(text: str) -> list[int]:
    found, offset = [], 0
    for _, block in blocks(text):
        if flat(block):
            found.append(offset)
            offset += len(flat(block)) + 1
    return found


def variant_rule(own_bonus: float = 0.0, first_bonus: float = 0.0, reach: str = "",
                 lead: float = excerpts_module.LEAD) -> Any:
    """An excerpt rule like ``rendering.excerpt`` with one change: ``own_bonus`` added to the
    windows of the hit's own passage, ``first_bonus`` to the first window of each passage, or
    ``reach`` (``part`` / ``block``): start at the start of the anchor's passage or block when
    the anchor's unit still fits in the excerpt from there."""
    def rule(text: str, question: str, limit: int, windows: Any) -> str:
        shown, moved = tidy(text)
        if len(shown) <= limit:
            return shown
        own_start, own_end, parts = OWN.get(text, (0, len(flat(text)), [0]))
        if windows and (own_bonus or first_bonus):
            firsts = {min((s for s, _ in windows if s >= p), default=-1) for p in parts}
            windows = tuple((s, v + (own_bonus if own_start <= s < own_end else 0.0)
                             + (first_bonus if s in firsts else 0.0)) for s, v in windows)
        starts = unit_starts(text)
        start = best_start(text, question, windows, starts)
        units = sorted({moved(unit) for unit in starts})
        if reach:
            end = next((unit for unit in starts if unit > start), len(flat(text)))
            heads = parts if reach == "part" else block_starts(text)
            head = max((h for h in heads if h <= start), default=0)
            if head < start and moved(end) - moved(head) <= limit:
                return cut(shown, moved(head), limit, lead=0.0, starts=units)
        return cut(shown, moved(start), limit, lead=lead, starts=units)
    return rule


def weighted_sizes(weights: tuple[float, ...]) -> Any:
    """``rendering._sizes`` with the shares split by ``weights`` by rank (the clear leader kept)."""
    original = rendering_module._sizes

    def sizes(hits: Any, needs: list[int], room: int) -> list[int]:
        if rendering_module.leads_clearly(hits):
            return original(hits, needs, room)
        return rendering_module.shares(needs, room, list(weights[: len(hits)]))
    return sizes


SIZES = {"shares 1.5,1,1": weighted_sizes((1.5, 1.0, 1.0)), "shares 2,1,1": weighted_sizes((2.0, 1.0, 1.0)),
         "shares 1.25,1,1": weighted_sizes((1.25, 1.0, 1.0))}
"""Variants of how the hits share the budget (``rendering._sizes``), each with recall's own cut."""

def own_kept(short: int) -> Any:
    """Recall's excerpt, but a hit's own passage of at most ``short`` characters that the excerpt
    leaves out is brought in whole: the excerpt starts at it (it comes first) or ends with it."""
    def rule(text: str, question: str, limit: int, windows: Any) -> str:
        shown_text = excerpt(text, question, limit, windows)
        own_start, own_end, parts = OWN.get(text, (0, 0, [0]))
        tidied, moved = tidy(text)
        if len(parts) < 2 or len(tidied) <= limit or own_end - own_start > short:
            return shown_text
        body = shown_text.removeprefix("… ").removesuffix(" …")
        begin = tidied.find(body[:80])
        first, last = moved(own_start), moved(own_end)
        if begin < 0 or (begin <= first and last <= begin + len(body)):
            return shown_text
        units = sorted({moved(unit) for unit in unit_starts(text)})
        if first < begin:
            return cut(tidied, first, limit, lead=0.0, starts=units)
        start = next((unit for unit in units if last - unit <= limit - 4), first)
        return cut(tidied, start, limit, lead=0.0, starts=units)
    return rule


VARIANTS = {
    "current": excerpt,
    "own +0.01": variant_rule(own_bonus=0.01), "own +0.02": variant_rule(own_bonus=0.02),
    "own +0.05": variant_rule(own_bonus=0.05),
    "first +0.01": variant_rule(first_bonus=0.01), "first +0.02": variant_rule(first_bonus=0.02),
    "lead 0.2": variant_rule(lead=0.2), "lead 0.5": variant_rule(lead=0.5),
    "reach part": variant_rule(reach="part"), "reach block": variant_rule(reach="block"),
    "own +0.02, reach part": variant_rule(own_bonus=0.02, reach="part"),
    **dict.fromkeys(SIZES, excerpt),
    "own not kept": lambda text, question, limit, windows: excerpt(
        text, question, limit, None if windows is None else tuple(windows)),
    "own kept 400": own_kept(400),
    **{f"{mode}{rule} {margin:g}": excerpt
       for rule in RULES for margin in MARGINS for mode in ("", "shown ", "judged ")},
}


def relaxed(case: Case, text: str) -> bool:
    """The answer in ``text`` with markup (backticks, emphasis, escapes, brackets) read away."""
    strip = str.maketrans("", "", "`*_\\[]")
    return any(normalise(answer.translate(strip)) in normalise(text.translate(strip))
               for answer in case.expect_text)


def file_text(case: Case) -> str:
    return "\n\n".join(path.read_text(encoding="utf-8") for expect in case.expect
                       if (path := ROOT / "corpus" / "docs" / expect).is_file())


def holds(case: Case, text: str) -> bool:
    """The answer in ``text`` raw or as an excerpt shows it."""
    return contains_answer(case, text) or contains_answer(case, tidy(text)[0])


def where(case: Case, source: str, shown: str, heading: str) -> str:
    """Why an answer in ``source`` (a hit's passages) is not in ``shown`` (its excerpt)."""
    if contains_answer(case, heading):
        return "heading"
    tidied = normalise(tidy(source)[0])
    place = min((tidied.find(normalise(answer)) for answer in case.expect_text
                 if normalise(answer) in tidied), default=-1)
    if place < 0:
        return "tidied"
    body = normalise(shown.strip(" …"))
    begin = tidied.find(body[:60])
    if begin < 0:
        return "elsewhere"
    return "before" if place < begin else "after"


async def other_place(case: Case, hit: Any, pool: list, stores: dict) -> str:
    """Where the answer is when the right hit's passages lack it: ``heading`` (the hit's header
    names it), ``split`` (a passage of the same section), ``section`` (another section of the
    item), with its place among the question's candidates."""
    if contains_answer(case, f"{hit.title} {hit.heading or ''}"):
        return "heading"
    store = stores.get(hit.source)
    passages = await store.passages_of(hit.item_id) if store is not None else []
    holding = [(ordinal, heading, text) for ordinal, heading, text, _ in passages if holds(case, text)]
    if not holding:
        return "nowhere"
    own = next((ordinal for ordinal, _, text, _ in passages if text in hit.text), 0)
    _, heading, text = min(holding, key=lambda found: abs(found[0] - own))
    ranks = [f"{name} {rank}" for name, found in (("keyword", pool[0]), ("vector", pool[1]))
             for rank, c in enumerate(found, 1) if c.item_id == hit.item_id and c.text == text]
    kind = "split" if heading == hit.heading else "section"
    return f"{kind} ({', '.join(ranks) or 'not a candidate'}; {heading})"


async def replay_one(entry: tuple, replay: tuple, table: Counter, args: argparse.Namespace,
                     stores: dict, chosen: Any = excerpt) -> None:
    case, question, keyword, by_vector = entry
    embedder, ranker, cache, store = replay
    cut_from: dict[str, str] = {}

    def rule(text: str, asked: str, limit: int, windows: Any) -> str:
        shown = chosen(text, asked, limit, windows)
        cut_from[shown] = text
        return shown

    store.lists = (keyword, by_vector)
    answer = await recall(question, [store], embedder, ranker, vector_cache=cache, excerpt_rule=rule)
    right = [h for h in answer.hits
             if accepts(case, item_id=h.item_id, title=h.title, heading=h.heading, url=h.url)]
    project = case.group_label.split("-")[0]
    table[f"{project} cases"] += 1
    if not right:
        return
    table[f"{project} hit"] += 1
    in_file = holds(case, file_text(case))
    in_passage = [h for h in right if holds(case, cut_from.get(h.text, h.text))]
    shown = any(contains_answer(case, h.text) for h in right)
    table[f"{project} heading"] += shown or any(contains_answer(case, h.heading or "") for h in right)
    table[f"{project} header"] += shown or any(contains_answer(case, f"{h.title} › {h.heading or ''}")
                                               for h in right)
    if not shown and any(relaxed(case, h.text) for h in right):
        table[f"{project} relaxed"] += 1
        if args.show:
            print(f"[relaxed] {case.group_label}: {case.query[-200:]!r} → {case.expect_text}")
    table[f"{project} file"] += in_file or bool(in_passage)
    table[f"{project} passage"] += bool(in_passage)
    table[f"{project} shown"] += shown
    if in_passage and not shown:
        hit = in_passage[0]
        kind = where(case, cut_from.get(hit.text, hit.text), hit.text, f"{hit.title} {hit.heading or ''}")
        table[f"{project} lost {kind}"] += 1
        if args.show:
            print(f"[{kind}] {case.group_label}: {case.query[-200:]!r} → {case.expect_text}")
            print(f"    {hit.item_id} › {hit.heading} ({len(hit.text)} chars shown,"
                  f" {len(tidy(cut_from.get(hit.text, hit.text))[0])} in the passages)")
            print("    SHOWN: " + hit.text.replace("\n", "\n    "))
            if args.show_passage:
                print("    FROM: " + tidy(cut_from.get(hit.text, hit.text))[0].replace("\n", "\n    "))
            print()
    elif in_file and not in_passage:
        place = await other_place(case, right[0], [keyword, by_vector], stores)
        table[f"{project} other {place.split(' ')[0]}"] += 1
        if args.show_other:
            print(f"[other passage: {place}] {case.group_label}: {case.query[-200:]!r} → {case.expect_text}")
            print(f"    {right[0].item_id} › {right[0].heading}")


async def replay_kind(kind: str, args: argparse.Namespace, table: Counter) -> None:
    files, projects = KINDS[kind]
    cases = docs_cases(files, projects)
    config = config_text(kind if kind in ("mkdocs", "xquad") else "docs")
    async with asked_engine(config, args.data_dir / kind, cases, "shown") as (engine, entries, replay):
        stores = {name: source.store for name, source in engine.kernel.sources.items()}
        if not args.variants:
            for entry in entries:
                await replay_one(entry, replay, table, args, stores)
            return
        recall_module.with_neighbour = recording_neighbour  # type: ignore[assignment]
        quiet = argparse.Namespace(show=False, show_passage=False, show_other=False)
        original, texts = rendering_module._sizes, recall_module.excerpt_texts
        for name in args.variants:
            rendering_module._sizes = SIZES.get(name, original)  # type: ignore[assignment]
            hits = rule_named(name)
            ranker = HitChoice(replay[1], *hits) if hits else replay[1]
            recall_module.excerpt_texts = (  # type: ignore[assignment]
                shown_only(texts, replay[2]) if hits and hits[2] == "shown" else texts)
            for entry in entries:
                counts: Counter = Counter()
                if hits:
                    await note_question(replay[2], replay[0].vectors[entry[1]], [*entry[2], *entry[3]])
                await replay_one(entry, (replay[0], ranker, *replay[2:]), counts, quiet, stores,
                                 VARIANTS[name])
                table.update({f"{name}|{key}": count for key, count in counts.items()})
                answered = sum(count for key, count in counts.items() if key.endswith(" heading"))
                first = FLIPS.setdefault(args.variants[0], {}).get(entry[0].query, answered)
                FLIPS.setdefault(name, {})[entry[0].query] = answered
                if args.show and answered != first:
                    sign = '+' if answered else '-'
                    print(f"{name}: {sign} {entry[0].group_label}: {entry[0].query[-120:]!r}")
        rendering_module._sizes = original  # type: ignore[assignment]
        recall_module.excerpt_texts = texts  # type: ignore[assignment]


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/passageway-shown"))
    parser.add_argument("--kinds", nargs="+", choices=sorted(KINDS), default=sorted(KINDS))
    parser.add_argument("--show", action="store_true",
                        help="print each question whose answer is in the passage but not in the excerpt")
    parser.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), default=[],
                        help="replay these excerpt rules side by side (answer@3 per project)")
    parser.add_argument("--show-passage", action="store_true",
                        help="with --show, print the text each excerpt was cut from too")
    parser.add_argument("--show-other", action="store_true",
                        help="print each question whose answer is in the file but not in the passages")
    return parser.parse_args()


async def main() -> int:
    args = arguments()
    table: Counter = Counter()
    for kind in args.kinds:
        await replay_kind(kind, args, table)
    if args.variants:
        projects = [p for p in PROJECTS if table[f"{args.variants[0]}|{p} cases"]]
        print("Each cell: answer@3 (excerpt or heading) / answer in the passages / hit@3.")
        print("| Variant | " + " | ".join(projects) + " | tuning |")
        print("| --- |" + " ---: |" * (len(projects) + 1))
        for name in args.variants:
            cells = [" / ".join(str(table[f"{name}|{p} {column}"])
                                for column in ("heading", "passage", "hit")) for p in projects]
            tuning = sum(table[f"{name}|{p} heading"] for p in ("starship", "typer", "starlette"))
            print(f"| {name} | " + " | ".join(cells) + f" | {tuning} |")
        return 0
    shown = [project for project in PROJECTS if table[f"{project} cases"]]
    print("| Project | " + " | ".join(COLUMNS) + " | lost in the cut, by kind | not in the passages |")
    print("| --- |" + " ---: |" * len(COLUMNS) + " --- | --- |")
    for project in shown:
        kinds = [", ".join(f"{key.split(' ', 2)[2]} {count}" for key, count in sorted(table.items())
                           if key.startswith(f"{project} {what} ")) for what in ("lost", "other")]
        print(f"| {project} | " + " | ".join(str(table[f"{project} {column}"]) for column in COLUMNS)
              + f" | {kinds[0]} | {kinds[1]} |")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

"""Does the relevance gate transfer from XQuAD to real documentation? (docs/gate-levels.md)

Records each question's candidates once per corpus kind with the real kernel (the engine of
``passageway eval``: real sync, store, built-in model and vector cache), then replays them through
the real ``recall`` with ranker variants, so a sweep costs no embedding:

* ``xquad``: both folders of ``corpus/`` with ``corpus/questions-all.toml`` and
  ``corpus/near-topic.toml`` (half of the articles held out, as ``bench/gate_levels.py`` does);
* ``docs``: the four sources of ``corpus/docs`` with its questions, near-topic questions and
  pure pastes; **starlette is held out**: every rule and level is chosen on starship and typer
  only and the starlette rows are reported afterwards.

It prints, per corpus kind, the curve of the default ranker (the transferable gate) and of the
former cosine-or-three-words gate, each threshold's hit@3, answer@3 and silence, on the tuning
part and the held-out part.

Run (the indexes stay in DIR; the candidates are kept in DIR/candidates-KIND.pickle)::

    uv run python bench/gate_transfer.py --data-dir /tmp/passageway-gate-transfer
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import pickle
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from passageway.builtin.ranking import FusionRanker, best_per_item
from passageway.kernel.config import load_settings
from passageway.kernel.eval.cases import Case, accepts, contains_answer, load_cases
from passageway.kernel.eval.engine import KernelEngine
from passageway.kernel.query.recall import gather_candidates, question_for, recall
from passageway.kernel.ranking import Gate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gate_levels import Replay, Vectors, halves

ROOT = Path(__file__).resolve().parent.parent
THRESHOLDS = (0.84, 0.85, 0.86, 0.87, 0.88, 0.89)
HELD_OUT = "starlette"
GRID_LEADS = (0.0, 0.02, 0.03, 0.05)
GRID_AGREE = (1, 3, 5, 10)
GRID_SURE = (0.04, None)
GRID_SHARES = (0.1, 0.2, 0.3)
GRID_THRESHOLDS = (0.87,)
DOCS_SOURCES = (("starship-en", "starship/en"), ("starship-de", "starship/de"),
                ("typer", "typer"), ("starlette", "starlette"))


@attrs.frozen
class Recorded:
    case: Case
    question: str
    vector: np.ndarray
    keyword: list[Any]
    by_vector: list[Any]
    held_out: bool


def config_text(kind: str) -> str:
    python = sys.executable
    if kind == "xquad":
        pairs = [(f"corpus-{lang}", ROOT / "corpus" / lang) for lang in ("en", "de")]
    else:
        pairs = [(name, ROOT / "corpus" / "docs" / folder) for name, folder in DOCS_SOURCES]
    return "".join(
        f'[[connector]]\nname = "{name}"\ncommand = ["{python}", "-m", "passageway_connector_markdown"]\n'
        f'env = {{ FOLDER = "{folder}" }}\n\n'
        for name, folder in pairs
    )


def cases_of(kind: str) -> tuple[list[Case], list[bool]]:
    """The cases and, for each, whether it is held out."""
    if kind == "xquad":
        cases = list(load_cases([ROOT / "corpus" / "questions-all.toml",
                                 ROOT / "corpus" / "near-topic.toml"]).cases)
        return cases, [half == 1 for half in halves(cases)]
    docs = ROOT / "corpus" / "docs"
    cases = list(load_cases([docs / "questions.toml", docs / "near-topic.toml"]).cases)
    cases += [case for case in load_cases([docs / "pastes.toml"]).cases if case.group == "paste-only"]
    return cases, [case.group_label.startswith(HELD_OUT) for case in cases]


async def _no_windows(passage_texts: Sequence[str], cache: Any, embed: Any) -> int:
    return 0


async def record(kind: str, data_dir: Path, windows: bool = True) -> tuple[list[Recorded], Any, Any]:
    """Every case's reduced question, vector and candidate lists (and the engine's embedder).

    ``windows=False`` builds the index without the excerpt windows' vectors, which the gate does
    not read (about four fifths of the embedding time on a loaded machine); answer@3 is then
    measured with excerpts chosen by the question's words.
    """
    if not windows:
        import passageway.kernel.index.sync as sync_module

        sync_module.embed_windows = _no_windows  # type: ignore[assignment]
    folder = Path(tempfile.mkdtemp(prefix=f"passageway-gate-transfer-{kind}-"))
    config = folder / "passageway.toml"
    config.write_text(config_text(kind), encoding="utf-8")
    index = data_dir / kind
    index.mkdir(parents=True, exist_ok=True)
    cases, held = cases_of(kind)
    async with KernelEngine.open(load_settings(config_path=config), data_dir=index,
                                 progress=lambda line: print(line, file=sys.stderr)) as engine:
        await engine.build()
        stores = [s.store for s in engine.kernel.sources.values() if s.store is not None]
        recorded = []
        for case, out in zip(cases, held, strict=True):
            question = question_for(case.query, engine.embedder).text
            if not question:
                recorded.append(Recorded(case, "", np.zeros(engine.embedder.dim, np.float32), [], [], out))
                continue
            vector = np.asarray(await engine.embedder.embed([question], "query"), np.float32).reshape(-1)
            keyword, by_vector, _ = await gather_candidates(question, vector, stores)
            recorded.append(Recorded(case, question, vector, keyword, by_vector, out))
        return recorded, engine.embedder.inner, None


@attrs.frozen
class Rates:
    hit3: float
    answer3: float
    silence: float
    answerable: int
    unanswerable: int


def rates(results: Sequence[tuple[bool, bool, bool, bool]], held_out: bool | None) -> Rates:
    chosen = [r for r in results if held_out is None or r[0] == held_out]
    yes = [r for r in chosen if r[1]]
    no = [r for r in chosen if not r[1]]
    share = lambda rows, i: 100 * sum(r[i] for r in rows) / len(rows) if rows else 0.0  # noqa: E731
    return Rates(share(yes, 2), share(yes, 3), share(no, 2), len(yes), len(no))


async def replay(recorded: Sequence[Recorded], embedder: Any, ranker: Any, threshold: float,
                 cache: Any = None) -> list[tuple[bool, bool, bool, bool]]:
    """Per question: (held out, answerable, hit@3 or silent, answer@3)."""
    store = Replay()
    results = []
    for entry in recorded:
        case = entry.case
        if not entry.question:
            results.append((entry.held_out, case.answerable, not case.answerable, False))
            continue
        store.lists = (entry.keyword, entry.by_vector)
        answer = await recall(entry.question, [store], embedder, ranker, min_similarity=threshold,
                              vector_cache=cache)
        if not case.answerable:
            results.append((entry.held_out, False, answer.silent, False))
            continue
        right = [h for h in answer.hits
                 if accepts(case, item_id=h.item_id, title=h.title, heading=h.heading, url=h.url)]
        results.append((entry.held_out, True, bool(right), any(contains_answer(case, h.text) for h in right)))
    return results


def print_curve(title: str, sweep: dict[float, list]) -> None:
    print(f"\n### {title}\n")
    print("| Threshold | tuning: hit@3 | answer@3 | silence | held out: hit@3 | answer@3 | silence |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for threshold, results in sweep.items():
        tune, out = rates(results, False), rates(results, True)
        print(f"| {threshold} | {tune.hit3:.1f} | {tune.answer3:.1f} | {tune.silence:.1f} | "
              f"{out.hit3:.1f} | {out.answer3:.1f} | {out.silence:.1f} |")


def quick(recorded: Sequence[Recorded], ranker: Any, gate: Gate) -> list[tuple[bool, bool, bool, bool]]:
    """:func:`replay` with the ranker alone (no duplicates, no excerpts): hit@3 and silence only."""
    results = []
    for entry in recorded:
        case = entry.case
        hits = ranker.rank(entry.question, entry.vector, entry.keyword, entry.by_vector, gate)[:3] \
            if entry.question else []
        if not case.answerable:
            results.append((entry.held_out, False, not hits, False))
            continue
        right = any(accepts(case, item_id=h.candidate.item_id, title=h.candidate.title,
                            heading=h.candidate.heading, url=h.candidate.url) for h in hits)
        results.append((entry.held_out, True, right, False))
    return results


def grid(docs: Sequence[Recorded], xquad: Sequence[Recorded], offset: float) -> None:
    """The selection of the transferable gate's constants: every combination at every threshold
    on the documentation set's tuning projects, best first by hit@3 + silence, then checked down
    that order on XQuAD's tuning set until one costs no more than 2 points of hit@3 or silence
    against the former gate at the model's threshold (0.87): that one is chosen."""
    rows = []
    for lead, agree, sure, share in itertools.product(GRID_LEADS, GRID_AGREE, GRID_SURE, GRID_SHARES):
        ranker = FusionRanker("hybrid", field_lead=lead, agree_rank=agree, sure=sure, rare_share=share)
        for threshold in GRID_THRESHOLDS:
            results = quick(docs, ranker, Gate(threshold, offset))
            tune, out = rates(results, False), rates(results, True)
            rows.append((tune.hit3 + tune.silence, (lead, agree, sure, share), threshold, tune, out))
    rows.sort(key=lambda row: (-row[0], row[2]))
    former = {t: rates(quick(xquad, FusionRanker("hybrid", transfer=False), Gate(t, offset)), None)
              for t in GRID_THRESHOLDS}
    floor = former[0.87]
    print(f"\nXQuAD tuning set, former gate at 0.87: hit@3 {floor.hit3:.1f}, silence {floor.silence:.1f}")
    print("\n| lead | agree | sure | rare share | threshold | docs tuning hit@3 | silence "
          "| held out hit@3 | silence | XQuAD: hit@3 | silence |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for _, (lead, agree, sure, share), threshold, tune, out in rows:
        # The new gate passes a subset of what the former one passes, so a threshold where the
        # former gate already loses more than 2 points of hit@3 cannot be chosen.
        if former[threshold].hit3 < floor.hit3 - 2:
            continue
        ranker = FusionRanker("hybrid", field_lead=lead, agree_rank=agree, sure=sure, rare_share=share)
        xq = rates(quick(xquad, ranker, Gate(threshold, offset)), None)
        chosen = xq.hit3 >= floor.hit3 - 2 and xq.silence >= floor.silence - 2
        print(f"| {lead} | {agree} | {sure} | {share} | {threshold} | {tune.hit3:.1f} | {tune.silence:.1f} "
              f"| {out.hit3:.1f} | {out.silence:.1f} | {xq.hit3:.1f} | {xq.silence:.1f} |"
              + (" chosen" if chosen else ""))
        if chosen:
            break


def study(recorded: Sequence[Recorded], offset: float) -> None:
    """The signals of the right passage and of an unanswered question's best one; hit@3 or
    silence per group at 0.87, former and default; the focus rule by hit@1 with the gate open."""
    ranker = FusionRanker("hybrid")
    right, wrong = [], []
    for entry in recorded:
        if not entry.question:
            continue
        best = best_per_item(ranker.score(entry.question, entry.keyword, entry.by_vector)[0])
        if entry.case.answerable:
            right += [x for x in best if accepts(entry.case, item_id=x.candidate.item_id,
                                                 title=x.candidate.title, heading=x.candidate.heading,
                                                 url=x.candidate.url)][:1]
        elif best:
            wrong.append(max(best[:3], key=lambda x: x.candidate.similarity))
    print("\n| Candidate | cosine median, 90th percentile | lead median | keyword rank < 3 |")
    print("| --- | --- | --- | --- |")
    for label, rows in (("right passage", right), ("best unanswered", wrong)):
        cos = sorted(x.candidate.similarity for x in rows)
        agree = sum(x.keyword_rank is not None and x.keyword_rank < 3 for x in rows)
        print(f"| {label} | {statistics.median(cos):.3f}, {cos[int(0.9 * (len(cos) - 1))]:.3f} | "
              f"{statistics.median(x.lead for x in rows):.3f} | {agree} of {len(rows)} |")
    print("\n| Group | Questions | former | default |")
    print("| --- | ---: | ---: | ---: |")
    by_group: dict[str, list] = {}
    for make in (lambda: FusionRanker("hybrid", transfer=False), lambda: FusionRanker("hybrid")):
        for entry, result in zip(recorded, quick(recorded, make(), Gate(0.87, offset)), strict=True):
            by_group.setdefault(entry.case.group_label, []).append(result[2])
    for group, values in sorted(by_group.items()):
        half = len(values) // 2
        print(f"| {group} | {half} | {100 * sum(values[:half]) / half:.0f} | "
              f"{100 * sum(values[half:]) / half:.0f} |")
    print("\n| Focus (threshold 0.80) | tuning hit@1 | hit@3 | held out hit@1 | hit@3 |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, options in (("off", {"focus": False}), ("named sources", {}),
                           ("named sources and items", {"focus_items": True})):
        first = {False: [0, 0, 0], True: [0, 0, 0]}
        ranker = FusionRanker("hybrid", **options)
        for entry in recorded:
            if not entry.case.answerable or not entry.question:
                continue
            gate = Gate(0.80, offset)
            hits = ranker.rank(entry.question, entry.vector, entry.keyword, entry.by_vector, gate)
            ok = [accepts(entry.case, item_id=h.candidate.item_id, title=h.candidate.title,
                          heading=h.candidate.heading, url=h.candidate.url) for h in hits]
            counts = first[entry.held_out]
            counts[0] += 1
            counts[1] += bool(ok and ok[0])
            counts[2] += any(ok)
        t, h = first[False], first[True]
        print(f"| {label} | {100 * t[1] / t[0]:.1f} | {100 * t[2] / t[0]:.1f} | "
              f"{100 * h[1] / h[0]:.1f} | {100 * h[2] / h[0]:.1f} |")


RANKERS: dict[str, Callable[[], Any]] = {
    "default": lambda: FusionRanker("hybrid"),
    "former (cosine or three words)": lambda: FusionRanker("hybrid", transfer=False),
}


async def load(kind: str, args: argparse.Namespace) -> tuple[list[Recorded], Any]:
    """The recorded candidates of ``kind`` (recorded now unless kept) and a replay embedder."""
    pickled = args.data_dir / f"candidates-{kind}.pickle"
    if pickled.exists() and not args.rerecord:
        recorded, inner = pickle.loads(pickled.read_bytes())
    else:
        recorded, engine_embedder, _ = await record(kind, args.data_dir, not args.no_windows)
        inner = (engine_embedder.name, engine_embedder.dim, engine_embedder.min_similarity,
                 engine_embedder.cross_language_offset)
        pickled.write_bytes(pickle.dumps((recorded, inner)))
    fake = attrs.make_class("Inner", ["name", "dim", "min_similarity", "cross_language_offset"])(*inner)
    return recorded, Vectors(fake, {entry.question: entry.vector for entry in recorded if entry.question})


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/passageway-gate-transfer"))
    parser.add_argument("--kinds", default="xquad,docs")
    parser.add_argument("--rerecord", action="store_true", help="ask the index again")
    parser.add_argument("--grid", action="store_true", help="the selection of the constants instead")
    parser.add_argument("--study", action="store_true", help="signals, groups and focus on docs instead")
    parser.add_argument("--no-windows", action="store_true",
                        help="index without the excerpt windows' vectors (the gate does not read them)")
    args = parser.parse_args()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    if args.grid or args.study:
        docs, embedder = await load("docs", args)
        offset = embedder.cross_language_offset
        if args.study:
            study(docs, offset)
        if args.grid:
            grid(docs, (await load("xquad", args))[0], offset)
        return 0
    for kind in [k for k in args.kinds.split(",") if k]:
        recorded, embedder = await load(kind, args)
        yes = sum(e.case.answerable for e in recorded)
        print(f"\n## {kind}: {len(recorded)} questions ({yes} answerable), "
              f"{sum(e.held_out for e in recorded)} held out")
        for name, make in RANKERS.items():
            ranker = make()
            sweep = {t: await replay(recorded, embedder, ranker, t) for t in THRESHOLDS}
            print_curve(f"{kind}, {name}", sweep)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

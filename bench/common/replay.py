"""The gate replayed over recorded candidates: each question's candidates and vectors kept once,
then the relevance gate, the windows and the rates computed again for every threshold
(bench/gate_levels.py, bench/window_gate.py, bench/excerpt_cut.py)."""

from __future__ import annotations

import contextlib
import math
import statistics
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import attrs
import numpy as np

from common import ROOT
from passageway.builtin.eval.cases import Case, accepts, contains_answer
from passageway.builtin.eval.engine import KernelEngine
from passageway.kernel.config import load_settings
from passageway.kernel.query.recall import question_for
from passageway.kernel.query.search import gather_candidates
from passageway.kernel.store import Candidate
from passageway.kernel.text.chunking import digest_of
from passageway.kernel.text.stopwords import content_words, words
from passageway.kernel.text.windows import flat, window_plan, window_texts
from passageway.testing.recall import recall_over as recall

WEIGHTS = {"answers": (3, 1), "balanced": (1, 1), "silence": (1, 3)}


@attrs.frozen
class Asked:
    case: Case
    question: str
    vector: np.ndarray
    keyword: list[Candidate]
    by_vector: list[Candidate]
    half: int
    """0 or 1: the half of the articles (answerable) or of the questions (unanswerable)."""


class Replay:
    """A store that answers with the candidates recorded for the question being replayed."""

    source = "replay"

    def __init__(self) -> None:
        self.lists: tuple[list[Candidate], list[Candidate]] = ([], [])

    def search(self, question: str, vector: np.ndarray, limit: int):  # type: ignore[no-untyped-def]
        return self.lists

    async def items(self, item_ids: Sequence[str]) -> list:
        return []


class Vectors:
    """The question vectors, handed out again: the embedder of a replay."""

    def __init__(self, inner, vectors: dict[str, np.ndarray]) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.vectors = inner, vectors
        self.name, self.dim, self.min_similarity = inner.name, inner.dim, inner.min_similarity
        self.cross_language_offset = inner.cross_language_offset

    async def embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        return np.stack([self.vectors[text] for text in texts])


async def ask_each(engine: KernelEngine, cases: Sequence[Case]) -> tuple[list[tuple], tuple]:  # type: ignore[type-arg]
    """Each case asked once of ``engine``'s built index, as recall asks: ``(case, question,
    keyword candidates, vector candidates)`` a case, and what a replay of them needs (the
    questions' vectors behind the embedder, the hybrid ranker, the vector cache, a
    :class:`Replay` store) (bench/answer_missing.py, bench/passage_choice.py)."""
    stores = [source.store for source in engine.kernel.sources.values() if source.store is not None]
    vectors: dict[str, np.ndarray] = {}
    entries = []
    for case in cases:
        question = question_for(case.query, engine.embedder).text
        vectors[question] = (await engine.embedder.embed([question], "query")).reshape(-1)
        keyword, by_vector, _ = await gather_candidates(question, vectors[question], stores)
        entries.append((case, question, keyword, by_vector))
    return entries, (Vectors(engine.embedder, vectors), engine.ranker("hybrid"), engine.kernel.vector_cache,
                     Replay())


def docs_cases(files: Sequence[str], projects: str | tuple[str, ...]) -> list[Case]:
    """The answerable cases of ``corpus/docs`` question files whose group starts with ``projects``."""
    from passageway.builtin.eval.cases import load_cases

    return [case for case in load_cases([ROOT / "corpus" / "docs" / name for name in files]).cases
            if case.answerable and case.group_label.startswith(projects)]


def _written(config: str, index: Path, prefix: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix=f"passageway-{prefix}-")) / "passageway.toml"
    path.write_text(config, encoding="utf-8")
    index.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.asynccontextmanager
async def asked_engine(config: str, index: Path, cases: Sequence[Case],
                       prefix: str) -> AsyncIterator[tuple[KernelEngine, list[tuple], tuple]]:  # type: ignore[type-arg]
    """The real kernel on the configuration text ``config``, its index built in ``index``, and
    :func:`ask_each` of ``cases`` asked of it (bench/answer_missing.py, bench/passage_choice.py,
    bench/shown_answers.py)."""
    path = _written(config, index, prefix)
    async with KernelEngine.open(load_settings(config_path=path), data_dir=index,
                                 progress=lambda line: None) as engine:
        await engine.build()
        entries, replay = await ask_each(engine, cases)
        yield engine, entries, replay


def config_text() -> str:
    python = sys.executable
    return "".join(
        f'[[connector]]\nname = "corpus-{language}"\n'
        f'command = ["{python}", "-m", "passageway_connector_markdown"]\n'
        f'env = {{ FOLDER = "{ROOT / "corpus" / language}" }}\n\n'
        for language in ("en", "de")
    )


@contextlib.asynccontextmanager
async def corpus_engine(data_dir: Path | None, name: str) -> AsyncIterator[KernelEngine]:
    """The real kernel over both corpus folders, built (the index kept in ``data_dir``, else in a
    new folder under /tmp named after the benchmark)."""
    folder = Path(tempfile.mkdtemp(prefix=f"passageway-{name}-"))
    config = folder / "passageway.toml"
    config.write_text(config_text(), encoding="utf-8")
    data_dir = data_dir or folder / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    async with KernelEngine.open(load_settings(config_path=config), data_dir=data_dir,
                                 progress=lambda line: None) as engine:
        await engine.build()
        yield engine


def halves(cases: Sequence[Case]) -> list[int]:
    articles = sorted({case.expect[0] for case in cases if case.expect})
    counters: dict[str, int] = {}
    result = []
    for case in cases:
        if case.expect:
            result.append(articles.index(case.expect[0]) % 2)
        else:
            group = case.group_label
            counters[group] = counters.get(group, 0) + 1
            result.append(counters[group] % 2)
    return result


async def best_window_cosines(cache, vector, candidates) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Each candidate passage's best cosine with the question ``vector``: its own, or one of its
    excerpt windows' in ``cache`` (a candidate known only by keywords counts its own as -1)."""
    texts = {candidate.text: candidate.similarity for candidate in candidates}
    plans = {text: window_plan(flat(text)) for text in texts}
    found = await cache.get_many([digest for plan in plans.values() for _, digest in plan])
    best = {}
    for text, plan in plans.items():
        cosines = [float(np.dot(found[digest], vector)) for _, digest in plan if digest in found]
        best[text] = max([-1.0 if math.isnan(texts[text]) else texts[text], *cosines])
    return best


def best_windows(asked: Sequence[Asked], found: dict[str, np.ndarray]) -> dict[tuple[int, str, int], float]:
    """(question number, source, passage key) → the best window cosine of that passage."""
    best = {}
    for number, entry in enumerate(asked):
        for candidate in {(c.source, c.passage_key): c for c in entry.keyword + entry.by_vector}.values():
            digests = [digest_of(text) for text in window_texts(candidate.text)]
            vectors = [found[digest] for digest in digests if digest in found]
            if vectors:
                best[(number, candidate.source, candidate.passage_key)] = max(
                    float(vector @ entry.vector) for vector in vectors
                )
    return best


def signal(name: str, weight: float, number: int, entry: Asked, windows: dict
           ) -> Callable[[Candidate], float]:
    pool = {(c.source, c.passage_key): c for c in entry.keyword + entry.by_vector}.values()
    if name == "window":
        return lambda c: max(c.similarity, windows.get((number, c.source, c.passage_key), 0.0) - weight)
    if name == "lead":
        median = statistics.median(c.similarity for c in pool) if pool else 0.0
        return lambda c: c.similarity + weight * (c.similarity - median - 0.05)
    if name == "rare":
        question_words = set(content_words(entry.question))
        seen = {c.passage_key: set(words(f"{c.title} {c.text}")) for c in pool}
        rare = {w for w in question_words if sum(1 for s in seen.values() if w in s) <= 3}

        def covered(c: Candidate) -> float:
            if not rare:
                return c.similarity
            share = len(rare & seen.get(c.passage_key, set())) / len(rare)
            return c.similarity + weight * (share - 0.5)
        return covered
    return lambda c: c.similarity


@attrs.frozen
class Rates:
    hit3: float
    answer3: float
    silence: float

    def weighted(self, level: str) -> float:
        hits, quiet = WEIGHTS[level]
        return hits * self.hit3 + quiet * self.silence


async def replay(asked: Sequence[Asked], embedder, ranker, cache, threshold: float,  # type: ignore[no-untyped-def]
                 adjust: Callable[[int, Asked], Callable[[Candidate], float]] | None = None,
                 ) -> list[tuple[int, bool, bool, bool]]:
    """Per question: (half, answerable, hit@3 or silent, answer@3)."""
    store = Replay()
    results = []
    for number, entry in enumerate(asked):
        keyword, by_vector = entry.keyword, entry.by_vector
        if adjust is not None:
            cosine = adjust(number, entry)
            keyword = [attrs.evolve(c, similarity=cosine(c)) for c in keyword]
            by_vector = sorted((attrs.evolve(c, similarity=cosine(c)) for c in by_vector),
                               key=lambda c: -c.similarity)
        store.lists = (keyword, by_vector)
        answer = await recall(entry.question, [store], embedder, ranker, min_similarity=threshold,
                              vector_cache=cache)
        case = entry.case
        if not case.answerable:
            results.append((entry.half, False, answer.silent, False))
            continue
        right = [h for h in answer.hits
                 if accepts(case, item_id=h.item_id, title=h.title, heading=h.heading, url=h.url)]
        results.append((entry.half, True, bool(right), answered(case, right)))
    return results


def answered(case: Case, right: Sequence) -> bool:  # type: ignore[type-arg]
    """answer@k's check on the right hits: an accepted answer in a hit's excerpt or in the heading
    shown above it (``contains_answer`` with the heading, as ``builtin/eval/metrics.py`` reads it)."""
    return any(contains_answer(case, hit.text, hit.heading) for hit in right)


def rates(results, half: int | None = None) -> Rates:  # type: ignore[no-untyped-def]
    chosen = [r for r in results if half is None or r[0] == half]
    answerable = [r for r in chosen if r[1]]
    unanswerable = [r for r in chosen if not r[1]]
    return Rates(
        100 * sum(r[2] for r in answerable) / len(answerable),
        100 * sum(r[3] for r in answerable) / len(answerable),
        100 * sum(r[2] for r in unanswerable) / len(unanswerable),
    )

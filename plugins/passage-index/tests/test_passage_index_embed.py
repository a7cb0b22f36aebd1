"""`passageway index --embed`: vectors in embeddings.json order, reuse on a rerun, no address
written, and no network request at all without --embed.

The toy embedder is registered as a plugin kind, so the command builds it from ``[embedder]``
exactly as it builds a real one; one test uses the built-in model.
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
from pathlib import Path

import jsonschema
import numpy as np
import passageway_passage_index
import pytest
from passageway_passage_index.files import load_schema

from passageway import hookimpl
from passageway.kernel import plugins
from passageway.kernel.cli import main
from passageway.kernel.errors import EmbedderError
from passageway.testing import MemoryVectorCache, link_converted_model
from passageway.testing.toy_embedder import ToyEmbedder, toy_vectors
from passageway.testing.toy_embedder import plugin as toy_plugin

FIXTURES = Path(__file__).parent / "fixtures"
BUILD_PLUGIN_MANAGER = plugins.build_plugin_manager  # before any fixture replaces it
HOSTED_NAME = "openai:text-embedding-3-small@embeddings.internal.example:8443#0a1b2c3d"


class _MoreToys:
    @hookimpl
    def passageway_register_embedders(self, register):
        register("toy32", lambda settings, context: ToyEmbedder(dim=32))
        register("hosted", lambda settings, context: ToyEmbedder(dim=16, name=HOSTED_NAME))
        register("address", lambda settings, context: ToyEmbedder(name="http://10.0.0.7/model"))

        class Failing(ToyEmbedder):
            async def embed(self, texts, kind):
                raise EmbedderError("the toy embedder fails on purpose")

        register("toyfail", lambda settings, context: Failing())


@pytest.fixture(autouse=True)
def toy_plugins(monkeypatch, tmp_path):
    original = plugins.build_plugin_manager

    def with_toys(env=None, **kwargs):
        extra = (("toy", toy_plugin), ("more", _MoreToys()), ("passage_index", passageway_passage_index))
        return original(env, extra=extra, load_entry_points=False)

    monkeypatch.setattr(plugins, "build_plugin_manager", with_toys)
    for name in ("PASSAGEWAY_CONFIG", "PASSAGEWAY_DATA_DIR", "PASSAGEWAY_MODEL_DIR", "PASSAGEWAY_INSTANCE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


@pytest.fixture
def site(tmp_path: Path) -> Path:
    folder = tmp_path / "site-dist"
    shutil.copytree(FIXTURES / "site", folder)
    return folder


def config(tmp_path: Path, kind: str = "toy") -> Path:
    path = tmp_path / f"{kind}.toml"
    path.write_text(f'[embedder]\nkind = "{kind}"\n', encoding="utf-8")
    return path


def index(capsys, site: Path, *options: str) -> dict:
    assert main(["index", str(site), *options]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def read_output(site: Path) -> tuple[dict, dict, np.ndarray]:
    chunks = json.loads((site / "ai" / "chunks.json").read_text(encoding="utf-8"))
    meta = json.loads((site / "ai" / "embeddings.json").read_text(encoding="utf-8"))
    rows = np.fromfile(site / "ai" / "embeddings.bin", dtype="<f4")
    rows = rows.reshape(len(meta["passages"]), meta["dimension"])
    return chunks, meta, rows


def embedding_input(chunk: dict) -> str:
    return " > ".join([chunk["title"], *chunk["headingPath"]]) + "\n\n" + chunk["text"]


def test_embed_writes_unit_rows_in_the_order_of_embeddings_json(site, tmp_path, capsys):
    summary = index(capsys, site, "--embed", "--config", str(config(tmp_path)))
    assert summary["embeddings"] == {
        "passages": 15, "embedded": 15, "reused": 0, "model": "toy-hash-64", "dimension": 64,
        "bytes": 15 * 64 * 4,
    }
    chunks, meta, rows = read_output(site)
    jsonschema.Draft202012Validator(load_schema("passage-embeddings")).validate(meta)
    assert (meta["provider"], meta["model"], meta["embeddingSpace"]) == ("toy", "toy-hash-64", "toy-hash-64")
    assert meta["sourceDigest"] == chunks["sourceDigest"]
    assert [(row["id"], row["variant"], row["digest"]) for row in meta["passages"]] == [
        (chunk["id"], chunk["variant"], chunk["digest"]) for chunk in chunks["chunks"]
    ]
    assert (site / "ai" / "embeddings.bin").stat().st_size == summary["embeddings"]["bytes"]
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    expected = toy_vectors([embedding_input(chunk) for chunk in chunks["chunks"]], 64)
    assert np.allclose(rows, expected, atol=1e-6)


def test_a_rerun_after_editing_one_page_reuses_every_other_passage(site, tmp_path, capsys):
    toml = str(config(tmp_path))
    index(capsys, site, "--embed", "--config", toml)
    page = site / "guide" / "config.md"
    page.write_text(page.read_text().replace("Stands alone.", "Stands alone, edited."))
    again = index(capsys, site, "--embed", "--config", toml)["embeddings"]
    assert (again["embedded"], again["reused"]) == (1, 14)
    chunks, _, rows = read_output(site)
    expected = toy_vectors([embedding_input(chunk) for chunk in chunks["chunks"]], 64)
    assert np.allclose(rows, expected, atol=1e-6)

    # The previous files alone are enough (a build machine without the vector cache) ...
    shutil.rmtree(tmp_path / "home" / ".local" / "share" / "passageway" / "vectors")
    page.write_text(page.read_text().replace("The first notes section.", "The first notes, edited."))
    third = index(capsys, site, "--embed", "--config", toml)["embeddings"]
    assert (third["embedded"], third["reused"]) == (1, 14)
    # ... and so is the cache alone (a fresh build output).
    for name in ("embeddings.json", "embeddings.bin"):
        (site / "ai" / name).unlink()
    fourth = index(capsys, site, "--embed", "--config", toml)["embeddings"]
    assert (fourth["embedded"], fourth["reused"]) == (0, 15)


def test_a_model_or_dimension_change_embeds_every_passage(site, tmp_path, capsys):
    index(capsys, site, "--embed", "--config", str(config(tmp_path)))
    other = index(capsys, site, "--embed", "--config", str(config(tmp_path, "toy32")))["embeddings"]
    assert (other["embedded"], other["reused"], other["dimension"]) == (15, 0, 32)
    _, meta, rows = read_output(site)
    assert meta["dimension"] == 32 and rows.shape == (15, 32)


def test_neither_file_records_an_address(site, tmp_path, capsys):
    summary = index(capsys, site, "--embed", "--config", str(config(tmp_path, "hosted")))
    assert summary["embeddings"]["model"] == "text-embedding-3-small"
    _, meta, _ = read_output(site)
    assert (meta["provider"], meta["model"], meta["embeddingSpace"]) == (
        "openai", "text-embedding-3-small", "openai:text-embedding-3-small#0a1b2c3d",
    )
    for name in ("chunks.json", "embeddings.json"):
        assert "internal.example" not in (site / "ai" / name).read_text(encoding="utf-8")
    assert main(["index", str(site), "--embed", "--config", str(config(tmp_path, "address"))]) == 2
    assert "holds an address" in capsys.readouterr().err


def test_a_failing_embedder_writes_nothing(site, tmp_path, capsys):
    assert main(["index", str(site), "--embed", "--config", str(config(tmp_path, "toyfail"))]) == 1
    error = capsys.readouterr().err
    assert error == "passageway: the toy embedder fails on purpose\n"
    assert not (site / "ai").exists()
    assert main(["index", str(site), "--embed", "--config", str(tmp_path / "missing.toml")]) == 2
    assert "--config" in capsys.readouterr().err


def test_without_embed_no_network_request_is_made(site, tmp_path, capsys, monkeypatch):
    attempts: list[object] = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise AssertionError("a network request was made")

    for name in ("connect", "connect_ex", "sendto", "bind"):
        monkeypatch.setattr(socket.socket, name, refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    with pytest.raises(AssertionError):  # the guard holds
        socket.create_connection(("127.0.0.1", 9))
    attempts.clear()

    # A configuration that would reach a server with --embed is not even read without it.
    summary = index(capsys, site, "--config", str(config(tmp_path, "hosted")))
    assert attempts == []
    assert "embeddings" not in summary
    assert sorted(path.name for path in (site / "ai").iterdir()) == ["chunks.json"]


def test_a_command_embedder_is_built_from_the_config(site, tmp_path, capsys):
    program = Path(__file__).resolve().parents[3] / "docs" / "examples" / "toy_hash_embedder.py"
    toml = tmp_path / "command.toml"
    toml.write_text(
        f'[embedder]\nkind = "command"\ncommand = {json.dumps([sys.executable, str(program)])}\n'
        "min_similarity = 0.5\n",
        encoding="utf-8",
    )
    summary = index(capsys, site, "--embed", "--config", str(toml))
    assert summary["embeddings"] | {"bytes": 0} == {
        "passages": 15, "embedded": 15, "reused": 0, "model": "toy-hash-64", "dimension": 64, "bytes": 0,
    }
    _, meta, rows = read_output(site)
    assert meta["provider"] == "command"
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)


def seed_the_converted_model(tmp_path_factory, monkeypatch, home: Path) -> None:  # type: ignore[no-untyped-def]
    """The session's one conversion of the built-in model, linked into ``home`` (which a first
    start would fill by converting again), and ``HOME`` set to it."""
    link_converted_model(tmp_path_factory.getbasetemp(), home)
    monkeypatch.setenv("HOME", str(home))


@pytest.mark.real_model
def test_the_built_in_model_embeds_a_small_site(tmp_path, tmp_path_factory, monkeypatch, capsys):
    seed_the_converted_model(tmp_path_factory, monkeypatch, tmp_path / "home")
    site = tmp_path / "small"
    site.mkdir()
    shutil.copytree(FIXTURES / "site" / "de", site / "de")
    documents = json.loads((FIXTURES / "site" / "documents.json").read_text())
    documents["documents"] = documents["documents"][2:]
    (site / "documents.json").write_text(json.dumps(documents))
    summary = index(capsys, site, "--embed")
    assert summary["embeddings"]["model"] == "multilingual-e5-small-q4"
    _, meta, rows = read_output(site)
    assert meta["provider"] == "builtin" and rows.shape == (2, 384)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-4)
    assert float(rows[0] @ rows[1]) > 0.5  # two German sentences about the same configuration



def test_the_vector_cache_comes_from_the_hook(site, tmp_path, capsys, monkeypatch):
    caches: list[MemoryVectorCache] = []

    class CachePlugin:
        @hookimpl
        def passageway_vector_cache(self, store, folder, embedder_name, dim):
            caches.append(MemoryVectorCache())
            return caches[-1]

    def with_cache(env=None, **kwargs):
        extra = (("toy", toy_plugin), ("passage_index", passageway_passage_index), ("cache", CachePlugin()))
        return BUILD_PLUGIN_MANAGER(env, extra=extra, load_entry_points=False)

    monkeypatch.setattr(plugins, "build_plugin_manager", with_cache)
    summary = index(capsys, site, "--embed", "--config", str(config(tmp_path)))
    (cache,) = caches
    assert cache.opened and cache.closed
    assert len(cache.vectors) == summary["embeddings"]["embedded"] > 0
    assert not (tmp_path / "home" / ".local" / "share" / "passageway" / "vectors").exists()

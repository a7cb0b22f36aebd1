"""``passageway.toml`` and the environment, turned into typed settings.

Everything a user can set is read here and nowhere else, strictly: an unknown key in the file is
an error naming the key and its table, a value of the wrong type is an error naming the key, and
a secret is only ever an ``env:NAME`` reference. ``docs/configuration.md`` documents every key
and variable below, and ``tests/test_docs.py`` fails when one is missing there.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from passageway.kernel.config_problems import Problems
from passageway.kernel.errors import ConfigError
from passageway.kernel.gate_levels import check_level
from passageway.kernel.instances import base_config_dir, base_data_dir, folder_name, resolve_instance
from passageway.kernel.invocation import hint
from passageway.kernel.tables import command_list, env_table, number, reject_unknown, secrets_table

SOURCE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*\Z")

DEFAULT_HUB = "https://huggingface.co"

# Every environment variable passageway reads, with its default (None: unset or required).
ENVIRONMENT: dict[str, str | None] = {
    "PASSAGEWAY_LOGIN_PASSWORD": None,
    "PASSAGEWAY_LOGIN_PASSWORD_FILE": None,
    "PASSAGEWAY_INSTANCE": None,
    "PASSAGEWAY_CONFIG": None,
    "PASSAGEWAY_BASE_URL": None,
    "PASSAGEWAY_TRUSTED_PROXY": None,
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
    """The ``[embedder]`` table, or one ``[embedders.NAME]`` table.

    The kernel reads ``kind`` and the gate numbers only. The table's other keys belong to the kind:
    they are kept in ``options`` as written, and the kind's factory checks them (an unknown key is
    a :class:`ConfigError` naming it and the table, see :mod:`passageway.kernel.tables`). So a
    plugin's kind can have settings of its own.
    """

    kind: str = "onnx"
    min_similarity: float | None = None
    cross_language_offset: float | None = None
    """None: the kind decides (the preset's for ``onnx``, 0 for ``command``)."""
    gate: str = "balanced"
    """The gate's named level (kernel/gate_levels.py); ``PASSAGEWAY_GATE`` overrides it."""
    options: Mapping[str, Any] = attrs.field(factory=dict)
    """The table's keys but ``kind``, ``min_similarity``, ``cross_language_offset`` and ``gate``."""
    table: str = attrs.field(default="[embedder]", eq=False)
    """The table's name, for messages: ``[embedder]`` or ``[embedders.NAME]``."""
    origin: str = attrs.field(default="passageway.toml", eq=False)
    """The file it was read from, for messages."""


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
EMBEDDER_KEYS = {"kind", "min_similarity", "cross_language_offset", "gate"}
"""The ``[embedder]`` keys the kernel reads (the gate's); the rest belong to the kind (``options``)."""
TOP_LEVEL_KEYS = {"connector", "embedder", "embedders", "store"}


def parse_config_text(text: str, origin: str = "passageway.toml") -> FileSettings:
    """Parse the text of a ``passageway.toml``; ``origin`` names it in error messages.

    Every mistake is found before one :class:`ConfigError` lists them all, each with its line
    (:mod:`passageway.kernel.config_problems`); only TOML that cannot be read stops at once.
    """
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{origin} is not valid TOML: {error}") from None
    found = Problems(text, origin)
    for key in document:
        found.attempt(lambda key=key: reject_unknown({key: 0}, TOP_LEVEL_KEYS, "the top level", origin),
                      None, key=key)
    raw_connectors = document.get("connector", [])
    if not isinstance(raw_connectors, list):
        found.add(f"{origin}: write each source as a [[connector]] table (double brackets)", "connector")
        raw_connectors = []
    connectors = []
    for index, raw in enumerate(raw_connectors, 1):
        connector = _connector(raw, index, origin, found)
        if connector is not None:
            connectors.append((index, connector))
    seen: dict[str, int] = {}
    for index, connector in connectors:
        if connector.name in seen:
            found.add(f"{origin}: connectors {seen[connector.name]} and {index} are both named "
                      f"{connector.name!r}; each source needs a name of its own (it names the index file)",
                      "connector", index, "name")
        seen.setdefault(connector.name, index)

    embedder = found.attempt(lambda: _embedder(document.get("embedder", {}), "[embedder]", origin),
                             EmbedderSettings(), "embedder")
    raw_embedders = document.get("embedders", {})
    if not isinstance(raw_embedders, dict):
        found.add(f"{origin}: [embedders] must hold tables such as [embedders.e5]", "embedders")
        raw_embedders = {}
    embedders = {}
    for name, raw in raw_embedders.items():
        table = f"embedders.{name}"
        if not SOURCE_NAME.match(name):
            found.add(f"{origin}: [{table}]: a name starts with a-z or 0-9, then a-z, 0-9, _ or -", table)
        elif name == "default":
            found.add(f"{origin}: [embedders.default] is reserved for the [embedder] table; rename it", table)
        else:
            embedders[name] = found.attempt(lambda raw=raw, table=table: _embedder(raw, f"[{table}]", origin),
                                            EmbedderSettings(), table)
    store = found.attempt(lambda: _store_table(document.get("store", {}), origin), {}, "store")
    found.raise_if_any()
    return FileSettings(tuple(connector for _, connector in connectors), embedder, embedders, store)


def _store_table(raw: Any, origin: str) -> dict[str, Any]:
    """The ``[store]`` table: plain values only (the store that reads it checks its keys)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: [store] must be a table of the chosen store's settings")
    for key, value in raw.items():
        if not isinstance(value, str | int | float | bool):
            raise ConfigError(f"{origin}: [store]: `{key}` must be a string, number or true/false")
    return dict(raw)


def _connector(raw: Any, index: int, origin: str, found: Problems) -> ConnectorSettings | None:
    """The ``index``-th ``[[connector]]`` table; each of its mistakes goes to ``found``."""
    if not isinstance(raw, dict):
        found.add(f"{origin}: [[connector]] {index} must be a table", "connector", index)
        return None
    label = f"[[connector]] {raw.get('name', index)!r}" if "name" in raw else f"[[connector]] {index}"
    before = len(found.found)

    def check(key: str, read: Any, fallback: Any) -> Any:
        return found.attempt(read, fallback, "connector", index, key)

    for key in raw:
        check(key, lambda key=key: reject_unknown({key: 0}, CONNECTOR_KEYS, label, origin), None)
    name = raw.get("name")
    if not isinstance(name, str) or not SOURCE_NAME.match(name):
        found.add(f"{origin}: {label}: `name` is required and starts with a-z or 0-9, then a-z, 0-9, _ or - "
                  f"(it names the index file), got {name!r}", "connector", index, "name")
        name = f"connector-{index}"
    defaults = ConnectorSettings(name=name, command=("x",))

    def limit(key: str, low: float, high: float, integer: bool = True) -> Any:
        return check(key, lambda: number(raw, key, getattr(defaults, key), label, origin, low=low,
                                         high=high, integer=integer), getattr(defaults, key))

    settings = ConnectorSettings(
        name=name,
        command=check("command", lambda: command_list(raw.get("command"), label, origin, required=True), ()),
        env=check("env", lambda: env_table(raw.get("env", {}), label, origin), {}),
        secrets=check("secrets", lambda: secrets_table(raw.get("secrets", {}), label, origin), {}),
        timeout=limit("timeout", 0.1, 86400, integer=False),
        max_line_bytes=int(limit("max_line_bytes", 1024, 2**31)),
        max_output_bytes=int(limit("max_output_bytes", 1024, 2**40)),
        max_delete_fraction=limit("max_delete_fraction", 0.0, 1.0, integer=False),
    )
    return settings if len(found.found) == before else None


def _embedder(raw: Any, where: str, origin: str) -> EmbedderSettings:
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: {where} must be a table")
    defaults = EmbedderSettings()
    kind = raw.get("kind", defaults.kind)
    if not isinstance(kind, str) or not kind:
        raise ConfigError(f"{origin}: {where}: `kind` is a name such as \"onnx\" or \"command\"")
    min_similarity = raw.get("min_similarity")
    if min_similarity is not None:
        min_similarity = number(raw, "min_similarity", 0.0, where, origin, low=0.0, high=1.0)
    cross_language_offset = raw.get("cross_language_offset")
    if cross_language_offset is not None:
        cross_language_offset = number(raw, "cross_language_offset", 0.0, where, origin, low=0.0, high=1.0)
    gate = check_level(raw.get("gate", defaults.gate), f"{origin}: {where}")
    if gate != defaults.gate and min_similarity is not None:
        raise ConfigError(f"{origin}: {where}: set `gate` or `min_similarity`, not both (a level is a "
                          "measured min_similarity)")
    return EmbedderSettings(
        kind=kind,
        min_similarity=min_similarity,
        cross_language_offset=cross_language_offset,
        gate=gate,
        options={key: value for key, value in raw.items() if key not in EMBEDDER_KEYS},
        table=where,
        origin=origin,
    )


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
    trusted_proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
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
            f"no configuration at {config_path}. Run `{hint('init', environ)}` to create one, "
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
        trusted_proxies=trusted_proxies(environ.get("PASSAGEWAY_TRUSTED_PROXY") or ""),
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


def trusted_proxies(text: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """``PASSAGEWAY_TRUSTED_PROXY``: addresses or networks (``127.0.0.1``, ``10.0.0.0/8``), comma-separated.

    :raises ConfigError: an entry is neither.
    """
    networks = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ConfigError(
                f"PASSAGEWAY_TRUSTED_PROXY lists {entry!r}, which is not an IP address or network "
                "(write the reverse proxy's address, such as 127.0.0.1 or 10.0.0.0/8)"
            ) from None
    return tuple(networks)


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

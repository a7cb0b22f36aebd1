"""``passageway.toml`` read into :class:`FileSettings`: the connectors, embedders and store tables.

Split from :mod:`passageway.kernel.config`, which adds the environment and builds the
:class:`~passageway.kernel.config.Settings` everything else reads: the file's rules are the larger
half and change on their own (a new ``[[connector]]`` key), while the environment's do not. The
file is read strictly: an unknown key is an error naming the key and its table, a value of the
wrong type names the key, every mistake is collected before one :class:`ConfigError` lists them
with their lines (:mod:`passageway.kernel.config_problems`), and a secret is only ever an
``env:NAME`` reference. ``docs/configuration.md`` documents every key, and ``tests/test_docs.py``
fails when one is missing there.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from typing import Any

import attrs

from passageway.kernel.config_problems import Problems
from passageway.kernel.errors import ConfigError
from passageway.kernel.gate_levels import check_level
from passageway.kernel.tables import command_list, env_table, number, reject_unknown, secrets_table

SOURCE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*\Z")
"""A source's (and a named embedder's) name: it names the index file."""


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

"""``passageway.toml`` and the environment, turned into typed settings.

Everything a user can set is read here and in :mod:`passageway.kernel.config_file` (the file's
tables), and nowhere else, strictly: an unknown key in the file is an error naming the key and its
table, a value of the wrong type is an error naming the key, and a secret is only ever an
``env:NAME`` reference. This module reads the environment (:data:`ENVIRONMENT`), the password and
the secrets, and joins them with the file into :class:`Settings`; the file's records
(``ConnectorSettings``, ``EmbedderSettings``, ``FileSettings``, ``parse_config_text``) are
imported from here as before. ``docs/configuration.md`` documents every key and variable, and
``tests/test_docs.py`` fails when one is missing there.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path

import attrs

from passageway.kernel.config_file import (
    ConnectorSettings,
    EmbedderSettings,
    FileSettings,
    parse_config_text,
)
from passageway.kernel.errors import ConfigError
from passageway.kernel.gate_levels import check_level
from passageway.kernel.instances import base_config_dir, base_data_dir, folder_name, resolve_instance
from passageway.kernel.invocation import hint

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
    file_settings = _with_gate(_read_file(config_path, require_file, environ), environ)
    port, base_url, log_level = _port(environ), _base_url(environ), _log_level(environ)
    return Settings(
        instance=instance,
        config_path=config_path,
        config_dir=config_dir,
        data_dir=data_dir,
        shared_data_dir=shared_data_dir,
        model_dir=model_dir,
        model_hub=(environ.get("PASSAGEWAY_MODEL_HUB") or DEFAULT_HUB).rstrip("/"),
        host=environ.get("PASSAGEWAY_HOST") or "127.0.0.1",
        port=port,
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


def _read_file(config_path: Path, require_file: bool, environ: Mapping[str, str]) -> FileSettings:
    """``passageway.toml``; without one, the defaults, or an error when it is required."""
    if config_path.is_file():
        try:
            text = config_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"cannot read {config_path}: {error}") from None
        return parse_config_text(text, str(config_path))
    if require_file:
        raise ConfigError(
            f"no configuration at {config_path}. Run `{hint('init', environ)}` to create one, "
            "or point PASSAGEWAY_CONFIG at your passageway.toml."
        )
    return FileSettings()


def _with_gate(file_settings: FileSettings, environ: Mapping[str, str]) -> FileSettings:
    """``PASSAGEWAY_GATE`` put into ``[embedder]``, which must not set ``min_similarity`` too."""
    if not environ.get("PASSAGEWAY_GATE"):
        return file_settings
    gate = check_level(environ["PASSAGEWAY_GATE"], "PASSAGEWAY_GATE")
    if gate != "balanced" and file_settings.embedder.min_similarity is not None:
        raise ConfigError(f"PASSAGEWAY_GATE={gate} and [embedder] min_similarity are both set; "
                          "unset one (a level is a measured min_similarity)")
    return attrs.evolve(file_settings, embedder=attrs.evolve(file_settings.embedder, gate=gate))


def _port(environ: Mapping[str, str]) -> int:
    port_text = environ.get("PASSAGEWAY_PORT") or "8082"
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ConfigError(f"PASSAGEWAY_PORT must be a port number from 1 to 65535, got {port_text!r}")
    return int(port_text)


def _base_url(environ: Mapping[str, str]) -> str | None:
    base_url = environ.get("PASSAGEWAY_BASE_URL") or None
    if base_url is not None and not re.match(r"https?://[^/\s]+", base_url):
        raise ConfigError(
            f"PASSAGEWAY_BASE_URL must be the server's public https:// address, got {base_url!r}"
        )
    return base_url


def _log_level(environ: Mapping[str, str]) -> str:
    log_level = (environ.get("PASSAGEWAY_LOG_LEVEL") or "INFO").upper()
    if log_level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise ConfigError(f"PASSAGEWAY_LOG_LEVEL is DEBUG, INFO, WARNING or ERROR, got {log_level!r}")
    return log_level


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


def password_or_none(environ: Mapping[str, str] | None = None) -> str | None:
    """:func:`load_password`, or None when its file cannot be read: a kernel whose configuration
    is broken still starts (to answer ``/health``), and its problem is reported there."""
    try:
        return load_password(environ)
    except ConfigError:
        return None

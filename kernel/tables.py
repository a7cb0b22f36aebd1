"""Checks for the tables of ``passageway.toml``, shared by the kernel and the plugins that read a
table of their own (an embedder kind's ``[embedder]`` keys, a store's ``[store]``).

Each check raises :class:`~passageway.kernel.errors.ConfigError` with a message that names the
file (``origin``), the table (``where``) and the key, and never echoes a value that may be a
secret.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from passageway.kernel.errors import ConfigError

SECRET_REFERENCE = re.compile(r"env:([A-Za-z_][A-Za-z0-9_]*)\Z")
ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def reject_unknown(table: Mapping[str, Any], allowed: set[str], where: str, origin: str) -> None:
    for key in table:
        if key not in allowed:
            raise ConfigError(
                f"{origin}: unknown key {key!r} in {where}; the keys there are: {', '.join(sorted(allowed))}"
            )


def command_list(value: Any, where: str, origin: str, *, required: bool) -> tuple[str, ...]:
    if value is None and not required:
        return ()
    if value is None:
        raise ConfigError(
            f"{origin}: {where}: `command` is required: the program and its arguments as a list, such as "
            '["/path/to/python", "-m", "passageway_connector_markdown"]'
        )
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


def env_table(value: Any, where: str, origin: str) -> dict[str, str]:
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


def secrets_table(value: Any, where: str, origin: str) -> dict[str, str]:
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


def number(
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


def referenced_variables(value: Any) -> list[str]:
    """The variable names of every ``env:NAME`` string anywhere in ``value`` (a table as written).

    The server hides their values from its log whatever table holds them, a plugin's included.
    """
    if isinstance(value, str):
        match = SECRET_REFERENCE.match(value)
        return [match.group(1)] if match else []
    if isinstance(value, Mapping):
        return [name for item in value.values() for name in referenced_variables(item)]
    if isinstance(value, list | tuple):
        return [name for item in value for name in referenced_variables(item)]
    return []

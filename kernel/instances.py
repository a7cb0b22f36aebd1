"""Instances: several passageway set-ups on one machine, each with its own folders.

An instance named ``work`` reads ``~/.config/passageway-work/`` and keeps its indexes under the
platform's data folder in ``passageway-work``; no name means ``passageway``. See
``docs/configuration.md``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path

from passageway.kernel.errors import ConfigError
from passageway.kernel.invocation import hint

INSTANCE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*\Z")


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
            f"Create it with `{hint(f'--instance {name} init', environ)}`."
        )
    if creating or environ.get("PASSAGEWAY_CONFIG"):
        return None
    known = existing_instances(environ)
    if known and not (base_config_dir(environ) / "passageway").is_dir():
        raise ConfigError(
            f"this machine has only named instances ({', '.join(known)}); pick one with --instance NAME"
        )
    return None

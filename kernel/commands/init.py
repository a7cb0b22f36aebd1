"""``passageway init``: the configuration folder, a generated password and a commented config."""

from __future__ import annotations

import argparse
import os
import secrets
import shlex
from pathlib import Path

NAME = "init"
HELP = "create the configuration folder with a generated password file and a commented passageway.toml"

TEMPLATE = """\
# passageway configuration: one [[connector]] table per source.
# Every key is described in docs/configuration.md.
#
# [[connector]]
# name = "notes"                  # a-z, 0-9, _ or -; it names the index file <data dir>/notes.db
# command = ["/path/to/python", "-m", "passageway_connector_markdown"]
# env = { FOLDER = "/path/to/notes" }
# secrets = { TOKEN = "env:NOTES_TOKEN" }   # references to the server's environment, never values
#
# [[connector]]                   # a Trilium server (docs/connectors/trilium.md)
# name = "trilium"
# command = ["/path/to/python", "-m", "passageway_connector_trilium"]
# env = { URL = "http://trilium:8080" }
# secrets = { TOKEN = "env:TRILIUM_TOKEN" }
#
# [[connector]]                   # spaces of a Confluence Data Center (docs/connectors/confluence.md)
# name = "wiki"
# command = ["/path/to/python", "-m", "passageway_connector_confluence"]
# env = { URL = "https://wiki.example.org", SPACES = "OPS|HR" }
# secrets = { TOKEN = "env:CONFLUENCE_TOKEN" }
# timeout = 3600                  # seconds per call: room to wait out a rate limit
#
# [embedder]                      # optional: the built-in multilingual e5-small is the default
# min_similarity = 0.87           # the relevance gate (the model's own unless set)
# cross_language_offset = 0.06    # how much lower the gate is across languages (the model's own)
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options; ``--instance NAME`` creates the folder of that instance."""


def _write_private(path: Path, text: str) -> None:
    """Create ``path`` readable and writable by the owner only; refuses to replace a file."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)


def run(args: argparse.Namespace) -> int:
    from passageway.kernel.config import base_config_dir, folder_name, resolve_instance
    from passageway.kernel.errors import ConfigError

    environ = os.environ
    instance = resolve_instance(args.instance, environ, creating=True)
    config_dir = base_config_dir(environ) / folder_name(instance)
    try:
        config_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        password_path = config_dir / "password"
        if password_path.exists():
            print(f"kept the existing password file {password_path}")
        else:
            _write_private(password_path, secrets.token_urlsafe(32) + "\n")
            print(f"wrote a generated password to {password_path} (readable only by you)")
        config_path = config_dir / "passageway.toml"
        if config_path.exists():
            print(f"kept the existing {config_path}")
        else:
            config_path.write_text(TEMPLATE, encoding="utf-8")
            print(f"wrote {config_path}")
    except OSError as error:
        raise ConfigError(f"cannot create {config_dir}: {error.strerror}") from None

    instance_option = f" --instance {instance}" if instance else ""
    print()
    print("Next:")
    print(f"  1. Add your sources to {config_path} (one [[connector]] table each).")
    print("  2. Start the server with the password file:")
    password_file = shlex.quote(str(password_path))
    print(f"     PASSAGEWAY_LOGIN_PASSWORD_FILE={password_file} passageway{instance_option}")
    return 0

"""``passageway init``: the configuration folder, a generated password and a commented config."""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import sys
from collections.abc import Mapping
from pathlib import Path

NAME = "init"
HELP = "create the configuration folder with a generated password file and a commented passageway.toml"

TEMPLATE = """\
# passageway configuration: one [[connector]] table per source.
# Every key is described in docs/configuration.md.
#
# [[connector]]
# name = "notes"                  # a-z, 0-9, _ or -; it names the index file <data dir>/notes.db
# command = [{python}, "-m", "passageway_connector_markdown"]
# env = {{ FOLDER = "/path/to/notes" }}
# secrets = {{ TOKEN = "env:NOTES_TOKEN" }}   # references to the server's environment, never values
#
# [[connector]]                   # a Trilium server (docs/connectors/trilium.md)
# name = "trilium"
# command = [{python}, "-m", "passageway_connector_trilium"]
# env = {{ URL = "http://trilium:8080" }}
# secrets = {{ TOKEN = "env:TRILIUM_TOKEN" }}
#
# [[connector]]                   # spaces of a Confluence Data Center (docs/connectors/confluence.md)
# name = "wiki"
# command = [{python}, "-m", "passageway_connector_confluence"]
# env = {{ URL = "https://wiki.example.org", SPACES = "OPS|HR" }}
# secrets = {{ TOKEN = "env:CONFLUENCE_TOKEN" }}
# timeout = 3600                  # seconds per call: room to wait out a rate limit
#
# [embedder]                      # optional: the built-in multilingual e5-small is the default
# min_similarity = 0.87           # the relevance gate (the model's own unless set)
# cross_language_offset = 0.06    # how much lower the gate is across languages (the model's own)
"""
"""The commented configuration; ``{python}`` is the interpreter that runs passageway, which has the
bundled connectors installed (a connector runs with an empty environment, so a bare ``python``
would be whatever comes first on ``PATH``)."""

FOLDER_SOURCE = """\
[[connector]]
name = {name}
command = [{python}, "-m", "passageway_connector_markdown"]
env = {{ FOLDER = {folder} }}

"""
"""The source ``init --folder DIR`` writes: the markdown files under DIR."""


def source_name(folder: Path) -> str:
    """The source name for a folder: its own name in the letters a source name allows."""
    return re.sub(r"[^a-z0-9_-]+", "-", folder.name.lower()).strip("-_") or "notes"


def folder_source(folder: Path, python: str | None = None) -> str:
    """The ``[[connector]]`` table for the markdown files under ``folder``."""
    return FOLDER_SOURCE.format(
        name=json.dumps(source_name(folder)),
        python=json.dumps(python or sys.executable),
        folder=json.dumps(str(folder)),
    )


def render_template(folder: Path | None = None, python: str | None = None) -> str:
    """The configuration ``init`` writes: a source for ``folder`` if given, then the commented example."""
    text = folder_source(folder, python) if folder is not None else ""
    return text + TEMPLATE.format(python=json.dumps(python or sys.executable))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--instance NAME`` creates the folder of that instance."""
    parser.add_argument(
        "--folder", type=Path, metavar="DIR",
        help="index the markdown files under DIR: writes its [[connector]] into the new passageway.toml",
    )
    parser.add_argument("--json", action="store_true", help="print the files written as JSON")


def _write_private(path: Path, text: str) -> None:
    """Create ``path`` readable and writable by the owner only; refuses to replace a file."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)


def run(args: argparse.Namespace) -> int:
    from passageway.kernel.instances import base_config_dir, folder_name, resolve_instance

    environ = os.environ
    instance = resolve_instance(args.instance, environ, creating=True)
    folder = None if args.folder is None else _checked_folder(args.folder)
    config_dir = base_config_dir(environ) / folder_name(instance)
    config_path, password_path = config_dir / "passageway.toml", config_dir / "password"
    written, kept = _write_files(config_dir, config_path, password_path, folder)
    added = folder is not None and str(config_path) in written
    # Even with nothing added: the running server may have started before an earlier `init --folder`.
    running = folder is not None and _server_running(environ, instance)
    if args.json:
        print(json.dumps({
            "instance": instance, "config": str(config_path), "password_file": str(password_path),
            "folder": str(folder) if folder else None, "written": written, "kept": kept,
            "restart_needed": running,
        }, indent=2))
        return 0
    for path in kept:
        if folder is None or path != str(config_path):
            print(f"kept the existing {path}")
        elif added:
            print(f"added a source for the markdown files under {folder} to {path}")
        else:
            print(f"{path} already has the source {source_name(folder)!r} for {folder}; nothing to add")
    for path in written:
        if path == str(password_path):
            print(f"wrote a generated password to {path} (readable only by you)")
        elif path in kept:
            continue  # added to, said above
        elif folder is not None:
            print(f"wrote {path} with a source for the markdown files under {folder}")
        else:
            print(f"wrote {path}")
    if added and not _has_markdown(folder):
        print(f"note: {folder} holds no .md or .markdown file; the markdown connector reads only those, "
              "so the source stays empty until it does")
    _print_next_steps(instance, config_path, password_path, folder, running)
    return 0


def _has_markdown(folder: Path | None, budget: int = 20000) -> bool:
    """Whether a file the markdown connector reads by default lies under ``folder``; True when
    ``budget`` names were looked at without an answer (a large tree: no note rather than a wait)."""
    if folder is None:
        return True
    seen = 0
    for _, folders, files in os.walk(folder):
        if any(name.lower().endswith((".md", ".markdown")) for name in files):
            return True
        seen += len(files) + len(folders)
        if seen > budget:
            return True
    return False


def _checked_folder(given: Path) -> Path:
    """The ``--folder`` argument, resolved; it must be a folder."""
    from passageway.kernel.errors import ConfigError

    folder = given.expanduser().resolve()
    if folder.is_file():
        raise ConfigError(
            f"--folder {given}: is a file, not a folder; name the folder that holds the "
            "markdown files (its parent, perhaps)"
        )
    if not folder.is_dir():
        raise ConfigError(f"--folder {given}: there is no such folder; name a folder of markdown files")
    return folder


def _write_files(
    config_dir: Path, config_path: Path, password_path: Path, folder: Path | None
) -> tuple[list[str], list[str]]:
    """Write the password and the configuration unless they exist (then a folder is added to the
    configuration); the paths written and the paths kept."""
    from passageway.kernel.errors import ConfigError

    written: list[str] = []
    kept: list[str] = []
    try:
        config_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if password_path.exists():
            kept.append(str(password_path))
        else:
            _write_private(password_path, secrets.token_urlsafe(32) + "\n")
            written.append(str(password_path))
        if config_path.exists():
            kept.append(str(config_path))
            if folder is not None and _add_folder(config_path, folder):
                written.append(str(config_path))
        else:
            config_path.write_text(render_template(folder), encoding="utf-8")
            written.append(str(config_path))
    except OSError as error:
        raise ConfigError(f"cannot create {config_dir}: {error.strerror}") from None
    return written, kept


def _print_next_steps(
    instance: str | None, config_path: Path, password_path: Path, folder: Path | None, running: bool
) -> None:
    from passageway.kernel.invocation import command

    run = command() + (f" --instance {instance}" if instance else "")
    print()
    print("Next:")
    step = 1
    if folder is None:
        print(f"  {step}. Add your sources to {config_path} (one [[connector]] table each),")
        print("     or run this again with --folder DIR for a folder of markdown files.")
        step += 1
    if running:
        print(f"  {step}. Restart the server that is running on this instance: it read {config_path.name}")
        print(f"     when it started, so it indexes {folder} only once restarted (stop it, then: {run})")
    else:
        print(f"  {step}. Start the server (it reads the password from {password_path}):")
        print(f"     {run}")
    print(f"  {step + 1}. Ask it from another terminal once it has indexed:")
    print(f"     {run} status")
    print(f"     {run} search \"a question your notes answer\"")


def _server_running(environ: Mapping[str, str], instance: str | None) -> bool:
    """Whether a ``passageway serve`` runs on this instance's data folder (its lock is held)."""
    from passageway.kernel.commands.server_lock import server_running
    from passageway.kernel.instances import base_data_dir, folder_name

    configured = environ.get("PASSAGEWAY_DATA_DIR")
    data_dir = Path(configured).expanduser() if configured else base_data_dir(environ) / folder_name(instance)
    return server_running(data_dir)


def _add_folder(config_path: Path, folder: Path) -> bool:
    """Append the source for ``folder`` to an existing configuration; False when a source of its
    name already indexes ``folder`` (``init --folder`` run twice), an error when it names another."""
    from passageway.kernel.config import parse_config_text
    from passageway.kernel.errors import ConfigError

    text = config_path.read_text(encoding="utf-8")
    block, name = folder_source(folder), source_name(folder)
    connectors = parse_config_text(text, str(config_path)).connectors
    existing = {connector.name: connector for connector in connectors}
    if name in existing:
        other = existing[name].env.get("FOLDER")
        if other is not None and Path(other).expanduser().resolve() == folder:
            return False
        raise ConfigError(
            f"{config_path} already has a source named {name!r}{f' (for {other})' if other else ''}; "
            "add the folder's [[connector]] by hand with another name"
        )
    config_path.write_text(text.rstrip("\n") + "\n\n" + block.rstrip("\n") + "\n", encoding="utf-8")
    return True

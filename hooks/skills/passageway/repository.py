"""Print the folder of the passageway repository this plugin was installed from.

The plugin holds only its manifest, its skills and the prompt hook; the documentation, the
connectors and the source the skills read and install are in the repository that serves as the
plugin's marketplace. Claude Code records where each marketplace lives in
``${CLAUDE_CONFIG_DIR:-~/.claude}/plugins/known_marketplaces.json`` (the folder given to
``/plugin marketplace add``, or its own clone of a git repository). This prints the first one that
is a passageway repository, the one named ``passageway`` first, and exits 1 with one line saying
what to do when there is none.

    python3 "${CLAUDE_PLUGIN_ROOT}/skills/passageway/repository.py"
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def marketplaces(config_dir: Path) -> list[tuple[str, Path]]:
    """``(name, folder)`` of each marketplace Claude Code knows, ``passageway`` first."""
    try:
        known = json.loads((config_dir / "plugins" / "known_marketplaces.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(known, dict):
        return []
    found = []
    for name, entry in known.items():
        location = entry.get("installLocation") if isinstance(entry, dict) else None
        if isinstance(location, str) and location:
            found.append((name, Path(location).expanduser()))
    return sorted(found, key=lambda pair: pair[0] != "passageway")


def is_passageway(folder: Path) -> bool:
    """Whether ``folder`` is a passageway repository: the marketplace, the docs and the package."""
    try:
        market = json.loads((folder / ".claude-plugin" / "marketplace.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    names = {entry.get("name") for entry in market.get("plugins", []) if isinstance(entry, dict)}
    return "passageway" in names and (folder / "docs").is_dir() and (folder / "pyproject.toml").is_file()


def main() -> int:
    config_dir = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
    for _name, folder in marketplaces(config_dir):
        if is_passageway(folder):
            print(folder.resolve())
            return 0
    print(
        f"no passageway repository among Claude Code's marketplaces ({config_dir}/plugins/"
        "known_marketplaces.json); ask the user for the folder of their passageway clone",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())

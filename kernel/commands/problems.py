"""Problems a start can see before anything runs, and the box that shows them all at once.

A broken ``passageway.toml`` does not stop the server (``/health`` says what is wrong), and a
connector whose program does not exist only fails when its source first syncs. Either way a
single log line above ``listening on`` is easy to miss, so ``passageway serve`` prints every
problem it can find in one box on stderr before it starts.
"""

from __future__ import annotations

import os
import re
import shutil
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

BOX_WIDTH = 78
CONNECTOR_TABLE = re.compile(r"\s*\[\[\s*connector\s*\]\]")
COMMAND_KEY = re.compile(r"\s*command\s*=")


def command_line_number(config_path: Path, connector_index: int) -> int | None:
    """The line of ``command =`` in the ``connector_index``-th ``[[connector]]`` table (from 1)."""
    try:
        lines = config_path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    table, inside = -1, False
    for number, line in enumerate(lines, start=1):
        if CONNECTOR_TABLE.match(line):
            table, inside = table + 1, True
        elif line.lstrip().startswith("[") and not line.startswith((" ", "\t")):
            inside = False  # another table begins
        elif inside and table == connector_index and COMMAND_KEY.match(line):
            return number
    return None


def missing_program(command: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """Why ``command[0]`` cannot be started with the ``PATH`` a connector gets, or None."""
    program = command[0]
    if os.sep in program:
        path = Path(program).expanduser()
        if not path.exists():
            return "command not found"
        if path.is_dir() or not os.access(path, os.X_OK):
            return "not executable"
        return None
    if shutil.which(program, path=environ.get("PATH") or os.defpath) is None:
        return "command not found"
    return None


def connector_problems(settings: Any, environ: Mapping[str, str]) -> list[str]:
    """One line per connector whose program cannot start, naming it and its line in the config."""
    problems = []
    for index, connector in enumerate(settings.connectors):
        reason = missing_program(connector.command, environ)
        if reason is None:
            continue
        line = command_line_number(settings.config_path, index)
        where = f"{settings.config_path}:{line}" if line else str(settings.config_path)
        problems.append(
            f"connector {connector.name!r}: {reason}: {connector.command[0]} (the `command` at {where}; "
            "connectors run with an empty environment, so give an absolute path)"
        )
    return problems


def render_box(title: str, problems: Sequence[str], footer: str = "") -> str:
    """``problems`` in a box of ASCII lines, each wrapped to fit, with ``title`` on the top edge.

    Words are never broken (a path must stay whole to be copied); a longer word widens the box.
    """
    width = BOX_WIDTH - 4
    lines: list[str] = []
    for problem in problems:
        wrapped = textwrap.wrap(problem, width - 2, break_on_hyphens=False, break_long_words=False) or [""]
        lines.append("- " + wrapped[0])
        lines.extend("  " + rest for rest in wrapped[1:])
    if footer:
        lines.append("")
        lines.extend(textwrap.wrap(footer, width, break_on_hyphens=False, break_long_words=False))
    inner = max([width, len(title) + 2, *(len(line) for line in lines)])
    top = f"+-- {title} " + "-" * (inner - len(title) - 2) + "+"
    body = [f"| {line.ljust(inner)} |" for line in lines]
    return "\n".join([top, *body, "+" + "-" * (inner + 2) + "+"])

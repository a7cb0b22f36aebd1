"""What a new user copies from the first pages: every repository path they name exists, and every
fenced shell command either runs here (offline) or names only packages and paths that exist.

The pages are README.md, docs/install.md, docs/claude-code.md, docs/reference/passage-index.md and
the passage index's own README. A command that needs the network, a running server or a home
folder of its own is not run; its ``--with ./FOLDER`` packages, the scripts and files it names,
and its ``pip install`` names are checked instead (passageway's own packages are not on PyPI).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("README.md", "docs/install.md", "docs/claude-code.md", "docs/reference/passage-index.md",
         "plugins/passage-index/README.md")
CLONE = "/path/to/passageway/"
"""How the pages write the clone's own folder in an absolute path."""
NOT_THE_REPOSITORY = ("ai/", "SITE_DIR", "search/", "_static/", "guide/", ".demo/")
"""Paths the pages name that are not in the repository: a built site's files, the demo's folder."""
BASES = ("", "hooks/", "kernel/")
"""Where a short path is read from: the clone, the plugin's folder, the kernel's (the README's
layout table names `index/` and `skills/` in their folders)."""
RUNNABLE = (
    ("passageway", "--version"), ("uv", "run", "passageway", "--version"),
    ("passageway", "index", "--help"), ("uv", "run", "passageway", "index", "--help"),
)
"""The fenced commands that run offline here, in this environment, as the page writes them."""


def shell_lines(page: str) -> list[str]:
    """The command lines of the page's fenced blocks without a language or marked as a shell,
    continuation lines joined and comments dropped; blocks of TOML or JSON are left out."""
    lines: list[str] = []
    block: list[str] | None = None
    shell = False
    for line in (ROOT / page).read_text(encoding="utf-8").splitlines():
        fence = re.match(r"^\s*```+\s*(\S*)", line)
        if fence and block is None:
            block, shell = [], fence.group(1) in ("", "sh", "bash", "shell", "console")
            continue
        if fence and block is not None:
            if shell and block and not block[0].lstrip().startswith(("[", "{", "|")):
                lines.extend(_commands(block))
            block = None
            continue
        if block is not None:
            block.append(line)
    return lines


def _commands(block: list[str]) -> list[str]:
    joined = "\n".join(block).replace("\\\n", " ")
    found = []
    for line in joined.splitlines():
        line = re.sub(r"\s+#\s.*$", "", line).strip()
        if line and not line.startswith("#"):
            found.append(line)
    return found


def named_paths(page: str) -> list[str]:
    """The repository paths the page's prose names in code spans, and every path inside the clone
    (``/path/to/passageway/...``) anywhere on the page, settings examples included."""
    whole = (ROOT / page).read_text(encoding="utf-8")
    paths = [found.rstrip(".") for found in re.findall(re.escape(CLONE) + r"([\w./-]+)", whole)]
    text = re.sub(r"```.*?```", "", whole, flags=re.DOTALL)
    for token in re.findall(r"`([^`\s]+)`", text):
        if token.startswith(CLONE):
            paths.append(token[len(CLONE):])
        elif ("/" in token and "://" not in token and not token.startswith(("/", "~", "$", "@"))
              and not token.startswith(NOT_THE_REPOSITORY)):
            paths.append(token.removeprefix("./"))
    return paths


def _exists(path: str) -> bool:
    return any((ROOT / base / path.rstrip("/")).exists() for base in BASES)


@pytest.mark.parametrize("page", PAGES)
def test_every_repository_path_a_page_names_exists(page):
    missing = [path for path in named_paths(page) if not _exists(path)]
    assert not missing, f"{page} names paths that are not in the repository: {missing}"


def test_the_pages_have_commands_to_check():
    assert all(shell_lines(page) for page in PAGES)
    assert "uv tool install" in " ".join(shell_lines("docs/install.md"))


@pytest.mark.parametrize("page", PAGES)
def test_every_fenced_command_names_what_exists(page):
    for line in shell_lines(page):
        for words in _simple_commands(line):
            _check_words(page, line, words)


def _simple_commands(line: str) -> list[list[str]]:
    """The words of each simple command of ``line`` (split at ``&&``, ``|``, ``;`` and parentheses)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;()")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # a placeholder in prose (<the repository's address>): words as written
        tokens = line.split()
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token and set(token) <= set("|&;()"):
            commands.append([])
        else:
            commands[-1].append(token)
    return [words for words in commands if words]


def _check_words(page: str, line: str, words: list[str]) -> None:
    for index, word in enumerate(words):
        if word == "--with":
            folder = words[index + 1].removeprefix("./")
            assert (ROOT / folder / "pyproject.toml").is_file(), f"{page}: `{line}` adds {folder}, no package"
        if word.startswith(CLONE):
            assert (ROOT / word[len(CLONE):]).exists(), f"{page}: `{line}` names {word}"
        runs_it = index == 0 or words[index - 1] in ("bash", "sh", "python", "python3")
        if runs_it and re.fullmatch(r"[\w.-]+/[\w./-]*\.(sh|py)", word):
            assert (ROOT / word).is_file(), f"{page}: `{line}` runs {word}, not in the repository"
    if words[:2] == ["pip", "install"] or words[2:4] == ["pip", "install"]:
        names = [word for word in words[words.index("install") + 1:] if not word.startswith("-")]
        unpublished = [name for name in names if name.startswith("passageway")]
        assert not unpublished, f"{page}: `{line}` installs {unpublished} from PyPI, where it is not"


@pytest.mark.parametrize("page", PAGES)
def test_the_fenced_commands_that_run_offline_work_verbatim(page):
    bin_folder = Path(sys.executable).parent
    for line in shell_lines(page):
        words = tuple(word for command in _simple_commands(line) for word in command)
        if words not in RUNNABLE:
            continue
        arguments = list(words[words.index("passageway") + 1:])
        done = subprocess.run(  # the environment's own `passageway`, as `uv run` would run it
            [str(bin_folder / "passageway"), *arguments], capture_output=True, text=True, timeout=120,
            cwd=ROOT, env={**os.environ, "PATH": f"{bin_folder}:{os.environ['PATH']}"},
        )
        assert done.returncode == 0, f"{page}: `{line}` failed: {done.stderr}"
        assert done.stdout.strip(), f"{page}: `{line}` printed nothing"

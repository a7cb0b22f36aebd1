"""Helpers for the command-line tests: the environment of a test instance, and the ``passageway``
command run as a real process with the toy embedder registered (no model to load)."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.server_helpers import make_kernel, running_server, wait_built, write_instance

# `passageway` with the toy embedder added to every plugin manager the process builds.
WITH_TOY = (
    "import sys\n"
    "from passageway.kernel import plugins, cli\n"
    "from passageway.testing.toy_embedder import plugin\n"
    "original = plugins.build_plugin_manager\n"
    "plugins.build_plugin_manager = lambda env=None, **options: original(\n"
    "    env, extra=(('toy', plugin),), load_entry_points=False)\n"
    "sys.exit(cli.main(sys.argv[1:]))\n"
)


def toy_command(arguments: Sequence[str]) -> list[str]:
    """The argv of ``passageway ARGUMENTS`` with the toy embedder available."""
    return [sys.executable, "-c", WITH_TOY, *arguments]


def process_environment(environ: Mapping[str, str], **extra: str) -> dict[str, str]:
    """``environ`` for a child process: the test instance's variables, this PATH, no instance."""
    child = {**environ, "PATH": os.environ["PATH"], "PASSAGEWAY_INSTANCE": "", **extra}
    child.pop("PASSAGEWAY_LOAD_PLUGINS", None)
    return child


def use_environment(monkeypatch: pytest.MonkeyPatch, environ: Mapping[str, str]) -> None:
    """Make ``environ`` this process's passageway environment (the commands read os.environ)."""
    for name in list(os.environ):
        if name.startswith("PASSAGEWAY_"):
            monkeypatch.delenv(name)
    for name, value in environ.items():
        if name != "PATH":
            monkeypatch.setenv(name, value)


def toy_manager(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every plugin manager built in this process also has the toy embedder."""
    from passageway.kernel import plugins
    from passageway.testing.toy_embedder import plugin

    original = plugins.build_plugin_manager

    def with_toy(env: Any = None, **options: Any) -> Any:
        return original(env, extra=(("toy", plugin),), load_entry_points=False)

    monkeypatch.setattr(plugins, "build_plugin_manager", with_toy)


@pytest.fixture
def passageway_log():  # type: ignore[no-untyped-def]
    """Removes the log handler a command installed, after the test."""
    yield
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_passageway", False):
            root.removeHandler(handler)


@contextlib.asynccontextmanager
async def built_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch | None = None, **instance: Any
) -> AsyncIterator[tuple[Any, str]]:
    """A live server on a test instance, its sources built; yields the kernel and the base URL.

    With ``monkeypatch`` the instance's environment is also this process's, for the commands.
    """
    environ = write_instance(tmp_path, **instance)
    if monkeypatch is not None:
        use_environment(monkeypatch, environ)
    kernel = make_kernel(environ)
    async with running_server(kernel) as url:
        await wait_built(kernel)
        yield kernel, url

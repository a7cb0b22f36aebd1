"""The ``passageway`` command.

Each of the kernel's subcommands is a module in ``passageway.kernel.commands`` with ``NAME``,
``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``; :data:`COMMANDS` lists them. A
plugin adds its own through ``passageway_register_commands`` (the builtins add ``eval``,
``model``, ``mcp`` and ``index``); those are loaded only when the line needs them (``--help``, or
a first word that is not the kernel's), so that the kernel's commands start without importing every plugin.
``--instance NAME`` is accepted anywhere on the line. A :class:`PassagewayError` becomes one line
on stderr and its exit code, never a traceback; so does output into a pipe whose reader stopped
early (:mod:`passageway.kernel.commands.closed_pipe`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any

from passageway import __version__
from passageway.kernel.commands.closed_pipe import quiet_when_the_reader_goes
from passageway.kernel.errors import PassagewayError, PluginError

COMMANDS: tuple[str, ...] = (
    "serve",
    "init",
    "plugins",
    "check_connector",
    "search",
    "status",
    "completion",
)
"""Modules under ``passageway.kernel.commands``, in the order ``--help`` shows them."""

DEFAULT_COMMAND = "serve"


def split_instance(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """Take ``--instance NAME`` (or ``--instance=NAME``) from anywhere in ``argv``.

    Arguments after a ``--`` belong to a program passageway runs and are left alone.
    """
    instance = None
    rest: list[str] = []
    arguments = list(argv)
    index = 0
    while index < len(arguments):
        argument = arguments[index]
        if argument == "--":
            rest.extend(arguments[index:])
            break
        if argument == "--instance":
            if index + 1 >= len(arguments):
                raise PassagewayError("--instance needs a name, for example --instance work")
            instance = arguments[index + 1]
            index += 2
            continue
        if argument.startswith("--instance="):
            instance = argument.split("=", 1)[1]
        else:
            rest.append(argument)
        index += 1
    return instance, rest


def build_parser(*, plugin_commands: bool = True) -> tuple[argparse.ArgumentParser, set[str]]:
    """The parser, and the names of its subcommands; the plugins' too unless ``plugin_commands``
    is false.

    :raises PluginError: a plugin cannot be loaded, or a command name is taken twice.
    """
    parser = argparse.ArgumentParser(
        prog="passageway",
        description="Retrieval for Claude over MCP. Without a command, runs the server (`serve`).",
        epilog="Every command takes --instance NAME (or PASSAGEWAY_INSTANCE) to pick an instance.",
    )
    parser.add_argument("--version", action="version", version=f"passageway {__version__}")
    parser.add_argument("--instance", metavar="NAME", help="use the instance NAME (see `passageway init`)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    names = set()
    commands: list[tuple[str, Any]] = []
    for module_name in COMMANDS:
        module = importlib.import_module(f"passageway.kernel.commands.{module_name}")
        commands.append((module.NAME, module))
    if plugin_commands:
        commands.extend(_plugin_commands({name for name, _ in commands}))
    for name, command in commands:
        sub = subparsers.add_parser(name, help=command.HELP, description=command.HELP)
        command.add_arguments(sub)
        sub.set_defaults(run=command.run)
        names.add(name)
    return parser, names


def _plugin_commands(taken: set[str]) -> list[tuple[str, Any]]:
    from passageway.kernel.plugins import build_plugin_manager, collect_registries

    registry = collect_registries(build_plugin_manager()).commands
    for name in registry.names():
        if name in taken:
            raise PluginError(
                f"plugin {registry.owners[name]!r} registers the command {name!r}, which is one of "
                f"passageway's own. Rename it, or disable the plugin with PASSAGEWAY_DISABLE_PLUGINS."
            )
    return [(name, registry.factories[name]) for name in registry.names()]


class UnknownCommand(PassagewayError):
    """The first word is no command: said as such, not as a stray argument of ``serve``."""

    exit_code = 2


OTHER_PACKAGES: dict[str, tuple[str, str]] = {
    "index": ("passageway-passage-index", "plugins/passage-index"),
}
"""Commands of passageway's own plugins that ship as a distribution of their own: the command,
its package and the package's folder in the clone (docs/reference/passage-index.md)."""


def unknown_command(word: str, names: set[str]) -> str:
    """One line: ``word`` is not a command, the closest one if any, and every command; for a
    command of a plugin that is not installed, which package adds it and how to install it."""
    import difflib

    if word in OTHER_PACKAGES:
        package, folder = OTHER_PACKAGES[word]
        return (
            f"unknown command {word!r}: it comes from the package {package} ({folder}/ in the "
            f"clone), which is not installed; from a clone run `uv sync --all-packages`, or for the "
            f"uv tool add it: `uv tool install --reinstall ./ --with ./connectors/markdown "
            f"--with ./{folder}` (docs/install.md)"
        )
    close = difflib.get_close_matches(word, sorted(names), n=1)
    hint = f"did you mean `{close[0]}`? " if close else ""
    return f"unknown command {word!r}; {hint}the commands are: {', '.join(sorted(names))}"


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        instance, rest = split_instance(argv)
        first_word = next((part for part in rest if not part.startswith("-")), None)
        asks_for_help = bool({"-h", "--help"} & set(rest))
        parser, names = build_parser(plugin_commands=False)
        if asks_for_help or (first_word is not None and first_word not in names):
            parser, names = build_parser()
        asks_for_help = asks_for_help or "--version" in rest
        if rest and not rest[0].startswith("-") and rest[0] not in names:
            raise UnknownCommand(unknown_command(rest[0], names))
        if first_word not in names and not asks_for_help and DEFAULT_COMMAND in names:
            rest = [DEFAULT_COMMAND, *rest]
        with quiet_when_the_reader_goes():
            args = parser.parse_args(rest)
            args.instance = instance
            if not getattr(args, "run", None):
                parser.print_help()
                return 2
            return int(args.run(args) or 0)
    except PassagewayError as error:
        print(f"passageway: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""The ``passageway`` command.

Each subcommand is a module in ``passageway.kernel.commands`` with ``NAME``, ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``; :data:`COMMANDS` lists them, so reading it
tells what the command can do. ``--instance NAME`` is accepted anywhere on the line. A
:class:`PassagewayError` becomes one line on stderr and its exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from passageway import __version__
from passageway.kernel.errors import PassagewayError

COMMANDS: tuple[str, ...] = (
    "serve",
    "init",
    "plugins",
    "eval",
    "model",
    "check_connector",
    "search",
    "status",
    "completion",
    "index",
    "mcp_stdio",
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


def build_parser() -> tuple[argparse.ArgumentParser, set[str]]:
    """The parser, and the names of its subcommands."""
    parser = argparse.ArgumentParser(
        prog="passageway",
        description="Retrieval for Claude over MCP. Without a command, runs the server (`serve`).",
        epilog="Every command takes --instance NAME (or PASSAGEWAY_INSTANCE) to pick an instance.",
    )
    parser.add_argument("--version", action="version", version=f"passageway {__version__}")
    parser.add_argument("--instance", metavar="NAME", help="use the instance NAME (see `passageway init`)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    names = set()
    for module_name in COMMANDS:
        module = importlib.import_module(f"passageway.kernel.commands.{module_name}")
        sub = subparsers.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
        names.add(module.NAME)
    return parser, names


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        instance, rest = split_instance(argv)
        parser, names = build_parser()
        first_word = next((part for part in rest if not part.startswith("-")), None)
        asks_for_help = bool({"-h", "--help", "--version"} & set(rest))
        if first_word not in names and not asks_for_help and DEFAULT_COMMAND in names:
            rest = [DEFAULT_COMMAND, *rest]
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

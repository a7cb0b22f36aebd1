"""``passageway serve`` (also what a bare ``passageway`` runs): the server."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from passageway.kernel.config import Settings

NAME = "serve"
HELP = "run the server: /mcp for MCP clients, /recall for the prompt hook, /health, and a status page at /"

MISSING_LOGIN_MESSAGE = (
    "no password is set, and the server does not run without one. Run `{init}` (it writes "
    "{path}), or set PASSAGEWAY_LOGIN_PASSWORD or PASSAGEWAY_LOGIN_PASSWORD_FILE."
)


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"a port number from 1 to 65535, got {text!r}")
    return int(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options win over the environment variables of the same meaning."""
    parser.add_argument(
        "--host", metavar="ADDRESS", help="where to listen (default: PASSAGEWAY_HOST, 127.0.0.1)"
    )
    parser.add_argument("--port", type=_port, metavar="N", help="the port (default: PASSAGEWAY_PORT, 8082)")
    parser.add_argument(
        "--config", type=Path, metavar="PATH", help="use this passageway.toml (default: PASSAGEWAY_CONFIG)"
    )


def run(args: argparse.Namespace) -> int:
    from passageway.kernel.app import Kernel
    from passageway.kernel.commands.logging_setup import configure_logging
    from passageway.kernel.commands.problems import connector_problems
    from passageway.kernel.config import load_settings
    from passageway.kernel.errors import ConfigError
    from passageway.kernel.instances import resolve_instance
    from passageway.kernel.server import bind_socket, run_server

    environ = dict(os.environ)
    options = (("host", "PASSAGEWAY_HOST"), ("port", "PASSAGEWAY_PORT"), ("config", "PASSAGEWAY_CONFIG"))
    for option, variable in options:
        value = getattr(args, option, None)
        if value is not None:
            environ[variable] = str(value)
    instance = resolve_instance(args.instance, environ)
    password, password_origin = _password(environ, instance)
    secrets = [password]
    problems: list[str] = []
    try:
        settings = load_settings(environ, instance=instance)
    except ConfigError as error:
        # A broken passageway.toml still gives a server that says so from /health and `status`.
        kernel = Kernel.broken(str(error), environ=environ, instance=instance)
        problems.extend(error.problems)  # every mistake of the file, one line each
        host, port, level = _listen_without_settings(environ, error)
    else:
        kernel = Kernel.create(settings, None, environ)
        if kernel.config_error is not None:
            problems.append(kernel.config_error)
        problems.extend(connector_problems(settings, environ))
        host, port, level = settings.host, settings.port, settings.log_level
        secrets += _secret_values(settings, environ)
    listener = bind_socket(host, port)  # a port in use is one line, before anything else is printed
    lock = _hold_data_folder(kernel)  # `search --local` and `init --folder` see a server runs here
    configure_logging(level, secrets)
    import logging

    log = logging.getLogger("passageway.server")
    log.info("password read from %s", password_origin)
    if kernel.config_error is not None:
        log.error("the configuration is broken: %s", kernel.config_error)
    elif kernel.settings is not None and not kernel.settings.connectors:
        from passageway.kernel.invocation import hint

        log.warning("no sources in %s: add a [[connector]] table there (or run `%s`), "
                    "then restart the server", kernel.settings.config_path, hint("init --folder DIR"))
    if problems:
        _print_problems(problems, host, port)
    try:
        run_server(kernel, host, port, on_listening=_foreground_progress(kernel), listener=listener)
    finally:
        if lock is not None:
            lock.close()
    return 0


def _password(environ: dict[str, str], instance: str | None) -> tuple[str, str]:
    """The password and where it was read; a password file found by the instance is put in
    ``environ`` as ``PASSAGEWAY_LOGIN_PASSWORD_FILE``, where the kernel reads it."""
    from passageway.kernel.commands.instance import find_password, password_file
    from passageway.kernel.errors import ConfigError

    password, password_origin = find_password(environ, instance)
    if not password:
        from passageway.kernel.invocation import hint

        path = password_file(environ, instance)
        raise ConfigError(MISSING_LOGIN_MESSAGE.format(path=path, init=hint("init")))
    if password_origin not in ("PASSAGEWAY_LOGIN_PASSWORD", environ.get("PASSAGEWAY_LOGIN_PASSWORD_FILE")):
        environ["PASSAGEWAY_LOGIN_PASSWORD_FILE"] = password_origin  # the kernel reads it from there
    return password, password_origin


def _listen_without_settings(environ: dict[str, str], error: Exception) -> tuple[str, int, str]:
    """Host, port and log level from the environment alone, for a server whose configuration is
    broken; a port that is not a number re-raises ``error``."""
    host = environ.get("PASSAGEWAY_HOST") or "127.0.0.1"
    port_text = environ.get("PASSAGEWAY_PORT") or "8082"
    if not port_text.isdigit():
        raise error
    level = (environ.get("PASSAGEWAY_LOG_LEVEL") or "INFO").upper()
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        level = "INFO"
    return host, int(port_text), level


def _secret_values(settings: Settings, environ: dict[str, str]) -> list[str]:
    """The values of every secret the connectors and the embedder name that is set, to mask in logs."""
    from passageway.kernel.config import resolve_secrets
    from passageway.kernel.errors import PassagewayError
    from passageway.kernel.tables import referenced_variables

    variables = [variable for connector in settings.connectors for variable in connector.secrets.values()]
    variables += referenced_variables(settings.embedder.options)
    values: list[str] = []
    for variable in variables:
        try:
            values.extend(resolve_secrets({"secret": variable}, environ, "secret").values())
        except PassagewayError:
            continue
    return values


def _print_problems(problems: list[str], host: str, port: int) -> None:
    from passageway.kernel.commands.problems import render_box

    count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
    print(render_box(
        f"passageway: {count} at start",
        problems,
        f"The server runs anyway and reports the same at http://{host}:{port}/health "
        "(and `passageway status`). Fix the configuration and restart it.",
    ), file=sys.stderr, flush=True)


def _hold_data_folder(kernel):  # type: ignore[no-untyped-def]
    """The server's lock on its data folder (:mod:`.server_lock`), or None when it has no settings
    or the folder cannot be written (the kernel then reports that itself)."""
    from passageway.kernel.commands.server_lock import hold

    if kernel.settings is None:
        return None
    try:
        return hold(kernel.settings.data_dir)
    except OSError:
        return None


def _foreground_progress(kernel):  # type: ignore[no-untyped-def]
    """On a terminal, a progress bar while a first build runs; nothing otherwise."""
    from passageway.kernel.progress import ProgressBar, watch_build

    bar = ProgressBar()
    if not bar.enabled:
        return None

    def start(app):  # type: ignore[no-untyped-def]
        import asyncio

        detach = bar.attach_to_logging()
        task = asyncio.ensure_future(watch_build(lambda: kernel.health(include_errors=False), bar))

        def stop() -> None:
            task.cancel()
            bar.clear()
            detach()

        return stop

    return start

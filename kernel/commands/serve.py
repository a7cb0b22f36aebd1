"""``passageway serve`` (also what a bare ``passageway`` runs): the server."""

from __future__ import annotations

import argparse
import os

NAME = "serve"
HELP = "run the server: /mcp for MCP clients, /recall for the prompt hook, /health"

MISSING_LOGIN_MESSAGE = (
    "no password is set, and the server does not run without one. Set PASSAGEWAY_LOGIN_PASSWORD, "
    "or PASSAGEWAY_LOGIN_PASSWORD_FILE to a file holding it (`passageway init` writes one)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options: the server reads PASSAGEWAY_HOST, PASSAGEWAY_PORT and the rest of the environment."""


def run(args: argparse.Namespace) -> int:
    from passageway.kernel.app import Kernel
    from passageway.kernel.config import load_password, load_settings, resolve_instance, resolve_secrets
    from passageway.kernel.errors import ConfigError, PassagewayError
    from passageway.kernel.logging_setup import configure_logging
    from passageway.kernel.server import run_server

    environ = os.environ
    password = load_password(environ)
    if not password:
        raise ConfigError(MISSING_LOGIN_MESSAGE)
    instance = resolve_instance(args.instance, environ)
    secrets = [password]
    try:
        settings = load_settings(environ, instance=instance)
    except ConfigError as error:
        # A broken passageway.toml still gives a server that says so from /health and `status`.
        kernel = Kernel.broken(str(error), environ=environ, instance=instance)
        host = environ.get("PASSAGEWAY_HOST") or "127.0.0.1"
        port_text = environ.get("PASSAGEWAY_PORT") or "8082"
        if not port_text.isdigit():
            raise
        port = int(port_text)
        level = (environ.get("PASSAGEWAY_LOG_LEVEL") or "INFO").upper()
        if level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            level = "INFO"
    else:
        kernel = Kernel.create(settings, None, environ)
        host, port, level = settings.host, settings.port, settings.log_level
        for owner in (*settings.connectors, settings.embedder):
            for key, variable in owner.secrets.items():
                try:
                    secrets.extend(resolve_secrets({key: variable}, environ, "secret").values())
                except PassagewayError:
                    continue
    configure_logging(level, secrets)
    if kernel.config_error is not None:
        import logging

        logging.getLogger("passageway.server").error("the configuration is broken: %s", kernel.config_error)
    run_server(kernel, host, port)
    return 0

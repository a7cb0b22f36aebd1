"""What several commands share: the instance's password, and where its running server answers.

``passageway init`` writes the password to ``~/.config/passageway[-<instance>]/password``. The
server and the commands that talk to it (``search``, ``status``) read it from there when neither
``PASSAGEWAY_LOGIN_PASSWORD`` nor ``PASSAGEWAY_LOGIN_PASSWORD_FILE`` is set, so that ``init``
followed by ``passageway`` works without exporting anything.
"""

from __future__ import annotations

import argparse
import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from passageway.kernel.errors import PassagewayError

DEFAULT_PORT = 8082


class ServerUnreachable(PassagewayError):
    """No passageway answers at the address a command was given."""

    exit_code = 2


def password_file(environ: Mapping[str, str], instance: str | None) -> Path:
    """Where ``passageway init`` writes the instance's password."""
    from passageway.kernel.config import base_config_dir, folder_name

    return base_config_dir(environ) / folder_name(instance) / "password"


def find_password(environ: Mapping[str, str], instance: str | None) -> tuple[str | None, str]:
    """The password and where it came from (a variable's name or a file's path), or ``(None, "")``.

    :raises ConfigError: a password file is named or found but cannot be read, or is empty.
    """
    from passageway.kernel.config import load_password

    password = load_password(environ)
    if password:
        if environ.get("PASSAGEWAY_LOGIN_PASSWORD"):
            return password, "PASSAGEWAY_LOGIN_PASSWORD"
        return password, str(environ["PASSAGEWAY_LOGIN_PASSWORD_FILE"])
    path = password_file(environ, instance)
    if path.is_file():
        return load_password({"PASSAGEWAY_LOGIN_PASSWORD_FILE": str(path)}), str(path)
    return None, ""


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """``--url``: the options of a command that asks a running server."""
    parser.add_argument(
        "--url", metavar="URL",
        help="the running server (default: http://PASSAGEWAY_HOST:PASSAGEWAY_PORT, 127.0.0.1:8082)",
    )


def server_url(args: argparse.Namespace, environ: Mapping[str, str]) -> str:
    """The running server's address: ``--url``, else the host and port the server would listen on."""
    if getattr(args, "url", None):
        return str(args.url).rstrip("/")
    host = environ.get("PASSAGEWAY_HOST") or "127.0.0.1"
    if host in ("0.0.0.0", "::", ""):  # noqa: S104 (a comparison, not a binding)
        host = "127.0.0.1"  # listening everywhere includes the loopback address
    if ":" in host:
        host = f"[{host}]"
    port = environ.get("PASSAGEWAY_PORT") or str(DEFAULT_PORT)
    return f"http://{host}:{port}"


def get_json(url: str, password: str | None, timeout: float = 10.0) -> tuple[int, dict[str, Any]]:
    """``GET url`` with the bearer password when there is one; the status and the JSON body.

    :raises ServerUnreachable: nothing answers there, or what answers is not passageway.
    """
    if not url.startswith(("http://", "https://")):
        raise ServerUnreachable(f"--url {url}: give the server's http:// or https:// address")
    headers = {"Authorization": f"Bearer {password}"} if password else {}
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 (the scheme is checked above)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            status, body = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read()
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise ServerUnreachable(
            f"no passageway answers at {url.rsplit('/', 1)[0]} ({reason}); start it with `passageway`, "
            "or name its address with --url"
        ) from None
    try:
        return status, json.loads(body)
    except ValueError:
        raise ServerUnreachable(
            f"{url} answered with something other than passageway's JSON (HTTP {status}); check --url"
        ) from None

"""What several commands share: the instance's password, and where its running server answers.

``passageway init`` writes the password to ``~/.config/passageway[-<instance>]/password``. The
server and the commands that talk to it (``search``, ``status``) read it from there when neither
``PASSAGEWAY_LOGIN_PASSWORD`` nor ``PASSAGEWAY_LOGIN_PASSWORD_FILE`` is set, so that ``init``
followed by ``passageway`` works without exporting anything.
"""

from __future__ import annotations

import argparse
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from passageway.kernel.errors import ConfigError, PassagewayError
from passageway.kernel.invocation import hint

DEFAULT_PORT = 8082


class ServerUnreachable(PassagewayError):
    """No passageway answers at the address a command was given; ``reason`` says why, in a word."""

    exit_code = 2
    reason = ""


def password_file(environ: Mapping[str, str], instance: str | None) -> Path:
    """Where ``passageway init`` writes the instance's password."""
    from passageway.kernel.instances import base_config_dir, folder_name

    return base_config_dir(environ) / folder_name(instance) / "password"


def find_password(environ: Mapping[str, str], instance: str | None) -> tuple[str | None, str]:
    """The password and where it came from (a variable's name or a file's path), or ``(None, "")``.

    :raises ConfigError: a password file is named or found but cannot be read, or is empty.
    """
    if environ.get("PASSAGEWAY_LOGIN_PASSWORD"):
        return environ["PASSAGEWAY_LOGIN_PASSWORD"], "PASSAGEWAY_LOGIN_PASSWORD"
    if environ.get("PASSAGEWAY_LOGIN_PASSWORD_FILE"):
        named = environ["PASSAGEWAY_LOGIN_PASSWORD_FILE"]
        return _read_password(Path(named).expanduser(), named), named
    path = password_file(environ, instance)
    if path.is_file():
        return _read_password(path, str(path), by_init=True), str(path)
    return None, ""


def _read_password(path: Path, named: str, by_init: bool = False) -> str:
    """The password in ``path``, with the words of ``kernel.config.load_password`` for a file the
    variable names, and with the way to a new one for the file ``init`` wrote (``by_init``); read
    here so that ``search`` and ``status`` do not import the configuration's modules (numpy among
    them), which would double their start-up."""
    from passageway.kernel.invocation import hint

    try:
        password = path.read_text(encoding="utf-8").strip()
    except OSError as error:
        if by_init:
            raise ConfigError(
                f"the password file {named} cannot be read ({error.strerror}); make it readable "
                f"by you, or delete it and run `{hint('init')}`, which writes a new one"
            ) from None
        raise ConfigError(
            f"PASSAGEWAY_LOGIN_PASSWORD_FILE names {named}, which cannot be read ({error.strerror})"
        ) from None
    if not password and by_init:
        raise ConfigError(
            f"the password file {named} is empty; delete it and run `{hint('init')}`, which writes a new one"
        )
    if not password:
        raise ConfigError(f"PASSAGEWAY_LOGIN_PASSWORD_FILE names {named}, which is empty")
    return password


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


def https_context() -> ssl.SSLContext:
    """Certificates checked against the operating system's trust store (ADR 0006), for https URLs."""
    import truststore

    return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def request(
    url: str, password: str | None, *, accept: str = "application/json", timeout: float = 10.0,
    body: bytes | None = None,
) -> tuple[int, bytes]:
    """``GET url`` (``POST`` of a JSON ``body`` when there is one) with the bearer password when
    there is one: the HTTP status and the body.

    :raises ServerUnreachable: the URL is not http(s), or nothing answers there.
    """
    if not url.startswith(("http://", "https://")):
        base = url.rsplit("/", 1)[0]
        raise ServerUnreachable(f"--url {base}: give the server's http:// or https:// address")
    headers = {"Accept": accept, **({"Authorization": f"Bearer {password}"} if password else {})}
    if body is not None:
        headers["Content-Type"] = "application/json"
    prepared = urllib.request.Request(url, data=body, headers=headers)  # noqa: S310 (the scheme is checked above)
    context = https_context() if url.startswith("https://") else None
    try:
        with urllib.request.urlopen(prepared, timeout=timeout, context=context) as response:  # noqa: S310
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read()
    except (urllib.error.URLError, OSError) as error:
        base = url.rsplit("/", 1)[0]
        unreachable = ServerUnreachable(
            f"no passageway answers at {base} ({_reason(error)}); start it with `{hint()}`, "
            "or name its address with --url"
        )
        unreachable.reason = _reason(error)
        raise unreachable from None


def _reason(error: BaseException) -> str:
    return str(getattr(error, "reason", None) or type(error).__name__)


def get_json(url: str, password: str | None, timeout: float = 10.0) -> tuple[int, dict[str, Any]]:
    """``GET url``: the status and the JSON body.

    :raises ServerUnreachable: nothing answers there, or what answers is not passageway.
    """
    status, body = request(url, password, timeout=timeout)
    try:
        return status, json.loads(body)
    except ValueError:
        raise ServerUnreachable(
            f"{url} answered with something other than passageway's JSON (HTTP {status}); check --url"
        ) from None


"""The bearer password: reading it from a request and comparing it in constant time.

Every route but ``/health`` (and, with OAuth on, the OAuth routes themselves) requires
``Authorization: Bearer <PASSAGEWAY_LOGIN_PASSWORD>``. ``/mcp`` also accepts an OAuth access token
when ``PASSAGEWAY_BASE_URL`` is set (:mod:`passageway.builtin.transport.oauth`); ``/recall`` never does.
"""

from __future__ import annotations

import hmac
from typing import Any

from aiohttp import web


def bearer_token(request: Any) -> str | None:
    """The token of an ``Authorization: Bearer ...`` header, or None."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def password_matches(given: str | None, password: str | None) -> bool:
    """Constant-time comparison; with no password configured nothing matches."""
    if not given or not password:
        return False
    # aiohttp hands header bytes that are not UTF-8 over as lone surrogates ("surrogateescape");
    # and a hostile client may send them: they encode back to their bytes and simply do not match.
    return hmac.compare_digest(
        given.encode("utf-8", "surrogatepass"), password.encode("utf-8", "surrogatepass")
    )


REFUSED_NOTHING_SENT = (
    "no Bearer password was sent (Basic and other schemes are not supported): send the header "
    "Authorization: Bearer <password>, with the password the server reads (its log names where at start: "
    "~/.config/passageway/password as `passageway init` wrote it, or PASSAGEWAY_LOGIN_PASSWORD(_FILE))"
)
REFUSED_WRONG_VALUE = (
    "the password sent is not this server's: send the one in the file the server reads "
    "(its log names it at start; another instance has its own)"
)
"""The two 401 texts. Neither says how close a wrong password came, nor anything of the right one."""


def unauthorized(resource_metadata: str | None = None, *, reason: str | None = None) -> web.Response:
    """A 401 with ``WWW-Authenticate: Bearer`` naming the protected-resource metadata when known.

    ``reason`` is the text for a token that was sent and refused (RFC 6750's ``invalid_token``);
    without one, the request sent none.
    """
    challenge = 'Bearer realm="passageway"'
    if resource_metadata is not None:
        challenge += f', resource_metadata="{resource_metadata}"'
    if reason is not None:
        challenge += ', error="invalid_token"'
    return web.json_response(
        {"error": "unauthorized", "error_description": reason or REFUSED_NOTHING_SENT},
        status=401,
        headers={"WWW-Authenticate": challenge},
    )

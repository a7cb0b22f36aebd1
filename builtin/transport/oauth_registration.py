"""``POST /register``: dynamic client registration (RFC 7591) for the OAuth server of :mod:`.oauth`.

Registration needs no password (an MCP client registers before anyone logs in), so it is the
OAuth route anyone can call as often as they like; everything that keeps it from filling the
state file or logging people out is here, apart from the login and token routes: a client's
metadata is checked (redirect addresses by :mod:`.redirect_address`, a name that is Unicode),
registrations are counted per address, at most :data:`MAX_CLIENTS` clients are kept, and a full
book drops the least recently used client that is not logged in, never one that is.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from typing import Any

from aiohttp import web

from passageway.builtin.transport.oauth_pages import oauth_error
from passageway.builtin.transport.oauth_state import LoginLimiter, OAuthState, hashed
from passageway.builtin.transport.redirect_address import redirect_problem
from passageway.builtin.transport.request_body import BadBody, json_body
from passageway.kernel.http_guard import Network, client_address

MAX_CLIENTS = 200
MAX_UNUSED_CLIENTS = 50
"""Registered clients that never logged in; beyond this the oldest of them is forgotten."""
MAX_REDIRECT_URIS = 10
MAX_NAME_CHARS = 200
MAX_REGISTRATIONS_PER_ADDRESS = 10
REGISTRATION_WINDOW_SECONDS = 3600


class ClientRegistration:
    """The ``/register`` route over the OAuth server's :class:`OAuthState`."""

    def __init__(self, state: OAuthState, trusted_proxies: Sequence[Network] = ()) -> None:
        self.state = state
        self.trusted_proxies = tuple(trusted_proxies)
        forget_unused_clients(state, keep=MAX_UNUSED_CLIENTS)  # a file grown before the cap existed
        # Registration is open (RFC 7591), so it is counted per address. There is no overall cap:
        # it would let one caller stop everyone else from logging in.
        self.limiter = LoginLimiter(
            per_address=MAX_REGISTRATIONS_PER_ADDRESS, overall=2**62, window=REGISTRATION_WINDOW_SECONDS
        )

    async def register(self, request: web.Request) -> web.Response:
        """Register a client: 201 with its id (and secret, when it asked for one), or an OAuth error."""
        address = client_address(request, self.trusted_proxies)
        if self.limiter.blocked(address):
            return oauth_error(
                "too_many_requests", f"more than {MAX_REGISTRATIONS_PER_ADDRESS} registrations from this "
                "address within an hour; wait and try again", status=429,
            )
        try:
            metadata = await json_body(request)
        except BadBody as error:
            return oauth_error("invalid_client_metadata", f"{error}; the body must be a JSON object")
        if not isinstance(metadata, dict):
            return oauth_error("invalid_client_metadata", "the body must be a JSON object")
        redirect_uris = metadata.get("redirect_uris")
        if not isinstance(redirect_uris, list) or not redirect_uris or len(redirect_uris) > MAX_REDIRECT_URIS:
            return oauth_error(
                "invalid_redirect_uri", f"redirect_uris must list 1 to {MAX_REDIRECT_URIS} addresses"
            )
        for uri in redirect_uris:
            problem = redirect_problem(uri) if isinstance(uri, str) else "not a string"
            if problem is not None:
                return oauth_error(
                    "invalid_redirect_uri", f"the redirect address {shown(uri)} has {problem}; use an https "
                    "address, http://127.0.0.1, http://localhost or http://[::1], or an app scheme",
                )
        name = metadata.get("client_name")
        if isinstance(name, str) and not is_unicode(name):
            return oauth_error("invalid_client_metadata", "client_name is not Unicode (a lone surrogate)")
        method = metadata.get("token_endpoint_auth_method", "none")
        if method not in ("none", "client_secret_post", "client_secret_basic"):
            return oauth_error(
                "invalid_client_metadata", f"token_endpoint_auth_method {method!r} is not supported"
            )
        if len(self.state.clients) >= MAX_CLIENTS and not evict_one_client(self.state):
            return oauth_error(
                "temporarily_unavailable", f"{MAX_CLIENTS} clients are logged in; remove an old "
                "connection (its refresh token expires after 30 days unused) and try again", status=503,
            )
        self.limiter.failed(address)  # counts one registration
        client_id = secrets.token_urlsafe(24)
        now = int(time.time())
        client: dict[str, Any] = {
            "client_id": client_id,
            "client_id_issued_at": now,
            "redirect_uris": redirect_uris,
            "token_endpoint_auth_method": method,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
        }
        if isinstance(name, str):
            client["client_name"] = name[:MAX_NAME_CHARS]
        reply = dict(client)
        stored = dict(client, used=now)
        if method != "none":
            client_secret = secrets.token_urlsafe(32)
            stored["secret_hash"] = hashed(client_secret)
            reply["client_secret"] = client_secret
            reply["client_secret_expires_at"] = 0
        forget_unused_clients(self.state, keep=MAX_UNUSED_CLIENTS - 1)
        self.state.clients[client_id] = stored
        await self.state.save()
        return web.json_response(reply, status=201)


def evict_one_client(state: OAuthState) -> bool:
    """Drop the least recently used client that holds no live refresh token; False if none.

    A logged-in client is never dropped: otherwise anyone could log every client out by
    registering :data:`MAX_CLIENTS` new ones.
    """
    now = time.time()
    logged_in = {
        record["client_id"] for record in state.tokens.values()
        if record["kind"] == "refresh" and record["expires"] > now
    }
    idle = [key for key in state.clients if key not in logged_in]
    if not idle:
        return False
    del state.clients[min(idle, key=lambda key: state.clients[key].get("used", 0))]
    return True

def forget_unused_clients(state: OAuthState, keep: int) -> None:
    """Keep at most ``keep`` clients that registered but never logged in, the newest ones.

    Registration needs no password, so without this anyone could fill the state file (and
    every save) with clients that will never be used.
    """
    unused = [key for key, client in state.clients.items() if not client.get("authorised")]
    unused.sort(key=lambda key: state.clients[key].get("client_id_issued_at", 0))
    for key in unused[:max(0, len(unused) - keep)]:
        del state.clients[key]


def is_unicode(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (JSON's ``"\\ud800"``, a lone surrogate, does not)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(value: object) -> str:
    """A client's value, quoted and cut short, safe to put in an error message."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."

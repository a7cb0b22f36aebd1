"""OAuth 2.1 for ``/mcp`` when ``PASSAGEWAY_BASE_URL`` is set: the login remote MCP clients need.

passageway is its own authorization server, with one user: whoever knows the password. The
routes are the ones MCP clients discover and use:

* ``/.well-known/oauth-protected-resource`` (RFC 9728) and
  ``/.well-known/oauth-authorization-server`` (RFC 8414): where to log in;
* ``/register`` (RFC 7591): dynamic client registration;
* ``/authorize``: a login page protected by ``PASSAGEWAY_LOGIN_PASSWORD``, PKCE with S256 only;
* ``/token``: the ``authorization_code`` and ``refresh_token`` grants.

Codes are single-use and live two minutes; access tokens an hour, refresh tokens thirty days and
are rotated on use. Codes and tokens are kept only as SHA-256 hashes, in ``<data dir>/oauth.json``
(written atomically, readable only by the owner), so a restart keeps clients logged in and a copy
of the file lets no one in. Failed logins are rate-limited per address and overall.
"""

from __future__ import annotations

import base64
import logging
import re
import secrets
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from aiohttp import web

from passageway.builtin.transport.oauth_pages import login_page, page
from passageway.builtin.transport.oauth_state import LoginLimiter, OAuthState, hashed, pkce_challenge
from passageway.builtin.transport.redirect_address import redirect_problem
from passageway.builtin.transport.request_body import BadBody, form_body, json_body
from passageway.kernel.auth import password_matches
from passageway.kernel.http_guard import Network, client_address

log = logging.getLogger("passageway.oauth")

CODE_SECONDS = 120
ACCESS_SECONDS = 3600
REFRESH_SECONDS = 30 * 24 * 3600
MAX_CLIENTS = 200
MAX_UNUSED_CLIENTS = 50
"""Registered clients that never logged in; beyond this the oldest of them is forgotten."""
MAX_REDIRECT_URIS = 10
MAX_NAME_CHARS = 200
MAX_REGISTRATIONS_PER_ADDRESS = 10
REGISTRATION_WINDOW_SECONDS = 3600
VERIFIER = re.compile(r"[A-Za-z0-9._~-]{43,128}\Z")


class OAuthServer:
    """The OAuth routes and the check of access tokens for ``/mcp``."""

    def __init__(self, base_url: str, password: str | None, state_path: Path,
                 trusted_proxies: Sequence[Network] = ()) -> None:
        self.base_url = base_url.rstrip("/")
        self.trusted_proxies = tuple(trusted_proxies)
        self.password = password
        self.state = OAuthState(state_path)
        self._forget_unused_clients(keep=MAX_UNUSED_CLIENTS)  # a file grown before the cap existed
        self.limiter = LoginLimiter()
        # Registration is open (RFC 7591), so it is counted per address. There is no overall cap:
        # it would let one caller stop everyone else from logging in.
        self.registrations = LoginLimiter(
            per_address=MAX_REGISTRATIONS_PER_ADDRESS, overall=2**62, window=REGISTRATION_WINDOW_SECONDS
        )

    @property
    def resource(self) -> str:
        return f"{self.base_url}/mcp"

    @property
    def resource_metadata_url(self) -> str:
        return f"{self.base_url}/.well-known/oauth-protected-resource"

    def add_routes(self, app: web.Application) -> None:
        router = app.router
        router.add_get("/.well-known/oauth-protected-resource", self.protected_resource)
        router.add_get("/.well-known/oauth-protected-resource/mcp", self.protected_resource)
        router.add_get("/.well-known/oauth-authorization-server", self.authorization_server)
        router.add_post("/register", self.register)
        router.add_get("/authorize", self.authorize_page)
        router.add_post("/authorize", self.authorize_submit)
        router.add_post("/token", self.token)

    # -----------------------------------------------------------------------------------------
    # Access tokens
    # -----------------------------------------------------------------------------------------

    def verify(self, token: str | None) -> bool:
        """Whether ``token`` is a live access token issued here."""
        if not token:
            return False
        record = self.state.tokens.get(hashed(token))
        return bool(record and record["kind"] == "access" and record["expires"] > time.time())

    # -----------------------------------------------------------------------------------------
    # Discovery
    # -----------------------------------------------------------------------------------------

    async def protected_resource(self, request: web.Request) -> web.Response:
        return web.json_response({
            "resource": self.resource,
            "authorization_servers": [self.base_url],
            "bearer_methods_supported": ["header"],
            "resource_name": "passageway",
        })

    async def authorization_server(self, request: web.Request) -> web.Response:
        return web.json_response({
            "issuer": self.base_url,
            "authorization_endpoint": f"{self.base_url}/authorize",
            "token_endpoint": f"{self.base_url}/token",
            "registration_endpoint": f"{self.base_url}/register",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
            "authorization_response_iss_parameter_supported": True,
        })

    # -----------------------------------------------------------------------------------------
    # Registration
    # -----------------------------------------------------------------------------------------

    async def register(self, request: web.Request) -> web.Response:
        address = client_address(request, self.trusted_proxies)
        if self.registrations.blocked(address):
            return _oauth_error(
                "too_many_requests", f"more than {MAX_REGISTRATIONS_PER_ADDRESS} registrations from this "
                "address within an hour; wait and try again", status=429,
            )
        try:
            metadata = await json_body(request)
        except BadBody as error:
            return _oauth_error("invalid_client_metadata", f"{error}; the body must be a JSON object")
        if not isinstance(metadata, dict):
            return _oauth_error("invalid_client_metadata", "the body must be a JSON object")
        redirect_uris = metadata.get("redirect_uris")
        if not isinstance(redirect_uris, list) or not redirect_uris or len(redirect_uris) > MAX_REDIRECT_URIS:
            return _oauth_error(
                "invalid_redirect_uri", f"redirect_uris must list 1 to {MAX_REDIRECT_URIS} addresses"
            )
        for uri in redirect_uris:
            problem = redirect_problem(uri) if isinstance(uri, str) else "not a string"
            if problem is not None:
                return _oauth_error(
                    "invalid_redirect_uri", f"the redirect address {_shown(uri)} has {problem}; use an https "
                    "address, http://127.0.0.1, http://localhost or http://[::1], or an app scheme",
                )
        name = metadata.get("client_name")
        if isinstance(name, str) and not _is_unicode(name):
            return _oauth_error("invalid_client_metadata", "client_name is not Unicode (a lone surrogate)")
        method = metadata.get("token_endpoint_auth_method", "none")
        if method not in ("none", "client_secret_post", "client_secret_basic"):
            return _oauth_error(
                "invalid_client_metadata", f"token_endpoint_auth_method {method!r} is not supported"
            )
        if len(self.state.clients) >= MAX_CLIENTS and not self._evict_one_client():
            return _oauth_error(
                "temporarily_unavailable", f"{MAX_CLIENTS} clients are logged in; remove an old "
                "connection (its refresh token expires after 30 days unused) and try again", status=503,
            )
        self.registrations.failed(address)  # counts one registration
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
        self._forget_unused_clients(keep=MAX_UNUSED_CLIENTS - 1)
        self.state.clients[client_id] = stored
        await self.state.save()
        return web.json_response(reply, status=201)

    def _evict_one_client(self) -> bool:
        """Drop the least recently used client that holds no live refresh token; False if none.

        A logged-in client is never dropped: otherwise anyone could log every client out by
        registering :data:`MAX_CLIENTS` new ones.
        """
        now = time.time()
        logged_in = {
            record["client_id"] for record in self.state.tokens.values()
            if record["kind"] == "refresh" and record["expires"] > now
        }
        idle = [key for key in self.state.clients if key not in logged_in]
        if not idle:
            return False
        del self.state.clients[min(idle, key=lambda key: self.state.clients[key].get("used", 0))]
        return True

    def _forget_unused_clients(self, keep: int) -> None:
        """Keep at most ``keep`` clients that registered but never logged in, the newest ones.

        Registration needs no password, so without this anyone could fill the state file (and
        every save) with clients that will never be used.
        """
        unused = [key for key, client in self.state.clients.items() if not client.get("authorised")]
        unused.sort(key=lambda key: self.state.clients[key].get("client_id_issued_at", 0))
        for key in unused[:max(0, len(unused) - keep)]:
            del self.state.clients[key]

    # -----------------------------------------------------------------------------------------
    # The login page
    # -----------------------------------------------------------------------------------------

    def _check_authorization_request(
        self, params: Mapping[str, str]
    ) -> tuple[dict[str, Any] | None, web.Response | None]:
        """The client if the request is valid, else the response that refuses it."""
        client = self.state.clients.get(params.get("client_id", ""))
        if client is None:
            return None, page("Unknown client", "This application is not registered with passageway. "
                               "Remove the connection in the application and add it again.", status=400)
        redirect_uri = params.get("redirect_uri", "")
        if redirect_uri not in client["redirect_uris"]:
            return None, page("Wrong address", "The application asked to return to an address it did "
                               "not register. Remove the connection and add it again.", status=400)
        if redirect_problem(redirect_uri) is not None:  # registered before the rules were this strict
            return None, page("Unsafe address", "The application registered an address passageway no "
                               "longer accepts. Remove the connection and add it again.", status=400)
        problem = None
        if params.get("response_type") != "code":
            problem = "unsupported_response_type"
        elif not params.get("code_challenge") or params.get("code_challenge_method") != "S256":
            problem = "invalid_request"
        elif params.get("resource") and params["resource"].rstrip("/") not in (self.resource, self.base_url):
            problem = "invalid_target"
        if problem is not None:
            return None, _redirect(redirect_uri, {"error": problem, "state": params.get("state"),
                                                  "iss": self.base_url})
        return client, None

    async def authorize_page(self, request: web.Request) -> web.Response:
        client, refusal = self._check_authorization_request(request.query)
        if refusal is not None:
            return refusal
        assert client is not None
        return login_page(client, request.query)

    async def authorize_submit(self, request: web.Request) -> web.Response:
        try:
            params = await form_body(request)
        except BadBody as error:
            return page("Bad request", f"{error}. Start the login again from the application.", status=400)
        client, refusal = self._check_authorization_request(params)
        if refusal is not None:
            return refusal
        assert client is not None
        address = client_address(request, self.trusted_proxies)
        if self.limiter.blocked(address):
            return login_page(
                client, params, "Too many wrong passwords. Wait a quarter of an hour.", status=429
            )
        if not password_matches(params.get("password"), self.password):
            self.limiter.failed(address)
            log.warning("OAuth login: wrong password from %s", address)
            return login_page(client, params, "Wrong password.", status=401)
        code = secrets.token_urlsafe(32)
        self.state.codes[hashed(code)] = {
            "client_id": client["client_id"],
            "redirect_uri": params["redirect_uri"],
            "challenge": params["code_challenge"],
            "scope": params.get("scope", ""),
            "expires": time.time() + CODE_SECONDS,
        }
        client["used"] = client["authorised"] = int(time.time())
        await self.state.save()
        log.info("OAuth login: a client was authorised")
        return _redirect(
            params["redirect_uri"], {"code": code, "state": params.get("state"), "iss": self.base_url}
        )

    # -----------------------------------------------------------------------------------------
    # Tokens
    # -----------------------------------------------------------------------------------------

    async def token(self, request: web.Request) -> web.Response:
        try:
            params = await form_body(request)
        except BadBody as error:
            return _oauth_error("invalid_request", f"{error}; send application/x-www-form-urlencoded UTF-8")
        client, error = self._authenticate_client(request, params)
        if client is None:
            return error or _oauth_error("invalid_client", "unknown client", status=401)
        grant = params.get("grant_type")
        if grant == "authorization_code":
            return await self._exchange_code(client, params)
        if grant == "refresh_token":
            return await self._refresh(client, params)
        return _oauth_error("unsupported_grant_type", "grant_type is authorization_code or refresh_token")

    def _authenticate_client(
        self, request: web.Request, params: Mapping[str, str]
    ) -> tuple[dict[str, Any] | None, web.Response | None]:
        client_id, client_secret = params.get("client_id"), params.get("client_secret")
        header = request.headers.get("Authorization", "")
        if header.lower().startswith("basic "):
            try:
                decoded = base64.b64decode(header[6:].strip()).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                return None, _oauth_error("invalid_client", "malformed basic credentials", status=401)
            client_id, _, client_secret = decoded.partition(":")
        client = self.state.clients.get(client_id or "")
        if client is None:
            return None, _oauth_error("invalid_client", "this client is not registered", status=401)
        if "secret_hash" in client and not password_matches(
            hashed(client_secret) if client_secret else None, client["secret_hash"]
        ):
            return None, _oauth_error("invalid_client", "wrong client secret", status=401)
        return client, None

    async def _exchange_code(self, client: dict[str, Any], params: Mapping[str, str]) -> web.Response:
        code = params.get("code", "")
        record = self.state.codes.pop(hashed(code), None) if code else None
        if record is None or record["expires"] < time.time():
            if record is not None:
                await self.state.save()
            return _oauth_error("invalid_grant", "the code is unknown, used or expired")
        await self.state.save()  # the code is spent whatever happens next
        if record["client_id"] != client["client_id"] or record["redirect_uri"] != params.get("redirect_uri"):
            return _oauth_error("invalid_grant", "the code was issued to another client or redirect address")
        verifier = params.get("code_verifier", "")
        challenge = record["challenge"]
        if not VERIFIER.match(verifier) or not password_matches(pkce_challenge(verifier), challenge):
            return _oauth_error("invalid_grant", "the code_verifier does not match the code_challenge")
        return await self._issue(client["client_id"], record.get("scope", ""))

    async def _refresh(self, client: dict[str, Any], params: Mapping[str, str]) -> web.Response:
        token = params.get("refresh_token", "")
        key = hashed(token) if token else ""
        record = self.state.tokens.get(key)
        if (
            record is None or record["kind"] != "refresh" or record["expires"] < time.time()
            or record["client_id"] != client["client_id"]
        ):
            return _oauth_error("invalid_grant", "the refresh token is unknown, used or expired")
        del self.state.tokens[key]  # rotated: each refresh token works once
        return await self._issue(client["client_id"], record.get("scope", ""))

    async def _issue(self, client_id: str, scope: str) -> web.Response:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        now = time.time()
        self.state.tokens[hashed(access)] = {"kind": "access", "client_id": client_id, "scope": scope,
                                            "expires": now + ACCESS_SECONDS}
        self.state.tokens[hashed(refresh)] = {"kind": "refresh", "client_id": client_id, "scope": scope,
                                             "expires": now + REFRESH_SECONDS}
        if client_id in self.state.clients:
            self.state.clients[client_id]["used"] = int(now)
        await self.state.save()
        body: dict[str, Any] = {"access_token": access, "token_type": "Bearer", "expires_in": ACCESS_SECONDS,
                                "refresh_token": refresh}
        if scope:
            body["scope"] = scope
        return web.json_response(body, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})


def _is_unicode(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (JSON's ``"\\ud800"``, a lone surrogate, does not)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(value: object) -> str:
    """A client's value, quoted and cut short, safe to put in an error message."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _oauth_error(error: str, description: str, status: int = 400) -> web.Response:
    return web.json_response({"error": error, "error_description": description}, status=status,
                             headers={"Cache-Control": "no-store"})


def _redirect(uri: str, params: Mapping[str, str | None]) -> web.Response:
    query = urlencode({key: value for key, value in params.items() if value is not None})
    separator = "&" if urlsplit(uri).query else "?"
    location = f"{uri}{separator}{query}"
    return web.Response(status=302, headers={"Location": location, "Cache-Control": "no-store"})



"""OAuth 2.1 for ``/mcp`` when ``PASSAGEWAY_BASE_URL`` is set: the login remote MCP clients need.

passageway is its own authorization server, with one user: whoever knows the password. The
routes are the ones MCP clients discover and use:

* ``/.well-known/oauth-protected-resource`` (RFC 9728) and
  ``/.well-known/oauth-authorization-server`` (RFC 8414): where to log in;
* ``/register`` (RFC 7591): dynamic client registration (:mod:`.oauth_registration`);
* ``/authorize``: a login page protected by ``PASSAGEWAY_LOGIN_PASSWORD``, PKCE with S256 only;
* ``/token``: the ``authorization_code`` and ``refresh_token`` grants.

Codes are single-use and live two minutes; access tokens an hour, refresh tokens thirty days and
are rotated on use. Codes and tokens are kept only as SHA-256 hashes, in ``<data dir>/oauth.json``
(written atomically, readable only by the owner), so a restart keeps clients logged in and a copy
of the file lets no one in. Failed logins are rate-limited per address and overall.

This module holds the discovery, login and token routes; registration, the state file and the
pages each have a module of their own beside it.
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

from passageway.builtin.transport.oauth_pages import login_page, oauth_error, page
from passageway.builtin.transport.oauth_registration import ClientRegistration
from passageway.builtin.transport.oauth_state import LoginLimiter, OAuthState, hashed, pkce_challenge
from passageway.builtin.transport.redirect_address import redirect_problem
from passageway.builtin.transport.request_body import BadBody, form_body
from passageway.kernel.auth import password_matches
from passageway.kernel.http_guard import Network, client_address

log = logging.getLogger("passageway.oauth")

CODE_SECONDS = 120
ACCESS_SECONDS = 3600
REFRESH_SECONDS = 30 * 24 * 3600
VERIFIER = re.compile(r"[A-Za-z0-9._~-]{43,128}\Z")


class OAuthServer:
    """The OAuth routes and the check of access tokens for ``/mcp``."""

    def __init__(self, base_url: str, password: str | None, state_path: Path,
                 trusted_proxies: Sequence[Network] = ()) -> None:
        self.base_url = base_url.rstrip("/")
        self.trusted_proxies = tuple(trusted_proxies)
        self.password = password
        self.state = OAuthState(state_path)
        self.registration = ClientRegistration(self.state, self.trusted_proxies)
        self.limiter = LoginLimiter()

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
        router.add_post("/register", self.registration.register)
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
            return oauth_error("invalid_request", f"{error}; send application/x-www-form-urlencoded UTF-8")
        client, error = self._authenticate_client(request, params)
        if client is None:
            return error or oauth_error("invalid_client", "unknown client", status=401)
        grant = params.get("grant_type")
        if grant == "authorization_code":
            return await self._exchange_code(client, params)
        if grant == "refresh_token":
            return await self._refresh(client, params)
        return oauth_error("unsupported_grant_type", "grant_type is authorization_code or refresh_token")

    def _authenticate_client(
        self, request: web.Request, params: Mapping[str, str]
    ) -> tuple[dict[str, Any] | None, web.Response | None]:
        client_id, client_secret = params.get("client_id"), params.get("client_secret")
        header = request.headers.get("Authorization", "")
        if header.lower().startswith("basic "):
            try:
                decoded = base64.b64decode(header[6:].strip()).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                return None, oauth_error("invalid_client", "malformed basic credentials", status=401)
            client_id, _, client_secret = decoded.partition(":")
        client = self.state.clients.get(client_id or "")
        if client is None:
            return None, oauth_error("invalid_client", "this client is not registered", status=401)
        if "secret_hash" in client and not password_matches(
            hashed(client_secret) if client_secret else None, client["secret_hash"]
        ):
            return None, oauth_error("invalid_client", "wrong client secret", status=401)
        return client, None

    async def _exchange_code(self, client: dict[str, Any], params: Mapping[str, str]) -> web.Response:
        code = params.get("code", "")
        record = self.state.codes.pop(hashed(code), None) if code else None
        if record is None or record["expires"] < time.time():
            if record is not None:
                await self.state.save()
            return oauth_error("invalid_grant", "the code is unknown, used or expired")
        await self.state.save()  # the code is spent whatever happens next
        if record["client_id"] != client["client_id"] or record["redirect_uri"] != params.get("redirect_uri"):
            return oauth_error("invalid_grant", "the code was issued to another client or redirect address")
        verifier = params.get("code_verifier", "")
        challenge = record["challenge"]
        if not VERIFIER.match(verifier) or not password_matches(pkce_challenge(verifier), challenge):
            return oauth_error("invalid_grant", "the code_verifier does not match the code_challenge")
        return await self._issue(client["client_id"], record.get("scope", ""))

    async def _refresh(self, client: dict[str, Any], params: Mapping[str, str]) -> web.Response:
        token = params.get("refresh_token", "")
        key = hashed(token) if token else ""
        record = self.state.tokens.get(key)
        if (
            record is None or record["kind"] != "refresh" or record["expires"] < time.time()
            or record["client_id"] != client["client_id"]
        ):
            return oauth_error("invalid_grant", "the refresh token is unknown, used or expired")
        del self.state.tokens[key]  # rotated: each refresh token works once
        # The access token issued with it goes too: one refresh chain holds one of each, so a
        # client refreshing in a loop does not pile up tokens for their hour (issue 38: 1,554 in
        # 120 s). Pairs saved before the link was kept simply expire.
        self.state.tokens.pop(record.get("access", ""), None)
        return await self._issue(client["client_id"], record.get("scope", ""))

    async def _issue(self, client_id: str, scope: str) -> web.Response:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        now = time.time()
        self.state.tokens[hashed(access)] = {"kind": "access", "client_id": client_id, "scope": scope,
                                            "expires": now + ACCESS_SECONDS}
        self.state.tokens[hashed(refresh)] = {"kind": "refresh", "client_id": client_id, "scope": scope,
                                             "expires": now + REFRESH_SECONDS, "access": hashed(access)}
        if client_id in self.state.clients:
            self.state.clients[client_id]["used"] = int(now)
        await self.state.save()
        body: dict[str, Any] = {"access_token": access, "token_type": "Bearer", "expires_in": ACCESS_SECONDS,
                                "refresh_token": refresh}
        if scope:
            body["scope"] = scope
        return web.json_response(body, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})


def _redirect(uri: str, params: Mapping[str, str | None]) -> web.Response:
    query = urlencode({key: value for key, value in params.items() if value is not None})
    separator = "&" if urlsplit(uri).query else "?"
    location = f"{uri}{separator}{query}"
    return web.Response(status=302, headers={"Location": location, "Cache-Control": "no-store"})



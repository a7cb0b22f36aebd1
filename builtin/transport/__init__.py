"""Builtin plugin: the transport. Mounts ``/mcp``, ``/recall``, ``/health`` and the status page
``/`` (and, with ``PASSAGEWAY_BASE_URL`` set, the OAuth routes) on the server's aiohttp application.

Every route but ``/health``, ``/`` (the same report as a page) and the OAuth routes requires the
bearer password; ``/mcp`` also
accepts an OAuth access token. Each route's handler lives in the kernel module named below, so
another transport plugin can reuse them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import urlsplit

from aiohttp import web

from passageway import hookimpl
from passageway.kernel.app import Kernel
from passageway.kernel.auth import bearer_token, unauthorized
from passageway.builtin.transport.hook_endpoint import HookEndpoint
from passageway.builtin.transport.mcp_transport import McpTransport
from passageway.builtin.transport.oauth import OAuthServer
from passageway.builtin.transport.status_page import status_page_handler

MCP_KEY = web.AppKey("passageway.mcp", McpTransport)
HOOK_KEY = web.AppKey("passageway.hook", HookEndpoint)
OAUTH_KEY = web.AppKey("passageway.oauth", OAuthServer)


@hookimpl
def passageway_add_routes(app: web.Application, kernel: Kernel) -> None:
    mount(app, kernel)


def mount(app: web.Application, kernel: Kernel) -> None:
    """Add the builtin routes and the MCP session manager's lifecycle to ``app``."""
    oauth = _oauth(kernel)
    if oauth is not None:
        app[OAUTH_KEY] = oauth
        oauth.add_routes(app)

    async def health(request: web.Request) -> web.Response:
        report = kernel.health(include_errors=kernel.authorize(request))
        status = 503 if report["status"] == "error" else 200
        if not _host_allowed(kernel, request.host):
            # DNS rebinding: a web page's script could read source names and counts through a name
            # that resolves to the loopback address. Such a caller learns only the status.
            return web.json_response({"status": report["status"]}, status=status)
        return web.json_response(report, status=status)

    app.router.add_get("/health", health)
    app.router.add_get("/", status_page_handler(kernel))

    hook = HookEndpoint(kernel)
    app[HOOK_KEY] = hook
    app.router.add_post("/recall", hook.handle)

    mcp = McpTransport(kernel)
    app[MCP_KEY] = mcp

    async def mcp_lifecycle(app: web.Application) -> AsyncIterator[None]:
        async for _ in mcp.lifecycle(app):
            yield

    app.cleanup_ctx.append(mcp_lifecycle)
    app.on_shutdown.append(mcp.close_sessions)

    async def mcp_route(request: web.Request) -> web.StreamResponse:
        if not kernel.authorize(request) and not (oauth is not None and oauth.verify(bearer_token(request))):
            return unauthorized(
                oauth.resource_metadata_url if oauth is not None else None,
                reason="the token is not valid" if bearer_token(request) else None,
            )
        return await mcp.handle(request)

    for method in ("GET", "POST", "DELETE"):
        app.router.add_route(method, "/mcp", mcp_route)


LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


def _host_allowed(kernel: Kernel, host: str) -> bool:
    """The ``/mcp`` rule for a server on the loopback address: the ``Host`` header names the
    loopback address or ``PASSAGEWAY_BASE_URL``'s host. A server on another address allows any."""
    settings = kernel.settings
    if settings is None or settings.host not in LOOPBACK_NAMES:
        return True
    try:
        name = urlsplit(f"//{host}").hostname if host else None
    except ValueError:  # "[::1" and other hosts no client would send
        return False
    allowed = set(LOOPBACK_NAMES)
    if settings.base_url:
        allowed.add(urlsplit(settings.base_url).hostname or "")
    return name in allowed


def _oauth(kernel: Kernel) -> OAuthServer | None:
    settings = kernel.settings
    if settings is None or not settings.base_url or kernel.config_error is not None:
        return None
    return OAuthServer(settings.base_url, kernel.password, settings.data_dir / "oauth.json")

"""Builtin plugin: the transport. Mounts ``/mcp``, ``/recall`` and the status page ``/`` (and,
with ``PASSAGEWAY_BASE_URL`` set, the OAuth routes) on the server's aiohttp application; the
kernel itself serves ``/health``.

Every route but ``/`` (the health report as a page) and the OAuth routes requires the bearer
password; ``/mcp`` also accepts an OAuth access token. The handlers live in this package's modules
(``mcp_transport``, ``hook_endpoint``, ``oauth``, ``status_page``), so another transport plugin
can reuse them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from aiohttp import web

from passageway import hookimpl
from passageway.builtin.transport.hook_endpoint import HookEndpoint
from passageway.builtin.transport.mcp_transport import McpTransport
from passageway.builtin.transport.oauth import OAuthServer
from passageway.builtin.transport.status_page import status_page_handler
from passageway.kernel.app import Kernel
from passageway.kernel.auth import REFUSED_WRONG_VALUE, bearer_token, unauthorized

MCP_KEY = web.AppKey("passageway.mcp", McpTransport)
HOOK_KEY = web.AppKey("passageway.hook", HookEndpoint)
OAUTH_KEY = web.AppKey("passageway.oauth", OAuthServer)


@hookimpl
def passageway_add_routes(app: web.Application, kernel: Kernel) -> None:
    mount(app, kernel)


@hookimpl
def passageway_register_commands(register: Callable[[str, Any], None]) -> None:
    """``passageway mcp``: the same tools over stdin and stdout, answered by the running server."""
    from passageway.builtin.transport import stdio_bridge

    register(stdio_bridge.NAME, stdio_bridge)


def mount(app: web.Application, kernel: Kernel) -> None:
    """Add the builtin routes and the MCP session manager's lifecycle to ``app``."""
    oauth = _oauth(kernel)
    if oauth is not None:
        app[OAUTH_KEY] = oauth
        oauth.add_routes(app)

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
                reason=REFUSED_WRONG_VALUE if bearer_token(request) else None,
            )
        return await mcp.handle(request)

    for method in ("GET", "POST", "DELETE"):
        app.router.add_route(method, "/mcp", mcp_route)


def _oauth(kernel: Kernel) -> OAuthServer | None:
    settings = kernel.settings
    if settings is None or not settings.base_url or kernel.config_error is not None:
        return None
    return OAuthServer(settings.base_url, kernel.password, settings.data_dir / "oauth.json",
                       settings.trusted_proxies)

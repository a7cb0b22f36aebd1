"""One aiohttp request handed to an ASGI application, its answer streamed back.

The MCP SDK's streamable HTTP server speaks ASGI, and passageway serves everything from one aiohttp
application; docs/adr/0010-mcp-inside-aiohttp.md says why this bridge rather than an ASGI server or
a rewrite of the protocol. It is kept apart from :mod:`.mcp_transport` because it knows nothing of
MCP: should the SDK change its entry point, only the caller changes, and the bridge's own rules
(bytes as sent, disconnects, a stop that ends streams) are tested on their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from aiohttp import web
from multidict import CIMultiDict

log = logging.getLogger("passageway.mcp")

Asgi = Callable[[dict[str, Any], Callable[[], Awaitable[dict[str, Any]]],
                 Callable[[dict[str, Any]], Awaitable[None]]], Awaitable[None]]
"""An ASGI application: ``(scope, receive, send)``."""


def _target_bytes(text: str) -> bytes:
    """The bytes of a request target as aiohttp read them (non-UTF-8 bytes come back as they came)."""
    return text.encode("utf-8", "surrogateescape")


async def call_asgi(
    asgi: Asgi, request: web.Request, *, closing: asyncio.Event | None = None
) -> web.StreamResponse:
    """Run an ASGI application for one aiohttp request, streaming its response.

    The body is read in full first (MCP requests are small JSON documents; aiohttp's
    ``client_max_size`` bounds them). After the body, ``receive`` waits until the response is
    finished or the client went away, as an ASGI server's would, so that streamed (SSE) answers
    are not cut short; once ``closing`` is set (the server stops) it reports a disconnect too.
    """
    body = await request.read()
    disconnected = asyncio.Event()
    body_sent = False
    response: web.StreamResponse | None = None
    finished = False

    async def receive() -> dict[str, Any]:
        nonlocal body_sent
        if not body_sent:
            body_sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        if closing is None:
            await disconnected.wait()
        else:
            waits = [asyncio.ensure_future(disconnected.wait()), asyncio.ensure_future(closing.wait())]
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for wait in waits:
                    wait.cancel()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal response, finished
        if message["type"] == "http.response.start":
            headers: CIMultiDict[str] = CIMultiDict()
            for name, value in message.get("headers", []):
                headers.add(name.decode("latin-1"), value.decode("latin-1"))
            response = web.StreamResponse(status=message["status"], headers=headers)
            try:
                await response.prepare(request)
            except (ConnectionResetError, RuntimeError):
                disconnected.set()
        elif message["type"] == "http.response.body":
            if response is None or finished or disconnected.is_set():
                return
            try:
                chunk = message.get("body", b"")
                if chunk:
                    await response.write(chunk)
                if not message.get("more_body", False):
                    finished = True
                    await response.write_eof()
                    disconnected.set()
            except (ConnectionResetError, RuntimeError):
                disconnected.set()

    peer = request.transport.get_extra_info("peername") if request.transport else None
    # The address the connection came in on, not the Host header: that is the client's text, and
    # one that is not a host name (a 0xFF byte) made building request.url raise, a 500.
    own = request.transport.get_extra_info("sockname") if request.transport else None
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        # ASGI wants the bytes as sent: the still-encoded target, never the decoded query (which
        # may hold any character: "%E2%82%AC" is "€", and "€" has no Latin-1 byte).
        "raw_path": _target_bytes(request.raw_path.split("?", 1)[0]),
        "query_string": _target_bytes(request.raw_path.partition("?")[2]),
        "root_path": "",
        "headers": [(name.lower(), value) for name, value in request.raw_headers],
        "client": tuple(peer[:2]) if isinstance(peer, tuple) else None,
        "server": tuple(own[:2]) if isinstance(own, tuple) else None,
        "state": {},
    }
    try:
        await asgi(scope, receive, send)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError) as error:
        # The session's streams closed under a request (the client ended the session as this one
        # ran); the client has gone, so there is nobody to tell and nothing to log as an error.
        log.debug("an MCP session closed while a request ran: %r", error)
        if response is None:
            return web.json_response({"error": "the MCP session was closed"}, status=404)
    finally:
        disconnected.set()
    if response is None:
        return web.json_response({"error": "the MCP handler sent no response"}, status=500)
    if not finished:
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            await response.write_eof()
    return response

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
    exchange = _Exchange(request, await request.read(), closing)
    try:
        await asgi(_scope(request), exchange.receive, exchange.send)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError) as error:
        # The session's streams closed under a request (the client ended the session as this one
        # ran); the client has gone, so there is nobody to tell and nothing to log as an error.
        log.debug("an MCP session closed while a request ran: %r", error)
        if exchange.response is None:
            return web.json_response({"error": "the MCP session was closed"}, status=404)
    finally:
        exchange.disconnected.set()
    if exchange.response is None:
        return web.json_response({"error": "the MCP handler sent no response"}, status=500)
    if not exchange.finished:
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            await exchange.response.write_eof()
    return exchange.response


class _Exchange:
    """The ``receive`` and ``send`` of one request, and what they have done so far."""

    def __init__(self, request: web.Request, body: bytes, closing: asyncio.Event | None) -> None:
        self.request = request
        self.body: bytes | None = body  # None once handed over
        self.closing = closing
        self.disconnected = asyncio.Event()
        self.response: web.StreamResponse | None = None
        self.finished = False

    async def receive(self) -> dict[str, Any]:
        if self.body is not None:
            body, self.body = self.body, None
            return {"type": "http.request", "body": body, "more_body": False}
        if self.closing is None:
            await self.disconnected.wait()
        else:
            waits = [asyncio.ensure_future(self.disconnected.wait()),
                     asyncio.ensure_future(self.closing.wait())]
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for wait in waits:
                    wait.cancel()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            await self._start(message)
        elif message["type"] == "http.response.body":
            await self._write(message)

    async def _start(self, message: dict[str, Any]) -> None:
        headers: CIMultiDict[str] = CIMultiDict()
        for name, value in message.get("headers", []):
            headers.add(name.decode("latin-1"), value.decode("latin-1"))
        self.response = web.StreamResponse(status=message["status"], headers=headers)
        try:
            await self.response.prepare(self.request)
        except (ConnectionResetError, RuntimeError):
            self.disconnected.set()

    async def _write(self, message: dict[str, Any]) -> None:
        if self.response is None or self.finished or self.disconnected.is_set():
            return
        try:
            chunk = message.get("body", b"")
            if chunk:
                await self.response.write(chunk)
            if not message.get("more_body", False):
                self.finished = True
                await self.response.write_eof()
                self.disconnected.set()
        except (ConnectionResetError, RuntimeError):
            self.disconnected.set()


def _scope(request: web.Request) -> dict[str, Any]:
    """The ASGI ``http`` scope of an aiohttp request."""
    peer = request.transport.get_extra_info("peername") if request.transport else None
    # The address the connection came in on, not the Host header: that is the client's text, and
    # one that is not a host name (a 0xFF byte) made building request.url raise, a 500.
    own = request.transport.get_extra_info("sockname") if request.transport else None
    return {
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

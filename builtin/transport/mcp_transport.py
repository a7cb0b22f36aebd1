"""``/mcp``: the MCP server (tools ``recall``, ``read`` and ``status``) over streamable HTTP inside aiohttp.

The MCP SDK's server machinery (``mcp.server.lowlevel.Server`` and its
``StreamableHTTPSessionManager``) does the protocol: sessions, JSON-RPC, SSE, version
negotiation. The SDK speaks ASGI, so :func:`~.asgi_bridge.call_asgi` hands one aiohttp request to
it and streams its answer back; docs/adr/0010-mcp-inside-aiohttp.md says why this and not a
rewrite. Authentication happens before the SDK sees the request. This module holds the tools'
calls and the sessions' lifecycle; the tools' definitions are in :mod:`.mcp_tools`, shared with
the stdio bridge, and the session caps in :mod:`.mcp_sessions`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from aiohttp import web

from passageway import Question, render_answer
from passageway.builtin.transport.asgi_bridge import call_asgi
from passageway.builtin.transport.mcp_sessions import IDLE_SECONDS, MAX_SESSIONS, SessionBook
from passageway.builtin.transport.mcp_tools import DEFAULT_INSTRUCTIONS, DEFAULT_TOOL_DESCRIPTION, tool_list
from passageway.kernel.errors import PassagewayError
from passageway.kernel.http_guard import client_address
from passageway.kernel.server import LOOPBACK_NAMES

if TYPE_CHECKING:
    from passageway.kernel.app import Kernel

log = logging.getLogger("passageway.mcp")

MAX_QUESTION_CHARS = 20_000


def server_name(kernel: Kernel) -> str:
    instance = kernel.settings.instance if kernel.settings is not None else None
    return "passageway" if instance is None else f"passageway-{instance}"


class McpTransport:
    """The MCP server for one kernel, and the aiohttp handler and lifecycle that serve it."""

    def __init__(self, kernel: Kernel) -> None:
        from mcp.server.lowlevel import Server
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        self.kernel = kernel
        settings = kernel.settings
        self.instructions = (settings.instructions if settings else None) or DEFAULT_INSTRUCTIONS
        self.tool_description = (settings.tool_description if settings else None) or DEFAULT_TOOL_DESCRIPTION
        self.server: Any = Server(
            server_name(kernel),
            version=kernel.version,
            instructions=self.instructions,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self.manager = StreamableHTTPSessionManager(
            app=self.server,
            json_response=False,
            stateless=False,
            security_settings=self._security_settings(),
            session_idle_timeout=IDLE_SECONDS,
            max_sessions=MAX_SESSIONS,
        )
        self.sessions = SessionBook(self.manager, most=MAX_SESSIONS)
        self.trusted_proxies = settings.trusted_proxies if settings is not None else ()

    def _security_settings(self) -> Any:
        """DNS-rebinding protection for a server on the loopback address (as the SDK does).

        A server behind a reverse proxy under ``PASSAGEWAY_BASE_URL`` also accepts that host.
        """
        from mcp.server.transport_security import TransportSecuritySettings

        settings = self.kernel.settings
        host = settings.host if settings is not None else "127.0.0.1"
        if host not in LOOPBACK_NAMES:
            return None
        hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
        origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
        if settings is not None and settings.base_url:
            public = urlsplit(settings.base_url)
            hosts += [public.netloc, f"{public.hostname}:*"]
            origins += [f"{public.scheme}://{public.netloc}"]
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
        )

    @property
    def _closing(self) -> asyncio.Event:
        """Set when the server stops: open streams are told their client went away."""
        if not hasattr(self, "_closing_event"):
            self._closing_event = asyncio.Event()
        return self._closing_event

    # -----------------------------------------------------------------------------------------
    # Tools
    # -----------------------------------------------------------------------------------------

    def tools(self) -> list[Any]:
        return tool_list(self.tool_description)

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        return types.ListToolsResult(tools=self.tools())

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types
        from mcp.shared.exceptions import MCPError
        from mcp_types.jsonrpc import INVALID_PARAMS

        arguments = params.arguments or {}
        if params.name == "status":
            report = self.kernel.health(include_errors=True)
            return types.CallToolResult(
                content=[types.TextContent(text=json.dumps(report, indent=2, ensure_ascii=False))],
            )
        if params.name == "read":
            return await self._read(arguments)
        if params.name != "recall":
            raise MCPError(INVALID_PARAMS,
                           f"unknown tool {params.name!r}; the tools are recall, read and status")
        question = arguments.get("question")
        if not isinstance(question, str) or not question.strip():
            return _tool_error("`question` is required: the question to search the sources for, as text")
        try:
            # A model asks a question: no filter for non-questions, unlike the hook (records.Question).
            answer = await self.kernel.recall(Question(question[:MAX_QUESTION_CHARS]))
        except PassagewayError as error:
            # V6: a failing embedder is an error the model sees, never a silent "nothing found".
            return _tool_error(f"recall failed: {error}")
        except Exception as error:
            log.exception("recall failed")
            return _tool_error(f"recall failed: {type(error).__name__}")
        text = render_answer(answer)  # one line saying the sources have nothing, when silent
        # The answer's shape for programs (`passageway search`): silence is told by this, never by the text.
        shape = {"silent": answer.silent, "passages": len(answer.hits), "indexing": list(answer.notes)}
        return types.CallToolResult(content=[types.TextContent(text=text)], meta={"passageway": shape})

    async def _read(self, arguments: dict[str, Any]) -> Any:
        import mcp_types as types

        source, item, section = (arguments.get(key) for key in ("source", "item", "section"))
        if not isinstance(source, str) or not source or not isinstance(item, str) or not item:
            return _tool_error("`source` and `item` are required: the source and item a recall answer named")
        if section is not None and not isinstance(section, str):
            return _tool_error("`section` must be text: the heading a recall answer showed, or left out")
        try:
            text = await self.kernel.read(source, item, section)
        except PassagewayError as error:
            return _tool_error(f"read failed: {error}")
        except Exception as error:
            log.exception("read failed")
            return _tool_error(f"read failed: {type(error).__name__}")
        return types.CallToolResult(content=[types.TextContent(text=text)])

    # -----------------------------------------------------------------------------------------
    # aiohttp
    # -----------------------------------------------------------------------------------------

    async def lifecycle(self, app: web.Application) -> AsyncIterator[None]:
        """``cleanup_ctx``: the SDK's session manager runs in a task of its own.

        anyio task groups must be left by the task that entered them, and aiohttp may run
        startup and cleanup in different tasks, so the manager gets a dedicated task.
        """
        started = asyncio.Event()
        self._stop = asyncio.Event()
        stop = self._stop

        async def run() -> None:
            async with self.manager.run():
                started.set()
                await stop.wait()

        task = asyncio.create_task(run(), name="mcp session manager")
        self._task = task
        waiter = asyncio.create_task(started.wait())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            waiter.cancel()
            task.result()  # raises what stopped the manager
        try:
            yield
        finally:
            await self.close_sessions(app)

    async def close_sessions(self, app: web.Application) -> None:
        """``on_shutdown``: end every MCP session, so that open streams finish before aiohttp waits.

        aiohttp waits for running requests before it runs the cleanup contexts; a client's open
        ``GET /mcp`` stream only ends when its session does, so the sessions end here, first.
        """
        stop, task = getattr(self, "_stop", None), getattr(self, "_task", None)
        if stop is None or task is None or task.done():
            return
        sessions = len(getattr(self.manager, "_server_instances", ()))
        if sessions:
            log.info("closing %d MCP session%s", sessions, "s" if sessions != 1 else "")
        self._closing.set()  # every request's receive() now reports a disconnect
        # Ending each session first lets its task finish by itself; cancelling thousands of them
        # through the SDK's task group took anyio more than ten seconds (issue 32).
        started = time.monotonic()
        for transport in list(getattr(self.manager, "_server_instances", {}).values()):
            with contextlib.suppress(Exception):
                await transport.terminate()
        stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, timeout=10)
        if sessions:
            log.info("MCP sessions closed in %.1f s", time.monotonic() - started)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Serve one request to ``/mcp`` (the caller has authenticated it).

        A request without a session id may open a session: first, if its client (or the server)
        holds too many, the client's least recently used idle one ends (:mod:`.mcp_sessions`).
        """
        client = client_address(request, self.trusted_proxies)
        session = request.headers.get("Mcp-Session-Id")
        if session is None and request.method == "POST":
            await self.sessions.make_room(client)
        self.sessions.started(session)
        response: web.StreamResponse | None = None
        try:
            response = await call_asgi(self.manager.handle_request, request, closing=self._closing)
            return response
        finally:
            opened = response.headers.get("Mcp-Session-Id") if response is not None else None
            self.sessions.finished(session, client, opened)


def _tool_error(message: str) -> Any:
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)

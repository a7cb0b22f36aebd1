"""``passageway mcp``: MCP over stdin/stdout, a bridge to the running local server.

Claude Desktop and other local MCP clients start their servers as programs and talk to them
over stdin and stdout. The index and the sync loop must outlive such a session, so this command
holds no index: it offers the same two tools, ``recall`` and ``status``, and answers each call by
calling the same tool on the running server's ``/mcp`` over HTTP, with the bearer password. One
server thus answers Claude Code, Claude Desktop and any other client alike.

The password comes from ``PASSAGEWAY_LOGIN_PASSWORD``, the file named by
``PASSAGEWAY_LOGIN_PASSWORD_FILE``, or else the instance's own password file
(``~/.config/passageway/password``, as ``passageway init`` writes it). It never appears in an
answer or an error. When no server answers, each call is a tool error that says so in one line.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

NAME = "mcp"
HELP = "MCP over stdin/stdout for Claude Desktop and other local clients, answered by the running server"

CALL_TIMEOUT = 60.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url", metavar="URL",
        help="the running server (default: http://127.0.0.1:PASSAGEWAY_PORT, the port 8082 unless set)",
    )


def server_url(environ: Mapping[str, str], url: str | None = None) -> str:
    """The server to call: ``--url``, else the host and port the server itself would use."""
    if url:
        if not url.startswith(("http://", "https://")):
            from passageway.kernel.errors import ConfigError

            raise ConfigError(f"--url must start with http:// or https://, got {url!r}")
        return url.rstrip("/").removesuffix("/mcp")
    host = environ.get("PASSAGEWAY_HOST") or "127.0.0.1"
    if host in ("0.0.0.0", "::", ""):  # noqa: S104 - a wildcard bind is reached on the loopback address
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{environ.get('PASSAGEWAY_PORT') or '8082'}"


def find_password(environ: Mapping[str, str], instance: str | None) -> str:
    """The bearer password: the variables the server reads, else the instance's password file."""
    from passageway.kernel.config import load_password
    from passageway.kernel.errors import ConfigError
    from passageway.kernel.instances import base_config_dir, folder_name

    password = load_password(environ)
    if password:
        return password
    default = base_config_dir(environ) / folder_name(instance) / "password"
    try:
        password = default.read_text(encoding="utf-8").strip()
    except OSError:
        password = ""
    if not password:
        raise ConfigError(
            f"no password for the server: set PASSAGEWAY_LOGIN_PASSWORD_FILE to the server's password "
            f"file ({_home_relative(default, environ)} is missing or empty; `passageway init` writes it)"
        )
    return password


def _home_relative(path: Path, environ: Mapping[str, str]) -> str:
    home = environ.get("HOME")
    if home and path.is_relative_to(home):
        return "~/" + str(path.relative_to(home))
    return str(path)


def _json_or_empty(response: Any) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def explain(error: BaseException, url: str) -> str:
    """One line for a failed call to the server; never the password."""
    import httpx2

    causes = _leaves(error)
    if any(isinstance(cause, httpx2.ConnectError | ConnectionRefusedError) for cause in causes):
        return (f"no passageway server answers at {url}: start it (`passageway serve`, or its service) "
                "and ask again")
    for cause in causes:
        if isinstance(cause, httpx2.HTTPStatusError):
            status = cause.response.status_code
            if status == 401:
                return (f"the server at {url} refused the password: point PASSAGEWAY_LOGIN_PASSWORD_FILE "
                        "at that server's password file")
            return f"the server at {url} answered HTTP {status}"
    if any(isinstance(cause, httpx2.TimeoutException | TimeoutError) for cause in causes):
        return f"the server at {url} did not answer within {CALL_TIMEOUT:g} s"
    first = causes[0] if causes else error
    return f"the call to the server at {url} failed ({type(first).__name__})"


def _leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside exception groups and their causes, innermost last."""
    found: list[BaseException] = []
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop()
        found.append(current)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None and linked not in found:
                pending.append(linked)
    return found


class Bridge:
    """The stdio MCP server whose tools call the same tools of the server at ``url``."""

    def __init__(self, url: str, password: str, name: str, instructions: str | None = None) -> None:
        from mcp.server.lowlevel import Server

        from passageway import __version__
        from passageway.builtin.transport.mcp_tools import DEFAULT_INSTRUCTIONS

        self.url = url
        self._password = password
        self.server: Any = Server(
            name,
            version=__version__,
            instructions=instructions or DEFAULT_INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        """The server's own tools (with its descriptions) when it answers, else the defaults."""
        import mcp_types as types

        from passageway.builtin.transport.mcp_tools import tool_list

        try:
            async with self._client() as client:
                return await client.list_tools()
        except Exception:
            return types.ListToolsResult(tools=tool_list())

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        try:
            async with self._client() as client:
                result = await client.call_tool(params.name, params.arguments or {})
        except Exception as error:
            message = await self.diagnose(error)
            return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)
        return result

    async def diagnose(self, error: BaseException) -> str:
        """Why a call failed, in one line.

        The MCP client reports an HTTP error only as "the server returned an error", so a plain
        request to ``/mcp`` with the same password tells a refused password from a missing server.
        """
        import httpx2

        try:
            async with httpx2.AsyncClient(timeout=5) as http:
                headers = {"Authorization": f"Bearer {self._password}"}
                probe = await http.get(f"{self.url}/mcp", headers=headers)
        except Exception as probe_error:
            return explain(probe_error, self.url)
        if probe.status_code == 401:
            return explain(httpx2.HTTPStatusError("refused", request=probe.request, response=probe), self.url)
        return explain(error, self.url)

    def _client(self) -> Any:
        import contextlib

        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        @contextlib.asynccontextmanager
        async def connected() -> Any:
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {self._password}"},
                                      timeout=httpx2.Timeout(CALL_TIMEOUT, connect=5.0))
            async with http, Client(streamable_http_client(f"{self.url}/mcp", http_client=http)) as client:
                yield client

        return connected()

    async def reachable(self) -> str | None:
        """None when the server answers ``/health``, else the reason in one line. A degraded or
        starting server answers 503 with its report: it is there, and its tools say what fails."""
        import httpx2

        try:
            async with httpx2.AsyncClient(timeout=5) as http:
                response = await http.get(f"{self.url}/health")
                if response.status_code != 503 or "status" not in _json_or_empty(response):
                    response.raise_for_status()
        except Exception as error:
            return explain(error, self.url)
        return None

    async def serve_stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        problem = await self.reachable()
        if problem:  # not fatal: the server may start after the client (a service after login)
            print(f"passageway mcp: {problem}", file=sys.stderr, flush=True)
        async with stdio_server() as (read_stream, write_stream):
            await serve_to_the_end(self.server, read_stream, write_stream)


async def serve_to_the_end(server: Any, read_stream: Any, write_stream: Any,
                           grace: float = CALL_TIMEOUT + 5) -> None:
    """Run ``server`` on the streams, answering every request that came before stdin closed.

    The SDK cancels the calls still running when its read stream ends, so a client that writes its
    last requests and closes its end got "Connection closed" instead of answers. Relays between the
    streams and the server hold the end of input back until each request read has its answer (at
    most ``grace`` seconds).
    """
    import anyio
    import mcp_types as types

    pending: set[Any] = set()
    settled = anyio.Event()
    settled.set()
    inner_send, inner_read = anyio.create_memory_object_stream[Any](0)
    outer_send, outer_read = anyio.create_memory_object_stream[Any](0)

    async def relay_in() -> None:
        nonlocal settled
        async with inner_send, read_stream:
            async for item in read_stream:
                message = getattr(item, "message", None)
                if isinstance(message, types.JSONRPCRequest):
                    if settled.is_set():
                        settled = anyio.Event()
                    pending.add(message.id)
                await inner_send.send(item)
            with anyio.move_on_after(grace):
                await settled.wait()

    async def relay_out() -> None:
        async with outer_read, write_stream:
            async for item in outer_read:
                message = getattr(item, "message", None)
                if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                    pending.discard(message.id)
                    if not pending:
                        settled.set()
                await write_stream.send(item)

    async with anyio.create_task_group() as group:
        group.start_soon(relay_in)
        group.start_soon(relay_out)
        await server.run(inner_read, outer_send, server.create_initialization_options())


def run(args: argparse.Namespace) -> int:
    import anyio

    from passageway.kernel.instances import resolve_instance

    environ = os.environ
    instance = resolve_instance(args.instance, environ)
    url = server_url(environ, args.url)
    password = find_password(environ, instance)
    name = "passageway" if instance is None else f"passageway-{instance}"
    bridge = Bridge(url, password, name, environ.get("PASSAGEWAY_INSTRUCTIONS") or None)
    anyio.run(bridge.serve_stdio)
    return 0

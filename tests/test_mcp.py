"""``/mcp`` through the official MCP Python client over streamable HTTP, against a live server."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from passageway.builtin.transport.asgi_bridge import call_asgi
from passageway.builtin.transport.mcp_tools import DEFAULT_INSTRUCTIONS, DEFAULT_TOOL_DESCRIPTION
from passageway.kernel.query.rendering import NOTHING
from tests.server_helpers import PASSWORD, make_kernel, running_server, wait_built, write_instance

TELESCOPE = "how does a refracting telescope gather starlight with a lens?"


@contextlib.asynccontextmanager
async def mcp_client(url: str, token: str = PASSWORD, **options) -> AsyncIterator[Client]:  # type: ignore[no-untyped-def]
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http), **options) as client:
        yield client


@pytest.fixture
async def served(tmp_path):  # type: ignore[no-untyped-def]
    kernel = make_kernel(write_instance(tmp_path))
    async with running_server(kernel) as url:
        await wait_built(kernel)
        yield kernel, url


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_list_tools_and_instructions(served, mode):
    _, url = served
    async with mcp_client(url, mode=mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {"recall", "read", "status"}
        assert tools["read"].input_schema["required"] == ["source", "item"]
        assert tools["recall"].description == DEFAULT_TOOL_DESCRIPTION
        assert tools["recall"].input_schema["required"] == ["question"]
        if mode == "legacy":
            assert client.session.initialize_result.instructions == DEFAULT_INSTRUCTIONS
            assert client.session.initialize_result.server_info.name == "passageway"


async def test_recall_returns_passages(served):
    _, url = served
    async with mcp_client(url) as client:
        result = await client.call_tool("recall", {"question": TELESCOPE})
        assert not result.is_error
        text = result.content[0].text
        assert "Refracting telescope" in text
        assert "https://example.test/telescope" in text
        assert "Rhine" not in text


async def test_read_returns_the_item_a_recall_answer_named(served):
    kernel, url = served
    async with mcp_client(url) as client:
        answer = (await client.call_tool("recall", {"question": TELESCOPE})).content[0].text
        source, item = answer.split("\n")[1].strip().split(" · ")[0].split(": ", 1)
        result = await client.call_tool("read", {"source": source, "item": item})
        assert not result.is_error
        stored = await kernel.sources[source].store.passages_of(item)
        assert all(text in result.content[0].text for _, _, text, _ in stored)
        missing = await client.call_tool("read", {"source": source, "item": "no-such-item"})
        assert missing.is_error and "no item 'no-such-item'" in missing.content[0].text
        unnamed = await client.call_tool("read", {"source": source})
        assert unnamed.is_error and "`source` and `item` are required" in unnamed.content[0].text


async def test_recall_says_when_nothing_is_relevant(served):
    _, url = served
    async with mcp_client(url) as client:
        result = await client.call_tool("recall", {"question": "quarterly tax declaration deadline"})
        assert not result.is_error
        assert result.content[0].text == NOTHING


async def test_recall_without_a_question_is_a_tool_error(served):
    _, url = served
    async with mcp_client(url) as client:
        result = await client.call_tool("recall", {"question": "  "})
        assert result.is_error
        assert "question" in result.content[0].text


async def test_status_reports_health_with_errors(tmp_path):
    kernel = make_kernel(write_instance(tmp_path, fail="check,list"))
    async with running_server(kernel) as url:
        await wait_built(kernel)
        async with mcp_client(url) as client:
            result = await client.call_tool("status", {})
            report = json.loads(result.content[0].text)
            assert report["status"] == "degraded"
            assert "check" in report["sources"]["notes"]["error"]


async def test_failing_embedder_is_a_tool_error_not_silence(served):
    kernel, url = served
    kernel.embedder.fail = True
    async with mcp_client(url) as client:
        result = await client.call_tool("recall", {"question": TELESCOPE})
        assert result.is_error
        assert "recall failed" in result.content[0].text
        assert NOTHING not in result.content[0].text


async def test_instructions_and_description_from_the_environment(tmp_path):
    environ = write_instance(tmp_path, extra_env={
        "PASSAGEWAY_INSTRUCTIONS": "Use recall for the team wiki.",
        "PASSAGEWAY_TOOL_DESCRIPTION": "Search the team wiki.",
    })
    kernel = make_kernel(environ)
    async with running_server(kernel) as url, mcp_client(url, mode="legacy") as client:
        assert client.session.initialize_result.instructions == "Use recall for the team wiki."
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert tools["recall"].description == "Search the team wiki."


async def test_instance_names_the_server(tmp_path):
    environ = write_instance(tmp_path)
    (tmp_path / "home" / ".config" / "passageway-work").mkdir(parents=True)
    environ["PASSAGEWAY_INSTANCE"] = "work"
    kernel = make_kernel(environ)
    async with running_server(kernel) as url, mcp_client(url, mode="legacy") as client:
        assert client.session.initialize_result.server_info.name == "passageway-work"


async def test_mcp_refuses_a_wrong_token(served):
    _, url = served
    async with httpx2.AsyncClient() as http:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            response = await http.post(
                f"{url}/mcp", headers={**headers, "Accept": "application/json, text/event-stream"},
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            )
            assert response.status_code == 401
            assert response.headers["WWW-Authenticate"].startswith("Bearer")


async def test_several_clients_at_once(served):
    import asyncio

    _, url = served

    async def one() -> str:
        async with mcp_client(url) as client:
            result = await client.call_tool("recall", {"question": TELESCOPE})
            return result.content[0].text

    texts = await asyncio.gather(*(one() for _ in range(6)))
    assert all("Refracting telescope" in text for text in texts)


async def test_call_asgi_streams_chunks_and_headers():
    from aiohttp import web

    async def asgi(scope, receive, send):  # type: ignore[no-untyped-def]
        message = await receive()
        assert scope["method"] == "POST" and scope["path"] == "/x"
        await send({"type": "http.response.start", "status": 201,
                    "headers": [(b"content-type", b"text/plain"), (b"x-two", b"a"), (b"x-two", b"b")]})
        await send({"type": "http.response.body", "body": message["body"].upper(), "more_body": True})
        await send({"type": "http.response.body", "body": b"!", "more_body": False})

    async def handler(request: web.Request) -> web.StreamResponse:
        return await call_asgi(asgi, request)

    app = web.Application()
    app.router.add_post("/x", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    from tests.server_helpers import free_port

    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        async with httpx2.AsyncClient() as http:
            response = await http.post(f"http://127.0.0.1:{port}/x", content=b"hello")
            assert response.status_code == 201
            assert response.text == "HELLO!"
            assert response.headers.get_list("x-two") == ["a", "b"]
    finally:
        await runner.cleanup()


async def asgi_app_on_a_port(asgi):  # type: ignore[no-untyped-def]
    from aiohttp import web

    from tests.server_helpers import free_port

    async def handler(request: web.Request) -> web.StreamResponse:
        return await call_asgi(asgi, request)

    app = web.Application()
    app.router.add_route("*", "/x", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, f"http://127.0.0.1:{port}/x"


async def test_call_asgi_hands_over_the_query_as_it_was_sent():
    # Found by the hostile probe (issue 22): "%E2%82%AC" was decoded to "€" and encoded as Latin-1.
    seen = []

    async def asgi(scope, receive, send):  # type: ignore[no-untyped-def]
        seen.append(scope["query_string"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    runner, url = await asgi_app_on_a_port(asgi)
    try:
        async with httpx2.AsyncClient() as http:
            for query in ("price=%E2%82%AC", "name=%C3%A9", "a=%FF"):
                assert (await http.get(f"{url}?{query}")).status_code == 204
    finally:
        await runner.cleanup()
    assert seen == [b"price=%E2%82%AC", b"name=%C3%A9", b"a=%FF"]


async def test_call_asgi_survives_a_session_closed_under_a_request(caplog):
    import anyio

    async def asgi(scope, receive, send):  # type: ignore[no-untyped-def]
        raise anyio.ClosedResourceError

    runner, url = await asgi_app_on_a_port(asgi)
    try:
        async with httpx2.AsyncClient() as http:
            assert (await http.post(url, content=b"{}")).status_code == 404
    finally:
        await runner.cleanup()
    assert "Traceback" not in caplog.text and "Error handling request" not in caplog.text


async def test_mcp_with_a_query_of_any_character_is_no_server_error(served):
    _, url = served
    async with httpx2.AsyncClient() as http:
        response = await http.post(
            f"{url}/mcp?x=%E2%82%AC&y=%FF", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Authorization": f"Bearer {PASSWORD}", "Accept": "application/json, text/event-stream"},
        )
        assert response.status_code < 500


@pytest.mark.parametrize("host", [b"\xff\xfe:1", b"\xff", b"[::1", b"a b"])
async def test_a_host_header_that_is_no_host_name_is_no_server_error(served, host):
    # 32.13: a 0xFF byte in Host made building request.url raise: a 500 with a traceback.
    from tests.test_auth import raw_request

    _, url = served
    head = (b"POST /mcp HTTP/1.1\r\nHost: " + host + b"\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nAuthorization: Bearer " + PASSWORD.encode()
            + b"\r\nContent-Length: 2\r\nConnection: close\r\n\r\n")
    answer = await raw_request(url, head + b"{}")
    assert answer.startswith((b"HTTP/1.1 4", b"HTTP/1.0 4")), answer[:200]


async def test_a_question_is_reduced_off_the_event_loop(served, monkeypatch):
    # 38.3: the MCP recall reduced its question on the event loop, holding /health as long.
    import asyncio
    import threading

    from passageway.kernel.query import prompt, recall

    _, url = served
    entered, release = threading.Event(), threading.Event()

    def slow_asked(text):  # type: ignore[no-untyped-def]
        entered.set()
        release.wait(10)
        return prompt.asked(text)

    monkeypatch.setattr(recall, "asked", slow_asked)
    async with mcp_client(url) as client, httpx2.AsyncClient(timeout=30) as http:
        pending = asyncio.create_task(client.call_tool("recall", {"question": TELESCOPE}))
        try:
            assert await asyncio.to_thread(entered.wait, 10)
            health = await http.get(f"{url}/health")
            assert health.status_code == 200 and not pending.done()
        finally:
            release.set()
        assert "Refracting telescope" in (await pending).content[0].text

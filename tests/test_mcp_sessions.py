"""MCP sessions per client: a client's forgotten sessions never lock out another (issue 32)."""

from __future__ import annotations

import httpx2
import pytest

from passageway.builtin.transport import mcp_sessions, mcp_transport
from tests.server_helpers import PASSWORD, make_kernel, running_server, wait_built, write_instance

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


@pytest.fixture
async def served(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(mcp_sessions, "PER_CLIENT", 3)
    monkeypatch.setattr(mcp_transport, "MAX_SESSIONS", 5)
    kernel = make_kernel(write_instance(tmp_path, extra_env={"PASSAGEWAY_TRUSTED_PROXY": "127.0.0.1"}))
    async with running_server(kernel) as url, httpx2.AsyncClient(timeout=10, headers={
        "Authorization": f"Bearer {PASSWORD}", "Accept": "application/json, text/event-stream",
    }) as http:
        await wait_built(kernel)
        yield http, f"{url}/mcp"


async def open_session(http: httpx2.AsyncClient, url: str, client: str) -> tuple[int, str | None]:
    response = await http.post(url, json=INITIALIZE, headers={"X-Forwarded-For": client})
    return response.status_code, response.headers.get("Mcp-Session-Id")


async def usable(http: httpx2.AsyncClient, url: str, session: str, client: str) -> bool:
    response = await http.post(url, json=LIST, headers={
        "Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18", "X-Forwarded-For": client})
    return response.status_code == 200


async def test_a_client_beyond_its_share_loses_its_oldest_idle_session(served):
    http, url = served
    opened = [await open_session(http, url, "203.0.113.1") for _ in range(5)]
    assert [status for status, _ in opened] == [200] * 5
    alive = [await usable(http, url, session, "203.0.113.1") for _, session in opened if session]
    assert alive == [False, False, True, True, True]


async def test_a_full_server_makes_room_for_a_new_client(served):
    # 32.13: 10,000 unclosed sessions made every new client get 503 for 30 minutes.
    http, url = served
    greedy = [await open_session(http, url, f"203.0.113.{number % 2 + 1}") for number in range(5)]
    assert all(status == 200 for status, _ in greedy)
    status, session = await open_session(http, url, "198.51.100.9")
    assert status == 200 and session is not None
    assert await usable(http, url, session, "198.51.100.9")

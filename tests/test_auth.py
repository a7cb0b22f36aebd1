"""The bearer password on every route: none, a wrong one, the right one; /health stays open."""

from __future__ import annotations

import httpx2
import pytest

from passageway.kernel.auth import bearer_token, password_matches, unauthorized
from tests.server_helpers import PASSWORD, make_kernel, running_server, wait_built, write_instance

INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "test", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

ROUTES = [
    ("POST", "/mcp", INITIALIZE, MCP_HEADERS),
    ("GET", "/mcp", None, {"Accept": "text/event-stream"}),
    ("DELETE", "/mcp", None, {}),
    ("POST", "/recall", {"prompt": "how does a refracting telescope gather starlight?"}, {}),
]


@pytest.fixture
async def served(tmp_path):  # type: ignore[no-untyped-def]
    kernel = make_kernel(write_instance(tmp_path))
    async with running_server(kernel) as url, httpx2.AsyncClient(timeout=10) as client:
        await wait_built(kernel)
        yield client, url


AUTHORIZATIONS = [None, "Bearer wrong-password", f"Basic {PASSWORD}", f"Bearer {PASSWORD} extra", "Bearer",
                  f"Bearer {PASSWORD[:-1]}"]


async def test_routes_refuse_a_missing_or_wrong_password(served):
    client, url = served
    for method, path, body, headers in ROUTES:
        for authorization in AUTHORIZATIONS:
            sent = headers if authorization is None else {**headers, "Authorization": authorization}
            response = await client.request(method, f"{url}{path}", json=body, headers=sent)
            assert response.status_code == 401, (method, path, authorization)
            challenge = response.headers["WWW-Authenticate"]
            assert challenge.startswith("Bearer")
            assert "resource_metadata" not in challenge  # no OAuth without a base URL
            assert PASSWORD not in response.text


async def test_routes_accept_the_right_password(served):
    client, url = served
    auth = {"Authorization": f"Bearer {PASSWORD}"}
    response = await client.post(f"{url}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **auth})
    assert response.status_code == 200
    assert "passageway" in response.text
    response = await client.post(f"{url}/recall", json={"prompt": "ok"}, headers=auth)
    assert response.status_code == 200


async def test_health_is_open_with_or_without_a_password(served):
    client, url = served
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Bearer {PASSWORD}"}):
        response = await client.get(f"{url}/health", headers=headers)
        assert response.status_code == 200
        assert response.json()["status"] == "ok"


async def test_oauth_routes_do_not_exist_without_a_base_url(served):
    client, url = served
    for path in ("/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource",
                 "/authorize"):
        assert (await client.get(f"{url}{path}")).status_code == 404
    assert (await client.post(f"{url}/register", json={})).status_code == 404


def test_password_matches():
    assert password_matches("secret", "secret")
    assert not password_matches("secret", "secret2")
    assert not password_matches("", "")
    assert not password_matches(None, None)
    assert not password_matches("x", None)
    assert password_matches("pässwört", "pässwört")


def test_bearer_token():
    class Request:
        def __init__(self, header: str | None) -> None:
            self.headers = {} if header is None else {"Authorization": header}

    assert bearer_token(Request("Bearer abc")) == "abc"
    assert bearer_token(Request("bearer  abc ")) == "abc"
    assert bearer_token(Request("Basic abc")) is None
    assert bearer_token(Request("Bearer ")) is None
    assert bearer_token(Request(None)) is None


def test_unauthorized_names_the_resource_metadata():
    response = unauthorized("https://example.test/.well-known/oauth-protected-resource")
    assert response.status == 401
    assert 'resource_metadata="https://example.test/.well-known/oauth-protected-resource"' in (
        response.headers["WWW-Authenticate"]
    )


async def raw_request(url: str, request: bytes) -> bytes:
    """Send bytes no HTTP client library would send, and return the whole answer."""
    import asyncio
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    writer.write(request)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), timeout=10)
    writer.close()
    return answer


@pytest.mark.parametrize("path", ["/health", "/recall", "/mcp"])
async def test_a_header_that_is_not_utf8_is_refused_not_a_server_error(served, path):
    # Found by the hostile probe (issue 22): every route, /health included, answered 500.
    _client, url = served
    method = "GET" if path == "/health" else "POST"
    answer = await raw_request(url, (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n"
        "Authorization: Bearer \xff\xfe-not-utf8\r\nConnection: close\r\n\r\n"
    ).encode("latin-1"))
    status = int(answer.split(b" ", 2)[1])
    assert status == (200 if path == "/health" else 401), answer[:200]


async def test_health_under_a_foreign_host_says_only_the_status(served):
    # Found by the hostile probe (issue 22): DNS rebinding could read source names and counts.
    client, url = served
    full = (await client.get(f"{url}/health")).json()
    assert "notes" in full["sources"]
    for host in ("attacker.example", "[::1", "localhost.attacker.example:80"):
        answer = await raw_request(url, (
            f"GET /health HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").encode())
        assert answer.startswith(b"HTTP/1.1 200"), answer[:100]
        assert answer.split(b"\r\n\r\n", 1)[1] == b'{"status": "ok"}'
    for host in ("localhost", "127.0.0.1:1", "[::1]:8000"):
        answer = await raw_request(url, (
            f"GET /health HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").encode())
        assert b'"sources"' in answer


async def test_a_missing_and_a_wrong_password_get_different_texts_that_reveal_nothing(served):
    from passageway.kernel.auth import REFUSED_NOTHING_SENT, REFUSED_WRONG_VALUE

    client, url = served
    for method, path, body, headers in ROUTES:
        texts = {}
        for authorization in (None, "Basic abc", "Bearer wrong-password", f"Bearer {PASSWORD[:-1]}"):
            sent = headers if authorization is None else {**headers, "Authorization": authorization}
            response = await client.request(method, f"{url}{path}", json=body, headers=sent)
            texts[authorization] = response.json()["error_description"]
            assert PASSWORD[:-1] not in response.text and "wrong-password" not in response.text
        assert texts[None] == texts["Basic abc"] == REFUSED_NOTHING_SENT, (method, path)
        wrong = {texts["Bearer wrong-password"], texts[f"Bearer {PASSWORD[:-1]}"]}
        assert wrong == {REFUSED_WRONG_VALUE}, (method, path)


def test_the_no_password_text_names_the_file_init_writes(tmp_path, monkeypatch, capsys):
    """A newcomer who ran `init` and curls without the header never set PASSAGEWAY_LOGIN_PASSWORD(_FILE):
    the 401 text also names the file init wrote, so that its path leads to the password."""
    import re
    from pathlib import Path

    from passageway.kernel import cli
    from passageway.kernel.auth import REFUSED_NOTHING_SENT

    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("PASSAGEWAY_INSTANCE", "PASSAGEWAY_LOGIN_PASSWORD", "PASSAGEWAY_LOGIN_PASSWORD_FILE",
                 "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    assert cli.main(["init"]) == 0
    capsys.readouterr()
    named = re.search(r"~/[^\s;)]+", REFUSED_NOTHING_SENT)
    assert named, REFUSED_NOTHING_SENT
    assert Path(named.group()).expanduser().read_text().strip()  # the password init generated

"""OAuth for /mcp with PASSAGEWAY_BASE_URL: discovery, registration, the login page, PKCE, tokens,
replays, rate limiting, hashed state that survives a restart."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import stat
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from passageway.builtin.transport.oauth_state import LoginLimiter, pkce_challenge
from tests.server_helpers import PASSWORD, free_port, make_kernel, running_server, wait_built, write_instance

REDIRECT = "http://127.0.0.1:9/callback"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
MCP_ACCEPT = "application/json, text/event-stream"


def challenge_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    return verifier, pkce_challenge(verifier)


@pytest.fixture
async def oauth_server(tmp_path):  # type: ignore[no-untyped-def]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    environ = write_instance(tmp_path, extra_env={"PASSAGEWAY_BASE_URL": base})
    kernel = make_kernel(environ)
    async with running_server(kernel, port=port) as url, httpx2.AsyncClient(timeout=10) as client:
        await wait_built(kernel)
        yield client, url, environ


async def register(client: httpx2.AsyncClient, url: str, **metadata) -> dict:  # type: ignore[no-untyped-def]
    body = {"redirect_uris": [REDIRECT], "client_name": "Test client", **metadata}
    response = await client.post(f"{url}/register", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def authorize_params(client_id: str, challenge: str, **extra: str) -> dict[str, str]:
    return {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT,
            "code_challenge": challenge, "code_challenge_method": "S256", "state": "state-123", **extra}


async def login(client: httpx2.AsyncClient, url: str, params: dict[str, str], password: str = PASSWORD
                ) -> httpx2.Response:
    return await client.post(f"{url}/authorize", data={**params, "password": password})


async def get_code(client: httpx2.AsyncClient, url: str, client_id: str, challenge: str) -> str:
    response = await login(client, url, authorize_params(client_id, challenge))
    assert response.status_code == 302, response.text
    location = urlsplit(response.headers["Location"])
    query = parse_qs(location.query)
    assert f"{location.scheme}://{location.netloc}{location.path}" == REDIRECT
    assert query["state"] == ["state-123"]
    assert query["iss"] == [url]
    return query["code"][0]


async def exchange(client: httpx2.AsyncClient, url: str, client_id: str, code: str, verifier: str,
                   **extra: str) -> httpx2.Response:
    return await client.post(f"{url}/token", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
        "client_id": client_id, "code_verifier": verifier, **extra,
    })


async def test_discovery(oauth_server):
    client, url, _ = oauth_server
    response = await client.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                 headers={"Accept": "application/json, text/event-stream"})
    assert response.status_code == 401
    challenge = response.headers["WWW-Authenticate"]
    assert f'resource_metadata="{url}/.well-known/oauth-protected-resource"' in challenge
    resource = (await client.get(f"{url}/.well-known/oauth-protected-resource")).json()
    assert resource["resource"] == f"{url}/mcp"
    assert resource["authorization_servers"] == [url]
    metadata = (await client.get(f"{url}/.well-known/oauth-authorization-server")).json()
    assert metadata["issuer"] == url
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["token_endpoint"] == f"{url}/token"
    assert metadata["registration_endpoint"] == f"{url}/register"
    assert set(metadata["grant_types_supported"]) == {"authorization_code", "refresh_token"}


async def test_the_whole_flow_with_pkce(oauth_server, tmp_path):
    client, url, _ = oauth_server
    registered = await register(client, url)
    client_id = registered["client_id"]
    assert "client_secret" not in registered
    verifier, challenge = challenge_pair()

    page = await client.get(f"{url}/authorize", params=authorize_params(client_id, challenge))
    assert page.status_code == 200
    assert "type='password'" in page.text and "Test client" in page.text
    assert page.headers["X-Frame-Options"] == "DENY"

    wrong = await login(client, url, authorize_params(client_id, challenge), password="not-it")
    assert wrong.status_code == 401
    assert "Wrong password" in wrong.text
    assert "Location" not in wrong.headers

    code = await get_code(client, url, client_id, challenge)
    tokens = await exchange(client, url, client_id, code, verifier)
    assert tokens.status_code == 200, tokens.text
    body = tokens.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] > 0
    access, refresh = body["access_token"], body["refresh_token"]

    # The access token opens /mcp for the official client ...
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {access}"}, timeout=30)
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as mcp:
        names = {tool.name for tool in (await mcp.list_tools()).tools}
        assert names == {"recall", "read", "status"}
    # ... but never the hook endpoint, which takes the static password only.
    hook = await client.post(f"{url}/recall", json={"prompt": "telescope lenses"},
                             headers={"Authorization": f"Bearer {access}"})
    assert hook.status_code == 401

    # The code works once.
    replay = await exchange(client, url, client_id, code, verifier)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"

    # Refresh tokens rotate: the new pair works, the old refresh token does not.
    refreshed = await client.post(f"{url}/token", data={"grant_type": "refresh_token",
                                                         "refresh_token": refresh, "client_id": client_id})
    assert refreshed.status_code == 200
    new_access = refreshed.json()["access_token"]
    assert new_access != access
    again = await client.post(f"{url}/token", data={"grant_type": "refresh_token",
                                                     "refresh_token": refresh, "client_id": client_id})
    assert again.json()["error"] == "invalid_grant"
    ping = await client.post(f"{url}/mcp", json=INITIALIZE,
                             headers={"Authorization": f"Bearer {new_access}", "Accept": MCP_ACCEPT})
    assert ping.status_code == 200

    # The state file holds hashes only, and only its owner can read it.
    state_path = tmp_path / "data" / "oauth.json"
    text = state_path.read_text()
    for secret in (access, refresh, new_access, code):
        assert secret not in text
    assert hashlib.sha256(new_access.encode()).hexdigest() in text
    assert stat.S_IMODE(os.stat(state_path).st_mode) == 0o600


async def test_wrong_verifier_is_refused(oauth_server):
    client, url, _ = oauth_server
    client_id = (await register(client, url))["client_id"]
    _, challenge = challenge_pair()
    code = await get_code(client, url, client_id, challenge)
    other_verifier, _ = challenge_pair()
    response = await exchange(client, url, client_id, code, other_verifier)
    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"


async def test_code_bound_to_its_client(oauth_server):
    client, url, _ = oauth_server
    first = (await register(client, url))["client_id"]
    second = (await register(client, url))["client_id"]
    verifier, challenge = challenge_pair()
    code = await get_code(client, url, first, challenge)
    response = await exchange(client, url, second, code, verifier)
    assert response.json()["error"] == "invalid_grant"


async def test_unregistered_client(oauth_server):
    client, url, _ = oauth_server
    _, challenge = challenge_pair()
    page = await client.get(f"{url}/authorize", params=authorize_params("no-such-client", challenge))
    assert page.status_code == 400 and "not registered" in page.text
    posted = await login(client, url, authorize_params("no-such-client", challenge))
    assert posted.status_code == 400 and "Location" not in posted.headers
    token = await exchange(client, url, "no-such-client", "code", "v" * 43)
    assert token.status_code == 401 and token.json()["error"] == "invalid_client"


async def test_redirect_uri_must_be_registered(oauth_server):
    client, url, _ = oauth_server
    client_id = (await register(client, url))["client_id"]
    _, challenge = challenge_pair()
    params = authorize_params(client_id, challenge, redirect_uri="https://evil.example/steal")
    page = await client.get(f"{url}/authorize", params=params)
    assert page.status_code == 400 and "Location" not in page.headers


async def test_plain_pkce_and_missing_challenge_are_refused(oauth_server):
    client, url, _ = oauth_server
    client_id = (await register(client, url))["client_id"]
    for params in (authorize_params(client_id, "abc", code_challenge_method="plain"),
                   authorize_params(client_id, "")):
        response = await client.get(f"{url}/authorize", params=params)
        assert response.status_code == 302
        assert parse_qs(urlsplit(response.headers["Location"]).query)["error"] == ["invalid_request"]


async def test_confidential_client_needs_its_secret(oauth_server):
    client, url, _ = oauth_server
    registered = await register(client, url, token_endpoint_auth_method="client_secret_post")
    client_id, client_secret = registered["client_id"], registered["client_secret"]
    verifier, challenge = challenge_pair()
    code = await get_code(client, url, client_id, challenge)
    refused = await exchange(client, url, client_id, code, verifier, client_secret="wrong")
    assert refused.status_code == 401
    code = await get_code(client, url, client_id, challenge)
    basic = base64.b64encode(f"{client_id}:{client_secret}".encode()).decode()
    accepted = await client.post(f"{url}/token", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "code_verifier": verifier,
    }, headers={"Authorization": f"Basic {basic}"})
    assert accepted.status_code == 200, accepted.text


async def test_login_attempts_are_rate_limited(oauth_server):
    client, url, _ = oauth_server
    client_id = (await register(client, url))["client_id"]
    _, challenge = challenge_pair()
    params = authorize_params(client_id, challenge)
    for _ in range(5):
        assert (await login(client, url, params, password="guess")).status_code == 401
    blocked = await login(client, url, params)  # even the right password, for a while
    assert blocked.status_code == 429
    assert "Location" not in blocked.headers


def test_login_limiter_window():
    limiter = LoginLimiter(per_address=2, overall=3, window=10)
    limiter.failed("a", now=0)
    assert not limiter.blocked("a", now=1)
    limiter.failed("a", now=1)
    assert limiter.blocked("a", now=2)
    assert not limiter.blocked("b", now=2)
    limiter.failed("b", now=2)
    assert limiter.blocked("c", now=3)  # three failures overall
    assert not limiter.blocked("a", now=20)


async def test_tokens_survive_a_restart(tmp_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    environ = write_instance(tmp_path, extra_env={"PASSAGEWAY_BASE_URL": base})
    async with running_server(make_kernel(environ), port=port) as url, httpx2.AsyncClient() as client:
        client_id = (await register(client, url))["client_id"]
        verifier, challenge = challenge_pair()
        code = await get_code(client, url, client_id, challenge)
        access = (await exchange(client, url, client_id, code, verifier)).json()["access_token"]
    async with running_server(make_kernel(environ), port=port) as url, httpx2.AsyncClient() as client:
        response = await client.post(f"{url}/mcp", json=INITIALIZE,
                                     headers={"Authorization": f"Bearer {access}", "Accept": MCP_ACCEPT})
        assert response.status_code == 200
        state = json.loads((tmp_path / "data" / "oauth.json").read_text())
        assert client_id in state["clients"]


async def test_the_official_client_logs_in_through_oauth(oauth_server):
    """The MCP SDK's OAuth client: discovery, registration, PKCE, the code and the token."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    client, url, _ = oauth_server

    class MemoryStorage:
        def __init__(self) -> None:
            self.tokens = None
            self.client_info = None

        async def get_tokens(self):  # type: ignore[no-untyped-def]
            return self.tokens

        async def set_tokens(self, tokens) -> None:  # type: ignore[no-untyped-def]
            self.tokens = tokens

        async def get_client_info(self):  # type: ignore[no-untyped-def]
            return self.client_info

        async def set_client_info(self, client_info) -> None:  # type: ignore[no-untyped-def]
            self.client_info = client_info

    redirected: dict[str, str] = {}

    async def redirect_handler(authorization_url: str) -> None:
        # Play the user: open the login page, then send the password.
        query = {key: values[0] for key, values in parse_qs(urlsplit(authorization_url).query).items()}
        assert (await client.get(authorization_url)).status_code == 200
        response = await login(client, url, query)
        assert response.status_code == 302, response.text
        redirected.update({key: values[0] for key, values in
                           parse_qs(urlsplit(response.headers["Location"]).query).items()})

    async def callback_handler() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=redirected["code"], state=redirected.get("state"),
                                       iss=redirected.get("iss"))

    storage = MemoryStorage()
    provider = OAuthClientProvider(
        server_url=f"{url}/mcp",
        client_metadata=OAuthClientMetadata(redirect_uris=[REDIRECT], client_name="SDK client",
                                            grant_types=["authorization_code", "refresh_token"],
                                            response_types=["code"], token_endpoint_auth_method="none"),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    http = httpx2.AsyncClient(auth=provider, timeout=30)
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as mcp:
        question = "how does a refracting telescope gather starlight?"
        result = await mcp.call_tool("recall", {"question": question})
        assert "Refracting telescope" in result.content[0].text
    assert storage.tokens is not None and storage.tokens.access_token


# Found by the hostile probe (issue 22)

async def test_the_login_page_shows_where_the_browser_returns(oauth_server):
    client, url, _ = oauth_server
    evil = "https://collector.example.net/cb"
    client_id = (await register(client, url, redirect_uris=[evil], client_name="Claude"))["client_id"]
    params = {**authorize_params(client_id, challenge_pair()[1]), "redirect_uri": evil}
    page = await client.get(f"{url}/authorize", params=params)
    assert page.status_code == 200 and "<strong>collector.example.net</strong>" in page.text


@pytest.mark.parametrize(("path", "body", "content_type"), [
    ("/register", b"[" * 100_000 + b"]" * 100_000, "application/json"),
    ("/register", b'{"redirect_uris": ["\xff"]}', "application/json"),
    ("/token", b"grant_type=refresh_token&refresh_token=\xff\xfe", "application/x-www-form-urlencoded"),
    ("/authorize", b"client_id=\xff\xfe&password=x", "application/x-www-form-urlencoded"),
])
async def test_hostile_bodies_are_the_clients_400(oauth_server, path, body, content_type):
    client, url, _ = oauth_server
    response = await client.post(f"{url}{path}", content=body, headers={"Content-Type": content_type})
    assert response.status_code == 400, response.text


async def test_a_token_that_is_not_utf8_is_refused_on_mcp_with_oauth_on(oauth_server):
    # Found by the reliability suite (issue 22): hashing it for the token lookup raised, a 500.
    from tests.test_auth import raw_request

    _client, url, _ = oauth_server
    answer = await raw_request(url, (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n"
        "Authorization: Bearer \xff\xfe-token\r\nConnection: close\r\n\r\n").encode("latin-1"))
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]


# Found by the second probe (issue 32)

async def test_a_redirect_address_a_browser_reads_elsewhere_is_refused(oauth_server):
    # 32.3: urlsplit found 127.0.0.1 in this address; a browser goes to evil.example with the code.
    client, url, _ = oauth_server
    for address in ("http://evil.example\\@127.0.0.1/cb", "http://evil.example@127.0.0.1/cb",
                    "http://0x7f.1/cb"):
        response = await client.post(f"{url}/register", json={"redirect_uris": [address]})
        assert response.status_code == 400, (address, response.text)
        assert response.json()["error"] == "invalid_redirect_uri"


async def test_a_login_page_for_an_old_unsafe_registration_is_refused(tmp_path):
    # 32.3 and 32.7: a state file written before the rules keeps such clients; the page neither
    # sends the browser there nor fails to encode the name.
    from passageway.builtin.transport.oauth import OAuthServer

    state = tmp_path / "oauth.json"
    evil = "http://evil.example\\@127.0.0.1/cb"
    state.write_text(json.dumps({"version": 1, "codes": {}, "tokens": {}, "clients": {"c": {
        "client_id": "c", "client_id_issued_at": 1, "redirect_uris": [evil, REDIRECT], "authorised": 1,
        "client_name": "Claude \ud800", "token_endpoint_auth_method": "none"}}}))
    server = OAuthServer("http://127.0.0.1:1", PASSWORD, state)
    params = authorize_params("c", challenge_pair()[1])
    client, refusal = server._check_authorization_request({**params, "redirect_uri": evil})
    assert client is None and refusal is not None and refusal.status == 400
    client, refusal = server._check_authorization_request(params)
    assert refusal is None and client is not None
    from passageway.builtin.transport.oauth_pages import login_page

    page = login_page(client, params)
    assert page.status == 200 and b"<strong>127.0.0.1</strong>" in page.body  # type: ignore[operator]


def test_temporary_files_left_by_a_killed_save_are_removed(tmp_path):
    # 32.8: a kill -9 during a save left .oauth-*.json behind for good.
    from passageway.builtin.transport.oauth_state import OAuthState

    stale, fresh = tmp_path / ".oauth-abc.json", tmp_path / ".oauth-def.json"
    stale.write_text("{}")
    fresh.write_text("{}")
    os.utime(stale, (1, 1))
    OAuthState(tmp_path / "oauth.json")
    assert not stale.exists() and fresh.exists()  # a save running now keeps its file


async def test_a_save_of_a_large_state_does_not_stall_the_loop(tmp_path, monkeypatch):
    # 32.8: the snapshot was a JSON round trip on the event loop (0.6 s for 117 MB). What keeps
    # the loop free is where the JSON work runs, so the test records the thread of every JSON
    # call the save makes (timing it against a same-run round trip failed on a busy machine).
    import json
    import threading

    from passageway.builtin.transport import oauth_state
    from passageway.builtin.transport.oauth_state import OAuthState

    state = OAuthState(tmp_path / "oauth.json")
    for number in range(8000):
        state.clients[str(number)] = {"client_id": str(number),
                                      "redirect_uris": ["https://x.example/" + "a" * 1000]}
    calls: list[tuple[str, int]] = []

    class RecordingJson:
        """The module's ``json``, noting which thread each call runs on."""

        def __getattr__(self, name):
            real = getattr(json, name)
            if not callable(real) or name.startswith("JSON"):
                return real

            def recorded(*args, **kwargs):
                calls.append((name, threading.get_ident()))
                return real(*args, **kwargs)

            return recorded

    monkeypatch.setattr(oauth_state, "json", RecordingJson())
    loop_thread = threading.get_ident()
    await state.save()
    monkeypatch.undo()
    assert calls, "the save wrote no JSON"
    assert [name for name, thread in calls if thread == loop_thread] == [], calls
    state.clients.clear()
    state.load()
    assert len(state.clients) == 8000


async def test_limits_behind_a_trusted_proxy_count_each_forwarded_client(tmp_path):
    # 32.13: behind the reverse proxy every user shared the proxy's one limit.
    port = free_port()
    environ = write_instance(tmp_path, extra_env={"PASSAGEWAY_BASE_URL": f"http://127.0.0.1:{port}",
                                                  "PASSAGEWAY_TRUSTED_PROXY": "127.0.0.1"})
    kernel = make_kernel(environ)
    async with running_server(kernel, port=port) as url, httpx2.AsyncClient(timeout=10) as client:
        await wait_built(kernel)

        async def register_from(address: str) -> int:
            response = await client.post(f"{url}/register", json={"redirect_uris": [REDIRECT]},
                                         headers={"X-Forwarded-For": address})
            return response.status_code

        assert [await register_from("203.0.113.7") for _ in range(11)][-1] == 429
        assert await register_from("203.0.113.8") == 201  # another user behind the same proxy


async def test_refreshing_does_not_pile_up_access_tokens(oauth_server, tmp_path):
    # 38.7: every refresh left its old access token valid for its hour (1,554 in 120 s).
    client, url, _ = oauth_server
    client_id = (await register(client, url))["client_id"]
    verifier, challenge = challenge_pair()
    body = (await exchange(client, url, client_id, await get_code(client, url, client_id, challenge),
                           verifier)).json()
    first_access = body["access_token"]
    for _ in range(5):
        body = (await client.post(f"{url}/token", data={
            "grant_type": "refresh_token", "refresh_token": body["refresh_token"], "client_id": client_id,
        })).json()
    tokens = json.loads((tmp_path / "data" / "oauth.json").read_text())["tokens"]
    assert sorted(record["kind"] for record in tokens.values()) == ["access", "refresh"]
    headers = {"Accept": MCP_ACCEPT}
    old = await client.post(f"{url}/mcp", json=INITIALIZE,
                            headers={**headers, "Authorization": f"Bearer {first_access}"})
    new = await client.post(f"{url}/mcp", json=INITIALIZE,
                            headers={**headers, "Authorization": f"Bearer {body['access_token']}"})
    assert old.status_code == 401 and new.status_code == 200

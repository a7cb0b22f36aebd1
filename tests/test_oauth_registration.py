"""``/register`` (RFC 7591): unsafe and oversized metadata refused, registrations counted per
address, the caps on clients, and eviction that never logs a client out."""

from __future__ import annotations

import json
import os

import httpx2
import pytest

from tests.server_helpers import free_port, make_kernel, running_server, wait_built, write_instance
from tests.test_oauth import (  # noqa: F401 (oauth_server is a fixture)
    REDIRECT,
    challenge_pair,
    exchange,
    get_code,
    oauth_server,
    register,
)


async def test_registration_rejects_unsafe_redirects(oauth_server):  # noqa: F811 (the fixture imported above)
    client, url, _ = oauth_server
    for uris in (["http://example.com/callback"], ["javascript:alert(1)"], [], "https://x.example/cb"):
        response = await client.post(f"{url}/register", json={"redirect_uris": uris})
        assert response.status_code == 400
    response = await client.post(f"{url}/register", content=b"nonsense")
    assert response.status_code == 400


async def test_registration_is_limited_per_address(oauth_server):  # noqa: F811 (the fixture imported above)
    client, url, _ = oauth_server
    for _ in range(10):
        await register(client, url)
    refused = await client.post(f"{url}/register", json={"redirect_uris": [REDIRECT]})
    assert refused.status_code == 429 and "registrations from this address" in refused.text


async def test_a_flood_of_registrations_never_logs_a_client_out(tmp_path, monkeypatch):
    from passageway.builtin.transport import oauth_registration

    monkeypatch.setattr(oauth_registration, "MAX_CLIENTS", 3)
    monkeypatch.setattr(oauth_registration, "MAX_REGISTRATIONS_PER_ADDRESS", 1000)
    port = free_port()
    environ = write_instance(tmp_path, extra_env={"PASSAGEWAY_BASE_URL": f"http://127.0.0.1:{port}"})
    kernel = make_kernel(environ)
    async with running_server(kernel, port=port) as url, httpx2.AsyncClient(timeout=10) as client:
        await wait_built(kernel)
        client_id = (await register(client, url))["client_id"]
        verifier, challenge = challenge_pair()
        code = await get_code(client, url, client_id, challenge)
        refresh = (await exchange(client, url, client_id, code, verifier)).json()["refresh_token"]
        for _ in range(20):  # idle clients evict each other, never the logged-in one
            await register(client, url)
        refreshed = await client.post(f"{url}/token", data={
            "grant_type": "refresh_token", "refresh_token": refresh, "client_id": client_id})
        assert refreshed.status_code == 200, refreshed.text


@pytest.mark.parametrize("address", ["http://127.0.0.1:9/c\r\nSet-Cookie: x=1", "http://127.0.0.1:9/c\x00b",
                                     "http://127.0.0.1:9/c\nb"])
async def test_a_redirect_address_with_control_characters_is_a_json_400(oauth_server, address):  # noqa: F811 (the fixture imported above)
    # 32.7: it was registered, and the redirect to it closed the connection with a traceback.
    client, url, _ = oauth_server
    response = await client.post(f"{url}/register", json={"redirect_uris": [address]})
    assert response.status_code == 400 and response.json()["error"] == "invalid_redirect_uri"


async def test_a_client_name_with_a_lone_surrogate_is_a_json_400(oauth_server):  # noqa: F811 (the fixture imported above)
    # 32.7: the login page could not encode the name: a 500.
    client, url, _ = oauth_server
    body = b'{"redirect_uris": ["' + REDIRECT.encode() + b'"], "client_name": "Claude \\ud800"}'
    response = await client.post(f"{url}/register", content=body,
                                 headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and response.json()["error"] == "invalid_client_metadata"


async def test_redirect_addresses_and_names_are_capped(oauth_server):  # noqa: F811 (the fixture imported above)
    # 32.8: 30 registrations with 4 MB of redirect addresses each made oauth.json 117 MB.
    client, url, environ = oauth_server
    long = "https://example.com/" + "a" * 5000
    refused = await client.post(f"{url}/register", json={"redirect_uris": [long]})
    assert refused.status_code == 400 and "longer than" in refused.text
    many = await client.post(f"{url}/register", json={"redirect_uris": [REDIRECT] * 11})
    assert many.status_code == 400
    await register(client, url, client_name="n" * 100_000)
    state = os.path.join(environ["PASSAGEWAY_DATA_DIR"], "oauth.json")
    assert os.path.getsize(state) < 10_000


async def test_unused_registrations_are_capped(tmp_path, monkeypatch):
    # 32.8: anonymous registrations that never log in are forgotten, oldest first; a logged-in
    # client stays.
    from passageway.builtin.transport import oauth_registration

    monkeypatch.setattr(oauth_registration, "MAX_UNUSED_CLIENTS", 3)
    monkeypatch.setattr(oauth_registration, "MAX_REGISTRATIONS_PER_ADDRESS", 1000)
    port = free_port()
    environ = write_instance(tmp_path, extra_env={"PASSAGEWAY_BASE_URL": f"http://127.0.0.1:{port}"})
    kernel = make_kernel(environ)
    async with running_server(kernel, port=port) as url, httpx2.AsyncClient(timeout=10) as client:
        await wait_built(kernel)
        used = (await register(client, url))["client_id"]
        await get_code(client, url, used, challenge_pair()[1])
        for _ in range(10):
            await register(client, url)
    clients = json.loads((tmp_path / "data" / "oauth.json").read_text())["clients"]
    assert used in clients and len(clients) == 4

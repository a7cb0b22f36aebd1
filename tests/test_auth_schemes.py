"""A client that sends its password with another scheme than Bearer (Basic, as curl -u does) is
told that only Bearer is read, not that it sent nothing."""

from __future__ import annotations

import base64

import httpx2

from tests.server_helpers import PASSWORD, make_kernel, running_server, write_instance


async def test_basic_is_answered_as_not_supported_with_bearer_named(tmp_path):
    kernel = make_kernel(write_instance(tmp_path))
    basic = "Basic " + base64.b64encode(f"user:{PASSWORD}".encode()).decode()
    async with running_server(kernel, start_sync=False) as url, httpx2.AsyncClient(timeout=30) as client:
        for path in ("/recall", "/mcp"):
            response = await client.post(f"{url}{path}", json={"prompt": "x"},
                                         headers={"Authorization": basic})
            assert response.status_code == 401
            text = response.json()["error_description"]
            assert "Basic and other schemes are not supported" in text and "Authorization: Bearer" in text
            assert PASSWORD not in response.text

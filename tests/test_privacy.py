"""V2 and V7 in the logs: a whole server session at DEBUG leaves no question, prompt or secret."""

from __future__ import annotations

import io
import logging

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from passageway.kernel.commands.logging_setup import SecretFilter, configure_logging
from tests.server_helpers import PASSWORD, free_port, make_kernel, running_server, wait_built, write_instance

QUESTION = "how does a refracting telescope gather starlight with an objective lens zebrafinch?"
PROMPT = "what does the sourdough starter need to ferment with wild yeast quokka?"
MARKERS = ("zebrafinch", "quokka")


async def test_a_server_session_logs_no_question_and_no_secret(tmp_path, caplog):
    port = free_port()
    environ = write_instance(tmp_path, extra_env={"PASSAGEWAY_BASE_URL": f"http://127.0.0.1:{port}"})
    buffer = io.StringIO()
    handler = configure_logging("DEBUG", [PASSWORD], stream=buffer)
    caplog.set_level(logging.DEBUG)
    try:
        kernel = make_kernel(environ)
        async with running_server(kernel, port=port) as url, httpx2.AsyncClient(timeout=30) as client:
            await wait_built(kernel)
            auth = {"Authorization": f"Bearer {PASSWORD}"}
            http = httpx2.AsyncClient(headers=auth, timeout=30)
            async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as mcp:
                await mcp.list_tools()
                result = await mcp.call_tool("recall", {"question": QUESTION})
                assert "Refracting telescope" in result.content[0].text
                await mcp.call_tool("status", {})
            response = await client.post(f"{url}/recall", json={"prompt": PROMPT, "session_id": "s",
                                                                 "cwd": "/home/me/quokka"}, headers=auth)
            assert response.status_code == 200
            await client.post(f"{url}/recall", json={"prompt": PROMPT}, headers={"Authorization": "Bearer x"})
            kernel.embedder.fail = True
            await client.post(f"{url}/recall", json={"prompt": PROMPT}, headers=auth)
            kernel.embedder.fail = False
            registered = (await client.post(f"{url}/register", json={"redirect_uris": ["http://127.0.0.1:9/cb"]}))
            client_id = registered.json()["client_id"]
            await client.post(f"{url}/authorize", data={
                "response_type": "code", "client_id": client_id, "redirect_uri": "http://127.0.0.1:9/cb",
                "code_challenge": "c" * 43, "code_challenge_method": "S256", "password": PASSWORD + "-wrong",
            })
            await client.get(f"{url}/health", headers=auth)
    finally:
        logging.getLogger().removeHandler(handler)
    logged = buffer.getvalue() + caplog.text
    assert "recall: " in logged  # the one line a recall leaves is there ...
    for marker in MARKERS:
        assert marker not in logged  # ... but nothing of the question or the prompt
    assert PASSWORD not in logged
    assert "telescope gather starlight" not in logged


def test_secret_filter_masks_known_secrets():
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "token is %s here", ("s3cr3t-value",), None)
    assert SecretFilter(["s3cr3t-value"]).filter(record)
    assert record.getMessage() == "token is *** here"
    short = logging.LogRecord("x", logging.INFO, __file__, 1, "a b c", None, None)
    SecretFilter(["a"]).filter(short)
    assert short.getMessage() == "a b c"


async def test_a_malformed_http_request_is_one_warning_line_not_a_traceback(tmp_path, monkeypatch):
    # Found by the hostile probe (issue 22): aiohttp logged it as ERROR with a traceback; and
    # issue 38: a WARNING per request, thousands a minute. Now one a minute, with a count.
    import asyncio

    from passageway.kernel import http_guard

    monkeypatch.setattr(http_guard, "MALFORMED", http_guard.Occasional(logging.WARNING, "a malformed HTTP "
                                                                       "request was refused"))
    buffer = io.StringIO()
    handler = configure_logging("INFO", [PASSWORD], stream=buffer)
    try:
        kernel = make_kernel(write_instance(tmp_path))
        async with running_server(kernel) as url:
            port = int(url.rsplit(":", 1)[1])
            for raw in (b"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer guess-1234\x00\r\n\r\n",
                        b"GET /health HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 70_000 + b"\r\n\r\n"):
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(raw)
                await writer.drain()
                assert (await reader.read(20)).startswith(b"HTTP/1.0 400")
                writer.close()
    finally:
        logging.getLogger().removeHandler(handler)
    logged = buffer.getvalue()
    assert "Traceback" not in logged and " ERROR " not in logged
    assert logged.count("a malformed HTTP request was refused: 400") == 1
    assert http_guard.MALFORMED.total == 2
    assert "guess-1234" not in logged  # the offending header is not quoted

"""``passageway mcp``: the stdio bridge, driven by the official MCP Python client's stdio client.

The bridge runs as a real subprocess (as Claude Desktop starts it) and calls a live server on
127.0.0.1 started in the test, so one index answers over HTTP and over stdio alike.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from passageway.builtin.transport.stdio_bridge import explain, find_password, server_url
from passageway.kernel.errors import ConfigError
from passageway.kernel.query.rendering import NOTHING
from tests.server_helpers import PASSWORD, free_port
from tests.test_mcp_npm import live_server  # noqa: F401 (the fixture below builds on it)

TELESCOPE = "how does a refracting telescope gather starlight with a lens?"


@contextlib.asynccontextmanager
async def bridge(tmp_path: Path, *arguments: str, env: Mapping[str, str]) -> AsyncIterator[Client]:
    """``passageway mcp`` as a subprocess, with the MCP client on its stdin and stdout."""
    home = tmp_path / "bridge-home"
    home.mkdir(exist_ok=True)
    parameters = StdioServerParameters(
        command=sys.executable, args=["-m", "passageway.kernel.cli", "mcp", *arguments],
        env={"HOME": str(home), "PATH": os.environ.get("PATH", ""), **env},
    )
    async with Client(parameters, read_timeout_seconds=60) as client:
        yield client


@pytest.fixture
def served(live_server: str) -> str:  # noqa: F811
    """The URL of a live server with the four test items, built."""
    return live_server


async def test_recall_and_status_through_the_stdio_client(served, tmp_path):
    password_file = tmp_path / "password"
    password_file.write_text(PASSWORD + "\n")
    async with bridge(tmp_path, "--url", served, env={"PASSAGEWAY_LOGIN_PASSWORD_FILE": str(password_file)}
                      ) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {"recall", "read", "status"}
        assert tools["recall"].input_schema["required"] == ["question"]

        result = await client.call_tool("recall", {"question": TELESCOPE})
        assert not result.is_error
        text = result.content[0].text
        assert "Refracting telescope" in text
        assert "https://example.test/telescope" in text

        silent = await client.call_tool("recall", {"question": "quarterly tax declaration deadline"})
        assert not silent.is_error
        assert silent.content[0].text == NOTHING

        status = await client.call_tool("status", {})
        report = json.loads(status.content[0].text)
        assert report["status"] == "ok"
        assert report["sources"]["notes"]["items"] == 4


async def test_the_port_comes_from_the_environment_and_the_password_from_the_instance_file(served, tmp_path):
    """Without --url and password variables: PASSAGEWAY_PORT and ~/.config/passageway/password."""
    port = served.rsplit(":", 1)[1]
    config = tmp_path / "bridge-home" / ".config" / "passageway"
    config.mkdir(parents=True)
    (config / "password").write_text(PASSWORD + "\n")
    async with bridge(tmp_path, env={"PASSAGEWAY_PORT": port}) as client:
        result = await client.call_tool("recall", {"question": TELESCOPE})
        assert not result.is_error
        assert "Refracting telescope" in result.content[0].text


async def test_no_server_is_one_clear_tool_error(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    async with bridge(tmp_path, "--url", url, env={"PASSAGEWAY_LOGIN_PASSWORD": PASSWORD}) as client:
        assert {tool.name for tool in (await client.list_tools()).tools} == {"recall", "read", "status"}
        result = await client.call_tool("recall", {"question": TELESCOPE})
        assert result.is_error
        message = result.content[0].text
        assert message.startswith(f"no passageway server answers at {url}")
        assert "\n" not in message
        assert PASSWORD not in message


async def test_a_wrong_password_is_named_without_showing_it(served, tmp_path):
    wrong = {"PASSAGEWAY_LOGIN_PASSWORD": "wrong-password"}
    async with bridge(tmp_path, "--url", served, env=wrong) as client:
        result = await client.call_tool("status", {})
        assert result.is_error
        assert "refused the password" in result.content[0].text
        assert "wrong-password" not in result.content[0].text


def test_the_default_address_follows_the_server_settings():
    assert server_url({}) == "http://127.0.0.1:8082"
    assert server_url({"PASSAGEWAY_PORT": "8083", "PASSAGEWAY_HOST": "0.0.0.0"}) == "http://127.0.0.1:8083"
    assert server_url({}, "http://127.0.0.1:9000/mcp") == "http://127.0.0.1:9000"
    with pytest.raises(ConfigError, match="--url"):
        server_url({}, "127.0.0.1:9000")


def test_without_a_password_the_command_says_where_to_put_it(tmp_path):
    with pytest.raises(ConfigError, match="PASSAGEWAY_LOGIN_PASSWORD_FILE") as raised:
        find_password({"HOME": str(tmp_path)}, "work")
    assert "~/.config/passageway-work/password" in str(raised.value)


def test_the_command_fails_in_one_line_without_a_password(tmp_path):
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "passageway.kernel.cli", "mcp"], capture_output=True, text=True, timeout=60,
        env={"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "")}, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("passageway: no password for the server")


def test_a_missing_server_is_one_line_on_stderr_at_start(tmp_path):
    """Not fatal (the server may start after the client), but said at once."""
    import subprocess

    url = f"http://127.0.0.1:{free_port()}"
    done = subprocess.run(
        [sys.executable, "-m", "passageway.kernel.cli", "mcp", "--url", url], capture_output=True, text=True,
        timeout=60, env={"HOME": str(tmp_path), "PATH": os.environ.get("PATH", ""),
                         "PASSAGEWAY_LOGIN_PASSWORD": PASSWORD}, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0  # stdin closed: the client went away
    assert done.stdout == ""
    assert done.stderr.startswith(f"passageway mcp: no passageway server answers at {url}")
    assert PASSWORD not in done.stderr


def test_explain_names_a_refused_connection():
    error = ExceptionGroup("outer", [ConnectionRefusedError(111, "refused")])
    assert explain(error, "http://127.0.0.1:1").startswith("no passageway server answers at http://127.0.0.1:1")


async def test_calls_pending_when_stdin_closes_are_answered(served, tmp_path):
    # 32.13: the bridge cancelled every call still running when its stdin closed; the client that
    # wrote its last requests and closed its end got no answers.
    import asyncio

    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"},
        }},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "recall", "arguments": {"question": TELESCOPE}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "status", "arguments": {}}},
    ]
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "passageway.kernel.cli", "mcp", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={"HOME": str(tmp_path), "PATH": os.environ.get("PATH", ""),
             "PASSAGEWAY_PORT": served.rsplit(":", 1)[1], "PASSAGEWAY_LOGIN_PASSWORD": PASSWORD},
    )
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    stdout, stderr = await asyncio.wait_for(process.communicate(data), 120)
    answers = {message.get("id"): message for message in map(json.loads, stdout.decode().splitlines())}
    assert set(answers) == {1, 2, 3}, stdout + stderr
    assert "result" in answers[2], answers[2]
    assert "telescope" in answers[2]["result"]["content"][0]["text"].lower()
    assert not answers[3]["result"].get("isError")


async def test_a_degraded_server_is_reachable(tmp_path):
    # 38.7: /health answers 503 while degraded; the bridge still finds the server there.
    from passageway.builtin.transport.stdio_bridge import Bridge
    from tests.server_helpers import make_kernel, running_server, wait_built, write_instance

    kernel = make_kernel(write_instance(tmp_path, fail="check,list,fetch"))
    async with running_server(kernel) as url:
        await wait_built(kernel)
        assert await Bridge(url, PASSWORD, "passageway").reachable() is None
    assert "no passageway server answers" in (await Bridge(url, PASSWORD, "passageway").reachable() or "")

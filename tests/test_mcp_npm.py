"""``/mcp`` against the MCP tools from npm: the Inspector's CLI mode and the conformance suite.

Both run against a live server on 127.0.0.1 (the toy embedder and the fake connector). The
conformance CLI cannot send a header, so a small proxy in the test adds the bearer password. The
scenarios for features passageway deliberately lacks are listed, each with its reason, in
``tests/mcp-conformance-expected-failures.yml``; the suite fails on any other failure and on an
expected failure that starts passing. Skipped, with the reason, when npm or the packages cannot
be had (the packages are fetched from the npm registry on first use and cached by npm).
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from tests.server_helpers import PASSWORD, free_port, make_kernel, running_server, wait_built, write_instance

pytestmark = pytest.mark.npm

# The newest conformance release that runs on Node 20 (0.1.14 and later need Node 22's fs.globSync).
CONFORMANCE = "@modelcontextprotocol/conformance@0.1.13"
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
EXPECTED_FAILURES = Path(__file__).with_name("mcp-conformance-expected-failures.yml")
TOOLS_DIR = Path(os.environ.get("PASSAGEWAY_NPM_TOOLS", Path.home() / ".cache" / "passageway-npm-tools"))
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "upgrade", "content-length", "host",
              "authorization"}


async def _run(*command: str, cwd: Path | None = None, timeout: float = 300) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *command, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "NO_COLOR": "1", "npm_config_update_notifier": "false"},
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
        return -1, f"timed out after {timeout} s"
    return process.returncode or 0, output.decode("utf-8", "replace")


async def _install(package: str) -> Path:
    """Install ``package`` into a folder of its own (once); returns the folder.

    Test workers are processes: on a machine without the folder, several ask for the same package
    at once. One installs it under a lock while the others wait for the lock, then find it there
    (running a program npm is still writing fails with "Text file busy")."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("node and npm are not installed")
    folder = TOOLS_DIR / package.replace("/", "_").replace("@", "")
    marker = folder / ".installed"
    if marker.exists():
        return folder
    TOOLS_DIR.mkdir(parents=True, exist_ok=True)
    with open(TOOLS_DIR / f".{folder.name}.lock", "w") as lock:
        await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
        try:
            if not marker.exists():
                folder.mkdir(exist_ok=True)
                code, output = await _run("npm", "install", "--no-audit", "--no-fund", "--prefix",
                                          str(folder), package, timeout=600)
                if code != 0:
                    pytest.skip(f"npm could not install {package}: {output[-500:]}")
                marker.write_text("ok")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return folder


@pytest.fixture
async def live_server(tmp_path) -> AsyncIterator[str]:  # type: ignore[no-untyped-def]
    kernel = make_kernel(write_instance(tmp_path))
    async with running_server(kernel) as url:
        await wait_built(kernel)
        yield url


async def _proxy(target: str) -> AsyncIterator[str]:
    """A proxy on 127.0.0.1 that adds ``Authorization: Bearer <password>`` to every request."""
    session = aiohttp.ClientSession(auto_decompress=False)

    async def forward(request: web.Request) -> web.StreamResponse:
        headers = {name: value for name, value in request.headers.items() if name.lower() not in HOP_BY_HOP}
        headers["Authorization"] = f"Bearer {PASSWORD}"
        headers["Host"] = request.headers.get("Host", "")
        body = await request.read()
        async with session.request(request.method, f"{target}{request.rel_url}", headers=headers,
                                   data=body or None, allow_redirects=False) as upstream:
            response = web.StreamResponse(status=upstream.status)
            for name, value in upstream.headers.items():
                if name.lower() not in HOP_BY_HOP:
                    response.headers.add(name, value)
            await response.prepare(request)
            try:
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
                await response.write_eof()
            except (ConnectionResetError, aiohttp.ClientError):
                pass  # the client closed a stream it no longer needs
            return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    # A stream the client left open (server-sse-multiple-streams) keeps its handler waiting on the
    # server's next event; at the end, cancel it instead of waiting for it (15 s a run).
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
        await session.close()


async def test_inspector_cli_lists_and_calls_tools(live_server):
    folder = await _install(INSPECTOR)
    inspector = folder / "node_modules" / ".bin" / "mcp-inspector"
    base = [str(inspector), "--cli", f"{live_server}/mcp", "--transport", "http",
            "--header", f"Authorization: Bearer {PASSWORD}"]

    async def inspect(*arguments: str) -> dict:  # type: ignore[type-arg]
        code, output = await _run(*base, *arguments, timeout=120)
        assert code == 0, output
        return json.loads(output[output.index("{"):])  # type: ignore[no-any-return]

    tools = await inspect("--method", "tools/list")
    assert {tool["name"] for tool in tools["tools"]} == {"recall", "read", "status"}
    question = "question=how does a refracting telescope gather starlight with a lens?"
    result = await inspect("--method", "tools/call", "--tool-name", "recall", "--tool-arg", question)
    assert result["isError"] is False
    assert "Refracting telescope" in result["content"][0]["text"]
    status = await inspect("--method", "tools/call", "--tool-name", "status")
    assert json.loads(status["content"][0]["text"])["status"] == "ok"
    refused, _ = await _run(str(inspector), "--cli", f"{live_server}/mcp", "--transport", "http",
                            "--header", "Authorization: Bearer wrong", "--method", "tools/list", timeout=120)
    assert refused != 0


async def test_conformance_suite(live_server, tmp_path):
    folder = await _install(CONFORMANCE)
    cli = folder / "node_modules" / ".bin" / "conformance"
    async for proxy in _proxy(live_server):
        code, output = await _run(
            str(cli), "server", "--url", f"{proxy}/mcp", "--expected-failures", str(EXPECTED_FAILURES),
            "--output-dir", str(tmp_path / "results"), timeout=600,
        )
    Path(os.environ.get("PASSAGEWAY_CONFORMANCE_OUTPUT", tmp_path / "conformance.txt")).write_text(output)
    assert code == 0, output[-6000:]

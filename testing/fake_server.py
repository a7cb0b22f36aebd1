"""Helpers for testing a connector against an in-test fake of its source's HTTP API.

::

    from passageway.testing.fake_server import run_connector, serve

    def test_my_connector(tmp_path):
        with serve(my_fake_api()) as url:           # an aiohttp web.Application
            result = run_connector([sys.executable, "-m", "my_connector"], ["list"], {"URL": url})
        assert result.code == 0, result.stderr

:func:`serve` runs an aiohttp application on 127.0.0.1 on a free port (so parallel test runs do
not collide) in a thread with its own event loop, optionally over TLS, and stops it when the block
ends. :func:`run_connector` runs one connector call as the server does: a subprocess with only
``PATH``, ``HOME``, ``PASSAGEWAY_PROTOCOL`` and the settings given, ids on stdin for ``fetch``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import ssl
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web


@contextlib.contextmanager
def serve(app: web.Application, tls: ssl.SSLContext | None = None) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 on a free port; yields its base URL (``http://127.0.0.1:PORT``)."""
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    loop.run_until_complete(runner.setup())
    loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls).start())
    base = f"{'https' if tls else 'http'}://127.0.0.1:{runner.addresses[0][1]}"
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield base
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.run_until_complete(runner.cleanup())
        loop.close()


@dataclass
class CallResult:
    """What one connector call did: its exit code, stdout (ASCII JSON lines) and stderr."""

    code: int
    stdout: str
    stderr: str

    @property
    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines()]

    @property
    def by_id(self) -> dict[str, dict[str, Any]]:
        return {record["id"]: record for record in self.records}


def run_connector(
    command: Sequence[str],
    argv: Sequence[str],
    settings: Mapping[str, str],
    ids: Sequence[str] = (),
    timeout: float = 60.0,
) -> CallResult:
    """Run ``command argv...`` with the core's almost empty environment plus ``settings``."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/"),
        "PASSAGEWAY_PROTOCOL": "1",
        **settings,
    }
    stdin = "".join(json.dumps({"id": item_id}) + "\n" for item_id in ids)
    done = subprocess.run(
        [*command, *argv], input=stdin.encode(), capture_output=True, env=env, timeout=timeout, check=False
    )
    return CallResult(done.returncode, done.stdout.decode("ascii"), done.stderr.decode("utf-8"))


def record(request: web.Request) -> dict[str, Any]:
    """What a fake keeps of a request to check later: method, path, query and headers."""
    return {
        "method": request.method,
        "path": request.path,
        "query": dict(request.query),
        "headers": dict(request.headers),
    }


def echo_authorization(request: web.Request, status: int = 502) -> web.Response:
    """An error page that quotes the request's ``Authorization`` header back, as a careless proxy
    does: a connector must mask its token in the message it makes of this answer."""
    quoted = request.headers.get("Authorization", "")
    return web.Response(
        status=status,
        content_type="text/html",
        text=f"<html><body>Error {status}. Your request had Authorization: {quoted}</body></html>",
    )

"""Hostile stand-ins for a Trilium or Confluence server, and a bundled connector run against them.

:class:`Remote` is an aiohttp application on 127.0.0.1 that answers each GET as its ``behaviour``
says and records every request (with its ``Authorization`` header, so a test can count the
credentials that reached it). :func:`run` runs one call of a bundled connector as the server does
(a subprocess with an almost empty environment) and measures its time and peak memory.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

TRILIUM_TOKEN = "etapi-reliability-0Bc4bFn0Ffiok4NpbVCDnFz7"
CONFLUENCE_TOKEN = "pat-reliability-NjY0MjM4NzQ1OTQ2OkPx7q0Z"
CONNECTORS = {
    "trilium": {"module": "passageway_connector_trilium", "token": TRILIUM_TOKEN, "env": {}},
    "confluence": {"module": "passageway_connector_confluence", "token": CONFLUENCE_TOKEN,
                   "env": {"SPACES": "OPS"}},
}
STREAM_CHUNK = 1024 * 1024
STREAM_MOST = 2 * 1024 * 1024 * 1024  # a huge answer stops here if the client never hangs up


def note(note_id: str) -> dict[str, Any]:
    """One text note as ETAPI's search lists it."""
    return {"noteId": note_id, "title": f"Note {note_id}", "type": "text", "mime": "text/html",
            "isProtected": False, "blobId": f"blob-{note_id}", "attributes": [],
            "parentNoteIds": ["root"], "childNoteIds": [], "parentBranchIds": [], "childBranchIds": [],
            "dateCreated": "2026-11-01 08:00:00.000+0000", "dateModified": "2026-11-01 08:00:00.000+0000",
            "utcDateCreated": "2026-11-01 08:00:00.000Z", "utcDateModified": "2026-11-01 08:00:00.000Z"}


def page(page_id: str) -> dict[str, Any]:
    """One page as Confluence's listing gives it with ``expand=version,metadata.labels``."""
    return {"id": page_id, "type": "page", "status": "current", "title": f"Page {page_id}",
            "version": {"number": 1, "when": "2026-11-01T08:00:00.000+02:00"},
            "metadata": {"labels": {"results": []}}}


@dataclass
class Remote:
    """Answers as ``behaviour`` says; ``requests`` records ``(path, Authorization)`` of each GET.

    Behaviours: ``ok`` (a valid small answer), ``redirect:<status>:<url>`` (every request to
    ``<url>`` plus its path), ``redirect-here:<status>`` (once to ``/moved`` on the same server,
    then ``ok``), ``huge`` (an endless answer without a length), ``huge-declared`` (a length of
    1.5 GB), ``drip`` (a byte every 0.2 s), ``deep`` (JSON nested 200,000 deep),
    ``repeat-cursor`` (the same listing page and ``next`` link every time) and ``endless`` (new
    results and a new ``next`` link every time).
    """

    behaviour: str
    kind: str = "trilium"
    requests: list[tuple[str, str]] = field(default_factory=list)
    url: str = ""

    def tokens_received(self) -> int:
        return sum(1 for _path, authorization in self.requests if authorization)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/{tail:.*}", self.answer)
        return app

    def ok(self, request: web.Request) -> web.Response:
        if self.kind == "trilium":
            return web.json_response({"results": [note("n1")]})
        if request.path.endswith("/rest/api/content"):
            return web.json_response({"results": [page("101")], "start": 0, "limit": 100, "size": 1,
                                      "_links": {}})
        return web.json_response({"id": 1, "key": "OPS", "name": "Ops", "type": "global"})

    async def answer(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.path_qs, request.headers.get("Authorization", "")))
        behaviour, _, argument = self.behaviour.partition(":")
        if behaviour == "redirect":
            status, _, target = argument.partition(":")
            return web.Response(status=int(status), headers={"Location": target + request.path_qs})
        if behaviour == "redirect-here":
            if request.path.startswith("/moved"):
                return self.ok(request)
            return web.Response(status=int(argument), headers={"Location": "/moved" + request.path_qs})
        listing = request.path.endswith("/rest/api/content") or self.kind == "trilium"
        if behaviour == "ok" or not listing:
            return self.ok(request)
        if behaviour == "huge-declared":
            response = web.StreamResponse(headers={"Content-Length": str(1_500_000_000)})
            await response.prepare(request)
            await response.write(b'{"results": [')
            return response
        if behaviour in ("huge", "drip"):
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            await response.prepare(request)
            await response.write(b'{"results": [')
            sent = 0
            try:
                while sent < STREAM_MOST:
                    if behaviour == "drip":
                        await response.write(b" ")
                        await asyncio.sleep(0.2)
                        sent += 1
                    else:
                        await response.write(b" " * STREAM_CHUNK)
                        sent += STREAM_CHUNK
            except (ConnectionError, asyncio.CancelledError):
                pass
            return response
        if behaviour == "deep":
            return web.Response(body=b"[" * 200_000 + b"]" * 200_000, content_type="application/json")
        if behaviour in ("repeat-cursor", "endless"):
            number = 1 if behaviour == "repeat-cursor" else len(self.requests)
            next_start = 100 if behaviour == "repeat-cursor" else 100 * len(self.requests)
            return web.json_response({
                "results": [page(str(number))], "start": 0, "limit": 100, "size": 1,
                "_links": {"next": f"/rest/api/content?spaceKey=OPS&start={next_start}"},
            })
        raise AssertionError(f"unknown behaviour {self.behaviour!r}")


@dataclass
class Call:
    """One connector call: exit code, stderr, seconds and peak resident memory in MiB."""

    code: int
    stdout: str
    stderr: str
    seconds: float
    peak_mib: float

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


# Starts the connector from a small process and reports the connector's own peak memory (KiB on
# Linux) on the launcher's last stderr line. Linux keeps a process's memory high-water mark across
# fork and exec, so a connector forked straight from this test process would report the test
# process's size (hundreds of MiB once a suite has loaded a model) instead of its own.
LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
_pid, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"\\npeak-kib {usage.ru_maxrss}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run(kind: str, url: str, mode: str = "list", timeout: float = 120.0, **settings: str) -> Call:
    """Run ``<connector> mode`` against ``url`` with its token, as the server would."""
    connector = CONNECTORS[kind]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/"),
           "PASSAGEWAY_PROTOCOL": "1", "URL": url, "TOKEN": str(connector["token"]),
           **dict(connector["env"]), **settings}  # type: ignore[arg-type]
    began = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, "-m", str(connector["module"]), mode], env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    outputs: dict[str, bytes] = {}
    readers = [threading.Thread(target=_drain, args=(stream, name, outputs), daemon=True)
               for name, stream in (("stdout", process.stdout), ("stderr", process.stderr))]
    for reader in readers:
        reader.start()
    killer = threading.Timer(timeout, os.killpg, (process.pid, 9))  # the launcher and the connector
    killer.start()
    try:
        process.wait()
    finally:
        killer.cancel()
    for reader in readers:
        reader.join(30)
    stderr = outputs.get("stderr", b"").decode("utf-8", "replace")
    stderr, _, peak = stderr.rpartition("\npeak-kib ")
    peak_kib = int(peak.strip()) if peak.strip().isdigit() else 0
    return Call(process.returncode, outputs.get("stdout", b"").decode("utf-8", "replace"),
                stderr.rstrip("\n") + "\n" if stderr.strip() else "", time.monotonic() - began,
                round(peak_kib / 1024, 1))


def _drain(stream: Any, name: str, outputs: dict[str, bytes]) -> None:
    outputs[name] = stream.read()
    stream.close()


def items_of(call: Call) -> list[dict[str, Any]]:
    return [json.loads(line) for line in call.stdout.splitlines() if line.strip()]

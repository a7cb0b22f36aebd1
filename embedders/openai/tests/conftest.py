"""An in-test fake of the OpenAI and Voyage embeddings APIs, served by aiohttp on 127.0.0.1.

The fake runs its own event loop in a thread, so the program under test can make ordinary
blocking ``urllib`` calls against it, in-process or as a subprocess.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

API_KEY = "sk-test-9f8e7d6c5b4a-secret"


def fake_vector(text: str, dim: int) -> list[float]:
    """A deterministic vector for a text: words hashed into ``dim`` buckets, over a small floor.

    Tests compute the expected answer the same way; texts that share words come out close, so
    the embedder contract's lighthouse-versus-banana rule holds against the fake too.
    """
    vector = [0.01] * dim
    for word in re.findall(r"\w+", text.lower()):
        vector[int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big") % dim] += 1.0
    return vector


@dataclass
class Scripted:
    """One canned answer, used instead of the normal one for the next request."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None
    delay: float = 0.0
    echo_authorization: bool = False


class FakeEmbeddingsAPI:
    """POST /v1/embeddings like OpenAI (and Voyage when the request has input_type)."""

    def __init__(self, dim: int = 8) -> None:
        self.dim = dim
        self.requests: list[dict[str, Any]] = []
        self.script: list[Scripted] = []
        self.forever: Scripted | None = None
        self.port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    def vector(self, text: str, dim: int | None = None) -> list[float]:
        return fake_vector(text, dim or self.dim)

    def then(self, **answer: Any) -> None:
        """Answer the next request with a Scripted(**answer) instead of vectors."""
        self.script.append(Scripted(**answer))

    def always(self, **answer: Any) -> None:
        """Answer every request (after the scripted ones) with Scripted(**answer)."""
        self.forever = Scripted(**answer)

    @property
    def base_url(self) -> str:
        assert self.port is not None
        return f"http://127.0.0.1:{self.port}/v1"

    async def _embeddings(self, request: web.Request) -> web.Response:
        payload = await request.json()
        self.requests.append({"headers": dict(request.headers), "json": payload, "path": request.path})
        canned = self.script.pop(0) if self.script else self.forever
        if canned is not None:
            if canned.delay:
                await asyncio.sleep(canned.delay)
            if canned.status != 200 or canned.body is not None:
                body = canned.body or '{"error": {"message": "scripted failure"}}'
                if canned.echo_authorization:
                    body = (
                        '{"error": {"message": "upstream refused; request was: Authorization: '
                        + request.headers.get("Authorization", "")
                        + '"}}'
                    )
                return web.Response(
                    status=canned.status, text=body, headers=canned.headers, content_type="application/json"
                )
        texts = payload["input"]
        dim = payload.get("dimensions") or payload.get("output_dimension") or self.dim
        data = [
            {"object": "embedding", "index": index, "embedding": fake_vector(text, dim)}
            for index, text in enumerate(texts)
        ]
        data.reverse()  # the index field, not the position, gives the order
        return web.json_response({"object": "list", "data": data, "model": payload["model"]})

    def start(self, port: int = 0) -> None:
        ready = threading.Event()
        errors: list[BaseException] = []

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            app = web.Application()
            app.router.add_post("/v1/embeddings", self._embeddings)
            runner = web.AppRunner(app, shutdown_timeout=0.5)
            self._runner = runner
            try:
                loop.run_until_complete(runner.setup())
                site = web.TCPSite(runner, "127.0.0.1", port)
                loop.run_until_complete(site.start())
                self.port = runner.addresses[0][1]
            except BaseException as error:
                errors.append(error)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=serve, daemon=True)
        self._thread.start()
        ready.wait(10)
        if errors:
            raise errors[0]

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def api_key() -> str:
    return API_KEY


@pytest.fixture
def unused_port() -> int:
    return free_port()


@pytest.fixture
def unstarted_api() -> Iterator[FakeEmbeddingsAPI]:
    """A fake that the test starts itself (``start(port)``), e.g. to play a service coming up late."""
    api = FakeEmbeddingsAPI()
    try:
        yield api
    finally:
        api.stop()


@pytest.fixture
def fake_api() -> Iterator[FakeEmbeddingsAPI]:
    api = FakeEmbeddingsAPI()
    api.start()
    try:
        yield api
    finally:
        api.stop()

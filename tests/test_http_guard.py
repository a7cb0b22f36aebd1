"""The connection cap, the header and body deadlines, and quiet handling of broken clients (issue 32)."""

from __future__ import annotations

import asyncio
import gzip
import logging
import zlib

import pytest
from aiohttp import web

from passageway.kernel import http_guard
from tests.server_helpers import PASSWORD, free_port, make_kernel, running_server, wait_built, write_instance
from tests.test_auth import raw_request
from tests.waiting import until


@pytest.fixture
async def oauth_served(tmp_path):  # type: ignore[no-untyped-def]
    port = free_port()
    environ = write_instance(tmp_path, extra_env={"PASSAGEWAY_BASE_URL": f"http://127.0.0.1:{port}"})
    kernel = make_kernel(environ)
    async with running_server(kernel, port=port) as url:
        await wait_built(kernel)
        yield url


def post(path: str, body: bytes, *, encoding: str = "", length: int | None = None,
         content_type: str = "application/json") -> bytes:
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
            f"Authorization: Bearer {PASSWORD}\r\nConnection: close\r\n"
            f"Content-Length: {len(body) if length is None else length}\r\n")
    if encoding:
        head += f"Content-Encoding: {encoding}\r\n"
    return head.encode() + b"\r\n" + body


@pytest.mark.parametrize("path", ["/register", "/recall", "/token", "/authorize"])
@pytest.mark.parametrize("encoding", ["deflate", "gzip"])
async def test_a_body_that_does_not_decompress_is_a_json_400(oauth_served, path, encoding, caplog):
    # 32.7: an invalid deflate or gzip body on /register was a 500 with a traceback.
    kind = "application/json" if path in ("/register", "/recall") else "application/x-www-form-urlencoded"
    answer = await raw_request(oauth_served, post(path, b"not compressed at all", encoding=encoding,
                                                  content_type=kind))
    assert answer.startswith(b"HTTP/1.1 400"), answer[:300]
    assert b'"error"' in answer
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


async def test_a_valid_compressed_body_is_still_read(oauth_served):
    body = b'{"redirect_uris": ["http://127.0.0.1:9/cb"]}'
    for encoding, packed in (("gzip", gzip.compress(body)), ("deflate", zlib.compress(body))):
        answer = await raw_request(oauth_served, post("/register", packed, encoding=encoding))
        assert answer.startswith(b"HTTP/1.1 201"), answer[:300]


async def test_a_body_that_never_arrives_gets_a_408(oauth_served, monkeypatch):
    # 32.5: a body dribbled (or never sent) held its connection and handler for ever.
    monkeypatch.setattr(http_guard, "BODY_SECONDS", 0.3)
    request = post("/recall", b'{"prompt": "ri', length=500)
    answer = await asyncio.wait_for(raw_request(oauth_served, request), 5)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:300]
    assert b"did not arrive" in answer


async def test_a_client_that_hangs_up_mid_body_is_one_info_line(oauth_served, caplog, monkeypatch):
    # 32.6: each one was an ERROR with a traceback.
    monkeypatch.setattr(http_guard, "CLIENT_GONE", http_guard.Occasional(logging.INFO, "a client went away"))
    monkeypatch.setattr(http_guard, "BAD_ENCODING", http_guard.Occasional(logging.INFO, "a body is broken"))
    caplog.set_level(logging.INFO)
    paths = ("/register", "/token", "/authorize", "/recall", "/mcp") * 3
    for path in paths:
        _, writer = await asyncio.open_connection("127.0.0.1", int(oauth_served.rsplit(":", 1)[1]))
        writer.write(post(path, b'{"redirect_uris": ["http://127.0.0.1/cb"], "x": "aaa', length=5000,
                          content_type="application/x-www-form-urlencoded" if path in ("/token", "/authorize")
                          else "application/json"))
        await writer.drain()
        writer.transport.abort()

    def handled() -> bool:  # every connection noted as gone (or its body as broken), or an error logged
        noted = http_guard.CLIENT_GONE.total + http_guard.BAD_ENCODING.total
        return noted >= len(paths) or any(record.levelno >= logging.ERROR for record in caplog.records)

    await until(handled, "the server has handled every connection")
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR or record.exc_info]
    gone = [record for record in caplog.records if "went away" in record.getMessage()]
    assert len(gone) == 1 and gone[0].levelno == logging.INFO
    assert http_guard.CLIENT_GONE.total >= 10


def test_the_cap_stays_below_the_descriptor_limit():
    assert http_guard.connection_cap(1024) == 768
    assert http_guard.connection_cap(300) == 150
    assert 0 < http_guard.connection_cap() < http_guard.descriptor_limit()


async def test_at_the_cap_the_oldest_idle_connection_makes_room():
    # 32.5: idle connections beyond the descriptor limit locked everyone out.
    async def hello(request: web.BaseRequest) -> web.Response:
        return web.Response(text="hello")

    server = web.Server(hello, keepalive_timeout=30)
    guard = http_guard.ConnectionGuard(server, cap=4)
    listening = await asyncio.get_running_loop().create_server(guard, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    try:
        idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(8)]
        # Accepted, all eight: the fifth to the eighth each closed the oldest idle one.
        await until(lambda: guard.closed_idle >= 4, "the guard has accepted the idle connections")
        answer = await raw_request(f"http://127.0.0.1:{port}",
                                   b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert answer.endswith(b"hello")
        closed = [await asyncio.wait_for(reader.read(), 2) == b"" for reader, _ in idle[:4]]
        assert all(closed) and guard.closed_idle >= 5
        for _, writer in idle:
            writer.close()
    finally:
        listening.close()
        await server.shutdown(1)


async def test_a_connection_that_dribbles_its_headers_is_closed(monkeypatch):
    # 32.5: headers a byte at a time were never timed out; the server's runner times them out.
    from passageway.kernel.server import app_runner

    monkeypatch.setattr(http_guard, "HEADER_SECONDS", 0.5)
    async def hello(request: web.Request) -> web.Response:
        return web.Response(text="hello")

    app = web.Application()
    app.router.add_get("/", hello)
    runner = app_runner(app)
    await runner.setup()
    assert runner.server is not None
    listening = await asyncio.get_running_loop().create_server(runner.server, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        steps = 0
        for steps in range(40):  # a byte every 0.1 s, for at most 4 s
            writer.write(b"GET / HTTP/1.1\r\nX: "[steps:steps + 1] or b"a")
            try:
                if await asyncio.wait_for(reader.read(1), 0.1) == b"":
                    break
            except TimeoutError:
                continue
        assert reader.at_eof() and steps < 15, steps
        writer.close()
    finally:
        listening.close()
        await runner.cleanup()


def request_from(peer: str, forwarded: list[str]) -> web.BaseRequest:
    from aiohttp.test_utils import make_mocked_request
    from multidict import CIMultiDict

    headers = CIMultiDict([("X-Forwarded-For", value) for value in forwarded])
    request = make_mocked_request("GET", "/", headers=headers)
    return request.clone(remote=peer)


def test_the_client_address_behind_a_trusted_proxy():
    # 32.13: behind the documented reverse proxy every user shared the proxy's limits.
    from passageway.kernel.config import trusted_proxies

    proxy = trusted_proxies("127.0.0.1, 10.0.0.0/8")
    assert http_guard.client_address(request_from("127.0.0.1", ["203.0.113.7"]), proxy) == "203.0.113.7"
    # What the client wrote itself comes first; only what the trusted proxies appended counts.
    forged = request_from("127.0.0.1", ["1.2.3.4, 203.0.113.7"])
    assert http_guard.client_address(forged, proxy) == "203.0.113.7"
    assert http_guard.client_address(request_from("127.0.0.1", ["198.51.100.1", "203.0.113.7, 10.1.2.3"]),
                                     proxy) == "203.0.113.7"
    assert http_guard.client_address(request_from("127.0.0.1", ["junk, 10.1.2.3"]), proxy) == "10.1.2.3"
    assert http_guard.client_address(request_from("127.0.0.1", []), proxy) == "127.0.0.1"
    # Not from a trusted proxy, or no proxy trusted: the header is the client's own words.
    assert http_guard.client_address(request_from("192.0.2.9", ["203.0.113.7"]), proxy) == "192.0.2.9"
    assert http_guard.client_address(request_from("127.0.0.1", ["203.0.113.7"])) == "127.0.0.1"


def test_a_trusted_proxy_that_is_not_an_address_is_a_config_error():
    from passageway.kernel.config import trusted_proxies
    from passageway.kernel.errors import ConfigError

    with pytest.raises(ConfigError, match=r"PASSAGEWAY_TRUSTED_PROXY lists 'proxy\.local'"):
        trusted_proxies("127.0.0.1, proxy.local")


async def test_at_the_cap_a_slow_body_makes_room_and_a_read_request_does_not():
    # 38.1: connections whose body was still arriving counted as busy, so at the cap the guard
    # refused everyone, or closed the newest connections even with their request read.
    async def read_then_hello(request: web.BaseRequest) -> web.Response:
        await request.read()
        return web.Response(text="hello")

    server = web.Server(read_then_hello, keepalive_timeout=30)
    guard = http_guard.ConnectionGuard(server, cap=4)
    listening = await asyncio.get_running_loop().create_server(guard, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    slow_body = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab"
    try:
        slow = []
        for _ in range(4):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(slow_body)
            slow.append((reader, writer))

        def headers_read() -> bool:  # each connection's request started: its headers are read
            return len(guard._open) == 4 and all(
                getattr(handler, "_request_in_progress", False) or getattr(handler, "_messages", ())
                for handler in guard._open)

        await until(headers_read, "the server has read the headers of the slow bodies")
        assert all(http_guard.holds_no_read_request(handler) for handler in guard._open)
        answer = await raw_request(f"http://127.0.0.1:{port}",
                                   b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert answer.endswith(b"hello"), answer
        assert await asyncio.wait_for(slow[0][0].read(), 2) == b""  # the oldest slow body made room
        for _, writer in slow:
            writer.close()
    finally:
        listening.close()
        await server.shutdown(1)


class _Payload:
    def __init__(self, eof: bool) -> None:
        self.eof = eof

    def is_eof(self) -> bool:
        return self.eof


class _Handler:
    def __init__(self, **state: object) -> None:
        self._request_in_progress = False
        self._current_request = None
        self._messages: list[object] = []
        self._waiter: asyncio.Future[None] | None = None
        self.__dict__.update(state)


async def test_which_connections_the_cap_may_close():
    waiting = asyncio.get_running_loop().create_future()
    arrived = asyncio.get_running_loop().create_future()
    arrived.set_result(None)

    class Request:
        def __init__(self, eof: bool) -> None:
            self.content = _Payload(eof)

    assert http_guard.holds_no_read_request(_Handler(_waiter=waiting))  # idle, or headers arriving
    running = {"_request_in_progress": True}
    assert http_guard.holds_no_read_request(_Handler(**running, _current_request=Request(False)))
    assert http_guard.holds_no_read_request(_Handler(_messages=[(None, _Payload(False))], _waiter=arrived))
    # A request read whole, queued or running, and a connection whose handler has not started yet.
    assert not http_guard.holds_no_read_request(_Handler(_messages=[(None, _Payload(True))], _waiter=arrived))
    assert not http_guard.holds_no_read_request(_Handler(**running, _current_request=Request(True)))
    assert not http_guard.holds_no_read_request(_Handler(**running))
    assert not http_guard.holds_no_read_request(_Handler())


async def test_a_read_on_a_closed_connection_is_a_quiet_line_not_a_traceback(caplog, monkeypatch):
    # 38.1: `RuntimeError: Connection closed.` (a read begun after the cap closed the connection)
    # was a 500 with a traceback for each of thousands of connections.
    from unittest import mock

    from aiohttp.test_utils import make_mocked_request

    monkeypatch.setattr(http_guard, "CLIENT_GONE", http_guard.Occasional(logging.INFO, "a client went away"))
    caplog.set_level(logging.INFO)
    transport = mock.Mock()
    transport.is_closing.return_value = True

    async def closed(request: web.Request) -> web.Response:
        raise RuntimeError("Connection closed.")

    for _ in range(5):
        request = make_mocked_request("POST", "/register", transport=transport)
        answer = await http_guard.guard_requests(request, closed)
        assert answer.status == 400
    assert http_guard.CLIENT_GONE.total == 5
    assert len([record for record in caplog.records if "went away" in record.getMessage()]) == 1

    async def broken(request: web.Request) -> web.Response:
        raise RuntimeError("a bug of ours")

    with pytest.raises(RuntimeError, match="a bug"):  # our own mistakes still show
        await http_guard.guard_requests(make_mocked_request("POST", "/x", transport=transport), broken)


@pytest.mark.parametrize("path", ["/denied", "/nowhere"])
async def test_a_connection_answered_before_its_body_arrived_makes_room_at_the_cap(path):
    # 38.1: after a 401 (a wrong password) or a 404 given before the body arrived, aiohttp reads
    # the rest for ten seconds, and the cap counted such a connection as busy: slow bodies without
    # the password held every connection. The client still gets to finish sending and read the
    # answer (a 413 stays readable), but at the cap the connection makes room.
    async def denied(request: web.Request) -> web.Response:
        return web.json_response({"error": "no"}, status=401)

    async def hello(request: web.Request) -> web.Response:
        return web.Response(text="hello")

    app = web.Application(middlewares=[http_guard.guard_requests])
    app.router.add_post("/denied", denied)
    app.router.add_get("/", hello)
    runner = web.AppRunner(app, keepalive_timeout=30, shutdown_timeout=0.5)
    await runner.setup()
    assert runner.server is not None
    guard = http_guard.ConnectionGuard(runner.server, cap=3)
    listening = await asyncio.get_running_loop().create_server(guard, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    held = []
    try:
        for _ in range(3):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab".encode())
            assert (await asyncio.wait_for(reader.read(12), 5)).startswith(b"HTTP/1.1 40")
            held.append(writer)
        answer = await raw_request(f"http://127.0.0.1:{port}",
                                   b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert answer.endswith(b"hello"), answer[:200]
    finally:
        for writer in held:
            writer.close()
        listening.close()
        await runner.cleanup()

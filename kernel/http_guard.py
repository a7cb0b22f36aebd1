"""What keeps hostile or broken HTTP clients from locking the server out or flooding its log.

A client needs no password to open connections, so nothing it does before it is authenticated may
cost the server more than a bounded share of its descriptors, or its log more than a line a minute:

* a connection that sends no complete request within :data:`HEADER_SECONDS` (after it opens, or
  after its last answer) is closed: aiohttp's keep-alive timer, which also covers a connection
  that dribbles its headers, since only a finished answer moves the timer on;
* a request whose body has not fully arrived :data:`BODY_SECONDS` after its headers gets a 408 and
  its connection is closed (:func:`guard_requests`);
* at most :func:`connection_cap` connections are open, well below the descriptor limit
  (``RLIMIT_NOFILE``): a new one closes the oldest connection that holds no request already read
  (one idle, still sending its headers, or still sending its body), so an attacker's idle or slow
  connections cannot keep anyone else out (:class:`ConnectionGuard`);
* a client that hangs up mid-body (or is closed by the cap), a body that does not decompress, and
  accept errors are one rate-limited line each (:class:`Occasional`), never a traceback.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import resource
import time
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

log = logging.getLogger("passageway.server")

HEADER_SECONDS = 15.0
"""A connection must send a complete request within this long of opening or of its last answer."""
BODY_SECONDS = 30.0
"""A request's body must have arrived this long after its headers."""
RESERVED_DESCRIPTORS = 256
"""Descriptors kept for the stores, the model, connectors and log files, and for the accept loop's
own batch of :data:`ACCEPT_BATCH`."""
LISTEN_BACKLOG = 4096
"""Connections the system queues before the server accepts them (capped by net.core.somaxconn).
A short queue fills with an attacker's connections, and everyone else's wait a second for a retry."""
ACCEPT_BATCH = 32
"""Connections asyncio accepts at once before the cap sees them (its default is 100)."""
LOG_EVERY_SECONDS = 60.0

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Occasional:
    """Logs one kind of event at most once per :data:`LOG_EVERY_SECONDS`, with how many there were."""

    def __init__(self, level: int, text: str, every: float = LOG_EVERY_SECONDS) -> None:
        self.level, self.text, self.every = level, text, every
        self.count = 0  # since the last line
        self.total = 0
        self._last = -every

    def note(self, detail: str = "") -> None:
        self.count += 1
        self.total += 1
        now = time.monotonic()
        if now - self._last < self.every:
            return
        self._last = now
        times = f" ({self.count} times in the last {self.every:g} s)" if self.count > 1 else ""
        log.log(self.level, "%s%s%s", self.text, f": {detail}" if detail else "", times)
        self.count = 0


CLIENT_GONE = Occasional(logging.INFO, "a client went away before its request was read")
SLOW_BODY = Occasional(logging.INFO, f"a request body did not arrive within {BODY_SECONDS:g} s (408)")
BAD_ENCODING = Occasional(logging.INFO, "a request body could not be decompressed (400)")
MALFORMED = Occasional(logging.WARNING, "a malformed HTTP request was refused")
"""Bytes that are not HTTP; counted by ``kernel/commands/logging_setup.py`` from aiohttp's log."""
ACCEPT_FAILED = Occasional(
    logging.WARNING, "cannot accept connections: the process is out of descriptors (raise LimitNOFILE "
    "or `ulimit -n`)"
)


def descriptor_limit() -> int:
    """The soft ``RLIMIT_NOFILE`` of this process (what ``ulimit -n`` says)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def connection_cap(limit: int | None = None) -> int:
    """How many connections the server keeps open at once: the descriptor limit less a reserve.

    With the systemd default of 1,024 descriptors that is 768; a limit too low for a reserve
    still allows half of it.
    """
    limit = descriptor_limit() if limit is None else limit
    return max(limit - RESERVED_DESCRIPTORS, limit // 2, 1)


class ConnectionGuard:
    """The protocol factory for the listening socket: aiohttp's, with a cap on open connections.

    When the cap is reached, a new connection closes the oldest one that holds no request already
    read (:func:`holds_no_read_request`); if every connection holds one, the new one gets a 503.
    """

    def __init__(self, server: web.Server, cap: int) -> None:
        self.server = server
        self.cap = cap
        self._open: dict[Any, None] = {}  # the handlers, oldest first
        self.closed_idle = 0
        self._full = Occasional(
            logging.WARNING, f"{cap} connections are open, the most this server keeps (the descriptor "
            "limit less a reserve); closing the oldest idle or slow ones"
        )

    def __call__(self) -> asyncio.BaseProtocol:
        self._forget_closed()
        if len(self._open) >= self.cap and not self._close_oldest_idle():
            self._full.note("every connection is busy, refusing new ones with 503")
            return _Refusal()
        handler = self.server()
        self._open[handler] = None
        return handler

    def _forget_closed(self) -> None:
        if len(self._open) < self.cap:
            return
        # aiohttp drops a handler's manager when its connection is lost.
        for handler in [handler for handler in self._open if getattr(handler, "_manager", None) is None]:
            del self._open[handler]

    def _close_oldest_idle(self) -> bool:
        for handler in self._open:
            if holds_no_read_request(handler):
                del self._open[handler]
                # A body aiohttp reads on after an early answer ends here, or its read would fail
                # with a traceback once the connection is closed.
                body = ANSWERED_EARLY.pop(handler.transport, None) if handler.transport else None
                if body is not None:
                    body.feed_eof()
                handler.force_close()
                self.closed_idle += 1
                self._full.note()
                return True
        return False


ANSWERED_EARLY: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
"""The transports of connections answered before their request's body arrived, each with that
body's stream: aiohttp reads the rest of it, then closes them."""


def holds_no_read_request(handler: Any) -> bool:
    """Whether closing this connection (an aiohttp ``RequestHandler``) loses no request already read.

    True for a connection that waits for a request or is still sending its headers, and for one
    whose request's body is still arriving (also after an early answer): at the cap a slow body
    must not count as busy, or an attacker's slow bodies make the guard close the newest
    connections, requests already read among them. False for a request whose body has arrived,
    queued or running (its handler may start a loop iteration after its headers were read), and
    for a connection about to start.
    """
    if getattr(handler, "transport", None) in ANSWERED_EARLY:
        return True
    if getattr(handler, "_request_in_progress", False):
        request = getattr(handler, "_current_request", None)
        return request is not None and not request.content.is_eof()
    messages = getattr(handler, "_messages", ())
    if messages:
        return all(not payload.is_eof() for _, payload in messages)
    waiter = getattr(handler, "_waiter", None)  # set while it waits for a request's headers
    return waiter is not None and not waiter.done()


class _Refusal(asyncio.Protocol):
    """Answers 503 and closes: the server is at its connection cap and every connection is busy."""

    BODY = (b'{"error": "busy", "error_description": "the server has as many connections open as it '
            b'keeps; try again in a moment"}')

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        transport.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                        b"Retry-After: 1\r\nConnection: close\r\nContent-Length: "
                        + str(len(self.BODY)).encode() + b"\r\n\r\n" + self.BODY)
        transport.close()


OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


def loop_exception_handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's handler: accept errors (out of descriptors) are one line a minute."""
    error = context.get("exception")
    if isinstance(error, OSError) and error.errno in OUT_OF_RESOURCES:
        ACCEPT_FAILED.note(error.strerror or "")
        return
    loop.default_exception_handler(context)


@web.middleware
async def guard_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A deadline for the body, and a client's broken body or disconnect as a 4xx, not a 500."""
    task = asyncio.current_task()
    expired = False
    timer: asyncio.TimerHandle | None = None
    if request.body_exists and not request.content.is_eof() and task is not None:

        def expire() -> None:
            nonlocal expired
            if not request.content.is_eof():
                expired = True
                task.cancel()

        timer = asyncio.get_running_loop().call_later(BODY_SECONDS, expire)
    try:
        response = await handler(request)
    except web.HTTPException as error:  # a 404 or 405 raised before the body was read
        _close_if_body_pending(request, error)
        raise
    except asyncio.CancelledError:
        if not expired or task is None:
            raise
        task.uncancel()
        SLOW_BODY.note(request.path)
        _give_up_on_body(request)
        return _error(408, "request_timeout", f"the body did not arrive within {BODY_SECONDS:g} s of the "
                      "headers; send it at once", close=True)
    except (web.RequestPayloadError, HttpProcessingError) as error:
        # aiohttp wraps what went wrong in the body (a ContentEncodingError) in a RequestPayloadError.
        cause = error.__cause__ if isinstance(error.__cause__, HttpProcessingError) else error
        reason = cause.message if isinstance(cause, HttpProcessingError) else str(cause)
        BAD_ENCODING.note(request.path)
        _give_up_on_body(request)
        return _error(400, "invalid_request", f"the body cannot be read ({reason.strip() or 'malformed'}); "
                      "send it uncompressed, or as valid gzip or deflate with its Content-Encoding",
                      close=True)
    except (ConnectionError, RuntimeError) as error:
        # The client hung up, or the cap closed its slow connection: aiohttp raises
        # ConnectionResetError, or RuntimeError("Connection closed.") for a read begun after the close.
        transport = request.transport
        if transport is not None and not transport.is_closing():
            raise
        if isinstance(error, RuntimeError) and not _closed_connection(error):
            raise
        CLIENT_GONE.note(request.path)
        return _error(400, "invalid_request", "the client went away", close=True)
    finally:
        if timer is not None:
            timer.cancel()
    _close_if_body_pending(request, response)
    return response


def _close_if_body_pending(request: web.Request, response: web.StreamResponse) -> None:
    """After an answer given before the request's body arrived (a 401, a 404, a 413), aiohttp
    reads the rest of the body for up to ten seconds, so that the client can finish sending and
    read the answer; then the connection closes. Until then the cap may close it like any slow
    body (:data:`ANSWERED_EARLY`): a client that sends headers without the password and then a
    byte now and then must not hold connections the cap cannot take back (issue 38)."""
    if request.body_exists and not request.content.is_eof():
        response.force_close()
        transport = request.transport
        if transport is not None:
            try:
                ANSWERED_EARLY[transport] = request.content
            except TypeError:  # a transport that takes no weak reference: close it at once
                _give_up_on_body(request)


def _closed_connection(error: RuntimeError) -> bool:
    """Whether aiohttp raised ``error`` because a read started on a connection already closed."""
    return "closed" in str(error).lower()


def _give_up_on_body(request: web.Request) -> None:
    """Mark the rest of the body as not wanted: aiohttp would otherwise read on after the answer
    (up to ten seconds, and a broken body raises there, logged as an unhandled exception)."""
    request.content.feed_eof()


def _error(status: int, error: str, description: str, *, close: bool = False) -> web.Response:
    response = web.json_response({"error": error, "error_description": description}, status=status)
    if close:
        response.force_close()
    return response


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def client_address(request: web.BaseRequest, trusted: Sequence[Network] = ()) -> str:
    """The address of the client a request comes from, for per-client limits.

    The connection's peer, unless the peer is a trusted reverse proxy (``PASSAGEWAY_TRUSTED_PROXY``):
    then the ``X-Forwarded-For`` address the proxy added, read from the right past any other trusted
    proxies. A client can write anything in that header itself, so only what trusted proxies
    appended counts, and an entry that is not an address ends the walk.
    """
    peer = request.remote or "unknown"
    if not trusted or not _within(peer, trusted):
        return peer
    forwarded = ",".join(request.headers.getall("X-Forwarded-For", ()))
    address = peer
    for entry in reversed([part.strip() for part in forwarded.split(",") if part.strip()]):
        if not _is_address(entry):
            break
        address = entry
        if not _within(entry, trusted):
            break
    return address


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _within(text: str, networks: Sequence[Network]) -> bool:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in network for network in networks)

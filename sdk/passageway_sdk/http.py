"""What connectors that call an HTTP API share: a server is trusted with nothing but its answers.

* :func:`retry_after_seconds` reads a ``Retry-After`` header.
* :func:`opener` builds a ``urllib`` opener that never sends credentials to another origin: a
  redirect to another scheme, host or port raises :class:`CrossOriginRedirect`, naming both, and
  a redirect within the origin is followed with the same headers.
* :func:`deadline` bounds a whole request, connect to last byte, so a server that drips its
  answer a byte at a time cannot hold the connector (a socket timeout only bounds each wait).
* :func:`read_capped` reads an answer in chunks up to a size; :func:`load_json` parses it and
  turns JSON nested too deep for Python (a ``RecursionError``) into :class:`ValueError`.

Each failure is a :class:`~passageway_sdk.SourceError` with one line that says what happened.
"""

from __future__ import annotations

import contextlib
import json
import math
import signal
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from email.utils import parsedate_to_datetime
from typing import Any, Protocol
from urllib.parse import urlsplit

from .connector import SourceError

READ_CHUNK = 64 * 1024
DEFAULT_PORTS = {"http": 80, "https": 443}


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """The wait a ``Retry-After`` header asks for, in seconds (a number or an HTTP date), or None
    when there is none or it cannot be read. A date in the past is a wait of 0."""
    if not value or not value.strip():
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        try:
            when = parsedate_to_datetime(value.strip())
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if math.isfinite(seconds) else None


# ---------------------------------------------------------------------------------------------
# Redirects
# ---------------------------------------------------------------------------------------------


class CrossOriginRedirect(SourceError):
    """A server redirected a request to another origin; nothing was sent there."""


class RequestTimeout(SourceError):
    """A request did not finish, answer included, within its deadline."""


class AnswerTooLarge(SourceError):
    """An answer was larger than the connector reads."""


def origin(url: str) -> str:
    """``scheme://host:port`` of ``url``, the port written out (``http://a`` is ``http://a:80``)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port or DEFAULT_PORTS.get(scheme, 0)}"


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only within the request's origin; another origin is an error.

    ``urllib``'s own handler copies every header to wherever the ``Location`` points, the
    ``Authorization`` header included, so a server (or whoever took over its name) could collect
    the token with one 302. Within the origin the headers go along, as the credentials are meant
    for it.
    """

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        source, target = origin(req.full_url), origin(newurl)
        if source != target:
            fp.close()
            raise CrossOriginRedirect(
                f"{source} redirected a request (HTTP {code}) to {target}, another origin; "
                f"credentials are never sent to another origin, so nothing was asked there. If the "
                f"server moved, set URL to its new address"
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def opener(*handlers: urllib.request.BaseHandler) -> urllib.request.OpenerDirector:
    """A ``urllib`` opener with ``handlers`` (TLS, proxies) that follows redirects only within
    the origin of each request (:class:`CrossOriginRedirect` otherwise)."""
    return urllib.request.build_opener(*handlers, _SameOriginRedirects())


# ---------------------------------------------------------------------------------------------
# Deadlines and sizes
# ---------------------------------------------------------------------------------------------


@contextlib.contextmanager
def deadline(seconds: float, what: str) -> Iterator[Callable[[], None]]:
    """Bound the block to ``seconds``; raise :class:`RequestTimeout` naming ``what`` when it passes.

    In a program's main thread a timer signal interrupts whatever waits (connecting, headers,
    body); elsewhere, and as a second guard, the ``check`` function yielded raises once the time
    is up: call it between chunks.
    """
    ends = time.monotonic() + seconds

    def timed_out() -> RequestTimeout:
        return RequestTimeout(
            f"{what} did not finish within {seconds:g} s (TIMEOUT); the server answers too slowly "
            "or never ends its answer"
        )

    def check() -> None:
        if time.monotonic() > ends:
            raise timed_out()

    armed = (
        threading.current_thread() is threading.main_thread()
        and hasattr(signal, "setitimer")
        and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    )
    previous: Any = None
    if armed:

        def alarm(signum: int, frame: Any) -> None:
            raise timed_out()

        previous = signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield check
    finally:
        if armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


class _Readable(Protocol):
    headers: Any

    def read(self, amount: int = -1, /) -> bytes: ...


def read_capped(
    response: _Readable, limit: int, what: str, check: Callable[[], None] = lambda: None, *, cut: bool = False
) -> bytes:
    """The body of ``response``, read in chunks; more than ``limit`` bytes raises
    :class:`AnswerTooLarge`, or with ``cut`` returns the first ``limit + 1`` bytes (so the caller
    can tell that there was more). ``check`` runs after each chunk (see :func:`deadline`)."""
    length = (response.headers.get("Content-Length") or "").strip() if response.headers else ""
    if not cut and length.isdigit() and int(length) > limit:
        raise AnswerTooLarge(
            f"{what} answered {int(length)} bytes, more than the {limit} this connector reads"
        )
    read = getattr(response, "read1", None) or response.read
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = read(min(READ_CHUNK, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        check()
    body = b"".join(chunks)
    if total > limit and not cut:
        raise AnswerTooLarge(f"{what} answered more than the {limit} bytes this connector reads")
    return body


class JsonTooDeep(ValueError):
    """JSON nested deeper than Python's parser goes."""


def load_json(body: bytes | str) -> Any:
    """``json.loads``, with JSON nested too deep for Python raising :class:`JsonTooDeep` (a
    :class:`ValueError`, like any other unreadable answer) rather than a ``RecursionError``."""
    try:
        return json.loads(body)
    except RecursionError:
        raise JsonTooDeep("JSON nested too deep to read") from None

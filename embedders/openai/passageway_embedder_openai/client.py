"""One embeddings request against an OpenAI-compatible (or Voyage) service, with its retries.

Standard library only: ``urllib`` for HTTP and ``truststore`` for the operating system's
certificate store (ADR 0006). ``TIMEOUT`` bounds a request including every retry.
"""

from __future__ import annotations

import json
import math
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from email.utils import parsedate_to_datetime
from typing import Any

import truststore

from passageway_embedder_openai.settings import Settings

BODY_EXCERPT = 300


class EmbeddingFailed(Exception):
    """The service did not give vectors for this request; the message is safe to show once masked."""


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    # A redirect would carry the Authorization header to wherever it points, and turn the
    # POST into a GET; report it instead so the user fixes BASE_URL.
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """The wait a ``Retry-After`` header asks for, in seconds (delta or HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def _excerpt(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        error = parsed.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(error, str):
            text = error
        elif isinstance(parsed.get("detail"), str):  # Voyage
            text = parsed["detail"]
    text = " ".join(text.split())
    return text[:BODY_EXCERPT] + ("…" if len(text) > BODY_EXCERPT else "")


class EmbeddingClient:
    """Posts texts to ``{BASE_URL}/embeddings`` and returns one vector per text, in order.

    ``first_wait`` and ``max_wait`` (1 s doubling to 60 s) exist so tests can run fast; they
    are not user settings. ``log`` receives lines for stderr; the caller masks them.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        log: Callable[[str], None],
        first_wait: float = 1.0,
        max_wait: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings
        self._log = log
        self._first_wait = first_wait
        self._max_wait = max_wait
        self._clock = clock
        self._sleep = sleep
        handlers: list[urllib.request.BaseHandler] = [_RefuseRedirects()]
        if settings.endpoint.startswith("https://"):
            handlers.append(
                urllib.request.HTTPSHandler(context=truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
            )
        # No ProxyHandler from the environment: the core runs us with an empty one anyway,
        # and a key must not travel through a proxy nobody configured for this program.
        handlers.append(urllib.request.ProxyHandler({}))
        self._opener = urllib.request.build_opener(*handlers)

    def _payload(self, texts: Sequence[str], kind: str) -> bytes:
        settings = self.settings
        body: dict[str, Any] = {"model": settings.model, "input": list(texts)}
        if settings.provider == "voyage":
            body["input_type"] = "query" if kind == "query" else "document"
            if settings.dimensions is not None:
                body["output_dimension"] = settings.dimensions
        elif settings.dimensions is not None:
            body["dimensions"] = settings.dimensions
        return json.dumps(body).encode()

    def _request(self, payload: bytes) -> urllib.request.Request:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.settings.api_key:
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        # The scheme was checked to be http or https when the settings were read.
        return urllib.request.Request(  # noqa: S310
            self.settings.endpoint, data=payload, headers=headers, method="POST"
        )

    def embed(self, texts: Sequence[str], kind: str) -> list[list[float]]:
        """Vectors for ``texts`` (already prefixed); raises EmbeddingFailed."""
        payload = self._payload(texts, kind)
        timeout = self.settings.timeout
        started = self._clock()
        deadline = started + timeout
        attempts = 0
        while True:
            attempts += 1
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise EmbeddingFailed(
                    f"no answer within TIMEOUT ({timeout:g} s) after {attempts - 1} attempts"
                )
            try:
                with self._opener.open(self._request(payload), timeout=remaining) as response:
                    body = response.read()
                return self._vectors(body, len(texts))
            except urllib.error.HTTPError as error:
                status = error.code
                try:
                    body = error.read()
                except (OSError, ValueError):
                    body = b""
                if 300 <= status < 400:
                    location = error.headers.get("Location", "?") if error.headers else "?"
                    raise EmbeddingFailed(
                        f"HTTP {status}: the service redirects to {location}; "
                        "set BASE_URL to the final address"
                    ) from None
                problem = f"HTTP {status} from {self.settings.endpoint}: {_excerpt(body) or error.reason}"
                if not (status == 429 or 500 <= status <= 599):
                    raise EmbeddingFailed(problem) from None
                asked = retry_after_seconds(error.headers.get("Retry-After") if error.headers else None)
            except urllib.error.URLError as error:
                if isinstance(error.reason, TimeoutError | socket.timeout):
                    raise EmbeddingFailed(
                        f"no connection to {self.settings.endpoint} within TIMEOUT ({timeout:g} s)"
                    ) from None
                problem = f"cannot reach {self.settings.endpoint}: {error.reason}"
                asked = None
            except TimeoutError:
                # The request was sent and the service was answering: a paid service may have
                # charged for it already, so it is not sent again.
                raise EmbeddingFailed(
                    f"{self.settings.endpoint} did not finish answering within TIMEOUT ({timeout:g} s); "
                    "not repeated, because the service may already have processed it"
                ) from None
            except OSError as error:
                problem = f"connection to {self.settings.endpoint} failed: {error}"
                asked = None
            backoff = min(self._first_wait * 2 ** (attempts - 1), self._max_wait)
            wait = max(backoff, asked) if asked is not None else backoff
            elapsed = self._clock() - started
            if self._clock() + wait >= deadline:
                raise EmbeddingFailed(
                    f"gave up after {attempts} attempts in {elapsed:.1f} s, as the next wait of {wait:g} s "
                    f"would pass TIMEOUT ({timeout:g} s; raise it to wait longer): {problem}"
                )
            self._log(f"{problem}; retrying in {wait:g} s (attempt {attempts})")
            self._sleep(wait)

    def _vectors(self, body: bytes, expected: int) -> list[list[float]]:
        try:
            parsed = json.loads(body)
        except ValueError:
            raise EmbeddingFailed(
                f"{self.settings.endpoint} answered something that is not JSON: {_excerpt(body)}"
            ) from None
        data = parsed.get("data") if isinstance(parsed, dict) else None
        if not isinstance(data, list):
            raise EmbeddingFailed(f"{self.settings.endpoint} answered JSON without a 'data' list")
        if len(data) != expected:
            raise EmbeddingFailed(f"the service answered {len(data)} vectors for {expected} texts")
        entries: list[tuple[int, list[float]]] = []
        for position, entry in enumerate(data):
            if not isinstance(entry, dict) or not isinstance(entry.get("embedding"), list):
                raise EmbeddingFailed(f"answer entry {position} has no 'embedding' list")
            index = entry.get("index", position)
            vector = entry["embedding"]
            if not isinstance(index, int) or not all(
                isinstance(number, int | float) and not isinstance(number, bool) and math.isfinite(number)
                for number in vector
            ):
                raise EmbeddingFailed(
                    f"answer entry {position} is not a list of finite numbers with an index"
                )
            entries.append((index, [float(number) for number in vector]))
        entries.sort(key=lambda pair: pair[0])
        if [index for index, _ in entries] != list(range(expected)):
            raise EmbeddingFailed("the service's answer does not have one vector for each text")
        return [vector for _, vector in entries]

"""A polite, sequential client for the MediaWiki Action API.

Standard library only: ``urllib`` for HTTP and ``truststore`` for the operating system's
certificate store (ADR 0006). Requests go one at a time with a pause between them, carry a
descriptive User-Agent and ``maxlag``, and are retried on 429, 502, 503, 504, ``maxlag`` and
network errors with a growing wait.
"""

from __future__ import annotations

import json
import platform
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import truststore
from passageway_sdk import SourceError, retry_after_seconds

VERSION = "0.1.0"
RETRY_STATUSES = frozenset({429, 502, 503, 504})
MAXLAG_SECONDS = 5
LOG_WAITS_FROM = 10.0


class ApiError(SourceError):
    """The API answered with an error object; ``code`` is MediaWiki's error code."""

    def __init__(self, code: str, info: str) -> None:
        super().__init__(f"MediaWiki API error {code}: {info}")
        self.code = code
        self.info = info


def user_agent(contact: str) -> str:
    """Wikimedia's User-Agent policy: name/version, contact, then the library."""
    library = f"Python-urllib/{platform.python_version()}"
    if contact:
        return f"passageway-connector-wikipedia/{VERSION} ({contact}) {library}"
    return f"passageway-connector-wikipedia/{VERSION} {library}"


class MediaWikiClient:
    """GET requests against one ``api.php``, answered as parsed JSON (``formatversion=2``).

    The wait limits are constructor options so tests can shorten them; users cannot.

    first_wait, max_wait
        The back-off: 1 s, doubling up to 60 s.
    retry_after_cap
        The longest ``Retry-After`` honoured (300 s); a longer one is cut to this.
    total_wait_cap
        A request that has waited this long in total (900 s) fails, naming its attempts.
    """

    def __init__(
        self,
        api_url: str,
        *,
        contact: str = "",
        pause_seconds: float = 0.1,
        log: Callable[[str], None] = lambda message: None,
        first_wait: float = 1.0,
        max_wait: float = 60.0,
        retry_after_cap: float = 300.0,
        total_wait_cap: float = 900.0,
        request_timeout: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api_url = api_url
        self._headers = {"User-Agent": user_agent(contact), "Accept": "application/json"}
        self._pause = pause_seconds
        self._log = log
        self._first_wait = first_wait
        self._max_wait = max_wait
        self._retry_after_cap = retry_after_cap
        self._total_wait_cap = total_wait_cap
        self._request_timeout = request_timeout
        self._sleep = sleep
        self._clock = clock
        self._last_request: float | None = None
        self.requests = 0
        handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
        if api_url.startswith("https://"):
            handlers.append(
                urllib.request.HTTPSHandler(context=truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
            )
        self._opener = urllib.request.build_opener(*handlers)

    def _url(self, params: Mapping[str, Any]) -> str:
        query = {"format": "json", "formatversion": "2", "maxlag": str(MAXLAG_SECONDS), **params}
        return self.api_url + "?" + urllib.parse.urlencode(query)

    def _polite_pause(self) -> None:
        if self._last_request is not None and self._pause > 0:
            remaining = self._last_request + self._pause - self._clock()
            if remaining > 0:
                self._sleep(remaining)

    def _attempt(self, url: str) -> tuple[Any | None, str | None, float | None]:
        """One request: (answer, None, None) or (None, problem worth a retry, Retry-After)."""
        self._polite_pause()
        # The scheme was checked to be http or https when the settings were read.
        request = urllib.request.Request(url, headers=self._headers)  # noqa: S310
        self.requests += 1
        try:
            with self._opener.open(request, timeout=self._request_timeout) as response:
                body = response.read()
                content_type = response.headers.get("Content-Type", "")
                retry_after = response.headers.get("Retry-After")
        except urllib.error.HTTPError as error:
            status = error.code
            if status in RETRY_STATUSES:
                asked = retry_after_seconds(error.headers.get("Retry-After") if error.headers else None)
                return None, f"HTTP {status} from {self.api_url}", asked
            hint = (
                "; check API_URL (it should be a MediaWiki api.php address)"
                if status in (400, 404, 405)
                else ""
            )
            raise SourceError(f"{self.api_url} answered HTTP {status} {error.reason}{hint}") from None
        except (urllib.error.URLError, OSError) as error:
            reason = error.reason if isinstance(error, urllib.error.URLError) else error
            return None, f"cannot reach {self.api_url} ({reason})", None
        finally:
            self._last_request = self._clock()
        try:
            answer = json.loads(body)
        except ValueError:
            shown = "HTML" if "html" in content_type.lower() or body.lstrip()[:1] == b"<" else "something"
            raise SourceError(
                f"{self.api_url} answered {shown} instead of the MediaWiki API's JSON; check API_URL "
                "(it should end in api.php, e.g. https://en.wikipedia.org/w/api.php)"
            ) from None
        if not isinstance(answer, dict):
            raise SourceError(f"{self.api_url} answered JSON that is not an API response")
        error = answer.get("error")
        if isinstance(error, dict):
            code = str(error.get("code", "unknown"))
            if code == "maxlag":
                return (
                    None,
                    f"the wiki's database lags ({error.get('info', 'maxlag')})",
                    (retry_after_seconds(retry_after)),
                )
            raise ApiError(code, str(error.get("info", "")))
        return answer, None, None

    def get(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """One API call, retried as the class describes; raises SourceError when it gives up."""
        url = self._url(params)
        attempts = 0
        waited = 0.0
        started = self._clock()
        while True:
            attempts += 1
            answer, problem, asked = self._attempt(url)
            if answer is not None:
                return answer
            if waited >= self._total_wait_cap:
                elapsed = self._clock() - started
                raise SourceError(
                    f"gave up after {attempts} attempts and {elapsed:.0f} s ({waited:.0f} s of waiting): "
                    f"{problem}"
                )
            wait = min(self._first_wait * 2 ** (attempts - 1), self._max_wait)
            if asked is not None:
                wait = max(wait, min(asked, self._retry_after_cap))
            wait = min(wait, self._total_wait_cap - waited)
            if wait >= LOG_WAITS_FROM:
                self._log(
                    f"{problem}: waiting {wait:.0f} s ({waited:.0f} s of {self._total_wait_cap:.0f} s waited)"
                )
            self._sleep(wait)
            waited += wait

    def query(self, params: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """Every batch of an ``action=query`` call, following ``continue`` to the end."""
        continuation: dict[str, Any] = {}
        while True:
            answer = self.get({"action": "query", **params, **continuation})
            yield answer.get("query", {})
            next_part = answer.get("continue")
            if not isinstance(next_part, dict) or not next_part:
                return
            continuation = next_part

"""A read-only client for the Confluence Data Center / Server REST API under ``/rest/api``.

Standard library only: ``urllib`` for HTTP and ``truststore`` for the operating system's
certificate store (ADR 0006); ``VERIFY_TLS=false`` is the one way to turn checking off. Every
request is a GET with the personal access token as ``Authorization: Bearer``. Answers 429 and
5xx, and network errors, are retried with a growing wait; every message is masked, so the token
never appears in one, even when a proxy echoes the header back.
"""

from __future__ import annotations

import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import truststore
from passageway_sdk import (
    JsonTooDeep,
    SourceError,
    deadline,
    load_json,
    opener,
    read_capped,
    retry_after_seconds,
)

MASK = "***"
LOG_WAITS_FROM = 10.0
QUOTED_BODY = 200
PAGE_SIZE = 100
ERROR_PAGE_BYTES = 64 * 1024  # of an error page, read to quote its start
MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""The largest answer read: one page with its body, or one page of a listing."""


def _error_text(body: bytes) -> str:
    """Confluence's ``{"statusCode", "message", "reason"}`` as its message, else the page's start."""
    try:
        answer = load_json(body)
        if isinstance(answer, dict) and answer.get("message"):
            return str(answer["message"])
    except ValueError:
        pass
    return " ".join(body[:QUOTED_BODY].decode("utf-8", "replace").split())


class NotFound(SourceError):
    """The API answered 404: a page that is gone, or a space the token cannot see."""


class RestClient:
    """GET requests against one Confluence's ``/rest/api``, answered as parsed JSON.

    The wait limits are constructor options so tests can shorten them; users cannot.
    ``first_wait`` and ``max_wait`` are the back-off (1 s doubling up to 60 s); a ``Retry-After``
    is honoured up to ``retry_after_cap`` (300 s); a request that has waited ``total_wait_cap``
    (900 s) in all fails, naming its attempts.
    """

    def __init__(
        self,
        base: str,
        token: str,
        *,
        timeout: float = 30.0,
        verify_tls: bool = True,
        pause_seconds: float = 0.0,
        log: Callable[[str], None] = lambda message: None,
        first_wait: float = 1.0,
        max_wait: float = 60.0,
        retry_after_cap: float = 300.0,
        total_wait_cap: float = 900.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = base + "/rest/api"
        self._token = token
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self._timeout, self._pause, self._log = timeout, pause_seconds, log
        self._first_wait, self._max_wait = first_wait, max_wait
        self._retry_after_cap, self._total_wait_cap = retry_after_cap, total_wait_cap
        self._sleep, self._clock = sleep, clock
        self._last: float | None = None
        self.requests = 0
        context = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if not verify_tls:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
        if base.startswith("https://"):
            handlers.append(urllib.request.HTTPSHandler(context=context))
        # Redirects are followed only within the site's origin: the token never leaves it.
        self._opener = opener(*handlers)

    def mask(self, text: str) -> str:
        """``text`` with the token replaced, as sent and as URL-encoded."""
        for form in (self._token, urllib.parse.quote(self._token, safe="")):
            if form:
                text = text.replace(form, MASK)
        return text

    def _attempt(self, url: str, what: str) -> tuple[Any, str | None, float | None]:
        """One request: (answer, None, None), or (None, a problem worth a retry, Retry-After)."""
        if self._last is not None and self._pause > 0:
            remaining = self._last + self._pause - self._clock()
            if remaining > 0:
                self._sleep(remaining)
        # The scheme was checked to be http or https when the settings were read.
        request = urllib.request.Request(url, headers=self._headers)  # noqa: S310
        self.requests += 1
        # The whole request, answer included, within the timeout: a drip is no answer.
        with deadline(self._timeout, f"GET {url}") as check:
            try:
                with self._opener.open(request, timeout=self._timeout) as response:
                    body = read_capped(response, MAX_ANSWER_BYTES, f"GET {url}", check)
            except urllib.error.HTTPError as error:
                status = error.code
                detail = _error_text(read_capped(error, ERROR_PAGE_BYTES, f"GET {url}", check, cut=True))
                if status == 429 or status >= 500:
                    asked = retry_after_seconds(error.headers.get("Retry-After") if error.headers else None)
                    return None, f"HTTP {status} from {self.api}", asked
                if status == 401:
                    raise SourceError(
                        f"Confluence at {self.api} refused the token (HTTP 401: {detail}); check TOKEN: "
                        "a personal access token of a user who can see the spaces"
                    ) from None
                if status == 404:
                    raise NotFound(f"{what} was not found at {self.api} (HTTP 404: {detail})") from None
                hint = "; check that the token's user may read it" if status == 403 else ""
                raise SourceError(
                    f"Confluence at {self.api} answered HTTP {status} for {what} ({detail}){hint}"
                ) from None
            except (urllib.error.URLError, OSError) as error:
                reason = error.reason if isinstance(error, urllib.error.URLError) else error
                if isinstance(reason, ssl.SSLCertVerificationError):
                    raise SourceError(
                        f"the certificate of {self.api} is not trusted ({reason.verify_message}); add "
                        "its CA to the operating system's trust store"
                    ) from None
                return None, f"cannot reach {self.api} ({reason})", None
            finally:
                self._last = self._clock()
        try:
            return load_json(body), None, None
        except JsonTooDeep:
            raise SourceError(
                f"{self.api} answered JSON nested too deep to read for {what}; the server is not "
                "Confluence's REST API, or it is broken"
            ) from None
        except ValueError:
            raise SourceError(
                f"{self.api} answered something that is not the REST API's JSON "
                f"({_error_text(body)}); check URL (the site, with its context path)"
            ) from None

    def get(self, path: str, params: dict[str, str] | None = None, what: str = "the request") -> Any:
        """``GET /rest/api<path>``, retried as the class says; every error message is masked."""
        url = self.api + path + ("?" + urllib.parse.urlencode(params) if params else "")
        attempts, waited, started = 0, 0.0, self._clock()
        while True:
            attempts += 1
            try:
                answer, problem, asked = self._attempt(url, what)
            except SourceError as error:
                raise type(error)(self.mask(str(error))) from None
            if problem is None:
                return answer
            if waited >= self._total_wait_cap:
                raise SourceError(
                    self.mask(
                        f"gave up after {attempts} attempts and {self._clock() - started:.0f} s "
                        f"({waited:.0f} s of waiting): {problem}"
                    )
                )
            wait = min(self._first_wait * 2 ** (attempts - 1), self._max_wait)
            if asked is not None:
                wait = max(wait, min(asked, self._retry_after_cap))
            wait = min(wait, self._total_wait_cap - waited)
            if wait >= LOG_WAITS_FROM:
                self._log(
                    self.mask(
                        f"{problem}: waiting {wait:.0f} s "
                        f"({waited:.0f} s of {self._total_wait_cap:.0f} s waited)"
                    )
                )
            self._sleep(wait)
            waited += wait

    def pages(
        self, path: str, params: dict[str, str], what: str, most: int = 100_000
    ) -> Iterator[dict[str, Any]]:
        """Every result of a paged listing, following ``start`` while ``_links.next`` is there.

        A server that repeats itself (the same ``next`` link again, or a page of results already
        given), lists more than ``most`` results, or needs more than ``most / 10`` pages for them
        (a real one gives 25 or more a page) fails with a message instead of being asked forever.
        """
        start = 0
        links: set[str] = set()
        seen: set[str] = set()
        given = asked = 0
        while True:
            asked += 1
            if asked > most // 10 + 10:
                raise SourceError(
                    f"{self.api}{path} needed more than {asked - 1} pages for {what} at "
                    f"{given} results; the server's paging is broken, so the listing stopped"
                )
            answer = self.get(path, {**params, "start": str(start), "limit": str(PAGE_SIZE)}, what)
            results = answer.get("results") if isinstance(answer, dict) else None
            if not isinstance(results, list):
                raise SourceError(f"{self.api}{path} answered a listing without its results")
            ids = {str(result.get("id")) for result in results if isinstance(result, dict)}
            if ids and ids <= seen:
                raise SourceError(
                    f"{self.api}{path} answered the same results again at start={start} for {what}; "
                    "the server's paging is broken, so the listing stopped"
                )
            seen |= ids
            given += len(results)
            if given > most:
                raise SourceError(
                    f"{self.api}{path} listed more than {most} results for {what}; the listing "
                    "stopped (narrow SPACES or raise MAX_PAGES)"
                )
            yield from (result for result in results if isinstance(result, dict))
            following = (answer.get("_links") or {}).get("next")
            if not results or not following:
                return
            if str(following) in links:
                raise SourceError(
                    f"{self.api}{path} gave the same next link twice for {what} ({str(following)[:200]}); "
                    "the server's paging is broken, so the listing stopped"
                )
            links.add(str(following))
            start += len(results)

"""A read-only client for Trilium's ETAPI: search, one note, one note's content.

Standard library only: ``urllib`` for HTTP and ``truststore`` for the operating system's
certificate store (ADR 0006). Every request is a GET with the token in the ``Authorization``
header, as ETAPI's OpenAPI description has it (``EtapiTokenAuth``, an API key in that header).
Every message this module raises has the token masked, also when the server or a proxy echoes
the header back in an error page.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

import truststore
from passageway_sdk import JsonTooDeep, SourceError, deadline, load_json, opener, read_capped

MASK = "***"
QUOTED_BODY = 200  # characters of an error page quoted in a message
ERROR_PAGE_BYTES = 64 * 1024  # of an error page, read to quote its start
MAX_ANSWER_BYTES = 128 * 1024 * 1024
"""The largest JSON answer read (the search for every note's metadata is the large one)."""


class Masker:
    """Replaces the token in any text, so no message can carry it."""

    def __init__(self, token: str) -> None:
        self._token = token

    def __call__(self, text: str) -> str:
        if self._token:
            text = text.replace(self._token, MASK)
            text = text.replace(urllib.parse.quote(self._token, safe=""), MASK)
        return text


def _error_text(body: bytes) -> str:
    """ETAPI's ``{"status", "code", "message"}`` error as ``CODE: message``, else the page's start."""
    try:
        answer = load_json(body)
    except ValueError:
        return " ".join(body[:QUOTED_BODY].decode("utf-8", "replace").split())
    if isinstance(answer, dict) and "code" in answer:
        return f"{answer.get('code')}: {answer.get('message', '')}"
    return " ".join(body[:QUOTED_BODY].decode("utf-8", "replace").split())


class EtapiClient:
    """GET requests against one Trilium's ``/etapi``; answers are parsed JSON or raw bytes."""

    def __init__(self, etapi: str, token: str, timeout: float) -> None:
        self.etapi = etapi
        self.mask = Masker(token)
        self._headers = {"Authorization": token, "Accept": "application/json"}
        self._timeout = timeout
        self.requests = 0
        handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
        if etapi.startswith("https://"):
            handlers.append(
                urllib.request.HTTPSHandler(context=truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
            )
        # Redirects are followed only within the server's origin: the token never leaves it.
        self._opener = opener(*handlers)

    def _get(self, path: str, params: dict[str, str] | None = None, limit: int | None = None) -> bytes | None:
        """The body of ``GET /etapi<path>``; None for a 404. With ``limit``, at most ``limit + 1``
        bytes are read (the caller tells a note that is too large); without, an answer larger than
        :data:`MAX_ANSWER_BYTES` fails. The whole request, answer included, takes at most
        ``timeout`` seconds."""
        try:
            with deadline(self._timeout, f"GET {self.etapi}{path}") as check:
                return self._request(path, params, limit, check)
        except SourceError as error:
            raise type(error)(self.mask(str(error))) from None

    def _request(
        self, path: str, params: dict[str, str] | None, limit: int | None, check: Callable[[], None]
    ) -> bytes | None:
        url = self.etapi + path + ("?" + urllib.parse.urlencode(params) if params else "")
        # The scheme was checked to be http or https when the settings were read.
        request = urllib.request.Request(url, headers=self._headers)  # noqa: S310
        self.requests += 1
        what = f"GET {self.etapi}{path}"
        try:
            with self._opener.open(request, timeout=self._timeout) as response:
                if limit is not None:
                    return read_capped(response, limit, what, check, cut=True)
                return read_capped(response, MAX_ANSWER_BYTES, what, check)
        except urllib.error.HTTPError as error:
            detail = _error_text(read_capped(error, ERROR_PAGE_BYTES, what, check, cut=True))
            if error.code == 404 and "NOT_FOUND" in detail:
                return None
            if error.code == 401:
                raise SourceError(
                    self.mask(
                        f"Trilium at {self.etapi} refused the ETAPI token (HTTP 401, {detail}); check TOKEN: "
                        "create a token under Options › ETAPI and give it as a secret"
                    )
                ) from None
            hint = "; check URL (the Trilium server, /etapi is added)" if error.code in (404, 405) else ""
            raise SourceError(
                self.mask(
                    f"Trilium at {self.etapi} answered HTTP {error.code} to GET {path} ({detail}){hint}"
                )
            ) from None
        except (urllib.error.URLError, OSError) as error:
            reason = error.reason if isinstance(error, urllib.error.URLError) else error
            if isinstance(reason, ssl.SSLCertVerificationError):
                raise SourceError(
                    self.mask(
                        f"the certificate of {self.etapi} is not trusted ({reason.verify_message}); "
                        "add its CA to "
                        "the operating system's trust store"
                    )
                ) from None
            raise SourceError(
                self.mask(f"cannot reach Trilium at {self.etapi} ({reason}); check URL")
            ) from None

    def _json(self, path: str, params: dict[str, str] | None = None) -> Any:
        body = self._get(path, params)
        if body is None:
            return None
        try:
            return load_json(body)
        except JsonTooDeep:
            raise SourceError(
                f"{self.etapi}{path} answered JSON nested too deep to read; the server is not a "
                "Trilium, or it is broken"
            ) from None
        except ValueError:
            raise SourceError(
                self.mask(
                    f"{self.etapi}{path} answered something that is not ETAPI's JSON ({_error_text(body)}); "
                    "check URL: it should be the Trilium server, without /etapi"
                )
            ) from None

    def search(self, query: str, *, ancestor: str | None = None) -> list[dict[str, Any]]:
        """The notes matching a search (attributes and properties only, archived notes left out)."""
        params = {"search": query, "fastSearch": "true", "includeArchivedNotes": "false"}
        if ancestor:
            params["ancestorNoteId"] = ancestor
        answer = self._json("/notes", params)
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list):
            raise SourceError(f"{self.etapi}/notes answered a search without its results list")
        return [note for note in results if isinstance(note, dict) and isinstance(note.get("noteId"), str)]

    def content(self, note_id: str, limit: int) -> bytes | None:
        """A note's content, at most ``limit + 1`` bytes of it; None when the note is gone."""
        return self._get(f"/notes/{urllib.parse.quote(note_id, safe='')}/content", limit=limit)

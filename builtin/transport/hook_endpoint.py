"""``POST /recall``: the endpoint behind the Claude Code prompt hook.

The hook sends every prompt, up to 20,000 characters of it. This endpoint authorizes it, builds
the :class:`~passageway.kernel.records.Question` (questions only: the kernel answers silence for
a prompt that asks nothing, a slash command, "ok" or a short follow-up without a content word;
the items this session was already sent are excluded; items that match the working directory's
last two folder names are lifted), asks ``Kernel.recall`` and renders the answer. It accepts
only the static bearer password, never an OAuth token. The answer is ``{"context": "..."}``, an
empty string when there is nothing to add.
"""

from __future__ import annotations

import collections
import hashlib
import logging
import re
import time
from collections.abc import Iterable
from pathlib import PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING

from aiohttp import web

from passageway import Question, render_answer
from passageway.builtin.transport.request_body import BadBody, parse_json
from passageway.kernel.auth import REFUSED_WRONG_VALUE, bearer_token, unauthorized
from passageway.kernel.errors import PassagewayError
from passageway.kernel.text.not_unicode import is_unicode

if TYPE_CHECKING:
    from passageway.kernel.app import Kernel

log = logging.getLogger("passageway.hook")

MAX_PROMPT_CHARS = 20_000
"""What is read of a prompt; the hook sends no more, and the rest of a longer one is ignored."""
MAX_BODY_BYTES = 256 * 1024
"""The largest body accepted: 20,000 characters JSON-escaped at their longest (``\\uXXXX``
pairs, 12 bytes a character) fit. A larger one is refused with 413 before it is read whole."""
MAX_SESSION_ID_CHARS = 200
"""A longer ``session_id`` (Claude Code's are UUIDs) is remembered by its SHA-256 digest."""
WORD = re.compile(r"\w+", re.UNICODE)

# Folder names that say nothing about a project.
GENERIC_FOLDERS = frozenset({
    "home", "users", "user", "src", "source", "code", "projects", "project", "repos", "repo", "work",
    "workspace", "git", "github", "tmp", "temp", "dev", "documents", "desktop", "downloads", "main",
    "master", "app", "lib", "var", "opt", "root",
})


def folder_words(cwd: str | None) -> tuple[str, ...]:
    """Words of the last two folder names of ``cwd`` that could name a project."""
    if not cwd:
        return ()
    path = PureWindowsPath(cwd) if "\\" in cwd and "/" not in cwd else PurePosixPath(cwd)
    names = [part for part in path.parts if part not in ("/", "\\") and not part.endswith(":\\")][-2:]
    words: list[str] = []
    for name in names:
        for word in WORD.findall(name.lower().replace("_", " ")):
            if len(word) >= 3 and word not in GENERIC_FOLDERS and not word.isdigit() and word not in words:
                words.append(word)
    return tuple(words)


class SessionMemory:
    """Which items each session was already sent: at most ``max_sessions``, each for ``ttl`` seconds."""

    def __init__(self, max_sessions: int = 1000, ttl: float = 6 * 3600, max_items: int = 500,
                 max_chars: int = 32_000) -> None:
        self.max_sessions = max_sessions
        self.ttl = ttl
        self.max_items = max_items
        self.max_chars = max_chars
        """Characters of source names and item ids one session may hold (ids can be 1 KiB long)."""
        self._sessions: collections.OrderedDict[str, tuple[float, dict[tuple[str, str], None]]] = (
            collections.OrderedDict()
        )

    def _expire(self, now: float) -> None:
        while self._sessions:
            oldest_key, (seen_at, _) = next(iter(self._sessions.items()))
            if now - seen_at <= self.ttl and len(self._sessions) <= self.max_sessions:
                break
            del self._sessions[oldest_key]

    def sent(self, session_id: str | None, now: float | None = None) -> tuple[tuple[str, str], ...]:
        if not session_id:
            return ()
        now = time.monotonic() if now is None else now
        self._expire(now)
        entry = self._sessions.get(session_id)
        return tuple(entry[1]) if entry else ()

    def remember(
        self, session_id: str | None, items: Iterable[tuple[str, str]], now: float | None = None
    ) -> None:
        if not session_id:
            return
        now = time.monotonic() if now is None else now
        entry = self._sessions.pop(session_id, None)
        seen = entry[1] if entry else {}
        for item in items:
            seen[item] = None
        size = sum(len(source) + len(item_id) for source, item_id in seen)
        while len(seen) > self.max_items or (size > self.max_chars and len(seen) > 1):
            source, item_id = next(iter(seen))
            del seen[(source, item_id)]
            size -= len(source) + len(item_id)
        self._sessions[session_id] = (now, seen)
        self._expire(now)

    def __len__(self) -> int:
        return len(self._sessions)


class HookEndpoint:
    """The ``POST /recall`` handler for one kernel."""

    def __init__(self, kernel: Kernel, memory: SessionMemory | None = None) -> None:
        self.kernel = kernel
        self.memory = memory or SessionMemory()

    async def handle(self, request: web.Request) -> web.Response:
        # The static password only: an OAuth token for /mcp is not accepted here.
        if not self.kernel.authorize(request):
            return unauthorized(reason=REFUSED_WRONG_VALUE if bearer_token(request) else None)
        body = await _read_limited(request, MAX_BODY_BYTES)
        if body is None:
            return web.json_response(
                {"error": f"the body is larger than {MAX_BODY_BYTES} bytes; send at most the first "
                          f"{MAX_PROMPT_CHARS} characters of the prompt"},
                status=413,
            )
        try:
            payload = parse_json(body)
        except BadBody as error:
            return web.json_response(
                {"error": f'{error}; the body must be JSON: {{"prompt", "session_id", "cwd"}}'}, status=400
            )
        if not isinstance(payload, dict) or not isinstance(payload.get("prompt"), str):
            return web.json_response({"error": "`prompt` is required and must be text"}, status=400)
        if not is_unicode(payload["prompt"]):
            # Bad input is the client's mistake: it must never reach the embedder and turn health.
            return web.json_response(
                {"error": "`prompt` holds a lone surrogate escape (such as \\ud800), which is not "
                          "text; send UTF-8"}, status=400
            )
        session_id = _session_key(payload.get("session_id"))
        cwd = payload.get("cwd")
        cwd = cwd if isinstance(cwd, str) and is_unicode(cwd) else None
        # The hook sends every prompt, so it asks for questions only (kernel/query/prompt.py).
        question = Question(
            payload["prompt"][:MAX_PROMPT_CHARS], only_questions=True,
            exclude_items=self.memory.sent(session_id), boost_words=folder_words(cwd),
        )
        try:
            answer = await self.kernel.recall(question)
        except PassagewayError as error:
            return web.json_response({"context": "", "error": str(error)}, status=503)
        # Silence is an empty context, also while a source builds: the hook then adds nothing at all.
        context = "" if answer.silent else render_answer(answer)
        if answer.hits:  # a prompt the kernel did not search leaves the session as it was
            self.memory.remember(session_id, ((hit.source, hit.item_id) for hit in answer.hits))
        return web.json_response({"context": context})


async def _read_limited(request: web.Request, limit: int) -> bytes | None:
    """The request's body, or ``None`` when it is longer than ``limit`` bytes (read no further)."""
    if request.content_length is not None and request.content_length > limit:
        return None
    parts, size = [], 0
    async for part in request.content.iter_chunked(64 * 1024):
        size += len(part)
        if size > limit:
            return None
        parts.append(part)
    return b"".join(parts)


def _session_key(value: object) -> str | None:
    """The key a session is remembered by: its id, or the digest of an overlong or odd one."""
    if not isinstance(value, str) or not value:
        return None
    if len(value) <= MAX_SESSION_ID_CHARS and is_unicode(value):
        return value
    return "sha256:" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()

"""What the OAuth server keeps: clients, codes and tokens (hashed) in one JSON file, and the
limit on failed logins.

Codes and tokens are kept only as SHA-256 hashes, in ``<data dir>/oauth.json``, written
atomically and readable only by the owner, so a restart keeps clients logged in and a copy of the
file lets no one in.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("passageway.oauth")

MAX_FAILURES_PER_ADDRESS = 5
MAX_FAILURES_OVERALL = 30
FAILURE_WINDOW_SECONDS = 15 * 60
TEMPORARY_PREFIX, TEMPORARY_SUFFIX = ".oauth-", ".json"
TEMPORARY_SECONDS = 60.0


def hashed(secret: str) -> str:
    """The SHA-256 of a code or token, which is all the state keeps of it."""
    # "surrogatepass": a token from a header that is not UTF-8 must not match, and not raise.
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def pkce_challenge(verifier: str) -> str:
    """The S256 code challenge of a PKCE code verifier (RFC 7636)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class OAuthState:
    """Clients, codes and tokens (hashed), persisted to one JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.clients: dict[str, dict[str, Any]] = {}
        self.codes: dict[str, dict[str, Any]] = {}
        self.tokens: dict[str, dict[str, Any]] = {}
        self.remove_stale_temporaries()
        self.load()

    def remove_stale_temporaries(self, older_than: float = TEMPORARY_SECONDS) -> int:
        """Delete temporary files a save left behind when it was killed; how many went.

        Only files older than ``older_than`` seconds: a save that is running now keeps its own.
        """
        removed = 0
        now = time.time()
        for leftover in self.path.parent.glob(f"{TEMPORARY_PREFIX}*{TEMPORARY_SUFFIX}"):
            with contextlib.suppress(OSError):
                if leftover.is_file() and not leftover.is_symlink() and (
                    now - leftover.stat().st_mtime > older_than
                ):
                    leftover.unlink()
                    removed += 1
        if removed:
            log.info("removed %d temporary OAuth state file%s left by an interrupted save", removed,
                     "s" if removed != 1 else "")
        return removed

    def load(self) -> None:
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as error:
            # A damaged file costs the clients a new login, nothing more.
            log.warning("OAuth state %s cannot be read (%s); starting with no clients", self.path, error)
            return
        self.clients = dict(document.get("clients", {}))
        self.codes = dict(document.get("codes", {}))
        self.tokens = dict(document.get("tokens", {}))

    async def save(self) -> None:
        """Drop what expired and write the file in a thread (a snapshot, so handlers may go on)."""
        now = time.time()
        self.codes = {key: value for key, value in self.codes.items() if value["expires"] > now}
        self.tokens = {key: value for key, value in self.tokens.items() if value["expires"] > now}
        # A copy of each record, not a JSON round trip: that took 0.6 s on the loop for a large file.
        # Records are flat (their one list, redirect_uris, is never changed in place).
        document = {"version": 1, **{
            name: {key: dict(record) for key, record in table.items()}
            for name, table in (("clients", self.clients), ("codes", self.codes), ("tokens", self.tokens))
        }}
        await asyncio.to_thread(self._write, document)

    def _write(self, document: dict[str, Any]) -> None:
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            descriptor, temporary = tempfile.mkstemp(
                dir=self.path.parent, prefix=TEMPORARY_PREFIX, suffix=TEMPORARY_SUFFIX
            )
            try:
                with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                    json.dump(document, handle)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.chmod(temporary, 0o600)
                os.replace(temporary, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise


class LoginLimiter:
    """Refuses logins after too many failures from one address, or overall, in a time window."""

    def __init__(self, per_address: int = MAX_FAILURES_PER_ADDRESS, overall: int = MAX_FAILURES_OVERALL,
                 window: float = FAILURE_WINDOW_SECONDS) -> None:
        self.per_address = per_address
        self.overall = overall
        self.window = window
        self._failures: dict[str, collections.deque[float]] = {}
        self._all: collections.deque[float] = collections.deque()

    def _trim(self, queue: collections.deque[float], now: float) -> None:
        while queue and now - queue[0] > self.window:
            queue.popleft()

    def blocked(self, address: str, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        self._trim(self._all, now)
        queue = self._failures.get(address)
        if queue is not None:
            self._trim(queue, now)
            if not queue:
                del self._failures[address]
                queue = None
        return len(self._all) >= self.overall or (queue is not None and len(queue) >= self.per_address)

    def failed(self, address: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        self._failures.setdefault(address, collections.deque()).append(now)
        self._all.append(now)

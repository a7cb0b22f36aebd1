"""Logging for the server: one format, a level from ``PASSAGEWAY_LOG_LEVEL``, secrets masked.

passageway never logs a question or a prompt (a recall leaves one line with the number of hits
and the time) and never a secret. :class:`SecretFilter` is the second line of defence: it
replaces any known secret (the password, the values of the secrets connectors reference) that
would still reach a log line with ``***``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# Libraries whose lines are about their own plumbing. Their DEBUG lines can quote whole requests,
# questions included, so they stay at WARNING whatever PASSAGEWAY_LOG_LEVEL says (V2).
QUIET_LOGGERS = ("aiohttp.access", "mcp", "mcp_types", "httpx", "httpx2", "httpcore", "sse_starlette")


class SecretFilter(logging.Filter):
    """Masks every occurrence of the given secrets in a record's final message."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        # Short values would mask ordinary words; a password shorter than 4 characters is not masked.
        kept = {secret for secret in secrets if secret and len(secret) >= 4}
        self.secrets = sorted(kept, key=len, reverse=True)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        message = record.getMessage()
        masked = message
        for secret in self.secrets:
            masked = masked.replace(secret, "***")
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and record.exc_text is None:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            for secret in self.secrets:
                record.exc_text = record.exc_text.replace(secret, "***")
        return True


class MalformedRequestFilter(logging.Filter):
    """Turns aiohttp's ERROR with a traceback for a request it cannot parse into a WARNING line at
    most once a minute, with how many there were (``http_guard.MALFORMED``).

    Bytes that are not HTTP (a port scan, a TLS hello on the plain port, a broken header) are the
    client's mistake: aiohttp already answered 400, a traceback would only bury real errors, and a
    line per request let anyone grow the log by thousands of lines a minute (issue 38).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        from aiohttp.http_exceptions import HttpProcessingError

        from passageway.kernel import http_guard

        error = record.exc_info[1] if record.exc_info else None
        if not isinstance(error, HttpProcessingError):
            return True
        # Only the first line: the rest quotes the offending bytes, which may be a header that
        # holds a password or a token.
        reason = str(error.message).strip().split("\n", 1)[0].rstrip(": ")[:200]
        http_guard.MALFORMED.note(f"{error.code}, {reason}")
        return False


def configure_logging(
    level: str = "INFO", secrets: Iterable[str] = (), stream: object = None
) -> logging.Handler:
    """Send passageway's log lines to stderr (or ``stream``) at ``level``; returns the handler."""
    handler = logging.StreamHandler(stream or sys.stderr)  # type: ignore[arg-type]
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(SecretFilter(secrets))
    root = logging.getLogger()
    for existing in list(root.handlers):
        if getattr(existing, "_passageway", False):
            root.removeHandler(existing)
    handler._passageway = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    server_log = logging.getLogger("aiohttp.server")
    if not any(isinstance(existing, MalformedRequestFilter) for existing in server_log.filters):
        server_log.addFilter(MalformedRequestFilter())
    return handler

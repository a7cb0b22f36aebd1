"""A connector call's pipes: stdin fed, lines quoted in errors, and what one call did.

The program itself (its start, its stderr masked and logged, its process group ended) is driven
by :mod:`passageway.kernel.program.driver`, as the command embedder's is. A call logs at most
:data:`STDERR_MAX_LINES` stderr lines; the rest is counted. What one call did, raw and unmasked,
is a :class:`CallTrace`, kept only where an observer (the contract check) asks for it.
"""

from __future__ import annotations

import asyncio
import builtins

import attrs

from passageway.kernel.errors import ConnectorError
from passageway.kernel.program.driver import Masker

EXCERPT_CHARS = 120
STDERR_MAX_LINES = 1000  # per call; the rest is counted, not logged


@attrs.define
class CallTrace:
    """What one call did, raw and unmasked: handed to an ``observer`` (the contract check).

    The server never sets an observer, so raw output is only kept where a test asks for it.
    """

    mode: str
    arguments: tuple[str, ...]
    stdout_lines: builtins.list[bytes] = attrs.field(factory=builtins.list)
    stderr_lines: builtins.list[bytes] = attrs.field(factory=builtins.list)
    exit_code: int | None = None
    secrets_masked: int = 0
    error: ConnectorError | None = None
    seconds: float = 0.0
    last_stderr: str = ""
    """The last non-blank stderr line, masked and cut: quoted in the error of a failed call."""
    not_unicode: builtins.list[str] = attrs.field(factory=builtins.list)
    """One note per line whose JSON held a lone surrogate escape (``"\\ud800"``): text that is not
    Unicode. Such text is repaired and the item kept; an id is refused with its line alone."""


def stderr_note(last_line: str) -> str:
    """The end of an error message: the program's last stderr line (masked), or that it had none."""
    if not last_line:
        return " (it printed nothing on stderr)"
    return f"; its last line on stderr: {last_line}"


def excerpt(line: bytes, masker: Masker) -> str:
    text = line[: EXCERPT_CHARS * 4].decode("utf-8", "replace")
    cut = len(text) > EXCERPT_CHARS or len(line) > EXCERPT_CHARS * 4
    text = masker.cut(text) if cut else masker(text)
    if len(text) > EXCERPT_CHARS:
        text = text[:EXCERPT_CHARS]
    return repr(text + ("…" if cut else ""))


async def feed(stream: asyncio.StreamWriter, data: bytes) -> None:
    """Write the request lines and close stdin; a connector may exit without reading them."""
    try:
        stream.write(data)
        await stream.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        stream.close()

"""Output into a reader that stops early (``passageway status | head -1``, ``| grep -q ok``).

Python ignores SIGPIPE, so a write into a pipe whose reader has gone raises ``BrokenPipeError``,
at the write or when the interpreter flushes at exit, and a traceback follows. A command-line
tool instead stops writing quietly: :class:`PipeSafe` wraps ``sys.stdout`` for the length of one
command; at the first broken pipe it points the file descriptor at ``/dev/null`` (so the flush
at exit cannot fail again) and drops the rest of the output. The command runs to its end and
keeps its own exit code: nobody reads the rest, but the answer it stands for is the same.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any, TextIO


class PipeSafe:
    """A text stream that forwards to ``stream`` until its reader goes, then drops what follows."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.closed_by_reader = False

    def write(self, text: str) -> int:
        if not self.closed_by_reader:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._reader_gone()
        return len(text)

    def flush(self) -> None:
        if not self.closed_by_reader:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._reader_gone()

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def _reader_gone(self) -> None:
        self.closed_by_reader = True
        with contextlib.suppress(OSError, ValueError, AttributeError):
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._stream.fileno())  # what is still buffered goes nowhere, quietly
            os.close(null)

    def __getattr__(self, name: str) -> Any:  # isatty, encoding, buffer, fileno, ...
        return getattr(self._stream, name)


@contextlib.contextmanager
def quiet_when_the_reader_goes() -> Iterator[PipeSafe]:
    """``sys.stdout`` wrapped in :class:`PipeSafe` inside the block, restored after it."""
    original = sys.stdout
    safe = PipeSafe(original)
    sys.stdout = safe  # type: ignore[assignment]
    try:
        yield safe
    finally:
        safe.flush()  # also after --help's SystemExit: nothing is left for the exit's own flush
        sys.stdout = original

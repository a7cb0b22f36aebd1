"""Every mistake of one ``passageway.toml`` at once, each with its file and line.

A file with three mistakes must not take three restarts to fix. The parser in
:mod:`passageway.kernel.config` runs each check through :meth:`Problems.attempt`, which keeps the
check's message and goes on with a stand-in value; :meth:`Problems.raise_if_any` then raises one
:class:`ConfigError` that lists them all. TOML keeps no line numbers, so :func:`line_of` finds the
line of a table or key in the text itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from passageway.kernel.errors import ConfigError

T = TypeVar("T")
HEADER = re.compile(r"\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def line_of(text: str, table: str | None, index: int = 1, key: str | None = None) -> int | None:
    """The line (from 1) of ``key`` in the ``index``-th table named ``table`` (``None``: the top
    level), or of the table's header when the key is not written there; ``None`` when not found."""
    seen, inside, header = 0, table is None, None
    for number, line in enumerate(text.splitlines(), start=1):
        match = HEADER.match(line)
        if match:
            if inside and table is not None:
                break  # the table ended
            name = match.group(1).replace('"', "").replace(" ", "")
            if name == table:
                seen += 1
                inside = seen == index
                header = number if inside else header
            elif table is None:
                return None
            continue
        if inside and key is not None and re.match(rf"\s*([\"']?){re.escape(key)}\1\s*[=.]", line):
            return number
    return header


class Problems:
    """The mistakes found so far in the text of one configuration file."""

    def __init__(self, text: str, origin: str) -> None:
        self.text = text
        self.origin = origin
        self.found: list[str] = []

    def add(self, message: str, table: str | None = None, index: int = 1, key: str | None = None) -> None:
        """Keep ``message``, with ``origin:LINE:`` in front when the line is found."""
        line = line_of(self.text, table, index, key)
        prefix = f"{self.origin}: "
        if line is not None and message.startswith(prefix):
            message = f"{self.origin}:{line}: {message.removeprefix(prefix)}"
        self.found.append(message)

    def attempt(self, check: Callable[[], T], fallback: T, table: str | None = None, index: int = 1,
                key: str | None = None) -> T:
        """``check()``, or ``fallback`` after keeping the :class:`ConfigError` it raised."""
        try:
            return check()
        except ConfigError as error:
            self.add(str(error), table, index, key)
            return fallback

    def raise_if_any(self) -> None:
        """Raise one :class:`ConfigError` holding every mistake (``problems``: one line each)."""
        if not self.found:
            return
        if len(self.found) == 1:
            raise ConfigError(self.found[0], problems=self.found)
        heading = f"{self.origin} has {len(self.found)} mistakes; fix them all, then start again:"
        raise ConfigError("\n".join([heading, *(f"  {line}" for line in self.found)]), problems=self.found)

"""The ``INCLUDE`` and ``EXCLUDE`` settings: ``|``-separated globs over the folder's relative
paths, compiled to regexes once per call."""

from __future__ import annotations

import re


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """A compiled regex for one glob: ``*`` stays within a folder, ``**`` crosses folders.

    ``?`` is one character other than ``/``; everything else is literal (no classes, no braces).
    """
    parts: list[str] = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            parts.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            parts.append(".*")
            index += 2
        elif pattern[index] == "*":
            parts.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            parts.append("[^/]")
            index += 1
        else:
            parts.append(re.escape(pattern[index]))
            index += 1
    return re.compile("".join(parts), re.DOTALL)


class Globs:
    """``|``-separated glob patterns. A pattern with ``/`` is anchored at the folder; one without
    matches the file name at any depth."""

    def __init__(self, anchored: tuple[re.Pattern[str], ...], by_name: tuple[re.Pattern[str], ...]) -> None:
        self.anchored = anchored
        self.by_name = by_name

    @classmethod
    def parse(cls, text: str) -> Globs:
        patterns = [part.strip() for part in text.split("|") if part.strip()]
        anchored = tuple(glob_to_regex(p.lstrip("/")) for p in patterns if "/" in p)
        by_name = tuple(glob_to_regex(p) for p in patterns if "/" not in p)
        return cls(anchored, by_name)

    def __bool__(self) -> bool:
        return bool(self.anchored or self.by_name)

    def match(self, relative: str) -> bool:
        name = relative.rsplit("/", 1)[-1]
        return any(regex.fullmatch(relative) for regex in self.anchored) or any(
            regex.fullmatch(name) for regex in self.by_name
        )

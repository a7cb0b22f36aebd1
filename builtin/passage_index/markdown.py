"""The little Markdown the passage index must read: fences, ATX headings, inline marks, slugs.

Only what the chunker and the prepared search content need. A heading is an ATX heading
(``## Title``, closing ``#`` marks dropped) outside a fenced code block; fences open and close by
the rule :mod:`passageway.kernel.index.chunking` uses for its blocks, so a ``# comment`` inside a fence
is code for both. Underlined (setext) headings are plain text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")

_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]+)>")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_EMPHASIS = re.compile(r"(?<![\w*])([*_])(?=\S)(.+?)(?<=\S)\1(?![\w*])")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|>~])")
_NOT_SLUG = re.compile(r"[\W_]+", re.UNICODE)


def fenced_lines(text: str) -> Iterator[tuple[str, bool]]:
    """Each line of ``text`` with whether it belongs to a fenced code block (fences included)."""
    marker: str | None = None
    for line in text.split("\n"):
        if marker is None:
            opening = _FENCE.match(line)
            if opening:
                marker = opening.group(1)
                yield line, True
            else:
                yield line, False
            continue
        stripped = line.strip()
        yield line, True
        if stripped.startswith(marker[0] * len(marker)) and not stripped.strip(marker[0]):
            marker = None


def heading(line: str) -> tuple[int, str] | None:
    """``(level, text)`` of an ATX heading line, closing hashes removed; None for other lines."""
    match = _HEADING.match(line)
    if match is None:
        return None
    return len(match.group(1)), _CLOSING_HASHES.sub("", match.group(2) or "").strip()


def plain(text: str) -> str:
    """Inline Markdown as a reader sees it: link and image text kept, code and emphasis marks
    dropped, escapes undone, runs of white space made one space."""
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _AUTOLINK.sub(r"\1", text)
    spans: list[str] = []

    def keep_span(match: re.Match[str]) -> str:
        spans.append(match.group(2).strip())
        return f"\x00{len(spans) - 1}\x00"

    text = _CODE_SPAN.sub(keep_span, text)  # code keeps its * and _
    text = _STRONG.sub(r"\2", text)
    text = _EMPHASIS.sub(r"\2", text)
    text = _ESCAPE.sub(r"\1", text)
    text = re.sub(r"\x00(\d+)\x00", lambda match: spans[int(match.group(1))], text)
    return " ".join(text.split())


def slug(text: str) -> str:
    """Lower-case letters and digits of ``text`` (any script), every other run made one ``-``."""
    folded = unicodedata.normalize("NFKC", plain(text)).lower()
    return _NOT_SLUG.sub("-", folded).strip("-")

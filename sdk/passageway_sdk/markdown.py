"""Helpers for connectors whose source is markdown, or converts to it.

Only ``#`` headings (ATX) split a document; a heading's attribute block at its end (``## Title {#id}``,
``## Title { #id .class }``, as MkDocs, VitePress and Pandoc write them) is not part of its text:
its id is the section's ``anchor`` (:func:`heading_id` reads it from one line). Underlined (setext)
headings and indented code blocks are not recognised. A fenced code block (``` or ~~~) hides
everything inside it, so a ``# comment`` in a shell snippet never becomes a heading.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

TRAIL_SEPARATOR = " › "
"""Joins the headings of a section's trail: ``Setup › Linux``."""

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_INLINE_CODE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")
_ATTRIBUTE = r"""[#.][\w:.-]+|[\w-]+=(?:"[^"]*"|'[^']*'|[^\s}]+)"""
_ATTRIBUTE_TOKEN = re.compile(_ATTRIBUTE)
MAX_ATTRIBUTES_LENGTH = 1024
"""The longest attribute block read as one; a longer ``{…}`` at a heading's end stays in its text."""


def _lines(text: str) -> Iterator[tuple[str, bool]]:
    """Each line with whether it belongs to a fenced code block (fence lines included)."""
    fence: str | None = None
    for line in text.splitlines():
        if fence is None and "`" not in line and "~" not in line:
            yield line, False  # the common case, without a pattern
            continue
        match = _FENCE.match(line)
        if fence is None:
            # A backtick fence's info string may not contain a backtick (CommonMark).
            if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
                fence = match.group(1)
                yield line, True
            else:
                yield line, False
        else:
            closes = (
                match is not None
                and match.group(1)[0] == fence[0]
                and len(match.group(1)) >= len(fence)
                and not match.group(2).strip()
            )
            yield line, True
            if closes:
                fence = None


MAX_ANCHOR_LENGTH = 256
"""The protocol's limit on a section's ``anchor``; a longer id is not sent."""


def _atx(line: str) -> tuple[int, str] | None:
    """``(level, text)`` of an ATX heading line, closing ``#`` marks dropped; None for other lines.

    Plain string scanning, no regular expression: a heading of any length costs one pass, however
    many spaces or ``#`` marks it holds (issue 38, item 5)."""
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3 or not stripped.startswith("#"):
        return None
    rest = stripped.lstrip("#")
    level = len(stripped) - len(rest)
    if level > 6 or (rest and rest[0] not in " \t"):
        return None
    text = rest.strip()
    unclosed = text.rstrip("#")
    if unclosed != text and (not unclosed or unclosed[-1] in " \t"):
        text = unclosed.rstrip()
    return level, text


def _attributes(text: str) -> tuple[str, str | None] | None:
    """A heading's text without its trailing attribute block (``{#id .class}``, ``{: #id }``) and
    the block's first ``#id`` (None without one); None when the text ends in no attribute block.

    The block is the text after the last ``{``, at most :data:`MAX_ATTRIBUTES_LENGTH` characters,
    read token by token, so the cost is bounded whatever the line holds."""
    if not text.endswith("}"):
        return None
    opening = text.rfind("{", max(0, len(text) - MAX_ATTRIBUTES_LENGTH))
    if opening < 0:
        return None
    inner = text[opening + 1 : -1]
    if inner.startswith(":"):
        inner = inner[1:]  # Python-Markdown's attr_list writes {: #id }
    tokens: list[str] = []
    position = 0
    while True:
        while position < len(inner) and inner[position] in " \t":
            position += 1
        if position == len(inner):
            break
        if tokens and inner[position - 1] not in " \t":
            return None  # attributes are separated by spaces
        token = _ATTRIBUTE_TOKEN.match(inner, position)
        if token is None:
            return None
        tokens.append(token.group())
        position = token.end()
    if not tokens:
        return None
    # Tokens, not words: a quoted value such as title="a #b" holds no id.
    ids = [token[1:] for token in tokens if token.startswith("#")]
    return text[:opening].strip(), ids[0] if ids else None


def _heading(line: str) -> tuple[int, str, str | None] | None:
    """``(level, text, id)`` of a heading line, the attribute block left out of the text; None for
    a line that is no heading."""
    found = _atx(line) if "#" in line else None
    if found is None:
        return None
    level, text = found
    split = _attributes(text)
    if split is None:
        return level, text, None
    text, found_id = split
    return level, text, found_id if found_id is not None and len(found_id) <= MAX_ANCHOR_LENGTH else None


def heading_id(line: str) -> str | None:
    """The id of a heading line's attribute block (``## Install { #install }`` → ``install``), or
    ``None`` for a line that is no heading or whose heading has no ``#id``: the anchor a
    connector can link the section with (:func:`split_markdown` sends it as ``anchor``)."""
    found = _heading(line)
    return None if found is None else found[2]


def _clean(text: str) -> str:
    return _LEADING_BLANK_LINES.sub("", text).rstrip()


def split_markdown(text: str, skip_first_h1: bool = False) -> list[dict[str, str | None]]:
    """The sections of a markdown document, ready for an item record's ``sections``.

    Every heading from ``#`` to ``######`` outside a fenced code block starts a section. Its
    ``heading`` is the trail of the enclosing headings joined by `` › `` (a ``### Linux`` under
    ``## Setup`` becomes ``Setup › Linux``); text before the first heading is a section whose
    ``heading`` is ``None``. Each ``text`` keeps its lines and blank lines as written, without
    leading blank lines or trailing whitespace; sections with no text are left out.

    A heading with an id in its attribute block (``## Install {#install}``, ``{ #install .wide }``)
    gives its section an ``anchor`` key with the id, which passageway puts on the section's link
    (``https://…/page#install``); the key is absent for a heading without one (the section does
    not take a parent's id). An id longer than :data:`MAX_ANCHOR_LENGTH` is left out.

    With ``skip_first_h1`` the first level-1 heading is treated as the document's title: it is
    not a section heading and not part of any trail, and the text under it has ``heading`` None.
    """
    sections: list[dict[str, str | None]] = []
    trail: list[tuple[int, str]] = []
    heading: str | None = None
    anchor: str | None = None
    body: list[str] = []
    title_skipped = not skip_first_h1

    def close() -> None:
        cleaned = _clean("\n".join(body))
        if cleaned:
            section: dict[str, str | None] = {"heading": heading, "text": cleaned}
            if anchor is not None:
                section["anchor"] = anchor
            sections.append(section)

    for line, in_code in _lines(text):
        found = None if in_code else _heading(line)
        if found is None:
            body.append(line)
            continue
        close()
        body = []
        level, title, anchor = found
        if not title_skipped and level == 1 and title:
            title_skipped = True
            trail = []
            heading = anchor = None
            continue
        trail = [entry for entry in trail if entry[0] < level]
        trail.append((level, title))
        heading = TRAIL_SEPARATOR.join(name for _, name in trail if name) or None
    close()
    return sections


def first_h1(text: str) -> str | None:
    """The text of the first level-1 heading outside fenced code, or ``None`` if there is none."""
    for line, in_code in _lines(text):
        if in_code:
            continue
        found = _heading(line)
        if found is not None and found[0] == 1 and found[1]:
            return found[1]
    return None


def strip_code(text: str) -> str:
    """``text`` without its fenced code blocks and inline code spans.

    Use it to find the links a document really contains: a ``[link](x.md)`` shown as an example
    inside code is not a link. The result is for searching, not for display.
    """
    kept = "\n".join(line for line, in_code in _lines(text) if not in_code)
    return _INLINE_CODE.sub("", kept)

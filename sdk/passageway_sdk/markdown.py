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

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_INLINE_CODE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")
# One attribute: #id, .class or key=value (the value bare or quoted).
_ATTRIBUTE = r"""[#.][\w:.-]+|[\w-]+=(?:"[^"]*"|'[^']*'|[^\s}]+)"""
_ATTRIBUTE_TOKEN = re.compile(_ATTRIBUTE)
_ATTRIBUTES = re.compile(rf"[ \t]*\{{[ \t]*((?:{_ATTRIBUTE})(?:[ \t]+(?:{_ATTRIBUTE}))*)[ \t]*\}}[ \t]*$")


def _lines(text: str) -> Iterator[tuple[str, bool]]:
    """Each line with whether it belongs to a fenced code block (fence lines included)."""
    fence: str | None = None
    for line in text.splitlines():
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


def _heading(line: str) -> tuple[int, str, str | None] | None:
    """``(level, text, id)`` of a heading line, the attribute block left out of the text; None for
    a line that is no heading."""
    match = _HEADING.match(line)
    if match is None:
        return None
    text = _CLOSING_HASHES.sub("", match.group(2) or "").strip()
    attributes = _ATTRIBUTES.search(text)
    if attributes is None:
        return len(match.group(1)), text, None
    # Tokens, not words: a quoted value such as title="a #b" holds no id.
    ids = [token[1:] for token in _ATTRIBUTE_TOKEN.findall(attributes.group(1)) if token.startswith("#")]
    found = ids[0] if ids and len(ids[0]) <= MAX_ANCHOR_LENGTH else None
    return len(match.group(1)), text[: attributes.start()].strip(), found


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

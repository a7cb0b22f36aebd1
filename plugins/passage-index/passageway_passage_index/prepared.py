"""A passage's prepared search content: readable paragraphs and literal code and table lines.

Passage search shows these instead of parsing Markdown when it answers. The passage is read as
the blocks of :func:`passageway.kernel.text.chunking.blocks` (the blocks the splitter keeps whole):

* a paragraph becomes one entry of ``paragraphs``: its lines joined by one space, ``>`` quote
  marks and a ``####`` heading's marks removed, inline Markdown made plain (link text kept);
* a list gives one entry per item, its marker removed, unless it is a generated navigation list:
  a list in which every item is one link to a page of the same site (a relative address) and
  nothing else (a "related reading" list, a table of contents). Those are left out; a list of
  links to other sites (the libraries a project uses) is content and kept. A fenced code block
  inside a list item goes to ``literalLines`` like any other;
* a paragraph that is raw HTML (its first line starts with a tag) gives the text the HTML shows,
  read with lxml, not its markup;
* a code block gives its lines without the fences, a table its rows without the ``|---|``
  delimiter row, both as written (trailing spaces removed), in ``literalLines``. Blank lines are
  left out.

This content is not part of the embedding input, so preparing it never changes a digest.
"""

from __future__ import annotations

import re
from typing import Any

from passageway.kernel.text.chunking import blocks
from passageway.kernel.text.fences import FENCE_RUN, closes_fence
from passageway_passage_index.markdown import heading, plain

SEARCH_SCHEMA_VERSION = 1

_ITEM_START = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(?:\s+|$)")
_ONLY_A_LINK = re.compile(r"^\[[^\]]+\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)[.;,]?$")
_OTHER_SITE = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)")
_INDENTED_FENCE = re.compile(r"^(\s*)" + FENCE_RUN)  # a fence inside a list item is indented
_HTML_START = re.compile(r"^\s{0,3}</?[a-zA-Z][a-zA-Z0-9-]*(?:\s|/?>|$)")
_QUOTE = re.compile(r"^\s*(?:>\s?)+")
_TABLE_DELIMITER = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")


def search_content(text: str) -> dict[str, Any]:
    """``{"schemaVersion": 1, "paragraphs": [...], "literalLines": [...]}`` for a passage's text."""
    paragraphs: list[str] = []
    literal: list[str] = []
    for kind, block in blocks(text):
        lines = block.split("\n")
        if kind == "code":
            literal.extend(_code_lines(lines))
        elif kind == "table":
            literal.extend(line.rstrip() for line in lines if line.strip() and not _is_delimiter(line))
        elif kind == "list":
            lines, code = _code_in_items(lines)
            for items in _lists(lines):
                if not _is_navigation(items):
                    paragraphs.extend(filter(None, (plain(item) for item in items)))
            literal.extend(code)
        elif _HTML_START.match(lines[0]):
            paragraphs.extend(filter(None, (plain(text) for text in _html_text(block))))
        else:
            paragraphs.extend(_paragraphs(lines))
    return {"schemaVersion": SEARCH_SCHEMA_VERSION, "paragraphs": paragraphs, "literalLines": literal}


def _code_lines(lines: list[str]) -> list[str]:
    opening = lines[0].strip()
    marker = opening[: len(opening) - len(opening.lstrip(opening[0]))]
    body = lines[1:]
    closing = body[-1].strip() if body else ""
    if closing.startswith(marker) and not closing.strip(marker[0]):
        body = body[:-1]  # the closing fence (a fence left open at the end has none)
    return [line.rstrip() for line in body if line.strip()]


def _is_navigation(items: list[str]) -> bool:
    """Every item is one link and nothing else, each to a page of the same site."""
    for item in items:
        link = _ONLY_A_LINK.match(item)
        if link is None or _OTHER_SITE.match(link.group(1)):
            return False
    return True


def _code_in_items(lines: list[str]) -> tuple[list[str], list[str]]:
    """A list block's lines without the fenced code blocks inside its items, and those blocks'
    lines (fences left out, the fence's indentation removed)."""
    kept: list[str] = []
    code: list[str] = []
    index = 0
    while index < len(lines):
        opening = _INDENTED_FENCE.match(lines[index])
        if opening is None:
            kept.append(lines[index])
            index += 1
            continue
        indent, marker = len(opening.group(1)), opening.group(2)
        index += 1
        while index < len(lines):
            line = lines[index]
            index += 1
            if closes_fence(marker, line):
                break
            stripped = line.strip()
            if stripped:
                code.append(line[indent:].rstrip() if line[:indent].isspace() else stripped)
    return kept, code


def _html_text(block: str) -> list[str]:
    """The text a block of raw HTML shows, one entry per paragraph-like element."""
    from lxml import html

    try:
        root = html.fragment_fromstring(block, create_parent="div")
    except Exception:  # lxml raises several types for broken markup; it is then plain text
        return [block]
    return [" ".join(root.text_content().split())]


def _is_delimiter(line: str) -> bool:
    return bool(_TABLE_DELIMITER.match(line)) and "-" in line


def _lists(lines: list[str]) -> list[list[str]]:
    """The items of each list in a list block, marker removed. A new list starts where the marker
    changes (``-`` to ``*``, bullets to numbers), as in CommonMark; the splitter keeps such
    neighbouring lists in one block."""
    lists: list[list[list[str]]] = []
    last_marker = None
    for line in lines:
        if not line.strip():
            continue
        marker = _ITEM_START.match(line)
        if marker is None and lists:
            lists[-1][-1].append(line.strip())
            continue
        kind = _marker_kind(marker.group(0) if marker else "")
        if not lists or kind != last_marker:
            lists.append([])
        last_marker = kind
        lists[-1].append([line[marker.end() :] if marker else line])
    return [[" ".join(part.strip() for part in item).strip() for item in items] for items in lists]


def _marker_kind(marker: str) -> str:
    marker = marker.strip()
    return marker if marker in ("-", "*", "+") else f"number{marker[-1:]}"


def _paragraphs(lines: list[str]) -> list[str]:
    """One paragraph, except that a heading line inside it is an entry of its own."""
    found: list[str] = []
    current: list[str] = []
    for line in lines:
        # Without a ">" there is no quote mark, without a "#" no heading: the patterns are skipped.
        unquoted = _QUOTE.sub("", line) if ">" in line else line
        title = heading(unquoted) if "#" in unquoted else None
        if title is not None:
            found.append(" ".join(current))
            current = []
            found.append(title[1])
        else:
            current.append(unquoted.strip())
    found.append(" ".join(current))
    return [text for text in (plain(part) for part in found) if text]

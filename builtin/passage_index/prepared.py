"""A passage's prepared search content: readable paragraphs and literal code and table lines.

Passage search shows these instead of parsing Markdown when it answers. The passage is read as
the blocks of :func:`passageway.kernel.index.chunking.blocks` (the blocks the splitter keeps whole):

* a paragraph becomes one entry of ``paragraphs``: its lines joined by one space, ``>`` quote
  marks and a ``####`` heading's marks removed, inline Markdown made plain (link text kept);
* a list gives one entry per item, its marker removed, unless it is a generated navigation list:
  a list in which every item is one link and nothing else (a "related reading" list, a table of
  contents). Those are left out;
* a code block gives its lines without the fences, a table its rows without the ``|---|``
  delimiter row, both as written (trailing spaces removed), in ``literalLines``. Blank lines are
  left out.

This content is not part of the embedding input, so preparing it never changes a digest.
"""

from __future__ import annotations

import re
from typing import Any

from passageway.builtin.passage_index.markdown import heading, plain
from passageway.kernel.index.chunking import blocks

SEARCH_SCHEMA_VERSION = 1

_ITEM_START = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(?:\s+|$)")
_ONLY_A_LINK = re.compile(r"^\[[^\]]+\]\([^)\s]+(?:\s+\"[^\"]*\")?\)[.;,]?$")
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
            for items in _lists(lines):
                if not all(_ONLY_A_LINK.match(item) for item in items):
                    paragraphs.extend(filter(None, (plain(item) for item in items)))
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
        unquoted = _QUOTE.sub("", line)
        title = heading(unquoted)
        if title is not None:
            found.append(" ".join(current))
            current = []
            found.append(title[1])
        else:
            current.append(unquoted.strip())
    found.append(" ".join(current))
    return [text for text in (plain(part) for part in found) if text]

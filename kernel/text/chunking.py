"""Sections to passages: split what is too long, build the text to embed, and its digest.

A connector sends an item as sections (a heading and its Markdown text). Most sections become one
passage each. A section longer than the size cap is split between its blocks, never inside one:

* a block is a paragraph, a list (with its indented continuation and loose items), a table or a
  fenced code block; blank lines separate blocks, except inside a code fence;
* blocks are packed into passages in order, each passage as full as the cap allows;
* a table too long for one passage is split between rows, and every part repeats the table's
  header rows (the lines up to and including the ``|---|`` delimiter row), unless they are longer
  than half the cap: then only the first part has them;
* a code block, a list or a single paragraph longer than the cap is never cut: it becomes one
  passage of its own that exceeds the cap;
* a section with no text (only whitespace) gives no passage.

A passage keeps its section's heading and anchor. Its embedding input is the item's title, its path and the
heading joined by `` › ``, then ``: `` and the text; a missing path or heading is left out with
its separator (``Title: text`` when both are missing). The digest is the SHA-256 of that input
(UTF-8, lower-case hex), so a stored vector is reused exactly when the input is unchanged.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from passageway.kernel.records import Item, Passage
from passageway.kernel.text.fences import FENCE, closes_fence

DEFAULT_CAP = 1000
"""Characters per passage before a section is split; ``passageway eval --chunk-cap`` measures
others. 1,000 is the cap the published sweep picks by its rule (docs/measurements.md, "Passage
size", ``corpus/chunk-sweep.sh``)."""

SEPARATOR = " › "

_LIST_MARKER = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:\s|$)")
_TABLE_DELIMITER = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")


def embedding_input(title: str, path: Sequence[str], heading: str | None, text: str) -> str:
    """``title › path… › heading: text``, leaving out empty parts and their separators."""
    parts = [part for part in (title, *path, heading or "") if part and part.strip()]
    prefix = SEPARATOR.join(part.strip() for part in parts)
    return f"{prefix}: {text}" if prefix else text


def digest_of(text: str) -> str:
    # "surrogatepass": a lone surrogate (the runner repairs them) must never make a digest raise.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def passages_for(item: Item, cap: int = DEFAULT_CAP) -> list[Passage]:
    """The passages of one item, in order, numbered from 0."""
    passages: list[Passage] = []
    for section in item.sections:
        for text in split_section(section.text, cap):
            full = embedding_input(item.title, item.path, section.heading, text)
            passages.append(
                Passage(
                    item_id=item.id,
                    ordinal=len(passages),
                    heading=section.heading,
                    text=text,
                    embedding_input=full,
                    digest=digest_of(full),
                    anchor=section.anchor,
                )
            )
    return passages


def split_section(text: str, cap: int = DEFAULT_CAP) -> list[str]:
    """The pieces of one section's text: one piece when it fits, none when it is empty."""
    text = text.strip()
    if not text:
        return []
    if len(text) <= cap:
        return [text]
    pieces: list[str] = []
    current = ""

    def flush() -> None:
        nonlocal current
        if current:
            pieces.append(current)
            current = ""

    for kind, block in _blocks(text):
        joined = f"{current}\n\n{block}" if current else block
        if len(joined) <= cap:
            current = joined
            continue
        if kind == "table" and len(block) > cap:
            parts = _split_table(block, cap)
            flush()
            pieces.extend(parts[:-1])
            current = parts[-1]
            continue
        flush()
        if len(block) > cap:
            pieces.append(block)  # a paragraph, list or code block is never cut
        else:
            current = block
    flush()
    return pieces


def blocks(text: str) -> list[tuple[str, str]]:
    """The blocks the splitter keeps whole, as ``(kind, text)`` pairs in order.

    ``kind`` is ``code``, ``table``, ``list`` or ``paragraph``. The passage index reads them to
    prepare a passage's search content (paragraphs and literal lines) by the same rules.
    """
    return _blocks(text)


def _blocks(text: str) -> list[tuple[str, str]]:
    """``(kind, text)`` blocks: ``code``, ``table``, ``list`` or ``paragraph``."""
    lines = text.split("\n")
    blocks: list[tuple[str, list[str]]] = []
    current: list[str] = []

    def close() -> None:
        nonlocal current
        if current:
            blocks.append((_kind(current), current))
            current = []

    index = 0
    while index < len(lines):
        line = lines[index]
        fence = FENCE.match(line)
        if fence:
            close()
            marker = fence.group(1)
            code = [line]
            index += 1
            while index < len(lines):
                code.append(lines[index])
                closing = lines[index]
                index += 1
                if closes_fence(marker, closing):
                    break
            blocks.append(("code", code))
            continue
        if not line.strip():
            close()
        else:
            current.append(line)
        index += 1
    close()

    # A loose list (blank lines between its items) and text indented under a list item stay with
    # the list, so that a list is never split.
    merged: list[tuple[str, list[str]]] = []
    for kind, block in blocks:
        if merged and merged[-1][0] == "list" and (
            kind == "list" or block[0].startswith(("  ", "\t"))
        ):
            merged[-1] = ("list", [*merged[-1][1], "", *block])
        else:
            merged.append((kind, block))
    return [(kind, "\n".join(block)) for kind, block in merged]


def _kind(lines: list[str]) -> str:
    if len(lines) >= 2 and "|" in lines[0] and _TABLE_DELIMITER.match(lines[1]) and "-" in lines[1]:
        return "table"
    if _LIST_MARKER.match(lines[0]):
        return "list"
    return "paragraph"


def _split_table(table: str, cap: int) -> list[str]:
    """Parts of a table of at most ``cap`` characters each, every one starting with the header."""
    lines = table.split("\n")
    header, rows = lines[:2], lines[2:]
    head = "\n".join(header)
    # A header longer than half the cap starts only the first part: repeated, it would fill every
    # part, and a header row of N cells over N rows made the parts quadratic in size (issue 38).
    repeated = f"{head}\n" if len(head) <= cap // 2 else ""
    parts: list[str] = []
    current = head
    for row in rows:
        candidate = f"{current}\n{row}"
        if len(candidate) > cap and current != head:
            parts.append(current)
            current = f"{repeated}{row}"  # one row wider than the cap still goes whole
        else:
            current = candidate
    parts.append(current)
    return parts

"""Helpers for connectors whose source is markdown, or converts to it.

``#`` headings (ATX) and underlined (setext) headings split a document; a heading's attribute block
at its end (``## Title {#id}``, ``## Title { #id .class }``, ``## Title {: #id }``, as MkDocs,
VitePress, Pandoc and Python-Markdown write them) is not part of its text: its id is the section's
``anchor`` (:func:`heading_id` reads it from one line). A fenced code block (``` or ~~~) hides
everything inside it, so a ``# comment`` in a shell snippet never becomes a heading; indented code
blocks are not recognised. What documentation sites add is read as they show it (:func:`_read`):
reference-link definitions and rules are left out, an admonition shows its title, and a heading's
inline markup is read away (:mod:`.inline`: ``## [Chocolatey](https://…)`` is ``Chocolatey``).

Every rule is linear in its input (issue 38, items 2 and 5): a line is read by string tests or by
patterns that cannot backtrack over it, and an attribute block is at most
:data:`MAX_ATTRIBUTES_LENGTH` characters.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterator

from .inline import label, shown_text, without_code_spans

TRAIL_SEPARATOR = " › "
"""Joins the headings of a section's trail: ``Setup › Linux``."""

# The fence rule of kernel/text/fences.py (FENCE, closes_fence), copied: the SDK depends on nothing,
# not even passageway, so it cannot import it. Change both together.
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")
_ATTRIBUTE = r"""[#.][\w:.-]+|[\w-]+=(?:"[^"]*"|'[^']*'|[^\s}]+)"""
_ATTRIBUTE_TOKEN = re.compile(_ATTRIBUTE)
# A reference-link definition, ``[name]: https://…`` (not a footnote, ``[^1]: …``); the label bounded.
_REFERENCE = re.compile(r" {0,3}\[(?!\^)[^\]\n]{1,999}\]:[ \t]*\S")
_ADMONITION_MARKS = ("???+", "!!!", "???", "===")
_CLASS_NAME = re.compile(r"[\w-]+")
# A PyMdown block, ``/// admonition | Title`` (``///`` alone closes one); possessive, so linear.
_SLASH_BLOCK = re.compile(r"/{3,}+[ \t]*+([\w-]*+)[ \t]*+(?:\|[ \t]*+(.{0,500}))?")
_INLINE_ATTRIBUTES = re.compile(r"\{:[^{}\n]{0,500}\}")
_NOT_PARAGRAPH = re.compile(r"(?: {4}|\t| {0,3}(?:[>|<]|(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)))")
MAX_ATTRIBUTES_LENGTH = 1024
"""The longest attribute block read as one; a longer ``{…}`` at a heading's end stays in its text."""


class _Fences:
    """Follows fenced code blocks line by line: :meth:`inside` says whether a line belongs to one
    (fence lines included)."""

    def __init__(self) -> None:
        self.fence: str | None = None

    def inside(self, line: str) -> bool:
        if self.fence is None and "`" not in line and "~" not in line:
            return False  # the common case, without a pattern
        match = _FENCE.match(line)
        if self.fence is None:
            # A backtick fence's info string may not contain a backtick (CommonMark).
            if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
                self.fence = match.group(1)
                return True
            return False
        if (match is not None and match.group(1)[0] == self.fence[0]
                and len(match.group(1)) >= len(self.fence) and not match.group(2).strip()):
            self.fence = None
        return True


def _lines(text: str) -> Iterator[tuple[str, bool]]:
    """Each line with whether it belongs to a fenced code block (fence lines included)."""
    fences = _Fences()
    for line in text.splitlines():
        yield line, fences.inside(line)


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


def _heading(line: str, labels: Container[str] = ()) -> tuple[int, str, str | None] | None:
    """``(level, text, id)`` of a heading line, the attribute block left out of the text and the
    text as a page shows it (:func:`~passageway_sdk.inline.shown_text`, with the document's
    reference ``labels``); None for a line that is no heading."""
    found = _atx(line) if "#" in line else None
    if found is None:
        return None
    level, text = found
    split, found_id = _attributes(text), None
    if split is not None:
        text, found_id = split
        if text.endswith("#"):  # ### Title ### {: #id }
            text = (_atx("# " + text) or (1, text))[1]
    long_id = found_id is not None and len(found_id) > MAX_ANCHOR_LENGTH
    return level, shown_text(text, labels), None if long_id else found_id


def heading_id(line: str) -> str | None:
    """The id of a heading line's attribute block (``## Install { #install }`` → ``install``), or
    ``None`` for a line that is no heading or whose heading has no ``#id``: the anchor a
    connector can link the section with (:func:`split_markdown` sends it as ``anchor``)."""
    found = _heading(line)
    return None if found is None else found[2]


def _clean(text: str) -> str:
    return _LEADING_BLANK_LINES.sub("", text).rstrip()


def _rule(line: str) -> str | None:
    """``=`` or ``-`` for a line that can underline a setext heading, ``*`` for any other
    thematic break (``***``, ``- - -``, ``___``), None for other lines. String tests only."""
    stripped = line.strip()
    if not stripped or len(line) - len(line.lstrip(" ")) > 3:
        return None
    if stripped.strip("=") == "":
        return "="
    if stripped.strip("-") == "":
        return "-"
    marks = stripped.replace(" ", "").replace("\t", "")
    return "*" if len(marks) >= 3 and marks.strip(marks[0]) == "" and marks[0] in "*_-" else None


def _admonition_title(line: str) -> str | None:
    """What an admonition or tab header line shows (``!!! tip "Title"``, ``??? note``, ``===
    "Tab"``): its quoted title, else its capitalised type (Python-Markdown's rule); ``""`` for an
    empty title; None for other lines. String tests only."""
    mark = next((mark for mark in _ADMONITION_MARKS if line.startswith(mark)), None)
    if mark is None or not line[len(mark) : len(mark) + 1].isspace():
        return None
    rest = line[len(mark) :].strip()
    quote = rest.find('"')
    title = None
    if quote >= 0:
        if quote == len(rest) - 1 or not rest.endswith('"'):
            return None
        rest, title = rest[:quote], rest[quote + 1 : -1].strip()
    names = rest.split()
    if mark == "===":
        return title if title is not None and not names else None
    if not names or not all(_CLASS_NAME.fullmatch(name) for name in names):
        return None
    return title if title is not None else names[0].capitalize()


def _read(text: str) -> Iterator[tuple[str, tuple[int, str, str | None] | None]]:
    """Each line of section text, ``(line, None)``, and each heading, ``("", (level, text, id))``.

    Besides ATX headings and fenced code (:class:`_Fences`) it reads what documentation sites
    write: a paragraph line underlined with ``===`` or ``---`` is a heading (setext); other
    thematic breaks, reference-link definitions and block attribute lists (``{: .class }`` on a
    line of their own) show nothing and are left out; ``{: …}`` inside a line is taken out; an
    admonition or tab header (``!!! tip "Title"``, ``??? note``, ``=== "Tab"``, ``/// note |
    Title``) becomes its title, and the indented body under it loses that indentation. Front
    matter at the very top (``---`` … ``---`` with no blank line) is kept as it is.
    """
    fences = _Fences()
    indents = 0  # open admonitions whose body is indented
    pending: str | None = None  # a paragraph line that an underline may make a heading
    lines = text.splitlines()
    front = _front_matter_end(lines)
    labels = _labels(lines) if "]:" in text else frozenset()
    for number, raw in enumerate(lines):
        line, indents = _dedent(raw, indents) if indents else (raw, 0)
        if fences.inside(line) or number <= front or not line or line.isspace():
            yield from _flushed(pending)  # (nothing is pending inside front matter)
            pending = None
            yield line, None
            continue
        rule = _rule(line)
        if pending is not None and rule in ("=", "-"):
            yield "", _setext(pending, 1 if rule == "=" else 2, labels)
            pending = None
            continue
        yield from _flushed(pending)
        pending = None
        found = _heading(line, labels) if rule is None and "#" in line else None
        if rule is not None or found is not None:
            yield "", found  # a thematic break shows as a blank line, which keeps the blocks apart
            continue
        header = _block_header(line)
        if header is not None:
            title, indented = header
            indents += indented
            if title:
                yield title, None
                yield "", None
            continue
        if "]:" in line and _REFERENCE.match(line):
            continue
        if line.strip() and not _NOT_PARAGRAPH.match(line):
            pending = line
        elif (shown := _shown(line)) is not None:
            yield shown, None
    yield from _flushed(pending)


def _labels(lines: list[str]) -> frozenset[str]:
    """The labels of the reference-link definitions outside fenced code (``[name]: https://…``),
    which make a shortcut ``[name]`` in a heading a link."""
    fences = _Fences()
    return frozenset(label(line[line.index("[") + 1 : line.index("]")]) for line in lines
                     if not fences.inside(line) and "]:" in line and _REFERENCE.match(line))


def _front_matter_end(lines: list[str]) -> int:
    """The line that closes front matter at the top (``---`` … ``---``, no blank line), or -1."""
    if lines and lines[0].strip() == "---":
        for number in range(1, len(lines)):
            closing = lines[number].strip()
            if closing in ("---", "...") or not closing:
                return number if closing else -1
    return -1


def _dedent(line: str, indents: int) -> tuple[str, int]:
    """``line`` without the indentation of the open admonitions that hold it, and how many do (a
    blank line keeps them all open)."""
    level = 0
    while level < indents and (line.startswith("    ") or line.startswith("\t")):
        line = line[4:] if line.startswith("    ") else line[1:]
        level += 1
    return (line, level) if line.strip() else ("", indents)


def _block_header(line: str) -> tuple[str, bool] | None:
    """The title an admonition or tab header line shows and True (its body is indented), or the
    title of a ``///`` block line and False; None for other lines."""
    if "!!!" in line or "???" in line or "===" in line:
        title = _admonition_title(line)
        if title is not None:
            return title, True
    if "///" in line:
        block = _SLASH_BLOCK.fullmatch(line.strip())
        if block is not None:
            return (block.group(2) or "").strip() or block.group(1).capitalize(), False
    return None


def _flushed(pending: str | None) -> Iterator[tuple[str, None]]:
    if pending is not None and (shown := _shown(pending)) is not None:
        yield shown, None


def _shown(line: str) -> str | None:
    """``line`` without its ``{: …}`` attribute lists; None when nothing else was on it."""
    if "{:" not in line:
        return line
    line = _INLINE_ATTRIBUTES.sub("", line)
    return line if line.strip() else None


def _setext(text: str, level: int, labels: Container[str]) -> tuple[int, str, str | None]:
    """The heading a setext underline makes of ``text``, its attribute block read as an ATX one's."""
    found = _heading("#" * level + " " + text.strip(), labels)
    assert found is not None
    return found


def split_markdown(text: str, skip_first_h1: bool = False) -> list[dict[str, str | None]]:
    """The sections of a markdown document, ready for an item record's ``sections``.

    Every heading from ``#`` to ``######`` outside a fenced code block starts a section, and so
    does a paragraph line underlined with ``===`` (level 1) or ``---`` (level 2). Its
    ``heading`` is the trail of the enclosing headings joined by `` › `` (a ``### Linux`` under
    ``## Setup`` becomes ``Setup › Linux``), each heading as a page shows it: link and image text
    without their targets, no emphasis marks or escapes, code spans kept with their backticks
    (:func:`~passageway_sdk.inline.shown_text`); text before the first heading is a section whose
    ``heading`` is ``None``. Each ``text`` keeps its lines and blank lines as written, without
    leading blank lines or trailing whitespace; sections with no text are left out. Markup a
    documentation site does not show is left out of it (reference-link definitions, rules, ``{:
    …}`` attribute lists), and an admonition header is replaced by its title (:func:`_read`).

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

    for line, found in _read(text):
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
    """The text of the first level-1 heading outside fenced code, as a page shows it, or ``None``
    if there is none."""
    for _, found in _read(text):
        if found is not None and found[0] == 1 and found[1]:
            return found[1]
    return None


def strip_code(text: str) -> str:
    """``text`` without its fenced code blocks and inline code spans.

    Use it to find the links a document really contains: a ``[link](x.md)`` shown as an example
    inside code is not a link. The result is for searching, not for display.
    """
    kept = "\n".join(line for line, in_code in _lines(text) if not in_code)
    return without_code_spans(kept) if "`" in kept else kept

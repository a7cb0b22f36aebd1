"""The little Markdown the passage index must read: fences, ATX headings, inline marks, slugs.

Only what the chunker and the prepared search content need. A heading is an ATX heading
(``## Title``, closing ``#`` marks dropped) outside a fenced code block; fences open and close by
the rule :mod:`passageway.kernel.text.chunking` uses for its blocks, so a ``# comment`` inside a fence
is code for both. :func:`normalised` first removes HTML comments and rewrites underlined (setext)
headings as ATX ones, so that a ``## line`` in a comment starts nothing and ``Title`` over ``---``
is a heading; :func:`heading_attributes` takes a ``{#id}`` attribute block off a heading's text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

from passageway.kernel.text.fences import FENCE, FENCE_RUN, closes_fence

# Every span is bounded in length, so that an opening mark with no closing one costs a bounded scan:
# a paragraph of 80,000 unmatched ``*`` or ``[`` stays linear (issue 32, item 11).
_IMAGE = re.compile(r"!\[([^\[\]]{0,500})\]\([^()\[\]\n]{0,2000}\)")
_LINK = re.compile(r"\[([^\[\]]{0,500})\]\([^()\[\]\n]{0,2000}\)")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]{1,2000})>")
_CODE_SPAN = re.compile(r"(`+)(.{1,2000}?)\1")
_MARK_RUN = re.compile(r"\*+|_+")
_SPAN_MARK = re.compile(r"\x00(\d+)\x00")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|>~])")
_NOT_SLUG = re.compile(r"[\W_]+", re.UNICODE)
_ATTRIBUTE_WORD = re.compile(r"[.\w-]+")
MAX_ATTRIBUTES_LENGTH = 1024
"""The longest ``{…}`` block at a heading's end read as its attributes."""
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_NOT_PARAGRAPH = re.compile(r"^(?: {4}| {0,3}(?:[-*+>|<]|\d{1,9}[.)]|#{1,6}(?:[ \t]|$)|" + FENCE_RUN + "))")
_COMMENT_OPEN = "<!--"
_COMMENT_CLOSE = "-->"


def fenced_lines(text: str) -> Iterator[tuple[str, bool]]:
    """Each line of ``text`` with whether it belongs to a fenced code block (fences included)."""
    marker: str | None = None
    for line in text.split("\n"):
        if marker is None:
            opening = FENCE.match(line)
            if opening:
                marker = opening.group(1)
                yield line, True
            else:
                yield line, False
            continue
        yield line, True
        if closes_fence(marker, line):
            marker = None


def normalised(text: str) -> str:
    """``text`` without HTML comments outside code, its setext headings written as ATX ones."""
    lines: list[str] = []
    in_comment = False
    previous_blank = True  # whether the line before the last kept one was blank
    for line, in_code in fenced_lines(text):
        if in_code:
            lines.append(line)
            previous_blank = False
            continue
        line, in_comment = _without_comments(line, in_comment)
        underline = _SETEXT.match(line)
        if (underline and lines and lines[-1].strip() and previous_blank
                and not _NOT_PARAGRAPH.match(lines[-1]) and heading(lines[-1]) is None):
            lines[-1] = f"{'#' if underline.group(1)[0] == '=' else '##'} {lines[-1].strip()}"
            previous_blank = False
            continue
        previous_blank = not lines or not lines[-1].strip()
        lines.append(line)
    return "\n".join(lines)


def _without_comments(line: str, in_comment: bool) -> tuple[str, bool]:
    """The parts of ``line`` outside HTML comments, and whether a comment is still open after it."""
    kept: list[str] = []
    position = 0
    while position < len(line):
        if in_comment:
            end = line.find(_COMMENT_CLOSE, position)
            if end < 0:
                return "".join(kept).rstrip(), True
            position, in_comment = end + len(_COMMENT_CLOSE), False
        else:
            start = line.find(_COMMENT_OPEN, position)
            if start < 0:
                kept.append(line[position:])
                break
            kept.append(line[position:start])
            position, in_comment = start + len(_COMMENT_OPEN), True
    if not kept:
        return "", in_comment
    joined = "".join(kept)
    return (joined.rstrip() if joined.strip() else ""), in_comment


def heading_attributes(text: str) -> tuple[str, str | None]:
    """A heading's text without a trailing ``{#id}`` / ``{ #id .class }`` / ``{: #id}`` block, and the id.

    The block is what follows the last ``{`` (at most :data:`MAX_ATTRIBUTES_LENGTH` characters):
    plain string scanning, so a block that never closes or a long run of spaces costs one pass
    (issue 38, item 5)."""
    stripped = text.rstrip()
    if not stripped.endswith("}"):
        return text, None
    opening = stripped.rfind("{", max(0, len(stripped) - MAX_ATTRIBUTES_LENGTH))
    inner = stripped[opening + 1 : -1] if opening >= 0 else "}"
    if "}" in inner:
        return text, None
    words = inner.removeprefix(":").split()
    for number, word in enumerate(words):
        if word.startswith("#") and len(word) > 1:
            if all(_ATTRIBUTE_WORD.fullmatch(before) for before in words[:number]):
                return stripped[:opening].rstrip(), word[1:]
            break
    return text, None


def heading(line: str) -> tuple[int, str] | None:
    """``(level, text)`` of an ATX heading line, closing hashes removed; None for other lines.

    String scanning, no regular expression: one pass whatever the line holds (issue 38, item 5)."""
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


def plain(text: str) -> str:
    """Inline Markdown as a reader sees it: link and image text kept, code and emphasis marks
    dropped, escapes undone, runs of white space made one space."""
    # Each step runs only when its mark is in the text: a pattern that cannot match leaves the
    # text as it is, and most text has no marks at all.
    if "[" in text:
        text = _IMAGE.sub(r"\1", text)
        text = _LINK.sub(r"\1", text)
    if "<" in text:
        text = _AUTOLINK.sub(r"\1", text)
    spans: list[str] = []

    def keep_span(match: re.Match[str]) -> str:
        spans.append(match.group(2).strip())
        return f"\x00{len(spans) - 1}\x00"

    if "`" in text:
        if "\x00" not in text:
            # split gives [outside, ticks, code, outside, ...]; with no emphasis or escape mark
            # outside the code, the spans' placeholders would only be put back: skip them.
            pieces = _CODE_SPAN.split(text)
            if not any("*" in piece or "_" in piece or "\\" in piece for piece in pieces[::3]):
                pieces[2::3] = [code.strip() for code in pieces[2::3]]
                del pieces[1::3]
                return " ".join("".join(pieces).split())
        text = _CODE_SPAN.sub(keep_span, text)  # code keeps its * and _
    if "*" in text or "_" in text:
        text = _without_emphasis(text)
    if "\\" in text:
        text = _ESCAPE.sub(r"\1", text)
    if "\x00" in text:
        text = _SPAN_MARK.sub(lambda match: spans[int(match.group(1))], text)
    return " ".join(text.split())


def _without_emphasis(text: str) -> str:
    """``text`` without the ``*`` / ``_`` runs that open and close emphasis, in one pass.

    A run can open when a non-space follows it and close when a non-space precedes it (for ``_``,
    not inside a word, so ``snake_case`` keeps its marks); each closing run pairs with the last
    open run of the same character and length class. Unpaired runs stay, as in ``*args``.
    """
    runs = list(_MARK_RUN.finditer(text))
    if not runs:
        return text
    stacks: dict[tuple[str, bool], list[int]] = {}
    dropped: set[int] = set()
    for index, run in enumerate(runs):
        mark = run.group()[0]
        before = text[run.start() - 1] if run.start() else " "
        after = text[run.end()] if run.end() < len(text) else " "
        can_close = not before.isspace() and (mark == "*" or not after.isalnum())
        can_open = not after.isspace() and (mark == "*" or not before.isalnum())
        stack = stacks.setdefault((mark, len(run.group()) >= 2), [])
        if can_close and stack:
            dropped.update((stack.pop(), index))
        elif can_open:
            stack.append(index)
    if not dropped:
        return text
    parts: list[str] = []
    position = 0
    for index in sorted(dropped):
        parts.append(text[position : runs[index].start()])
        position = runs[index].end()
    parts.append(text[position:])
    return "".join(parts)


def slug(text: str) -> str:
    """Lower-case letters and digits of ``text`` (any script), every other run made one ``-``."""
    folded = unicodedata.normalize("NFKC", plain(text)).lower()
    return _NOT_SLUG.sub("-", folded).strip("-")

"""Markup that shows nothing to a reader of an excerpt, found in one block of a passage.

:func:`passageway.kernel.query.excerpts.tidy` takes these spans out of what an excerpt shows
(never out of the index) and keeps a code block's line breaks: link targets, HTML tags, include
directives, attribute lists, admonition fences, block-quote signs, terminal colours, long rules,
what a terminal session prints.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from passageway.kernel.text.windows import flat

_INLINE_CODE = re.compile(r"(`+).+?\1")
_IMAGE = re.compile(r"!\[[^\]]*\]\((?:[^()\s]|\([^()]*\))*(?: \"[^\"]*\")?\)")
_LINK = re.compile(r"\[([^\[\]]+)\]\((?:[^()\s]|\([^()]*\))*(?: \"[^\"]*\")?\)")
_REFERENCE = re.compile(r"\[([^\[\]]+)\]\[[^\[\]]*\]")
_TAG = re.compile(r"</?[A-Za-z][\w-]*(?: [^<>]*)?/?>")
_INCLUDE = re.compile(r"\{\*.*?\*\}|\{%.*?%\}|--8<-- ?\"[^\"]*\"|<<< ?@/\S*")
_ATTRIBUTES = re.compile(r"\{(?::[^{}]*|[#.][\w-][^{}]*|download)\}")
_QUOTE = re.compile(r"^>(?: ?>)*(?: |$)")
_ADMONITION = re.compile(r"(?:^| )(/{3,}|:{3,}|!{3}|\?{3}\+?)(?= |$)")
_CODE_TAG = re.compile(r"</?(?:font|b|i|span)(?: [^<>]*)?>")
_RULE = re.compile(r"([-─━═_=*])\1{3,}")


def noise(kind: str, text: str) -> list[tuple[int, int]]:
    """Spans of one flat block that show nothing to a reader: the markup of links and reference
    links (``[text][name]``; their text stays), images, HTML tags, include directives
    (``{* … *}``, ``--8<--``, ``<<< @/…``), attribute lists (``{: #id }``, ``{#id .class}``,
    ``{download}``) and admonition fences outside inline code; in code blocks, colour tags of
    pasted terminal output; everywhere, a rule of four or more dashes or box lines kept at three
    (a padded table delimiter row holds hundreds)."""
    found = [(match.start() + 3, match.end()) for match in _RULE.finditer(text)]
    if kind == "code":
        return found + [match.span() for match in _CODE_TAG.finditer(text)]
    code = [match.span() for match in _INLINE_CODE.finditer(text)]

    def outside(start: int, end: int) -> bool:
        return not any(start < code_end and code_start < end for code_start, code_end in code)

    for match in _IMAGE.finditer(text):
        if outside(*match.span()):
            found.append(match.span())
    for match in (*_LINK.finditer(text), *_REFERENCE.finditer(text)):
        target = (match.end(1), match.end())
        if outside(match.start(), match.start() + 1) and outside(*target):
            found += [(match.start(), match.start() + 1), target]
    for pattern in (_TAG, _INCLUDE, _ATTRIBUTES):
        found += [match.span() for match in pattern.finditer(text) if outside(*match.span())]
    found += [match.span(1) for match in _ADMONITION.finditer(text) if outside(*match.span(1))]
    return found


def quote_marks(kind: str, block: str) -> list[tuple[int, int]]:
    """Spans of the flat ``block`` that mark a quotation: the ``>`` (nested: ``> >``) each line of
    a block quote starts with. Flattened into one line they read as stray signs between words."""
    if kind == "code":
        return []
    found: list[tuple[int, int]] = []
    offset = 0
    for line in filter(None, map(flat, block.split("\n"))):
        mark = _QUOTE.match(line)
        if mark:
            found.append((offset, offset + mark.end()))
        offset += len(line) + 1
    return found


_SESSION = re.compile(r"^(`{3,}|~{3,}) *(?:console|shell-session|pycon)\b")
_KEPT_LINE = re.compile(r"^(?:[$#>%] |// |>>> |[`~]{3})")


def output_lines(block: str) -> list[tuple[int, int]]:
    """Spans of the flat code ``block`` that a terminal session printed: in a fence marked
    ``console``, ``shell-session`` or ``pycon``, every line but a command, a ``//`` comment and the
    fences. A help screen can fill a hit's whole share; the answer is rarely in it."""
    if not _SESSION.match(block):
        return []
    found: list[tuple[int, int]] = []
    offset = 0
    for line in filter(None, map(flat, block.split("\n"))):
        if not _KEPT_LINE.match(line):
            found.append((offset, offset + len(line)))
        offset += len(line) + 1
    return found


def line_breaks(block: str, offset: int, length: int) -> list[int]:
    """Where, in a flat text of ``length`` characters, the code ``block`` at ``offset`` has its line
    breaks: around the block and between its lines (a space each in the flat text)."""
    found = [offset - 1] if offset else []
    for line in block.split("\n"):
        line_flat = flat(line)
        if line_flat:
            offset += len(line_flat) + 1
            found.append(offset - 1)
    return [place for place in found if place < length]


def with_breaks(shown: str, breaks: Sequence[int]) -> str:
    """``shown`` with the spaces at ``breaks`` made line breaks again: code is shown line by line,
    as written, with the same length, so every place in the excerpt stays where it was."""
    if not breaks:
        return shown
    characters = list(shown)
    for place in breaks:
        if 0 <= place < len(characters) and characters[place] == " ":
            characters[place] = "\n"
    return "".join(characters)

"""Markup that shows nothing to a reader of an excerpt, found in one block of a passage.

:func:`passageway.kernel.query.excerpts.tidy` takes these spans out of what an excerpt shows
(never out of the index), and keeps a code block's line breaks and indentation: link targets,
HTML tags, include directives, attribute lists, admonition fences, block-quote signs, terminal
colours, long rules, what a terminal session prints.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence

from passageway.kernel.text.fences import FENCE_RUN, closes_fence
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
_NESTED_FENCE = re.compile(r"^\s*" + FENCE_RUN)
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


MAX_INDENT = 32
"""The most characters of a code line's indentation an excerpt shows (a hostile line of spaces
costs no more than this)."""


def line_breaks(block: str, offset: int, length: int) -> list[tuple[int, str]]:
    """Where, in a flat text of ``length`` characters, the code ``block`` at ``offset`` has its line
    breaks (around the block and between its lines: a space each in the flat text), each with the
    indentation of the line after it, measured from the block's fence (tabs as four spaces, at most
    :data:`MAX_INDENT`, levels of four or eight as two spaces: :func:`_levels`); the break after
    the block has none."""
    lines = [line for line in block.split("\n") if flat(line)]
    indents = _levels([_indent(line) for line in lines])
    found = [(offset - 1, indents[0] if indents else "")] if offset else []
    for number, line in enumerate(lines):
        offset += len(flat(line)) + 1
        after = indents[number + 1] if number + 1 < len(lines) else ""
        found.append((offset - 1, after))
    return [(place, indent) for place, indent in found if place < length]


def nested_fence_breaks(block: str, offset: int, length: int) -> list[tuple[int, str]]:
    """:func:`line_breaks` of every fenced block inside ``block``, a list block at ``offset`` of
    the flat text: a fence indented under a list item belongs to the item (the chunker keeps the
    list whole), yet its code is shown line by line as well."""
    lines = block.split("\n")
    starts: list[int] = []  # where each line's words start in the flat text
    place = offset
    for line in lines:
        starts.append(place)
        if flat(line):
            place += len(flat(line)) + 1
    found: list[tuple[int, str]] = []
    number = 0
    while number < len(lines):
        opening = _NESTED_FENCE.match(lines[number])
        if not opening:
            number += 1
            continue
        end = number + 1
        while end < len(lines) and not closes_fence(opening.group(1), lines[end]):
            end += 1
        found += line_breaks("\n".join(lines[number : end + 1]), starts[number], length)
        number = end + 1
    return found


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())].replace("\t", "    ")[:MAX_INDENT]


def _levels(indents: list[str]) -> list[str]:
    """The block's indentations from its fence, two spaces a level when every one is a multiple
    of a step of four or eight (Python's levels, tabs): the nesting shows at half the room or
    less; YAML's two, and a continuation aligned under a bracket, stay as written."""
    base = min(map(len, indents), default=0)
    widths = [len(indent) - base for indent in indents]
    step = min((width for width in widths if width), default=0)
    if step in (4, 8) and all(width % step == 0 for width in widths):
        widths = [2 * width // step for width in widths]
    return [" " * width for width in widths]


def with_breaks(shown: str, breaks: Sequence[tuple[int, str]]) -> tuple[str, Callable[[int], int]]:
    """``shown`` with the spaces at ``breaks`` made line breaks again, each followed by the next
    line's indentation: code is shown line by line, as written. With it the map from a place in
    ``shown`` to the same place in the result (each indentation shifts what follows it)."""
    applied = sorted((place, indent) for place, indent in breaks
                     if 0 <= place < len(shown) and shown[place] == " ")
    if not applied:
        return shown, lambda place: place
    pieces, last, shifts, total = [], 0, [], 0
    for place, indent in applied:
        pieces += [shown[last:place], "\n" + indent]
        last = place + 1
        total += len(indent)
        shifts.append(total)
    pieces.append(shown[last:])
    places = [place for place, _ in applied]

    def shifted(place: int) -> int:
        before = bisect.bisect_left(places, place)  # an indentation shifts the places after its break
        return place + (shifts[before - 1] if before else 0)

    return "".join(pieces), shifted

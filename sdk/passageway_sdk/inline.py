"""Inline markdown as a rendered page shows it: the text of a heading as a reader sees it.

A heading is written with inline markup (``## [Chocolatey](https://chocolatey.org)``, ``### Add
one *CLI option*``, ``#### on_&lt;event_name&gt;()``), and a site shows ``Chocolatey``, ``Add one
CLI option``, ``on_<event_name>()``. :func:`shown_text` reads the markup away the way CommonMark
does, near enough for one line:

* a link shows its text: inline ``[text](url "title")``, full and collapsed reference links
  ``[text][ref]`` / ``[text][]``, and a shortcut reference ``[text]`` when the document defines
  ``[text]: …`` (without a definition a site shows the brackets, and so does this);
* an image shows its alt text, an autolink ``<https://…>`` its address;
* emphasis marks (``*``, ``**``, ``_``, ``__``) that open and close a span go; ``*args``,
  ``2 * 3`` and ``snake_case_name`` keep theirs;
* a backslash escape shows its character, an entity (``&lt;``, ``&#42;``) the one it names, and
  an inline HTML tag nothing;
* a code span keeps its backticks and its content as written, as an excerpt shows code
  (``passageway.kernel.query.markup`` leaves inline code alone): ``Using `mod_version```.

Every pattern is bounded or cannot backtrack, so a line of any length is read in linear time
(issue 38, item 5).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Container, Iterator

_BACKTICKS = re.compile(r"`+")
_PUNCTUATION = r"[!-/:-@\[-`{-~]"  # the ASCII punctuation CommonMark lets a backslash escape
_ENTITY = r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});"
_HELD = re.compile(r"\\(" + _PUNCTUATION + r")|" + _ENTITY)
_PLACEHOLDER = re.compile("\x00([0-9]+)\x01")
_LINK_TEXT = r"\[([^\[\]\n]{0,999}+)\]"
_DESTINATION = (r"\(\s*+(?:<[^<>\n]{0,2000}+>|(?:[^()\s]++|\([^()\s]{0,500}+\)){0,2000}+)"
                r"""(?:\s++(?:"[^"\n]{0,500}+"|'[^'\n]{0,500}+'|\([^()\n]{0,500}+\)))?+\s*+\)""")
_IMAGE = re.compile("!" + _LINK_TEXT + r"(?:" + _DESTINATION + r"|\[[^\[\]\n]{0,999}+\])")
_LINK = re.compile(_LINK_TEXT + r"(?:" + _DESTINATION + r"|\[[^\[\]\n]{0,999}+\])")
_SHORTCUT = re.compile(_LINK_TEXT)
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\s]{1,2000}+|[^<>\s@]{1,200}+@[^<>\s@]{1,200}+)>")
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]{0,50}+(?:\s[^<>\n]{0,1000}+)?/?>")
_EMPHASIS = re.compile(r"\*+|_+")
_MARKS = frozenset("`\\[]*_<&")


def label(text: str) -> str:
    """A link label as CommonMark compares them: case folded, runs of white space one space."""
    return " ".join(text.split()).casefold()


def shown_text(text: str, labels: Container[str] = ()) -> str:
    """``text``, one line of inline markdown, as a rendered page shows it (the module docstring
    gives the rules). ``labels`` are the reference-link labels the document defines
    (:func:`label` of each), which make a shortcut ``[text]`` a link. Text without markup comes
    back unchanged; otherwise runs of white space outside code spans become one space."""
    if _MARKS.isdisjoint(text):
        return text
    held: list[str] = []

    def hold(piece: str) -> str:
        held.append(piece)
        return f"\x00{len(held) - 1}\x01"

    def hold_escape_or_entity(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return hold(match.group(1))
        import html  # only for a line that holds an entity

        return hold(html.unescape(match.group()))

    text = text.replace("\x00", "").replace("\x01", "")
    pieces: list[str] = []
    position = 0
    for start, end in code_spans(text, escapes=True):
        pieces += [_HELD.sub(hold_escape_or_entity, text[position:start]), hold(text[start:end])]
        position = end
    pieces.append(_HELD.sub(hold_escape_or_entity, text[position:]))
    text = "".join(pieces)
    if "[" in text:
        text = _IMAGE.sub(r"\1", text)
        text = _LINK.sub(r"\1", text)
        if labels:
            text = _SHORTCUT.sub(lambda match: match.group(1) if label(match.group(1)) in labels
                                 else match.group(), text)
    if "<" in text:
        text = _TAG.sub("", _AUTOLINK.sub(r"\1", text))
    if "*" in text or "_" in text:
        text = _without_emphasis(text)
    text = " ".join(text.split())
    return _PLACEHOLDER.sub(lambda match: held[int(match.group(1))], text) if held else text


def _without_emphasis(text: str) -> str:
    """``text`` without the ``*`` and ``_`` marks that open and close emphasis.

    A run of marks may open when a non-space follows it and close when a non-space comes before
    it; a ``_`` run also needs no letter or digit on its outer side, so a word with underscores
    keeps them. A closing run takes its marks from the last open run of the same character, as
    many as both have (``**a*`` keeps one ``*``). Each run is pushed and popped at most once per
    pairing, so the cost is linear in the runs."""
    runs = list(_EMPHASIS.finditer(text))
    left = [len(run.group()) for run in runs]  # the marks of each run still shown
    open_runs: dict[str, list[int]] = {"*": [], "_": []}
    for number, run in enumerate(runs):
        mark = run.group()[0]
        before = text[run.start() - 1] if run.start() else " "
        after = text[run.end()] if run.end() < len(text) else " "
        can_open = not after.isspace() and (mark == "*" or not before.isalnum())
        can_close = not before.isspace() and (mark == "*" or not after.isalnum())
        stack = open_runs[mark]
        while can_close and stack and left[number]:
            opener = stack[-1]
            taken = min(left[opener], left[number])
            left[opener] -= taken
            left[number] -= taken
            if not left[opener]:
                stack.pop()
        if can_open and left[number]:
            stack.append(number)
    if all(kept == len(run.group()) for kept, run in zip(left, runs, strict=True)):
        return text
    pieces: list[str] = []
    position = 0
    for kept, run in zip(left, runs, strict=True):
        pieces += [text[position : run.start()], run.group()[:kept]]
        position = run.end()
    pieces.append(text[position:])
    return "".join(pieces)


def code_spans(text: str, escapes: bool = False) -> Iterator[tuple[int, int]]:
    """The ``(start, end)`` of each code span of ``text``, backticks included: a run of backticks
    up to the next run of the same length. With ``escapes``, a run after a backslash escape
    (``\\```) opens none, as CommonMark reads it outside code.

    The runs are found once and each opening run looks up the next run of its length by bisection,
    so the cost stays near linear whatever the runs are (a pattern that searched forward from
    every backtick took seconds for 20 KB of runs of every length)."""
    runs = [(match.start(), match.end()) for match in _BACKTICKS.finditer(text)]
    by_length: dict[int, list[int]] = {}
    for number, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(number)
    number = 0
    while number < len(runs):
        start, end = runs[number]
        same = by_length[end - start]
        closing = bisect.bisect_right(same, number)
        if closing == len(same) or (escapes and _escaped(text, start)):
            number += 1  # no run of this length follows, or an escape opens none: text
            continue
        yield start, runs[same[closing]][1]
        number = same[closing] + 1


def _escaped(text: str, place: int) -> bool:
    """Whether an odd number of backslashes comes right before ``place``."""
    before = place
    while before and text[before - 1] == "\\":
        before -= 1
    return (place - before) % 2 == 1


def without_code_spans(text: str) -> str:
    """``text`` without its code spans (:func:`code_spans`)."""
    kept: list[str] = []
    position = 0
    for start, end in code_spans(text):
        kept.append(text[position:start])
        position = end
    kept.append(text[position:])
    return "".join(kept)

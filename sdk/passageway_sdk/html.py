"""HTML to markdown text, and long text cut into parts, for connectors whose source is HTML.

:class:`MarkdownWriter` turns HTML (an editor's output, Confluence's storage format) into markdown
text that :func:`split_markdown` splits into sections and passageway's chunker understands: the
headings it is told about become ``#`` headings, deeper ones bold lines; lists keep their markers
and nesting (up to :data:`MAX_LIST_INDENT` levels), tables become ``|`` rows with a header
delimiter, ``<pre>`` becomes a fenced block, and images, scripts and styles are dropped. A
paragraph that starts with ``#`` is escaped, so it never becomes a heading. Subclass it to handle
a source's own tags (Confluence's macros) and call the base methods for the rest.
:func:`cut_text` cuts a section that is too long between paragraphs, then sentences, then words.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

SECTION_CHARACTERS = 1400
"""About 350 tokens at four characters a token: :func:`cut_text`'s default size of a part."""

_VOID = frozenset(
    {"br", "hr", "img", "input", "col", "area", "base", "embed", "link", "meta", "source", "wbr"}
)
_DROPPED = frozenset({"script", "style", "img", "svg", "figcaption", "object", "iframe", "template"})
_HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_BLOCKS = frozenset({"p", "div", "blockquote", "figure", "section", "article", "dl", "dt", "dd"})
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")


DEFAULT_HEADINGS = {"h1": 1, "h2": 2, "h3": 3}
MAX_LIST_INDENT = 8
"""Lists nested deeper are indented as this level: two spaces a level would make N nested
lists N² characters (a 144 KB page became 64 MB)."""


class MarkdownWriter(HTMLParser):
    """Collects the markdown text of HTML fed to it; :meth:`markdown` returns it.

    ``headings`` maps the tags that become markdown headings to their level (``{"h2": 2, "h3": 3}``
    for an editor whose first heading is ``<h2>``); every other ``h1`` to ``h6`` becomes a bold
    line. ``hrefs`` collects the ``href`` of every link, in order, for a subclass to resolve.
    """

    def __init__(self, headings: dict[str, int] | None = None) -> None:
        super().__init__(convert_charrefs=True)
        self.headings = dict(DEFAULT_HEADINGS if headings is None else headings)
        self.out: list[str] = []
        self.hrefs: list[str] = []
        self._dropped = 0
        self._lists: list[list[int | None]] = []  # per open list: [next number or None]
        self._pre = 0
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._header_row = False
        self._rows_written = 0

    def write(self, text: str) -> None:
        """Add ``text`` where the HTML has got to (inside a table cell, to that cell)."""
        if self._cell is not None:
            self._cell.append(text)
        else:
            self.out.append(text)

    def new_block(self, blank: bool = True) -> None:
        """End the current line; with ``blank``, leave a blank line, so what follows is a new block."""
        if self._cell is not None:
            self._cell.append(" ")
            return
        tail = "".join(self.out[-2:])
        wanted = "\n\n" if blank else "\n"
        if not tail.endswith(wanted):
            self.out.append("\n" if tail.endswith("\n") else wanted)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _DROPPED:
            if tag not in _VOID:
                self._dropped += 1
            return
        if self._dropped:
            return
        found = dict(attrs)
        if tag in self.headings:
            self.new_block()
            self.write(_HEADING_MARK + "#" * self.headings[tag] + " ")
        elif tag in _HEADING_TAGS:
            self.new_block()
            self.write("**")
        elif tag in _BLOCKS:
            self.new_block()
        elif tag == "br":
            self.write("\n")
        elif tag in ("ul", "ol"):
            self.new_block(blank=not self._lists)
            self._lists.append([1 if tag == "ol" else None])
        elif tag == "li":
            self._start_list_item()
        elif tag == "input" and found.get("type") == "checkbox":
            self.write("[x] " if "checked" in found else "[ ] ")
        elif tag == "pre":
            self.new_block()
            self.write("```\n")
            self._pre += 1
        elif tag in ("table", "tr", "td", "th"):
            self._start_table_part(tag)
        elif tag == "a" and found.get("href"):
            self.hrefs.append(found["href"] or "")

    def _start_list_item(self) -> None:
        self.new_block(blank=False)
        depth = min(max(len(self._lists) - 1, 0), MAX_LIST_INDENT)
        marker: str = "-"
        if self._lists and self._lists[-1][0] is not None:
            number = self._lists[-1][0]
            marker = f"{number}."
            self._lists[-1][0] = number + 1
        self.write("  " * depth + marker + " ")

    def _start_table_part(self, tag: str) -> None:
        if tag == "table":
            self.new_block()
            self._rows_written = 0
        elif tag == "tr":
            self._row, self._header_row = [], False
        elif self._row is not None:  # a cell outside a row is read as text
            self._cell = []
            self._header_row = self._header_row or tag == "th"

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROPPED:
            self._dropped = max(self._dropped - 1, 0)
            return
        if self._dropped:
            return
        if tag in self.headings or tag in _BLOCKS:
            self.new_block()
        elif tag in _HEADING_TAGS:
            self.write("**")
            self.new_block()
        elif tag in ("ul", "ol") and self._lists:
            self._lists.pop()
            self.new_block(blank=not self._lists)
        elif tag == "pre" and self._pre:
            self._pre -= 1
            self.write("\n```")
            self.new_block()
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()).replace("|", "\\|"))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            row, self._row = self._row, None
            if row:
                self.out.append("\n| " + " | ".join(row) + " |")
                if self._rows_written == 0 and self._header_row:
                    self.out.append("\n|" + "---|" * len(row))
                self._rows_written += 1
        elif tag == "table":
            self.new_block()

    def markdown(self) -> str:
        """Everything fed so far as markdown text, tidied: no runs of blank lines, no stray spaces."""
        return _tidy("".join(self.out))

    def handle_data(self, data: str) -> None:
        if self._dropped:
            return
        if self._pre:
            self.write(data)
            return
        text = re.sub(r"\s+", " ", data.replace(_HEADING_MARK, ""))
        if text == " " and self._cell is None and (not self.out or self.out[-1].endswith("\n")):
            return  # the line break between two tags at the start of a line
        self.write(text)


_HEADING_MARK = "\x00"  # marks a heading the writer made, unlike a "#" in the text


def _tidy(markdown: str) -> str:
    lines = []
    fenced = False
    for line in markdown.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        if not fenced:
            line = line.strip() if not re.match(r"^\s*(?:[-*]|\d+\.) ", line) else line.rstrip()
            line = re.sub(r"(?<=\S) {2,}", " ", line)
            if line.startswith("#"):
                line = "\\" + line  # a paragraph that starts with # is not a heading
            line = line.replace(_HEADING_MARK, "")
        lines.append(line)
    text = "\n".join(lines)
    text = re.sub(r"\*\*\s*\*\*", "", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def html_to_markdown(html: str, headings: dict[str, int] | None = None) -> str:
    """``html`` as markdown text; ``headings`` as for :class:`MarkdownWriter`."""
    writer = MarkdownWriter(headings)
    writer.feed(html)
    writer.close()
    return writer.markdown()


def _units(text: str, limit: int) -> list[tuple[str, str]]:
    """Paragraphs, or the sentences (then words) of one too long, each with the joiner before it."""
    units: list[tuple[str, str]] = []
    for block in text.split("\n\n"):
        if len(block) <= limit:
            units.append((block, "\n\n"))
            continue
        code = block.startswith("```")
        joiner = "\n" if code else " "
        for index, sentence in enumerate(block.split("\n") if code else _SENTENCE_END.split(block)):
            first = "\n\n" if index == 0 else joiner
            start = 0
            while len(sentence) - start > limit:  # one sentence longer than a part: cut between words
                window = sentence[start : start + limit]
                head = window.rpartition(" ")[0] or window
                units.append((head, first))
                start += len(head)
                while start < len(sentence) and sentence[start].isspace():
                    start += 1
                first = " "
            units.append((sentence[start:], first))
    return units


def cut_text(text: str, limit: int = SECTION_CHARACTERS) -> list[str]:
    """``text`` in parts of at most about ``limit`` characters, cut between paragraphs first."""
    if len(text) <= limit:
        return [text] if text.strip() else []
    parts: list[str] = []
    for unit, joiner in _units(text, limit):
        if parts and len(parts[-1]) + len(joiner) + len(unit) <= limit:
            parts[-1] += joiner + unit
        elif unit.strip():
            parts.append(unit)
    return [part.strip() for part in parts if part.strip()]

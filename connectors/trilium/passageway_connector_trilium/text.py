"""A note's content as sections: Trilium's HTML (CKEditor 5) turned into readable markdown text.

``<h2>`` and ``<h3>`` start sections with their heading trail (``Setup › Linux``); deeper headings
stay in the text as bold lines. Lists keep their markers and nesting, tables become ``|`` rows,
code blocks become fenced blocks, and images, scripts and styles are dropped. A code note is
split at blank lines. A section longer than about 350 tokens is cut between paragraphs (or
sentences, when one paragraph is that long), each part keeping the section's heading.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from passageway_sdk import split_markdown

SECTION_CHARACTERS = 1400
"""About 350 tokens at four characters a token: the most a section holds before it is cut."""

_VOID = frozenset({"br", "hr", "img", "input", "col", "area", "base", "embed", "link", "meta", "source", "wbr"})
_DROPPED = frozenset({"script", "style", "img", "svg", "figcaption", "object", "iframe", "template"})
_BLOCKS = frozenset({"p", "div", "blockquote", "figure", "section", "article", "dl", "dt", "dd"})
_NOTE_LINK = re.compile(r"#root/(?:[A-Za-z0-9_]+/)*([A-Za-z0-9_]{4,32})(?:[?/].*)?$")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")


class _Markdown(HTMLParser):
    """Collects the markdown text of a note's HTML and the note ids its links point at."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.links: list[str] = []
        self._dropped = 0
        self._lists: list[list[int | None]] = []  # per open list: [next number or None]
        self._pre = 0
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._header_row = False
        self._rows_written = 0

    def _write(self, text: str) -> None:
        if self._cell is not None:
            self._cell.append(text)
        else:
            self.out.append(text)

    def _break(self, blank: bool = True) -> None:
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
        if tag in ("h1", "h2", "h3"):
            self._break()
            self._write("## " if tag in ("h1", "h2") else "### ")
        elif tag in ("h4", "h5", "h6"):
            self._break()
            self._write("**")
        elif tag in _BLOCKS:
            self._break()
        elif tag == "br":
            self._write("\n")
        elif tag in ("ul", "ol"):
            self._break(blank=not self._lists)
            self._lists.append([1 if tag == "ol" else None])
        elif tag == "li":
            self._break(blank=False)
            depth = max(len(self._lists) - 1, 0)
            marker: str = "-"
            if self._lists and self._lists[-1][0] is not None:
                number = self._lists[-1][0]
                marker = f"{number}."
                self._lists[-1][0] = number + 1
            self._write("  " * depth + marker + " ")
        elif tag == "input" and found.get("type") == "checkbox":
            self._write("[x] " if "checked" in found else "[ ] ")
        elif tag == "pre":
            self._break()
            self._write("```\n")
            self._pre += 1
        elif tag == "table":
            self._break()
            self._rows_written = 0
        elif tag == "tr":
            self._row, self._header_row = [], False
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
            self._header_row = self._header_row or tag == "th"
        elif tag == "a":
            match = _NOTE_LINK.search(found.get("href") or "")
            if match:
                self.links.append(match.group(1))

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROPPED:
            self._dropped = max(self._dropped - 1, 0)
            return
        if self._dropped:
            return
        if tag in ("h1", "h2", "h3") or tag in _BLOCKS:
            self._break()
        elif tag in ("h4", "h5", "h6"):
            self._write("**")
            self._break()
        elif tag in ("ul", "ol") and self._lists:
            self._lists.pop()
            self._break(blank=not self._lists)
        elif tag == "pre" and self._pre:
            self._pre -= 1
            self._write("\n```")
            self._break()
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
            self._break()

    def handle_data(self, data: str) -> None:
        if self._dropped:
            return
        if self._pre:
            self._write(data)
            return
        self._write(re.sub(r"\s+", " ", data))


def _tidy(markdown: str) -> str:
    lines = []
    fenced = False
    for line in markdown.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        if not fenced:
            line = line.strip() if not re.match(r"^\s*(?:[-*]|\d+\.) ", line) else line.rstrip()
            if line.startswith("#") and not re.match(r"^#{2,3} \S", line):
                line = "\\" + line  # a paragraph that starts with # is not a heading
        lines.append(line)
    text = "\n".join(lines)
    text = re.sub(r"\*\*\s*\*\*", "", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def html_to_markdown(html: str) -> tuple[str, list[str]]:
    """The note's text as markdown, and the ids of the notes its links point at, in order."""
    parser = _Markdown()
    parser.feed(html)
    parser.close()
    return _tidy("".join(parser.out)), list(dict.fromkeys(parser.links))


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
            while len(sentence) > limit:  # one sentence longer than a part: cut between words
                head = sentence[:limit].rpartition(" ")[0] or sentence[:limit]
                units.append((head, first))
                sentence, first = sentence[len(head):].lstrip(), " "
            units.append((sentence, first))
    return units


def cut(text: str, limit: int = SECTION_CHARACTERS) -> list[str]:
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


def text_sections(html: str) -> tuple[list[dict[str, str | None]], list[str]]:
    """The sections of a text note and the note ids it links to."""
    markdown, links = html_to_markdown(html)
    sections: list[dict[str, str | None]] = []
    for section in split_markdown(markdown):
        text = section["text"] or ""
        sections.extend({"heading": section["heading"], "text": part} for part in cut(text))
    return sections, links


def code_sections(code: str) -> list[dict[str, str | None]]:
    """The sections of a code note: its blocks between blank lines, packed up to the size of a section."""
    blocks = [block.strip("\n") for block in re.split(r"\n[ \t]*\n", code.replace("\r\n", "\n"))]
    sections: list[dict[str, str | None]] = []
    current = ""
    for block in (block for block in blocks if block.strip()):
        if current and len(current) + 2 + len(block) > SECTION_CHARACTERS:
            sections.append({"heading": None, "text": current})
            current = block
        else:
            current = f"{current}\n\n{block}" if current else block
    if current:
        sections.append({"heading": None, "text": current})
    return sections

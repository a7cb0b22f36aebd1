"""Inline HTML and the leaf blocks of a page (code, tables) as the Markdown the chunker reads.

Kept apart from :mod:`passageway_passage_index.html_page`, which walks a page's blocks and decides
what is content: these functions turn one element into its Markdown text and nothing more. Marks
are escaped only where Markdown would read them, and a code span or fence is made longer than any
run of backticks inside it, so what a page shows comes back as it was written.
"""

from __future__ import annotations

import re

from lxml import etree

from passageway_passage_index.markdown import plain

MAX_DEPTH = 200
"""Deeper elements are read as plain text: no real page nests so far, and it bounds the stack."""
BACKTICKS = re.compile(r"`+")
FENCE_RUNS = re.compile(r"`{3,}")
CODE_TAGS = frozenset({"code", "kbd", "samp"})
MARKS = re.compile(r"[\\`*_\[\]]")
RISKY_MARKS = re.compile(r"[\\`*\[\]]|(?<!\w)_|_(?!\w)")
"""Marks that Markdown could read: ``_`` inside a word (``snake_case``) never is one."""
LINE_START_MARK = re.compile(r"^( {0,3})([#>=+|-]|\d+[.)]|<!--|[*_]{3,}\s*$)")


def text_of(element: etree._Element) -> str:
    """All the text inside ``element`` (its tail left out)."""
    return etree.tostring(element, method="text", encoding="unicode", with_tail=False)


def inline_markdown(element: etree._Element, depth: int) -> str:
    tag = element.tag
    if depth > MAX_DEPTH:
        return text_of(element)
    if tag in CODE_TAGS:
        return code_span(text_of(element))
    if tag == "br":
        return " "
    if tag == "img":
        return element.get("alt") or ""
    text = element.text
    parts = [escaped(text)] if text else []
    for child in element[:]:
        if isinstance(child.tag, str):  # the tail of a comment is left out here
            parts.append(inline_markdown(child, depth + 1))
            tail = child.tail
            if tail:
                parts.append(escaped(tail))
    inner = "".join(parts)
    if tag == "a":
        href = element.get("href")
        if href and inner.strip():
            return f"[{inner.strip()}]({href.replace(' ', '%20').replace(')', '%29')})"
    return inner


def inline_line(element: etree._Element, depth: int) -> str:
    """The inline Markdown of ``element`` with nested blocks read as text, on one line."""
    text = element.text
    parts = [escaped(text)] if text else []
    for child in element[:]:
        if isinstance(child.tag, str):
            parts.append(inline_markdown(child, depth + 1))
        tail = child.tail
        if tail:
            parts.append(escaped(tail))
    return " ".join("".join(parts).split())


def escaped(text: str | None) -> str:
    """A text node as Markdown: marks escaped only where Markdown would read them as marks."""
    if not text:
        return ""
    if not MARKS.search(text):  # one character class: faster than the lookarounds below
        return text
    if not RISKY_MARKS.search(text) or plain(text) == " ".join(text.split()):
        return text
    return MARKS.sub(r"\\\g<0>", text)


def code_span(text: str) -> str:
    text = " ".join(text.split())
    if not text:
        return ""
    ticks = "`" * (max(map(len, BACKTICKS.findall(text)), default=0) + 1) if "`" in text else "`"
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{padding}{text}{padding}{ticks}"


def escape_line_start(text: str) -> str:
    """A backslash before a mark that would make a paragraph's first characters Markdown syntax."""
    found = LINE_START_MARK.match(text)
    if found is None:
        return text
    return f"{text[: found.start(2)]}\\{text[found.start(2):]}"


def code_language(element: etree._Element) -> str:
    node: etree._Element | None = element
    for _ in range(4):  # the element and three ancestors
        if node is None:
            break
        for name in (node.get("class") or "").split():
            if "-" not in name:  # every prefix ends with one
                continue
            for prefix in ("language-", "highlight-", "lang-"):
                if name.startswith(prefix) and name[len(prefix):] not in ("", "default", "text"):
                    return name[len(prefix):]
        node = node.getparent()
    code = element.find("code")
    return code_language(code) if code is not None and code is not element else ""


def fenced_block(element: etree._Element) -> str:
    for line_break in element.iter("br"):  # Docusaurus ends each highlighted line with <br>
        line_break.tail = "\n" + (line_break.tail or "")
    body = text_of(element).strip("\n")
    fence = "`" * max(3, max(map(len, FENCE_RUNS.findall(body)), default=0) + 1) if "```" in body else "```"
    return f"{fence}{code_language(element)}\n{body}\n{fence}"


def pipe_table(element: etree._Element, depth: int) -> str:
    rows: list[list[str]] = []
    for row in element.iter("tr"):
        cells = [cell for cell in row if isinstance(cell.tag, str) and cell.tag in ("td", "th")]
        rows.append([inline_line(cell, depth).replace("|", "\\|") for cell in cells])
    rows = [row for row in rows if row]
    if not rows:
        return ""
    # Only the header row is padded to the widest row: a row with fewer cells reads as one with
    # empty cells at its end, and padding each row made a row of N cells over N rows of one cell
    # quadratic in size (issue 38: N = 5,000 gave a 432 MB chunks.json).
    width = max(len(row) for row in rows)
    header = rows[0] + [""] * (width - len(rows[0]))
    lines = [f"| {' | '.join(row)} |" for row in (header, *rows[1:])]
    lines.insert(1, "|" + "---|" * width)
    return "\n".join(lines)

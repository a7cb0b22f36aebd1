"""A note's content as sections: Trilium's HTML (CKEditor 5) as readable markdown text.

Trilium's editor starts its headings at ``<h2>``, so ``<h2>`` and ``<h3>`` start sections with
their heading trail (``Setup › Linux``) and deeper headings stay bold lines in the text; the SDK's
:class:`~passageway_sdk.MarkdownWriter` keeps lists, tables and code readable. A code note is split
at blank lines. A section longer than about 350 tokens is cut between paragraphs (or sentences),
each part keeping its heading.
"""

from __future__ import annotations

import re

from passageway_sdk import MarkdownWriter, cut_text, split_markdown

SECTION_CHARACTERS = 1400
"""About 350 tokens at four characters a token: the most a section holds before it is cut."""

TRILIUM_HEADINGS = {"h1": 2, "h2": 2, "h3": 3}
_NOTE_LINK = re.compile(r"#root/(?:[A-Za-z0-9_]+/)*([A-Za-z0-9_]{4,32})(?:[?/].*)?$")


def text_sections(html: str) -> tuple[list[dict[str, str | None]], list[str]]:
    """The sections of a text note, and the ids of the notes its links point at, in order."""
    writer = MarkdownWriter(TRILIUM_HEADINGS)
    writer.feed(html)
    writer.close()
    links = [match.group(1) for href in writer.hrefs if (match := _NOTE_LINK.search(href))]
    sections: list[dict[str, str | None]] = []
    for section in split_markdown(writer.markdown()):
        parts = cut_text(section["text"] or "", SECTION_CHARACTERS)
        sections.extend({"heading": section["heading"], "text": part} for part in parts)
    return sections, list(dict.fromkeys(links))


def code_sections(code: str) -> list[dict[str, str | None]]:
    """The sections of a code note: its blocks between blank lines, packed up to a section's size."""
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

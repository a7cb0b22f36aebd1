"""One page's Markdown twin to passages: sections, the short-section merge, IDs, links, digests.

The rules, in the order they apply (``docs/reference/passage-index.md`` states them for users):

1. A leading ``# Title`` line is the page title, which every passage already carries: it is
   dropped. Text before the first ``##`` heading is the intro section; from then on every ``##``
   and ``###`` heading outside a code fence starts a section. ``####`` and deeper headings, and
   a ``###`` before the first ``##``, stay in their section's text.
2. A ``##`` section whose text is under :data:`SHORT_SECTION` characters and that is followed by
   a ``###`` subsection joins that subsection: its text goes first, the heading path is the
   subsection's. A short section with no subsection stays on its own.
3. Each section is split by :func:`passageway.kernel.index.chunking.split_section` with a cap of
   :data:`PASSAGE_CAP` characters: blocks whole, passages filled in order, a large table split
   between rows with its header rows repeated, a large code block kept whole. An empty section
   gives no passage.
4. The ID is the page ID, ``#`` and the slug of the heading path (``intro`` without one); a
   heading path whose slug is taken on the page gets ``-2``, ``-3``…, and the later parts of a
   split section get ``~2``, ``~3``… after their section's ID.
5. The link is the page URL plus ``#`` and the heading ID that ``search-index.json`` gives for the
   heading where the passage's text begins; without one (no search index, a heading it does
   not list) the link is the page URL.
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Any

import attrs

from passageway.builtin.passage_index.markdown import fenced_lines, heading, plain, slug
from passageway.builtin.passage_index.prepared import search_content
from passageway.builtin.passage_index.site import Heading, Page
from passageway.kernel.index.chunking import digest_of, split_section

PASSAGE_CAP = 2000
"""Characters per passage before a section is split (the seed's fixed limit; recall keeps its own
:data:`passageway.kernel.index.chunking.DEFAULT_CAP`)."""
SHORT_SECTION = 200
"""A ``##`` section with fewer characters of text than this joins its first subsection."""
PATH_SEPARATOR = " > "
INTRO_ID = "intro"


@attrs.define
class _Section:
    level: int  # 0 for the intro, else 2 or 3
    path: tuple[str, ...]
    text: str
    anchor: str | None  # the heading ID where the text begins, if the search index has one


def embedding_input(title: str, heading_path: tuple[str, ...] | list[str], text: str) -> str:
    """``Title > Heading > Subheading``, a blank line, then the text: what is embedded and hashed."""
    return f"{PATH_SEPARATOR.join([title, *heading_path])}\n\n{text}"


def page_passages(page: Page, headings: list[Heading] | None) -> list[dict[str, Any]]:
    """The passage records of one page, in page order, as ``chunks.json`` holds them."""
    sections = _merge_short_sections(_sections(page.markdown, headings or []))
    records: list[dict[str, Any]] = []
    taken: set[str] = set()
    for section in sections:
        pieces = split_section(section.text, PASSAGE_CAP)
        if not pieces:
            continue
        base = _unique(slug(" ".join(section.path)) if section.path else INTRO_ID, taken)
        for number, text in enumerate(pieces, 1):
            records.append(_record(page, section, text, base if number == 1 else f"{base}~{number}"))
    return records


def _record(page: Page, section: _Section, text: str, fragment: str) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": f"{page.id}#{fragment}",
        "docId": page.id,
        "title": page.title,
        "type": page.type,
        "variant": page.variant,
        "headingPath": list(section.path),
        "url": f"{page.url}#{section.anchor}" if section.anchor else page.url,
        "markdownUrl": page.markdown_url,
    }
    if page.reader_filters:
        record["readerFilters"] = {name: list(values) for name, values in page.reader_filters.items()}
    record["text"] = text
    record["digest"] = digest_of(embedding_input(page.title, section.path, text))
    record["search"] = search_content(text)
    return record


def _unique(base: str, taken: set[str]) -> str:
    base = base or "section"
    candidate, number = base, 1
    while candidate in taken:
        number += 1
        candidate = f"{base}-{number}"
    taken.add(candidate)
    return candidate


def _sections(markdown: str, known: list[Heading]) -> list[_Section]:
    """The intro and the ``##`` / ``###`` sections of a page, each with its heading ID if known."""
    ids: dict[tuple[int, str], deque[str]] = defaultdict(deque)
    for entry in known:
        ids[(entry.level, plain(entry.text))].append(entry.id)
    sections = [_Section(0, (), "", None)]
    lines: list[str] = []
    parent: str | None = None  # the current ## heading
    title_checked = False
    for line, in_code in fenced_lines(markdown):
        found = None if in_code else heading(line)
        if not title_checked and (in_code or line.strip()):
            title_checked = True
            if found is not None and found[0] == 1:
                continue  # the page title, which every passage carries already
        if found is None or found[0] not in (2, 3) or (found[0] == 3 and parent is None):
            lines.append(line)
            continue
        sections[-1].text = "\n".join(lines)
        lines = []
        level, text = found
        name = plain(text)
        if level == 2:
            parent = name
        path = (name,) if level == 2 else (parent or "", name)
        queue = ids.get((level, name))
        sections.append(_Section(level, path, "", queue.popleft() if queue else None))
    sections[-1].text = "\n".join(lines)
    return sections


def _merge_short_sections(sections: list[_Section]) -> list[_Section]:
    """Rule 2: a short ``##`` section goes into the ``###`` subsection right below it."""
    kept: list[_Section] = []
    for index, section in enumerate(sections):
        following = sections[index + 1] if index + 1 < len(sections) else None
        short = len(section.text.strip()) < SHORT_SECTION
        if section.level == 2 and short and following is not None and following.level == 3:
            if section.text.strip():
                following.text = f"{section.text.strip()}\n\n{following.text.strip()}"
                following.anchor = section.anchor
            continue
        kept.append(section)
    return kept

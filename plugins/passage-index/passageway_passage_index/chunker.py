"""One page's Markdown twin to passages: sections, the short-section merge, IDs, links, digests.

The rules, in the order they apply (``docs/reference/passage-index.md`` states them for users):

1. HTML comments are removed and underlined (setext) headings read as ``#`` / ``##`` headings
   (:func:`~passageway_passage_index.markdown.normalised`). A leading ``# Title`` line is the page
   title, which every passage already carries: it is dropped. Text before the first ``##`` or
   ``###`` heading is the intro section; every ``##`` and ``###`` heading outside a code fence
   starts a section (a ``###`` before any ``##`` has a heading path of its own name only).
   ``####`` and deeper headings stay in their section's text. A heading's ``{#id}`` attribute
   block is not part of its name. A page read from HTML arrives already in sections.
2. A ``##`` section whose text is under :data:`SHORT_SECTION` characters and that is followed by
   a ``###`` subsection joins that subsection: its text goes first, the heading path is the
   subsection's. A short section with no subsection stays on its own.
3. Each section is split by :func:`passageway.kernel.text.chunking.split_section` with a cap of
   :data:`PASSAGE_CAP` characters: blocks whole, passages filled in order, a large table split
   between rows with its header rows repeated, a large code block kept whole. An empty section
   gives no passage.
4. The ID is the page ID, ``#`` and the slug of the heading path (``intro`` without one); a
   heading path whose slug is taken on the page gets ``-2``, ``-3``…, and the later parts of a
   split section get ``~2``, ``~3``… after their section's ID.
5. The link is the page URL plus ``#`` and the heading ID where the passage's text begins: for a
   page read from HTML the id its heading carries; for a twin the one ``search-index.json`` gives
   for the heading (matched by its text as the search index writes it, or made plain), else the
   heading's own ``{#id}``. Without one (no search index, a heading it does not list) the link is
   the page URL.
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Any

import attrs

from passageway.kernel.text.chunking import digest_of, split_section
from passageway_passage_index.markdown import (
    fenced_lines,
    heading,
    heading_attributes,
    normalised,
    plain,
    slug,
)
from passageway_passage_index.prepared import search_content
from passageway_passage_index.site import Heading, Page, SourceSection

PASSAGE_CAP = 2000
"""Characters per passage before a section is split (the seed's fixed limit; recall keeps its own
:data:`passageway.kernel.text.chunking.DEFAULT_CAP`)."""
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
    if page.sections is not None:
        found = _given_sections(page.sections)
    else:
        found = _sections(page.markdown, headings)
    sections = _merge_short_sections(found)
    records: list[dict[str, Any]] = []
    taken: dict[str, int] = {}
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
    }
    if page.markdown_url is not None:
        record["markdownUrl"] = page.markdown_url
    if page.reader_filters:
        record["readerFilters"] = {name: list(values) for name, values in page.reader_filters.items()}
    record["text"] = text
    record["digest"] = digest_of(embedding_input(page.title, section.path, text))
    record["search"] = search_content(text)
    return record


def _unique(base: str, taken: dict[str, int]) -> str:
    """``base``, or ``base-N`` with the next N not taken; ``taken`` remembers the last N of each
    base, so a page with many equal headings costs linear time."""
    base = base or "section"
    if base not in taken:
        taken[base] = 1
        return base
    number = taken[base]
    while True:
        number += 1
        candidate = f"{base}-{number}"
        if candidate not in taken:
            taken[base] = number
            taken[candidate] = 1
            return candidate


class _Anchors:
    """The heading IDs of ``search-index.json`` for one page, taken in page order."""

    def __init__(self, known: list[Heading]) -> None:
        self.known = known
        self.by_text: dict[tuple[int, str], deque[int]] = defaultdict(deque)
        self.used: set[int] = set()
        for index, entry in enumerate(known):
            # The search index writes plain text ("The __init__ hooks"); an older build may
            # write it with its Markdown marks. Either form finds the heading.
            for text in dict.fromkeys((" ".join(entry.text.split()), plain(entry.text))):
                self.by_text[(entry.level, text)].append(index)

    def take(self, level: int, name: str) -> str | None:
        queue = self.by_text.get((level, name))
        while queue:
            index = queue.popleft()
            if index not in self.used:
                self.used.add(index)
                return self.known[index].id
        return None


def _sections(markdown: str, known: list[Heading] | None) -> list[_Section]:
    """The intro and the ``##`` / ``###`` sections of a twin, each with its heading ID if known."""
    anchors = _Anchors(known or [])
    sections = [_Section(0, (), "", None)]
    lines: list[str] = []
    parent: str | None = None  # the current ## heading
    title_checked = False
    for line, in_code in fenced_lines(normalised(markdown)):
        found = None if in_code else heading(line)
        if not title_checked and (in_code or line.strip()):
            title_checked = True
            if found is not None and found[0] == 1:
                continue  # the page title, which every passage carries already
        if found is None or found[0] not in (2, 3):
            lines.append(line)
            continue
        sections[-1].text = "\n".join(lines)
        lines = []
        level, text = found
        text, own_id = heading_attributes(text)
        name = plain(text)
        if level == 2:
            parent = name
        path = (parent, name) if level == 3 and parent is not None else (name,)
        anchor = anchors.take(level, name)
        if anchor is None and known is not None:
            anchor = own_id
        sections.append(_Section(level, path, "", anchor))
    sections[-1].text = "\n".join(lines)
    return sections


def _given_sections(given: tuple[SourceSection, ...]) -> list[_Section]:
    """The sections of a page read from HTML, with their heading paths."""
    sections: list[_Section] = []
    parent: str | None = None
    for section in given:
        if section.level == 2:
            parent = section.name
        if section.level == 0:
            path: tuple[str, ...] = ()
        elif section.level == 3 and parent is not None:
            path = (parent, section.name)
        else:
            path = (section.name,)
        sections.append(_Section(section.level, path, section.text, section.anchor))
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

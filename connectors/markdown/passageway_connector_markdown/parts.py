"""A long note as several items: one per top-level section (the ``SPLIT_BYTES`` setting, off by default).

A one-file reference page (starship's configuration page: 300 KB) is one item
among many small ones, and its passages crowd out the section that answers. Split, each of its
top-level sections is an item of its own: the shallowest heading under the title and everything
under it. The text before the first such heading stays with the first part, which keeps the
note's id, so links to the note still resolve; every other part's id is the note's id, ``#`` and
the section's anchor (its ``{#id}``, else a slug of its heading), unique within the note.
"""

from __future__ import annotations

import re

from passageway_sdk.markdown import TRAIL_SEPARATOR

DEFAULT_SPLIT_BYTES = 0
"""0: no note is split unless ``SPLIT_BYTES`` is set. Measured on starship's English pages, where
the 300 KB configuration page is one item: split at 100,000 bytes, the same questions found the
same pages (hit@3 94.1 %) but answer@3 fell from 74.5 % to 72.5 % and answer@1 from 68.6 % to
62.7 % (docs/connectors/markdown.md, "Long pages", gives the command)."""

_NOT_SLUG = re.compile(r"[\W_]+")

Section = dict[str, str | None]


def _top(section: Section) -> str | None:
    heading = section["heading"]
    return None if heading is None else heading.split(TRAIL_SEPARATOR, 1)[0]


def _key(section: Section) -> str:
    anchor = section.get("anchor")
    if anchor and section["heading"] and TRAIL_SEPARATOR not in section["heading"]:
        return anchor
    return _NOT_SLUG.sub("-", (_top(section) or "").casefold()).strip("-") or "part"


def split_parts(note_id: str, sections: list[Section]) -> list[tuple[str, list[Section]]]:
    """``(id, sections)`` for each part of a note: one per top-level heading, the text before the
    first one with the first part, which keeps ``note_id``. One part, all of the note, when it
    has fewer than two top-level sections."""
    groups: list[list[Section]] = []
    current: str | None = None  # the top-level heading of the open part
    for section in sections:
        top = _top(section)
        if groups and (top is None or current is None or top == current):
            groups[-1].append(section)  # the first part takes the text before any heading too
        else:
            groups.append([section])
        current = top if top is not None else current
    if len(groups) < 2:
        return [(note_id, sections)]  # nothing to split: the note as it is, even without sections
    parts: list[tuple[str, list[Section]]] = []
    taken: set[str] = set()
    for number, group in enumerate(groups):
        if number == 0:
            part_id = note_id
        else:
            key = _key(group[0])
            part_id, suffix = f"{note_id}#{key}", 2
            while part_id in taken:
                part_id, suffix = f"{note_id}#{key}-{suffix}", suffix + 1
        taken.add(part_id)
        parts.append((part_id, group))
    return parts

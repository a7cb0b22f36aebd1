"""A long note as several items: one per top-level section (the ``SPLIT_BYTES`` setting).

A one-file reference page (starship's configuration page: 300 KB, about 800 passages, with a
top-level section per prompt module) is one item among many small ones: its passages compete with
each other for the one place the item gets in an answer, and the module's options table that
answers loses to another module's introduction. Split, each top-level section is an item of its
own: the shallowest heading under the title and everything under it. The text before the first
such heading stays with the first part, which keeps the note's id, so links to the note still
resolve; every other part's id is the note's id, ``#`` and the section's anchor (its ``{#id}``,
else a slug of its heading), unique within the note.

A part is named by its page and its section: the part's title is the page's title and the
section's heading (``Configuration › AWS``), the section's heading is left off the front of its
sections' trails (``AWS › Options`` becomes ``Options``: the title says it), and its address
points at the section (``…/README.md#aws``).
"""

from __future__ import annotations

import re

from passageway_sdk.markdown import TRAIL_SEPARATOR

DEFAULT_SPLIT_BYTES = 0
"""0: no note is split unless ``SPLIT_BYTES`` is set. The limit to set is 100,000, chosen on the
tuning projects of corpus/docs (starship and typer): the one note over it is starship's 300 KB
configuration page; the next largest of theirs is 34 KB. Measured with it on every block of
corpus/measure.sh, the docs block kept hit@3 (183 of 213) and lost 4 answers of 213 at answer@3,
all on starship: three modules of the page now fill the three places and share the excerpts'
room, so it stays off (docs/performance.md, "Long reference pages as one item per section")."""

_NOT_SLUG = re.compile(r"[\W_]+")

Section = dict[str, str | None]


class Part:
    """One item of a split note: its id, its sections and, for every part but the first, the
    top-level heading it starts at and the anchor that heading has in the page."""

    # A plain class rather than a dataclass: importing dataclasses costs every call ~20 ms.
    def __init__(self, part_id: str, sections: list[Section], heading: str | None = None,
                 anchor: str | None = None) -> None:
        self.id = part_id
        self.sections = sections
        self.heading = heading
        self.anchor = anchor


def _top(section: Section) -> str | None:
    heading = section["heading"]
    return None if heading is None else heading.split(TRAIL_SEPARATOR, 1)[0]


def slug(heading: str) -> str:
    """``heading`` as most site generators make its id: lower case, every run of other characters
    than letters and digits one ``-``, none at the ends (``Git Status`` → ``git-status``)."""
    return _NOT_SLUG.sub("-", heading.casefold()).strip("-")


def _anchor(section: Section) -> str:
    """The page's id of the top-level heading ``section`` starts with: its ``{#id}``, else a slug."""
    anchor = section.get("anchor")
    if anchor and section["heading"] and TRAIL_SEPARATOR not in section["heading"]:
        return anchor
    return slug(_top(section) or "") or "part"


def _below(section: Section, top: str) -> Section:
    """``section`` with ``top`` left off the front of its heading's trail (None for ``top`` itself)."""
    heading = section["heading"]
    if heading == top:
        return {**section, "heading": None}
    if heading is not None and heading.startswith(top + TRAIL_SEPARATOR):
        return {**section, "heading": heading[len(top) + len(TRAIL_SEPARATOR):]}
    return section


def split_parts(note_id: str, sections: list[Section]) -> list[Part]:
    """The parts of a note: the text before its first heading, then one per top-level heading
    (one whose trail has no other heading above it), a run of top-level headings of the same name
    as one part. The first part keeps ``note_id``. One part, all of the note, when that makes
    fewer than two."""
    groups: list[list[Section]] = []
    current: str | None = None  # the top-level heading of the open part
    for section in sections:
        top = _top(section)
        if groups and (top is None or top == current):
            groups[-1].append(section)
        else:
            groups.append([section])
        current = top if top is not None else current
    if len(groups) < 2:
        return [Part(note_id, sections)]  # nothing to split: the note as it is, even without sections
    parts: list[Part] = []
    taken: set[str] = set()
    for number, group in enumerate(groups):
        top = _top(group[0])
        if top is None:  # the text before the first heading: named by the page alone
            parts.append(Part(note_id, group))
            taken.add(note_id)
            continue
        anchor = _anchor(group[0])
        part_id, suffix = f"{note_id}#{anchor}", 2
        if number == 0:
            part_id = note_id
        while part_id in taken:
            part_id, suffix = f"{note_id}#{anchor}-{suffix}", suffix + 1
        taken.add(part_id)
        parts.append(Part(part_id, [_below(section, top) for section in group], top, anchor))
    return parts

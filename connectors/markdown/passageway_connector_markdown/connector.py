"""The markdown connector: a folder of markdown notes, one item per file.

Every call reads the whole folder, because an item's id, links and version depend on the other
notes (a wiki link resolves by file name, a front matter ``id`` replaces a path). The folder is
read once per call into notes (:mod:`.folder`); ``list``, ``fetch`` and ``changed`` are views of
that one scan. Front matter is read by :mod:`.front_matter`, links by :mod:`.links`, and the
sections (with each heading's ``{#id}`` as its anchor) by the SDK's ``split_markdown``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from passageway_sdk import Connector, SettingsError, SourceError, first_h1, split_markdown
from passageway_sdk.markdown import TRAIL_SEPARATOR

from passageway_connector_markdown import front_matter
from passageway_connector_markdown.folder import Folder, Note
from passageway_connector_markdown.globs import Globs
from passageway_connector_markdown.links import resolve_links
from passageway_connector_markdown.parts import DEFAULT_SPLIT_BYTES, Part, split_parts

DEFAULT_INCLUDE = "*.md|*.markdown"
DEFAULT_MAX_FILE_BYTES = 1024 * 1024
MAX_ID_LENGTH = 1024  # the protocol's limit on an id

HEADING_IDS_MARK = b"heading ids are anchors"
"""Hashed into the version of a note whose headings may carry ids (:func:`has_heading_id`), so a
note indexed before sections had anchors is fetched once more and gets them; other notes keep
their version."""
DOCS_MARKUP_MARK = b"documentation markup read"
"""Hashed into the version of a note that may hold what the SDK's reader learnt to read
(:data:`_DOCS_MARKUP`: underlined headings, thematic breaks, reference-link definitions,
``{: …}`` attribute lists, admonitions), so such a note is fetched once more and read anew."""
HEADING_MARKUP_MARK = b"headings read as a page shows them"
"""Hashed into the version of a note whose headings may hold inline markup (:func:`has_heading_markup`:
links, emphasis, escapes, code, tags, entities), so such a note is fetched once more and its
headings are read as a page shows them (the SDK's ``shown_text``)."""
PART_MARK = b"part of a split note\n"
"""Hashed first into the version of each part of a split note (:meth:`MarkdownConnector._part`)."""
# Anchored at line starts or at a literal "{:", and each alternative gives up within its line:
# linear in the file.
_DOCS_MARKUP = re.compile(
    rb"^ {0,3}(?:[-=*_][ \t]*)+$|^ {0,3}\[[^\]\n]{1,999}\]:|^(?:!!!|\?\?\?|===|///)|\{:", re.MULTILINE)
_BLOCK_END = re.compile(rb"\}[ \t]*$", re.MULTILINE)
# One start per line, and a class with its complement: linear in the file.
_ATX_MARKUP = re.compile(rb"^ {0,3}#{1,6}[ \t][^\n`\\\[*_<&]*[`\\\[*_<&]", re.MULTILINE)
_UNDERLINE = re.compile(rb"^ {0,3}(?:=+|-+)[ \t]*$", re.MULTILINE)
_INLINE_MARKS = tuple(bytes([mark]) for mark in b"`\\[*_<&")
_ID_CHARACTER = re.compile(rb"[\w:.-]")


def has_heading_id(data: bytes) -> bool:
    """Whether a line of ``data`` ends with an attribute block holding an ``#id``: a ``}`` at the
    line's end, and before it (after any other ``}``) a ``{`` whose first following ``#`` is
    followed by an id character.

    It does not check that the line is a heading: a rare false match only costs that note one more
    fetch. Linear in ``data`` (issue 38, item 2): the pattern starts at a ``}`` and reads only the
    blanks after it, and each candidate line is read once, from one ``#`` to the next.
    """
    if b"#" not in data or b"{" not in data:
        return False
    for end in _BLOCK_END.finditer(data):
        line_start = data.rfind(b"\n", 0, end.start()) + 1
        start = data.rfind(b"}", line_start, end.start()) + 1 or line_start
        previous = start  # where the text since the last "#" begins
        mark = data.find(b"#", start, end.start())
        while mark >= 0:
            if data.find(b"{", previous, mark) >= 0 and _ID_CHARACTER.match(data, mark + 1, end.start()):
                return True
            previous = mark + 1
            mark = data.find(b"#", previous, end.start())
    return False


def has_heading_markup(data: bytes) -> bool:
    """Whether a heading line of ``data`` may hold inline markup: an ATX heading line, or the line
    above a ``===`` / ``---`` underline, holding one of `` ` \\ [ * _ < & ``.

    A rule under a paragraph with such a character matches too: a rare false match only costs that
    note one more fetch. Linear in ``data``: each line is read at most twice."""
    if _ATX_MARKUP.search(data):
        return True
    for underline in _UNDERLINE.finditer(data):
        end = underline.start() - 1
        if end > 0:
            line = data[data.rfind(b"\n", 0, end) + 1 : end]
            if any(mark in line for mark in _INLINE_MARKS):
                return True
    return False


class MarkdownConnector(Connector):
    """Index the markdown files under ``FOLDER``. Settings: FOLDER, INCLUDE, EXCLUDE, MAX_FILE_BYTES,
    SPLIT_BYTES."""

    name = "markdown connector"

    def __init__(self, env: Mapping[str, str]) -> None:
        folder = env.get("FOLDER", "").strip()
        if not folder:
            raise SettingsError("FOLDER is not set; set it to the folder of markdown files to index")
        root = Path(folder).expanduser()
        if not root.is_dir():
            raise SettingsError(
                f"FOLDER {folder!r} is not an existing folder; create it, or set FOLDER (the source's env "
                "in passageway.toml) to the folder of your markdown files"
            )
        self.root = root.resolve()

        include = env.get("INCLUDE", "")
        self.include = Globs.parse(include if include.strip() else DEFAULT_INCLUDE)
        if not self.include:
            raise SettingsError(f"INCLUDE {include!r} holds no pattern; leave it unset for {DEFAULT_INCLUDE}")
        self.exclude = Globs.parse(env.get("EXCLUDE", ""))

        limit = env.get("MAX_FILE_BYTES", "").strip() or str(DEFAULT_MAX_FILE_BYTES)
        try:
            self.max_file_bytes = int(limit)
        except ValueError:
            raise SettingsError(f"MAX_FILE_BYTES {limit!r} is not a whole number of bytes") from None
        if self.max_file_bytes < 1:
            raise SettingsError(f"MAX_FILE_BYTES must be at least 1, not {self.max_file_bytes}")
        split = env.get("SPLIT_BYTES", "").strip() or str(DEFAULT_SPLIT_BYTES)
        try:
            self.split_bytes = int(split)
        except ValueError:
            problem = f"SPLIT_BYTES {split!r} is not a whole number of bytes"
            raise SettingsError(f"{problem}; set a size, or 0 to never split a note") from None
        if self.split_bytes < 0:
            raise SettingsError(f"SPLIT_BYTES must be 0 (never split) or more, not {self.split_bytes}")
        self._notes: dict[str, Note] | None = None
        self._records: dict[str, list[dict[str, Any]]] = {}

    # -----------------------------------------------------------------------------------------
    # The protocol
    # -----------------------------------------------------------------------------------------

    def versions(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for note in self.notes().values():
            if self.splits(note):
                found.update((record["id"], record["version"]) for record in self.records(note))
            else:
                found[note.id] = self.version(note)
        return found

    def fetch(self, ids: Sequence[str]) -> Iterator[dict[str, Any]]:
        notes = self.notes()
        for item_id in ids:
            note = notes.get(item_id) or notes.get(item_id.rpartition("#")[0])
            if note is not None:
                yield from (record for record in self.records(note) if record["id"] == item_id)

    def changed(self, since: datetime) -> Iterator[dict[str, Any]]:
        threshold = since.timestamp()
        for note in self.notes().values():
            if note.changed_at >= threshold:
                yield from self.records(note)

    # -----------------------------------------------------------------------------------------
    # The notes
    # -----------------------------------------------------------------------------------------

    def notes(self) -> dict[str, Note]:
        """Every indexable note by id, with its links resolved; read once per call."""
        if self._notes is None:
            folder = Folder(self.root, self.include, self.exclude, self.max_file_bytes, self.warn)
            self._notes = self._assign_ids(folder.notes())
            resolve_links(self._notes)
        return self._notes

    def _assign_ids(self, notes: list[Note]) -> dict[str, Note]:
        by_id: dict[str, Note] = {}
        for note in notes:
            chosen = front_matter.text_value(note.front_matter, "id")
            if chosen is not None and len(chosen) > MAX_ID_LENGTH:
                self.warn(f"{note.relative}: the front matter id is longer than {MAX_ID_LENGTH} characters; "
                          "the path is used instead")
                chosen = None
            note.id = chosen or note.relative
            if note.id in by_id:
                other = by_id[note.id]
                raise SourceError(
                    f"{other.relative} and {note.relative} both have the id {note.id!r}; "
                    "give one of them another `id` in its front matter"
                )
            by_id[note.id] = note
        return by_id

    # -----------------------------------------------------------------------------------------
    # Items
    # -----------------------------------------------------------------------------------------

    def version(self, note: Note) -> str:
        """A hash of the file, its place, and the notes it links to (see :data:`HEADING_IDS_MARK`,
        :data:`DOCS_MARKUP_MARK` and :data:`HEADING_MARKUP_MARK`)."""
        digest = hashlib.sha256()
        links = (link.encode("utf-8") for link in note.links)
        mark = (HEADING_IDS_MARK,) if has_heading_id(note.data) else ()
        if _DOCS_MARKUP.search(note.data):
            mark += (DOCS_MARKUP_MARK,)
        if has_heading_markup(note.data):
            mark += (HEADING_MARKUP_MARK,)
        for part in (note.relative.encode("utf-8"), note.data, *links, *mark):
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
        return digest.hexdigest()[:16]

    def records(self, note: Note) -> list[dict[str, Any]]:
        """The items of one note: the note itself, or, for a note over ``SPLIT_BYTES``, one per
        top-level section (:mod:`.parts`), each with a version of its own."""
        if note.id not in self._records:
            record = self.item(note)
            if not self.splits(note):
                self._records[note.id] = [record]
            else:
                parts = split_parts(note.id, record["sections"])
                given = front_matter.text_value(note.front_matter, "updated")
                dated = given is not None and front_matter.iso_8601(given) is not None
                self._records[note.id] = [self._part(record, part, first=number == 0, dated=dated)
                                          for number, part in enumerate(parts)]
        return self._records[note.id]

    def splits(self, note: Note) -> bool:
        """Whether ``note`` is over ``SPLIT_BYTES`` (and the setting is not 0)."""
        return 0 < self.split_bytes < len(note.data)

    @staticmethod
    def _part(record: dict[str, Any], part: Part, first: bool, dated: bool) -> dict[str, Any]:
        """The record of one part of a split note. Its version is a hash of what the record holds
        (but the file's modification time, unless the front matter gives ``updated``), so an edit
        to one section changes that part's version alone."""
        item = {**record, "id": part.id, "sections": part.sections}
        if part.heading is not None:
            item["title"] = f"{record['title']}{TRAIL_SEPARATOR}{part.heading}"
        if part.anchor is not None and "#" not in record["url"]:
            item["url"] = f"{record['url']}#{part.anchor}"
        if not first:
            item.pop("links", None)  # links to other notes count once, on the note's own id
        left_out = ("version",) if dated else ("version", "updated")
        content = {key: value for key, value in item.items() if key not in left_out}
        digest = hashlib.sha256(PART_MARK + json.dumps(content, sort_keys=True).encode("utf-8"))
        item["version"] = digest.hexdigest()[:16]
        return item

    def item(self, note: Note) -> dict[str, Any]:
        """The protocol record of one note."""
        matter = note.front_matter
        heading = first_h1(note.body)
        title = front_matter.text_value(matter, "title")
        skip_first_h1 = heading is not None and (title is None or title == heading)
        record: dict[str, Any] = {
            "id": note.id,
            "title": title or heading or note.stem or note.relative,
            "url": front_matter.text_value(matter, "url") or note.location.absolute().as_uri(),
            "version": self.version(note),
            "sections": split_markdown(note.body, skip_first_h1=skip_first_h1),
        }
        path = note.relative.split("/")[:-1]
        if path:
            record["path"] = path
        if note.links:
            record["links"] = note.links
        labels = front_matter.labels(matter)
        if labels:
            record["labels"] = labels
        record["updated"] = front_matter.updated(note.relative, matter, note.modified_at, self.warn)
        weight = front_matter.weight(note.relative, matter, self.warn)
        if weight is not None:
            record["weight"] = weight
        return record

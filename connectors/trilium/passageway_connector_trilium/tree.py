"""The note tree from ETAPI's metadata: which notes are items, and everything about them but the text.

One search returns every note's metadata (title, type, parents, attributes, blob id). From it
this module decides, without reading any content:

* which notes are items: text and code notes that are not protected, archived, templates, in
  Trilium's hidden subtree, or in a plumbing area (``locks``, ``templates``, ``views``);
* each note's area, from the nearest ancestor (or the note itself) that owns an
  ``#llmWikiPart`` label or ``#calendarRoot`` (the journal), and the weight that follows;
* the path (titles of the ancestors below the area root, outermost first), the labels
  (``area:``, ``type:``, ``topic:``, ``status:``) and the related notes from relations, with the
  reverse link from a source to the summaries whose ``wikiSource`` names it;
* a version that changes with the content (the blob id), the title, the note's own attributes and
  anything derived from its place in the tree.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

ROOT = "root"
AREA_LABEL = "llmWikiPart"
JOURNAL_LABEL = "calendarRoot"
JOURNAL = "journal"
AREA_WEIGHTS = {"wiki": 1.0, "schema": 1.0, "sources": 0.8, JOURNAL: 0.6}
OTHER_WEIGHT = 0.6
PLUMBING_AREAS = frozenset({"locks", "templates", "views"})
INDEXED_TYPES = frozenset({"text", "code"})
LINK_RELATIONS = ("internalLink", "relatesTo", "wikiSource")
SOURCE_RELATION = "wikiSource"
LABEL_PREFIXES = {"wikiType": "type", "wikiTopic": "topic", "wikiStatus": "status"}
ARCHIVED_LABEL = "archived"  # owned or inherited, as Trilium reads it
TEMPLATE_LABELS = frozenset(
    {"template", "workspaceTemplate"}
)  # owned: a note made from a template is no template
MAX_DEPTH = 200  # a guard against a malformed tree; Trilium itself refuses cycles


@dataclass(frozen=True)
class Note:
    """One note's metadata as ETAPI returns it, reduced to what the connector uses."""

    id: str
    title: str
    type: str
    mime: str
    parents: tuple[str, ...]
    content_key: str
    """The blob id (Trilium 0.61 and later), else the modification time: changes with the content."""
    modified: str
    protected: bool
    labels: Mapping[str, str]
    """Labels the note owns, name to value."""
    relations: tuple[tuple[str, str], ...]
    """Relations the note owns, as (name, target note id)."""
    inherited_labels: frozenset[str]
    """Names of every label the note carries, its own and inherited."""

    @classmethod
    def from_etapi(cls, raw: Mapping[str, Any]) -> Note:
        note_id = str(raw["noteId"])
        labels: dict[str, str] = {}
        relations: list[tuple[str, str]] = []
        carried: set[str] = set()
        for attribute in raw.get("attributes") or ():
            if not isinstance(attribute, Mapping):
                continue
            name, value = str(attribute.get("name", "")), str(attribute.get("value") or "")
            owned = attribute.get("noteId", note_id) == note_id
            if attribute.get("type") == "label":
                carried.add(name)
                if owned:
                    labels.setdefault(name, value)
            elif attribute.get("type") == "relation" and owned and value:
                relations.append((name, value))
        return cls(
            id=note_id,
            title=str(raw.get("title") or "").strip() or note_id,
            type=str(raw.get("type", "")),
            mime=str(raw.get("mime") or ""),
            parents=tuple(str(parent) for parent in raw.get("parentNoteIds") or ()),
            content_key=str(raw.get("blobId") or raw.get("utcDateModified") or ""),
            modified=str(raw.get("utcDateModified") or ""),
            protected=bool(raw.get("isProtected")),
            labels=labels,
            relations=tuple(relations),
            inherited_labels=frozenset(carried),
        )


@dataclass(frozen=True)
class Entry:
    """An indexed note: everything of its item record except the sections."""

    note: Note
    area: str | None
    weight: float
    path: tuple[str, ...]
    labels: tuple[str, ...]
    links: tuple[str, ...]
    version: str = field(default="")


def _area_of(note: Note) -> str | None:
    if AREA_LABEL in note.labels:
        return note.labels[AREA_LABEL].strip().lower() or None
    if JOURNAL_LABEL in note.labels:
        return JOURNAL
    return None


class Tree:
    """The notes of one Trilium and the entries of those that are items."""

    def __init__(self, raw_notes: Iterable[Mapping[str, Any]]) -> None:
        self.notes: dict[str, Note] = {}
        for raw in raw_notes:
            note = Note.from_etapi(raw)
            self.notes[note.id] = note
        self.entries: dict[str, Entry] = {}
        placed = {note_id: self._place(note) for note_id, note in self.notes.items()}
        candidates = {
            note_id: place
            for note_id, place in placed.items()
            if place is not None and self._indexable(note_id)
        }
        cited_by: dict[str, list[str]] = {}
        for note_id in candidates:
            for name, target in self.notes[note_id].relations:
                if name == SOURCE_RELATION and target != note_id:
                    cited_by.setdefault(target, []).append(note_id)
        for note_id, (area, path) in candidates.items():
            note = self.notes[note_id]
            links = [target for name, target in note.relations if name in LINK_RELATIONS]
            links += sorted(cited_by.get(note_id, ()))
            kept = tuple(dict.fromkeys(link for link in links if link in candidates and link != note_id))
            entry = Entry(
                note=note,
                area=area,
                weight=AREA_WEIGHTS.get(area or "", OTHER_WEIGHT),
                path=path,
                labels=self._labels(note, area),
                links=kept,
            )
            self.entries[note_id] = Entry(**{**entry.__dict__, "version": _version(entry)})

    def _indexable(self, note_id: str) -> bool:
        note = self.notes[note_id]
        return (
            note.type in INDEXED_TYPES
            and not note.protected
            and ARCHIVED_LABEL not in note.inherited_labels
            and not TEMPLATE_LABELS & set(note.labels)
        )

    def _parent(self, note: Note) -> str | None:
        """The parent a note's place is read from: its first parent that is in the tree."""
        for parent in note.parents:
            if parent == ROOT or parent in self.notes:
                return parent
        return note.parents[0] if note.parents else None

    def _place(self, note: Note) -> tuple[str | None, tuple[str, ...]] | None:
        """(area, path) of a note, or None when it is hidden, root or in a plumbing area."""
        if note.id == ROOT or note.id.startswith("_"):
            return None
        titles: list[str] = []
        current = note
        seen = {note.id}
        area = _area_of(current)
        while area is None and len(seen) < MAX_DEPTH:
            parent_id = self._parent(current)
            if parent_id is None or parent_id == ROOT:
                break
            if parent_id.startswith("_") or parent_id in seen:
                return None  # in the hidden subtree, or a cycle
            parent = self.notes.get(parent_id)
            if parent is None:
                break
            seen.add(parent_id)
            area = _area_of(parent)
            if area is None:
                titles.append(parent.title)  # the area root itself is not part of the path
            current = parent
        if area in PLUMBING_AREAS:
            return None
        return area, tuple(reversed(titles))

    @staticmethod
    def _labels(note: Note, area: str | None) -> tuple[str, ...]:
        labels = [f"area:{area}"] if area else []
        for name, prefix in LABEL_PREFIXES.items():
            value = note.labels.get(name, "").strip()
            if value:
                labels.append(f"{prefix}:{value}")
        return tuple(labels)

    def versions(self) -> dict[str, str]:
        return {note_id: entry.version for note_id, entry in self.entries.items()}


def _version(entry: Entry) -> str:
    """A digest of everything that makes the item what it is, except the text (the blob id stands for it)."""
    note = entry.note
    basis = {
        "content": note.content_key,
        "title": note.title,
        "type": note.type,
        "mime": note.mime,
        "labels": sorted(note.labels.items()),
        "relations": sorted(note.relations),
        "area": entry.area,
        "weight": entry.weight,
        "path": entry.path,
        "links": entry.links,
    }
    return hashlib.sha256(json.dumps(basis, sort_keys=True).encode("utf-8")).hexdigest()[:20]

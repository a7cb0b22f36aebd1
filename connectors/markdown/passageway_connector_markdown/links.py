"""The links between notes: ``[text](other.md#part)`` and ``[[Other]]`` resolved to note ids.

Links inside code are not links; a markdown link resolves by path relative to its note, and only
inside FOLDER; a wiki link resolves by file name without case, and a name two notes share links to
neither of them.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import unquote

from passageway_sdk import strip_code

if TYPE_CHECKING:
    from passageway_connector_markdown.folder import Note

_MARKDOWN_LINK = re.compile(r"(?<!!)\[[^\[\]]*\]\(\s*<?([^()<>\s]+)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
_WIKI_LINK = re.compile(r"\[\[([^\[\]|#]*)(?:#[^\[\]|]*)?(?:\|[^\[\]]*)?\]\]")
_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def resolve_links(notes: Mapping[str, Note]) -> None:
    """Set each note's ``links`` to the ids of the other notes it links to, in order of appearance."""
    by_path = {note.relative: note for note in notes.values()}
    by_name: dict[str, list[Note]] = {}
    for note in notes.values():
        names = {note.stem.casefold(), note.relative.rsplit("/", 1)[-1].casefold()}
        stem_path = note.relative.rsplit(".", 1)[0] if "." in note.relative.rsplit("/", 1)[-1] else ""
        names |= {note.relative.casefold(), stem_path.casefold()} - {""}
        for name in names:
            by_name.setdefault(name, []).append(note)

    for note in notes.values():
        searchable = strip_code(note.body)
        targets: dict[str, None] = {}
        for raw in _MARKDOWN_LINK.findall(searchable):
            target = _markdown_target(note, raw, by_path)
            if target is not None:
                targets.setdefault(target.id, None)
        for raw in _WIKI_LINK.findall(searchable):
            matches = by_name.get(raw.strip().casefold(), [])
            if len(matches) == 1:  # a name shared by two notes links to neither
                targets.setdefault(matches[0].id, None)
        targets.pop(note.id, None)
        note.links = list(targets)


def _markdown_target(note: Note, raw: str, by_path: Mapping[str, Note]) -> Note | None:
    if _URL_SCHEME.match(raw) or raw.startswith("//"):
        return None  # an address, not a note
    path = unquote(raw.split("#", 1)[0].split("?", 1)[0])
    if not path:
        return None
    base = "" if path.startswith("/") else posixpath.dirname(note.relative)
    joined = posixpath.normpath(posixpath.join(base, path.lstrip("/")))
    if joined == ".." or joined.startswith("../") or joined.startswith("/"):
        return None  # outside FOLDER: never a link, never read
    return by_path.get(joined)

"""The Trilium connector: every text and code note of a Trilium server, one item per note."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from passageway_sdk import Connector

from passageway_connector_trilium.etapi import EtapiClient
from passageway_connector_trilium.settings import TriliumSettings, load_settings
from passageway_connector_trilium.text import code_sections, text_sections
from passageway_connector_trilium.tree import Entry, Tree

ALL_NOTES = "note.type != '-'"
"""A search every note matches (no note type is ``-``): ETAPI has no listing without a search."""


def modified_since(since: datetime) -> str:
    """The search for notes whose content or title changed at or after ``since``."""
    stamp = since.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.") + f"{since.microsecond // 1000:03d}Z"
    return f"note.utcDateModified >= '{stamp}'"


class TriliumConnector(Connector):
    """Reports the text and code notes of one Trilium, with areas, paths, labels and links."""

    name = "trilium connector"

    def __init__(self, env: Mapping[str, str]) -> None:
        self.settings: TriliumSettings = load_settings(env)
        self.client = EtapiClient(self.settings.etapi, self.settings.token, self.settings.timeout)
        self._tree: Tree | None = None

    def warn(self, message: str) -> None:
        super().warn(self.client.mask(message))

    def tree(self) -> Tree:
        """Every note's metadata, read once per call."""
        if self._tree is None:
            self._tree = Tree(self.client.search(ALL_NOTES, ancestor="root"))
        return self._tree

    def versions(self) -> dict[str, str]:
        return self.tree().versions()

    def fetch(self, ids: Sequence[str]) -> Iterator[dict[str, Any]]:
        entries = self.tree().entries
        for note_id in ids:
            entry = entries.get(note_id)
            if entry is not None:
                item = self._item(entry)
                if item is not None:
                    yield item

    def changed(self, since: datetime) -> Iterator[dict[str, Any]]:
        modified = [note["noteId"] for note in self.client.search(modified_since(since), ancestor="root")]
        if modified:
            yield from self.fetch(sorted(set(modified)))

    def _item(self, entry: Entry) -> dict[str, Any] | None:
        note = entry.note
        limit = self.settings.max_note_bytes
        body = self.client.content(note.id, limit)
        if body is None:
            return None  # deleted since the tree was read
        if len(body) > limit:
            self.warn(
                f"note {note.id} ({note.title!r}) is larger than MAX_NOTE_BYTES = {limit} bytes; "
                "skipped (split the note or raise MAX_NOTE_BYTES, at most 4194304)"
            )
            return None
        content = body.decode("utf-8", "replace")
        if note.type == "code":
            sections, text_links = code_sections(content), []
        else:
            sections, text_links = text_sections(content)
        indexed = self.tree().entries
        extra = [link for link in text_links if link in indexed and link != note.id]
        item: dict[str, Any] = {
            "id": note.id,
            "title": note.title,
            "url": self.settings.note_link(note.id),
            "version": entry.version,
            "sections": sections,
            "weight": entry.weight,
        }
        if entry.path:
            item["path"] = list(entry.path)
        links = list(dict.fromkeys([*entry.links, *extra]))
        if links:
            item["links"] = links
        if entry.labels:
            item["labels"] = list(entry.labels)
        if note.modified:
            item["updated"] = note.modified
        return item

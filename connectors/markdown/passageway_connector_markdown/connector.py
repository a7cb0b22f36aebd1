"""The markdown connector: a folder of markdown notes, one item per file.

Every call reads the whole folder, because an item's id, links and version depend on the other
notes (a wiki link resolves by file name, a front matter ``id`` replaces a path). The folder is
read once per call into :class:`Note` records; ``list``, ``fetch`` and ``changed`` are views of
that one scan.
"""

from __future__ import annotations

import hashlib
import math
import os
import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml
from passageway_sdk import Connector, SettingsError, SourceError, first_h1, split_markdown, strip_code
from passageway_sdk.schema import load_schema

from passageway_connector_markdown.globs import Globs

DEFAULT_INCLUDE = "*.md|*.markdown"
DEFAULT_MAX_FILE_BYTES = 1024 * 1024
ALWAYS_SKIPPED = frozenset({"node_modules"})
MAX_ID_LENGTH = 1024  # the protocol's limit on an id
MAX_WEIGHT = 2.0

_FRONT_MATTER_END = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
_MARKDOWN_LINK = re.compile(r"(?<!!)\[[^\[\]]*\]\(\s*<?([^()<>\s]+)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
_WIKI_LINK = re.compile(r"\[\[([^\[\]|#]*)(?:#[^\[\]|]*)?(?:\|[^\[\]]*)?\]\]")
_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# libyaml's loader when PyYAML was built with it: the pure Python one takes most of a call's time.
_YAML_LOADER = getattr(yaml, "CBaseLoader", yaml.BaseLoader)


# ---------------------------------------------------------------------------------------------
# Notes
# ---------------------------------------------------------------------------------------------


class Note:
    """One markdown file that can be indexed, as read in this call."""

    # A plain class rather than a dataclass: importing dataclasses costs every call ~20 ms.
    def __init__(self, relative: str, location: Path, data: bytes, body: str, front_matter: dict[str, Any],
                 changed_at: float, modified_at: float) -> None:
        self.relative = relative  # the path under FOLDER, with /
        self.location = location  # where it is under FOLDER (a symlink stays the symlink)
        self.data = data
        self.body = body  # the text without front matter
        self.front_matter = front_matter
        self.changed_at = changed_at  # the later of modification and change time, epoch seconds
        self.modified_at = modified_at
        self.id = ""
        self.links: list[str] = []

    @property
    def stem(self) -> str:
        name = self.relative.rsplit("/", 1)[-1]
        return name.rsplit(".", 1)[0] if "." in name else name


def _is_utf8(name: str) -> bool:
    # os.scandir hands undecodable bytes over as lone surrogates, which no JSON reader should get.
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _text_value(front_matter: Mapping[str, Any], key: str) -> str | None:
    value = front_matter.get(key)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


class MarkdownConnector(Connector):
    """Index the markdown files under ``FOLDER``. Settings: FOLDER, INCLUDE, EXCLUDE, MAX_FILE_BYTES."""

    name = "markdown connector"

    def __init__(self, env: Mapping[str, str]) -> None:
        folder = env.get("FOLDER", "").strip()
        if not folder:
            raise SettingsError("FOLDER is not set; set it to the folder of markdown files to index")
        root = Path(folder).expanduser()
        if not root.is_dir():
            raise SettingsError(f"FOLDER {folder!r} is not an existing folder")
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
        self._notes: dict[str, Note] | None = None

    # -----------------------------------------------------------------------------------------
    # The protocol
    # -----------------------------------------------------------------------------------------

    def versions(self) -> dict[str, str]:
        return {note.id: self.version(note) for note in self.notes().values()}

    def fetch(self, ids: Sequence[str]) -> Iterator[dict[str, Any]]:
        notes = self.notes()
        for item_id in ids:
            if item_id in notes:
                yield self.item(notes[item_id])

    def changed(self, since: datetime) -> Iterator[dict[str, Any]]:
        threshold = since.timestamp()
        for note in self.notes().values():
            if note.changed_at >= threshold:
                yield self.item(note)

    # -----------------------------------------------------------------------------------------
    # Reading the folder
    # -----------------------------------------------------------------------------------------

    def notes(self) -> dict[str, Note]:
        """Every indexable note by id, with its links resolved; read once per call."""
        if self._notes is None:
            notes = [note for note in map(self._read, self._candidates()) if note is not None]
            self._notes = self._assign_ids(notes)
            self._resolve_links(self._notes)
        return self._notes

    def _candidates(self) -> Iterator[tuple[str, Path]]:
        """(relative path, location) of every file the settings select, in a stable order."""
        pending = [""]
        while pending:
            folder = pending.pop()
            directory = self.root / folder if folder else self.root
            try:
                entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
            except OSError as error:
                if not folder:  # listing nothing would look like every note was deleted
                    reason = error.strerror or error
                    raise SourceError(f"cannot read FOLDER {str(self.root)!r}: {reason}") from None
                self.warn(f"skipped the folder {folder}: {error.strerror or error}")
                continue
            subfolders = []
            for entry in entries:
                relative = f"{folder}/{entry.name}" if folder else entry.name
                if entry.name.startswith(".") or entry.name in ALWAYS_SKIPPED:
                    continue
                if not _is_utf8(entry.name):
                    self.warn(f"skipped {relative!a}: its name is not UTF-8")
                    continue
                try:
                    if entry.is_symlink():
                        target = self._symlink_target(relative, Path(entry.path))
                        if target is None:
                            continue
                    elif entry.is_dir(follow_symlinks=False):
                        subfolders.append(relative)
                        continue
                    elif not entry.is_file(follow_symlinks=False):
                        continue
                except OSError:
                    continue
                if self.include.match(relative) and not self.exclude.match(relative):
                    yield relative, Path(entry.path)
            pending.extend(reversed(subfolders))

    def _symlink_target(self, relative: str, location: Path) -> Path | None:
        """The file a symbolic link points at, if it is a file inside FOLDER; else warn and None."""
        try:
            target = Path(os.path.realpath(location))
        except OSError:
            target = None
        if target is not None and target.is_dir():
            self.warn(f"skipped {relative}: it links to a folder, and linked folders are not followed")
            return None
        if not self.include.match(relative) or self.exclude.match(relative):
            return None
        if target is None or not target.is_file():
            self.warn(f"skipped {relative}: the link is broken, loops, or does not point at a file")
            return None
        if not target.is_relative_to(self.root):
            self.warn(f"skipped {relative}: it links outside FOLDER")
            return None
        return target

    def _read(self, candidate: tuple[str, Path]) -> Note | None:
        relative, location = candidate
        try:
            status = location.stat()
            if status.st_size > self.max_file_bytes:
                self.warn(f"skipped {relative}: {status.st_size} bytes is over MAX_FILE_BYTES "
                          f"({self.max_file_bytes})")
                return None
            with location.open("rb") as handle:
                data = handle.read(self.max_file_bytes + 1)
            link_status = location.lstat()
        except FileNotFoundError:
            return None  # deleted while we read the folder: it simply does not exist any more
        except OSError as error:
            self.warn(f"skipped {relative}: {error.strerror or error}")
            return None
        if len(data) > self.max_file_bytes:
            self.warn(f"skipped {relative}: it grew over MAX_FILE_BYTES ({self.max_file_bytes}) while read")
            return None
        if b"\x00" in data:
            self.warn(f"skipped {relative}: it holds binary data, not text")
            return None
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            self.warn(f"skipped {relative}: it is not UTF-8 text (byte {error.start})")
            return None
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        front_matter, body = self._split_front_matter(relative, text)
        changed_at = max(status.st_mtime, status.st_ctime, link_status.st_mtime, link_status.st_ctime)
        return Note(relative=relative, location=location, data=data, body=body, front_matter=front_matter,
                    changed_at=changed_at, modified_at=status.st_mtime)

    def _split_front_matter(self, relative: str, text: str) -> tuple[dict[str, Any], str]:
        if not text.startswith("---\n"):
            return {}, text
        end = _FRONT_MATTER_END.search(text, 4)
        if end is None:
            return {}, text  # an opening rule without a closing one is a thematic break, not metadata
        block = text[4 : end.start()]
        body = text[end.end() :].lstrip("\n")
        try:
            # BaseLoader keeps every scalar as text: `no` stays "no", a date stays a string.
            loaded = yaml.load(block, Loader=_YAML_LOADER)  # noqa: S506 - BaseLoader builds no objects
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            where = f" (line {mark.line + 2})" if mark is not None else ""
            problem = getattr(error, "problem", None) or "it does not parse"
            self.warn(f"{relative}: the front matter is not valid YAML{where}: {problem}; indexed without it")
            return {}, body
        if loaded is None:
            return {}, body
        if not isinstance(loaded, dict):
            self.warn(f"{relative}: the front matter is not a set of keys; indexed without it")
            return {}, body
        return loaded, body

    def _assign_ids(self, notes: list[Note]) -> dict[str, Note]:
        by_id: dict[str, Note] = {}
        for note in notes:
            chosen = _text_value(note.front_matter, "id")
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
    # Links
    # -----------------------------------------------------------------------------------------

    def _resolve_links(self, notes: dict[str, Note]) -> None:
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
                target = self._markdown_target(note, raw, by_path)
                if target is not None:
                    targets.setdefault(target.id, None)
            for raw in _WIKI_LINK.findall(searchable):
                matches = by_name.get(raw.strip().casefold(), [])
                if len(matches) == 1:  # a name shared by two notes links to neither
                    targets.setdefault(matches[0].id, None)
            targets.pop(note.id, None)
            note.links = list(targets)

    @staticmethod
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

    # -----------------------------------------------------------------------------------------
    # Items
    # -----------------------------------------------------------------------------------------

    def version(self, note: Note) -> str:
        """A hash of the file, its place, and the notes it links to."""
        digest = hashlib.sha256()
        links = (link.encode("utf-8") for link in note.links)
        for part in (note.relative.encode("utf-8"), note.data, *links):
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
        return digest.hexdigest()[:16]

    def item(self, note: Note) -> dict[str, Any]:
        """The protocol record of one note."""
        front_matter = note.front_matter
        heading = first_h1(note.body)
        title = _text_value(front_matter, "title")
        skip_first_h1 = heading is not None and (title is None or title == heading)
        record: dict[str, Any] = {
            "id": note.id,
            "title": title or heading or note.stem or note.relative,
            "url": _text_value(front_matter, "url") or note.location.absolute().as_uri(),
            "version": self.version(note),
            "sections": split_markdown(note.body, skip_first_h1=skip_first_h1),
        }
        path = note.relative.split("/")[:-1]
        if path:
            record["path"] = path
        if note.links:
            record["links"] = note.links
        labels = self._labels(note)
        if labels:
            record["labels"] = labels
        record["updated"] = self._updated(note)
        weight = self._weight(note)
        if weight is not None:
            record["weight"] = weight
        return record

    def _labels(self, note: Note) -> list[str]:
        tags = note.front_matter.get("tags")
        if isinstance(tags, str):
            tags = tags.split(",")
        if not isinstance(tags, list):
            return []
        labels = {tag.strip().lstrip("#"): None for tag in tags if isinstance(tag, str)}
        labels.pop("", None)
        return list(labels)

    def _updated(self, note: Note) -> str:
        given = _text_value(note.front_matter, "updated")
        if given is not None:
            normalised = _iso_8601(given)
            if normalised is not None:
                return normalised
            self.warn(f"{note.relative}: updated {given!r} is not an ISO 8601 date; the file's time is used")
        return datetime.fromtimestamp(note.modified_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def _weight(self, note: Note) -> float | None:
        given = _text_value(note.front_matter, "weight")
        if given is None:
            return None
        try:
            weight = float(given)
        except ValueError:
            weight = math.nan
        if not 0 <= weight <= MAX_WEIGHT:
            self.warn(f"{note.relative}: weight {given!r} is not a number from 0 to {MAX_WEIGHT:g}; ignored")
            return None
        return weight


@cache
def _updated_pattern() -> str:
    # The protocol schema is the one rule table; take its pattern rather than repeat it here.
    return load_schema()["$defs"]["item"]["properties"]["updated"]["pattern"]


def _iso_8601(value: str) -> str | None:
    """``value`` as an ISO 8601 date or time the protocol accepts, or ``None``.

    A value already in the protocol's form is kept as written (``2026-10-28`` stays a date). Static
    site generators often write ``2026-10-28 09:00:00 +0200``; such a time is converted to UTC.
    """
    if re.search(_updated_pattern(), value):
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None  # the right shape but no such day, such as 2026-02-30
        return value
    try:
        moment = datetime.fromisoformat(re.sub(r"\s+(?=[+-][0-9]{2}:?[0-9]{2}$|Z$)", "", value))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

"""Reading FOLDER: the files the settings select, each read into a :class:`Note`.

Hidden files and folders and ``node_modules`` are never read; a symbolic link is followed only to a
file inside FOLDER; a file that is too large, binary or not UTF-8 is skipped with a warning, since
one odd file must not fail the call. Only a FOLDER that cannot be listed at all fails it: listing
nothing would look as if every note had been deleted.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from passageway_sdk import SourceError

from passageway_connector_markdown.front_matter import split_front_matter
from passageway_connector_markdown.globs import Globs

ALWAYS_SKIPPED = frozenset({"node_modules"})


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


class Folder:
    """The notes under ``root`` that ``include`` selects and ``exclude`` does not, each at most
    ``max_file_bytes`` long; ``warn`` reports what is skipped."""

    def __init__(self, root: Path, include: Globs, exclude: Globs, max_file_bytes: int,
                 warn: Callable[[str], None]) -> None:
        self.root = root
        self.include = include
        self.exclude = exclude
        self.max_file_bytes = max_file_bytes
        self.warn = warn

    def notes(self) -> list[Note]:
        """Every readable note, in a stable order (by path, folder by folder)."""
        return [note for note in map(self._read, self._candidates()) if note is not None]

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
        front_matter, body = split_front_matter(relative, text, self.warn)
        changed_at = max(status.st_mtime, status.st_ctime, link_status.st_mtime, link_status.st_ctime)
        return Note(relative=relative, location=location, data=data, body=body, front_matter=front_matter,
                    changed_at=changed_at, modified_at=status.st_mtime)

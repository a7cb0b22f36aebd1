"""Reading the site's files and writing ``ai/`` without being led anywhere else.

A site folder may come from anyone (a pull request's build, a downloaded archive), so the index
treats it as hostile input:

* it reads only regular files, opened without blocking and checked after opening, so a named
  pipe, a device or a socket is refused at once instead of hanging the run, and a file larger than
  :data:`MAX_FILE_BYTES` is refused before it is read, which bounds the memory a page can take;
* it writes only inside ``SITE_DIR/ai``: an ``ai`` that is a symbolic link (or anything but a
  folder) is refused, and each output goes to a fresh temporary name created with ``O_EXCL`` and
  ``O_NOFOLLOW``, then renamed over the old file, so a link planted at any name in ``ai/`` is
  replaced, never written through.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from passageway import PassagewayError

MAX_FILE_BYTES = 16 * 1024 * 1024
"""The largest page, twin or JSON file read: documentation pages are far smaller, and a cap keeps a
hostile file from taking gigabytes of memory."""
MAX_JSON_DEPTH = 64
"""How deep the site's JSON files may nest; theirs is four levels."""

_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NON_BLOCKING = getattr(os, "O_NONBLOCK", 0)


class PassageIndexError(PassagewayError):
    """A built site cannot be indexed: a file or field is missing or wrong (the message names it)."""

    exit_code = 2


class UnreadablePage(PassageIndexError):
    """One page cannot be read (not UTF-8, not a regular file, too large, an OS error).

    The index skips such a page with a warning unless ``--strict`` is given."""


def read_bytes(path: Path, shown: str) -> bytes:
    """The content of the regular file ``path``; ``shown`` names it in errors.

    :raises FileNotFoundError: there is no such file.
    :raises UnreadablePage: it is not a regular file, is larger than :data:`MAX_FILE_BYTES`, or
        cannot be read.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | _NON_BLOCKING | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except OSError as error:
        raise UnreadablePage(f"{shown} cannot be read ({error.strerror})") from None
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise UnreadablePage(f"{shown} is not a regular file; the index reads only files")
        if status.st_size > MAX_FILE_BYTES:
            raise UnreadablePage(
                f"{shown} is {status.st_size:,} bytes, over the {MAX_FILE_BYTES:,} the index reads"
            )
        try:
            content = handle.read(MAX_FILE_BYTES + 1)
        except OSError as error:
            raise UnreadablePage(f"{shown} cannot be read ({error.strerror})") from None
    if len(content) > MAX_FILE_BYTES:  # it grew while being read
        raise UnreadablePage(f"{shown} is over the {MAX_FILE_BYTES:,} bytes the index reads")
    return content


def read_text(path: Path, shown: str) -> str:
    """The UTF-8 text of ``path`` (a BOM dropped, CRLF made LF).

    :raises UnreadablePage: as :func:`read_bytes`, or the file is not UTF-8.
    """
    try:
        text = read_bytes(path, shown).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnreadablePage(f"{shown} is not UTF-8 text") from None
    return text.replace("\r\n", "\n")


def load_json(path: Path, shown: str) -> Any:
    """A JSON file of the site, refused with one line when it cannot be read or nests too deep."""
    try:
        value = json.loads(read_text(path, shown))
    except UnreadablePage as error:
        raise PassageIndexError(f"{error}; rebuild the site") from None
    except json.JSONDecodeError as error:
        raise PassageIndexError(f"{shown}: cannot be read as JSON ({error}); rebuild the site") from None
    except RecursionError:
        raise PassageIndexError(f"{shown}: nests deeper than JSON can be read; rebuild the site") from None
    if _depth_over(value, MAX_JSON_DEPTH):
        raise PassageIndexError(
            f"{shown}: nests more than {MAX_JSON_DEPTH} levels deep, which no site file does; "
            "rebuild the site"
        )
    return value


def _depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` nests deeper than ``limit`` (checked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(current, dict):
            stack.extend((child, depth + 1) for child in current.values())
        elif isinstance(current, list):
            stack.extend((child, depth + 1) for child in current)
    return False


@cache
def _validator(schema_name: str, definition: str) -> Any:
    import jsonschema

    text = resources.files("passageway_passage_index").joinpath(
        "schemas", f"{schema_name}.schema.json"
    ).read_text("utf-8")
    schema = json.loads(text)
    sub = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}
    return jsonschema.Draft202012Validator(sub)


def load_schema(name: str) -> dict[str, Any]:
    """One of this package's JSON Schemas (``schemas/<name>.schema.json``)."""
    text = resources.files("passageway_passage_index").joinpath("schemas", f"{name}.schema.json")
    return json.loads(text.read_text("utf-8"))


def schema_errors(schema_name: str, definition: str, value: Any) -> list[str]:
    """Every way ``value`` breaks ``$defs/<definition>`` of one of this package's schemas."""
    messages = []
    for error in sorted(_validator(schema_name, definition).iter_errors(value),
                        key=lambda e: [str(part) for part in e.absolute_path]):
        where = "/".join(str(part) for part in error.absolute_path) or "the record"
        message = error.message if len(error.message) <= 200 else error.message[:199] + "…"
        messages.append(f"{where}: {message}")
    return messages


def output_folder(site_dir: Path, name: str) -> Path:
    """``site_dir/name``, made if missing; refused when it is a link or not a folder.

    :raises PassageIndexError: the path is a symbolic link, or exists and is not a folder.
    """
    folder = site_dir / name
    try:
        status = folder.lstat()
    except FileNotFoundError:
        folder.mkdir(mode=0o755)
        status = folder.lstat()
    if stat.S_ISLNK(status.st_mode):
        raise PassageIndexError(
            f"{folder} is a symbolic link; the index writes only inside the site folder, so remove the link"
        )
    if not stat.S_ISDIR(status.st_mode):
        raise PassageIndexError(f"{folder} is not a folder; remove it, the index writes a folder there")
    return folder


def write_atomically(folder: Path, name: str, content: bytes) -> None:
    """Write ``folder/name`` through a fresh temporary file, never following a link.

    The temporary file is created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` under a random name, so
    nothing planted in ``folder`` beforehand is opened, and renamed over ``name``; a rename replaces
    a link at ``name`` instead of writing to its target.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NO_FOLLOW | getattr(os, "O_CLOEXEC", 0)
    temporary = folder / f".{name}.{secrets.token_hex(8)}.tmp"
    descriptor = os.open(temporary, flags, 0o644)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(content)
        os.replace(temporary, folder / name)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise

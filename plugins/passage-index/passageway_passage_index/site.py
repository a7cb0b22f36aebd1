"""Reading a built site: ``documents.json``, each page's Markdown twin and ``search-index.json``.

Every file is checked against its JSON Schema (``schemas/site-documents.schema.json``,
``schemas/site-search-index.schema.json``) before anything is read from it, and every rule a
schema cannot say (an ID or URL given twice, a twin that is missing or not UTF-8) is checked here.
A problem raises :class:`PassageIndexError` naming the file and the field, so the user knows
which part of the build to fix. The format is written down in ``docs/reference/passage-index.md``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import attrs

from passageway_passage_index.files import (
    PassageIndexError,
    UnreadablePage,
    load_json,
    read_text,
    schema_errors,
)

DOCUMENTS_FILE = "documents.json"
SEARCH_INDEX_FILE = "search-index.json"

_FRONT_MATTER_END = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)

Skip = Callable[[UnreadablePage], None]
"""Told about a page that cannot be read; it raises to stop the run (``--strict``) or records it."""


@attrs.frozen
class SourceSection:
    """A section a page's HTML gave directly: its heading level (0 for the intro, 2 or 3), heading
    text, the HTML id its heading carries, and its Markdown text."""

    level: int
    name: str
    anchor: str | None
    text: str


@attrs.frozen
class Page:
    """One published page: from ``documents.json`` with its Markdown twin's text, or from HTML."""

    id: str
    title: str
    type: str
    url: str
    markdown_url: str | None
    """The page's Markdown twin; None for a page read from HTML."""
    variant: str
    """``channel|version|language``."""
    digest: str
    reader_filters: dict[str, list[str]] | None
    markdown: str
    """The twin's text without its front matter (empty for a page read from HTML)."""
    sections: tuple[SourceSection, ...] | None = None
    """The sections of a page read from HTML, with their anchors; None for a twin."""


@attrs.frozen
class Heading:
    """A heading that ``search-index.json`` knows, with the HTML id a link can point at."""

    level: int
    text: str
    id: str


def has_build_contract(site_dir: Path) -> bool:
    """Whether the build wrote the specification's contract (``documents.json``), read first."""
    return (site_dir / DOCUMENTS_FILE).exists()


def read_contract(site_dir: Path, skip: Skip) -> tuple[list[Page], dict[str, list[Heading]] | None]:
    """The pages in ``documents.json`` order, and the headings by page URL (None: no search index).

    A twin that cannot be read (not UTF-8, not a regular file, too large) goes to ``skip``.

    :raises PassageIndexError: a file is missing, is not valid JSON, breaks its schema, or names
        a twin that does not exist; the message names the file and the field.
    """
    documents = _load_json(site_dir / DOCUMENTS_FILE, "site-documents", "documentsFile", required=True)
    pages = _pages(site_dir, documents, skip)
    search_index = _load_json(site_dir / SEARCH_INDEX_FILE, "site-search-index", "searchIndexFile",
                              required=False)
    headings = None if search_index is None else _headings(search_index)
    return pages, headings


def _load_json(path: Path, schema: str, definition: str, *, required: bool) -> Any:
    if not path.exists():
        if required:
            raise PassageIndexError(
                f"{path} does not exist; build the site first, then run `passageway index` on its "
                "output folder"
            )
        return None
    value = load_json(path, path.name)
    problems = schema_errors(schema, definition, value)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise PassageIndexError(
            f"{path.name}: {problems[0]}{more}; docs/reference/passage-index.md gives the format"
        )
    return value


def _pages(site_dir: Path, documents: dict[str, Any], skip: Skip) -> list[Page]:
    root = site_dir.resolve()
    pages: list[Page] = []
    seen_ids: dict[tuple[str, str], int] = {}
    seen_urls: dict[str, int] = {}
    for index, record in enumerate(documents["documents"]):
        where = f"{DOCUMENTS_FILE}: documents/{index}"
        publication = record["publication"]
        variant = "|".join((publication["channel"], publication["version"], publication["language"]))
        key = (variant, record["id"])
        if key in seen_ids:
            raise PassageIndexError(
                f"{where}/id: {record['id']!r} is also documents/{seen_ids[key]} in the publication "
                f"{variant}; a page ID is unique within its publication"
            )
        seen_ids[key] = index
        if record["url"] in seen_urls:
            raise PassageIndexError(
                f"{where}/url: {record['url']} is also the url of documents/{seen_urls[record['url']]}; "
                "every page has a URL of its own"
            )
        seen_urls[record["url"]] = index
        try:
            markdown = _read_twin(root, record["markdownUrl"], f"{where}/markdownUrl")
        except UnreadablePage as problem:
            skip(problem)
            continue
        pages.append(
            Page(
                id=record["id"],
                title=record["title"].strip(),
                type=record["type"],
                url=record["url"],
                markdown_url=record["markdownUrl"],
                variant=variant,
                digest=record["digest"],
                reader_filters=record.get("readerFilters") or None,
                markdown=markdown,
            )
        )
    return pages


def _read_twin(root: Path, markdown_url: str, where: str) -> str:
    path = (root / unquote(markdown_url).lstrip("/")).resolve()
    if not path.is_relative_to(root):
        raise PassageIndexError(
            f"{where}: {markdown_url} leads outside the site folder; give a path inside it"
        )
    try:
        text = read_text(path, f"{where}: {markdown_url}")
    except FileNotFoundError:
        raise PassageIndexError(
            f"{where}: {markdown_url} does not exist in the site folder; build the page's Markdown twin"
        ) from None
    return strip_front_matter(text)

def strip_front_matter(text: str) -> str:
    """``text`` without a YAML front matter block (``---`` lines at the very start)."""
    if not text.startswith("---\n"):
        return text
    end = _FRONT_MATTER_END.search(text, 4)
    if end is None:
        return text
    return text[end.end() :].lstrip("\n")


def _headings(search_index: dict[str, Any]) -> dict[str, list[Heading]]:
    headings: dict[str, list[Heading]] = {}
    for index, page in enumerate(search_index["pages"]):
        if page["url"] in headings:
            raise PassageIndexError(
                f"{SEARCH_INDEX_FILE}: pages/{index}/url: {page['url']} is listed twice; list each page once"
            )
        headings[page["url"]] = [Heading(h["level"], h["text"], h["id"]) for h in page["headings"]]
    return headings

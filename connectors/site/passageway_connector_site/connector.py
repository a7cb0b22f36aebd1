"""The site connector: a built documentation site's pages, read from its passage index.

``passageway index SITE_DIR`` writes ``SITE_DIR/ai/chunks.json`` when the site is built; this
connector serves that file to passageway, so a docs site is searchable through ``recall``
without reading its Markdown again. One item per page (or, with ``ITEMS=passages``, one per
passage, so that each hit carries its section's link); the passages are the sections, headed
by their heading path.

Every call reads the whole file: it is written in one piece, and an item's version and links
depend on the other pages.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from passageway_sdk import Connector, SettingsError, SourceError

CHUNKS_FILE = Path("ai") / "chunks.json"
TRAIL_SEPARATOR = " › "
REQUIRED_FIELDS = ("id", "docId", "title", "type", "variant", "headingPath", "url", "text", "digest")
ITEM_MODES = ("pages", "passages")

_LINK_TARGET = re.compile(r"(?<!!)\[[^\[\]]*\]\(\s*<?([^()<>\s]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


class Page:
    """The passages of one page, in file order."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.chunks: list[dict[str, Any]] = []


class SiteConnector(Connector):
    """Serve ``SITE_DIR/ai/chunks.json``. Settings: SITE_DIR, SITE_URL, VARIANT, ITEMS."""

    name = "site connector"

    def __init__(self, env: Mapping[str, str]) -> None:
        folder = env.get("SITE_DIR", "").strip()
        if not folder:
            raise SettingsError("SITE_DIR is not set; set it to the built site's output folder")
        self.site_dir = Path(folder).expanduser()
        if not self.site_dir.is_dir():
            raise SettingsError(f"SITE_DIR {folder!r} is not an existing folder")
        self.site_url = env.get("SITE_URL", "").strip().rstrip("/")
        if self.site_url and not re.match(r"^https?://[^/\s]+", self.site_url):
            raise SettingsError(f"SITE_URL {self.site_url!r} is not an http:// or https:// address")
        self.variant = env.get("VARIANT", "").strip() or None
        self.mode = env.get("ITEMS", "").strip() or "pages"
        if self.mode not in ITEM_MODES:
            raise SettingsError(f"ITEMS is pages or passages, not {self.mode!r}")
        self._pages: dict[str, Page] | None = None

    # -----------------------------------------------------------------------------------------
    # The protocol
    # -----------------------------------------------------------------------------------------

    def versions(self) -> dict[str, str]:
        return {item["id"]: item["version"] for item in self.items()}

    def fetch(self, ids: Sequence[str]) -> Iterator[dict[str, Any]]:
        by_id = {item["id"]: item for item in self.items()}
        for item_id in ids:
            if item_id in by_id:
                yield by_id[item_id]

    def changed(self, since: datetime) -> Iterator[dict[str, Any]]:
        """Every item when the index was rewritten since ``since``; the core keeps what did not change."""
        path = self.site_dir / CHUNKS_FILE
        if path.is_file() and path.stat().st_mtime >= since.timestamp():
            yield from self.items()

    # -----------------------------------------------------------------------------------------
    # Reading the index
    # -----------------------------------------------------------------------------------------

    def pages(self) -> dict[str, Page]:
        """The pages by URL, in file order; read once per call."""
        if self._pages is None:
            self._pages = {}
            for chunk in self._chunks():
                if self.variant is not None and chunk["variant"] != self.variant:
                    continue
                page_url = chunk["url"].split("#", 1)[0]
                self._pages.setdefault(page_url, Page(page_url)).chunks.append(chunk)
        return self._pages

    def _chunks(self) -> list[dict[str, Any]]:
        path = self.site_dir / CHUNKS_FILE
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise SourceError(
                f"{path} does not exist; run `passageway index {self.site_dir}` after building the site"
            ) from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise SourceError(
                f"{path} cannot be read as JSON ({error}); run `passageway index` again"
            ) from None
        if not isinstance(document, dict) or document.get("schemaVersion") != 1:
            raise SourceError(f"{path}: schemaVersion is not 1; run `passageway index` of this version again")
        chunks = document.get("chunks")
        if not isinstance(chunks, list):
            raise SourceError(f"{path}: chunks is not a list; run `passageway index` again")
        for index, chunk in enumerate(chunks):
            missing = [name for name in REQUIRED_FIELDS if not isinstance(chunk, dict) or name not in chunk]
            if missing:
                raise SourceError(f"{path}: chunks/{index} has no {missing[0]}; run `passageway index` again")
        return chunks

    # -----------------------------------------------------------------------------------------
    # Items
    # -----------------------------------------------------------------------------------------

    def items(self) -> list[dict[str, Any]]:
        pages = self.pages()
        twins = {page.chunks[0].get("markdownUrl"): url for url, page in pages.items()}
        items = []
        for page in pages.values():
            links = self._links(page, pages, twins)
            if self.mode == "pages":
                items.append(self._item(page.url, page.url, page.chunks, links))
            else:
                items.extend(self._item(_passage_id(page, chunk), page.url, [chunk], links)
                             for chunk in page.chunks)
        return items

    def _item(
        self, item_id: str, page_url: str, chunks: list[dict[str, Any]], links: list[str]
    ) -> dict[str, Any]:
        first = chunks[0]
        marks = first.get("readerFilters") or {}
        labels = [first["type"], first["variant"], *(f"{name}:{value}" for name, values in marks.items()
                                                     for value in values)]
        record: dict[str, Any] = {
            "id": item_id,
            "title": first["title"],
            "url": self.site_url + (first["url"] if self.mode == "passages" else page_url),
            "version": _version(chunks, links),
            "sections": [
                {"heading": TRAIL_SEPARATOR.join(chunk["headingPath"]) or None, "text": chunk["text"]}
                for chunk in chunks
            ],
            "labels": list(dict.fromkeys(label for label in labels if label)),
        }
        if links:
            record["links"] = links
        return record

    def _links(self, page: Page, pages: Mapping[str, Page], twins: Mapping[str | None, str]) -> list[str]:
        """The items this page's passages link to: pages by URL, section anchor or Markdown twin."""
        found: list[str] = []
        for chunk in page.chunks:
            for target in _LINK_TARGET.findall(chunk["text"]):
                resolved = self._resolve(target, page.url)
                target_url = resolved if resolved in pages else twins.get(resolved)
                if target_url is None or target_url == page.url:
                    continue
                if self.mode == "pages":
                    found.append(target_url)
                else:
                    anchor = target.split("#", 1)[1] if "#" in target else None
                    found.append(_passage_for(pages[target_url], anchor))
        return list(dict.fromkeys(found))

    def _resolve(self, target: str, page_url: str) -> str | None:
        if self.site_url and target.startswith(self.site_url + "/"):
            target = target[len(self.site_url) :]
        if _SCHEME.match(target) or target.startswith("#"):
            return None
        path = target.split("#", 1)[0].split("?", 1)[0]
        if not path.startswith("/"):
            path = posixpath.join(posixpath.dirname(page_url), path)
        return posixpath.normpath(path)


def _passage_for(page: Page, anchor: str | None) -> str:
    """The item id (passage URL) a link to ``page#anchor`` lands on: the passage with that anchor."""
    if anchor is not None:
        for chunk in page.chunks:
            if chunk["url"] == f"{page.url}#{anchor}":
                return _passage_id(page, chunk)
    return _passage_id(page, page.chunks[0])


def _passage_id(page: Page, chunk: dict[str, Any]) -> str:
    """A passage's item id: its page URL, ``#`` and the part of its passage ID after ``#``.

    The passage ID alone repeats across publications; the page URL does not."""
    return f"{page.url}#{str(chunk['id']).split('#', 1)[-1]}"


def _version(chunks: list[dict[str, Any]], links: list[str]) -> str:
    shown = [[chunk["digest"], chunk["url"], chunk.get("readerFilters"), chunk["type"]] for chunk in chunks]
    text = json.dumps([shown, links], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

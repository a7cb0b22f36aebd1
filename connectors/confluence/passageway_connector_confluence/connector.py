"""The Confluence connector: the current pages of chosen spaces of a Data Center or Server site."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from passageway_sdk import Connector, SourceError

from passageway_connector_confluence.rest import NotFound, RestClient
from passageway_connector_confluence.settings import ConfluenceSettings, load_settings
from passageway_connector_confluence.storage import storage_sections

LIST_EXPAND = "version,metadata.labels"
PAGE_EXPAND = "body.storage,version,metadata.labels,ancestors,space"
MAX_PATH = 4
EARLY_WINDOW = timedelta(hours=14)
"""CQL reads a time in the server's zone, which may be up to 14 hours ahead of UTC."""


def labels_of(page: Mapping[str, Any]) -> list[str]:
    """A page's own label names, as the ``metadata.labels`` expansion gives them."""
    found = ((page.get("metadata") or {}).get("labels") or {}).get("results") or []
    return sorted(
        {str(label.get("name")) for label in found if isinstance(label, Mapping) and label.get("name")}
    )


def version_of(page: Mapping[str, Any]) -> str:
    """The page version number and a digest of its labels, so a relabel is fetched again too."""
    number = (page.get("version") or {}).get("number")
    digest = hashlib.sha256("|".join(labels_of(page)).encode("utf-8")).hexdigest()[:8]
    return f"{number}-{digest}"


def cql_time(moment: datetime) -> str:
    """A time as CQL compares it, ``yyyy/MM/dd HH:mm``."""
    return moment.strftime("%Y/%m/%d %H:%M")


class ConfluenceConnector(Connector):
    """Reports the current pages of the spaces in ``SPACES`` as protocol items.

    Keyword options (``first_wait``, ``max_wait``, ``retry_after_cap``, ``total_wait_cap``,
    ``sleep``) go to :class:`RestClient`; they exist for tests.
    """

    name = "confluence connector"

    def __init__(self, env: Mapping[str, str], **client_options: Any) -> None:
        self.settings: ConfluenceSettings = load_settings(env)
        self.client = RestClient(
            self.settings.url,
            self.settings.token,
            timeout=self.settings.timeout,
            verify_tls=self.settings.verify_tls,
            pause_seconds=self.settings.pause_seconds,
            log=self.warn,
            **client_options,
        )

    def warn(self, message: str) -> None:
        super().warn(self.client.mask(message))

    def _wanted(self, page: Mapping[str, Any]) -> bool:
        labels = {label.lower() for label in labels_of(page)}
        if self.settings.include_labels and not labels & self.settings.include_labels:
            return False
        return not labels & self.settings.exclude_labels

    def _most_listed(self) -> int:
        """The most results one listing may give: room for pages left out by their labels, and
        a bound for a server that lists without end."""
        return max(10 * self.settings.max_pages, 1000)

    def versions(self) -> dict[str, str]:
        pages: dict[str, str] = {}
        for key in self.settings.spaces:
            try:
                self.client.get(f"/space/{key}", what=f"the space {key}")
            except NotFound:
                raise SourceError(
                    f"the space {key!r} does not exist or the token's user cannot see it; "
                    "check SPACES and the user's permissions"
                ) from None
            before = len(pages)
            listing = self.client.pages(
                "/content",
                {"spaceKey": key, "type": "page", "status": "current", "expand": LIST_EXPAND},
                f"the pages of space {key}",
                most=self._most_listed(),
            )
            for page in listing:
                if self._wanted(page):
                    pages[str(page["id"])] = version_of(page)
                if len(pages) > self.settings.max_pages:
                    raise SourceError(
                        f"the spaces hold more than MAX_PAGES = {self.settings.max_pages} pages; "
                        "narrow SPACES "
                        "or INCLUDE_LABELS, or raise MAX_PAGES (nothing was cut off)"
                    )
            if len(pages) == before:
                self.warn(
                    f"the space {key} lists no pages to index; check the key, the labels and the "
                    "token's permissions"
                )
        return pages

    def fetch(self, ids: Sequence[str]) -> Iterator[dict[str, Any]]:
        for page_id in ids:
            if not page_id.isdigit():
                continue
            try:
                page = self.client.get(f"/content/{page_id}", {"expand": PAGE_EXPAND}, f"page {page_id}")
            except NotFound:
                continue  # deleted since the listing
            item = self._item(page)
            if item is not None:
                yield item

    def changed(self, since: datetime) -> Iterator[dict[str, Any]]:
        spaces = ", ".join(f'"{key}"' for key in self.settings.spaces)
        cql = f'space in ({spaces}) and type = page and lastmodified >= "{cql_time(since - EARLY_WINDOW)}"'
        for page in self.client.pages(
            "/content/search", {"cql": cql, "expand": PAGE_EXPAND}, "the changed pages",
            most=self._most_listed(),
        ):
            item = self._item(page)
            if item is not None:
                yield item

    def _item(self, page: Mapping[str, Any]) -> dict[str, Any] | None:
        space = str((page.get("space") or {}).get("key") or "")
        if page.get("type") != "page" or page.get("status", "current") != "current":
            return None
        if space not in self.settings.spaces or not self._wanted(page):
            return None
        storage = ((page.get("body") or {}).get("storage") or {}).get("value")
        if not isinstance(storage, str):
            raise SourceError(f"Confluence answered page {page.get('id')} without its storage format body")
        ancestors = [
            str(ancestor.get("title")) for ancestor in page.get("ancestors") or () if ancestor.get("title")
        ]
        item: dict[str, Any] = {
            "id": str(page["id"]),
            "title": str(page.get("title") or page["id"]),
            "url": self.settings.page_link(str(page["id"])),
            "version": version_of(page),
            "sections": storage_sections(storage),
            "weight": 1.0,
            "labels": [f"space:{space}", *labels_of(page)],
        }
        if ancestors:
            item["path"] = ancestors[-MAX_PATH:]
        when = (page.get("version") or {}).get("when")
        if isinstance(when, str) and when[:4].isdigit():
            item["updated"] = when
        return item

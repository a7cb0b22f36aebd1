"""The Wikipedia connector: categories, titles or a place on a MediaWiki site, one item per article."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from passageway_sdk import Connector, SourceError

from passageway_connector_wikipedia.api import ApiError, MediaWikiClient
from passageway_connector_wikipedia.settings import WikipediaSettings, load_settings
from passageway_connector_wikipedia.text import html_sections

ARTICLE_NAMESPACE = 0
CATEGORY_NAMESPACE = 14
BATCH = 50  # titles or page ids per query, the API's limit for clients without bot rights
GEOSEARCH_LIMIT = 500


def _chunks(values: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


class WikipediaConnector(Connector):
    """Reports the articles of some categories, some titles or a place, as protocol items.

    Keyword options (``first_wait``, ``max_wait``, ``retry_after_cap``, ``total_wait_cap``,
    ``request_timeout``, ``sleep``) go to :class:`MediaWikiClient`; they exist for tests.
    """

    name = "wikipedia connector"

    def __init__(self, env: Mapping[str, str], **client_options: Any) -> None:
        self.settings: WikipediaSettings = load_settings(env)
        self.client = MediaWikiClient(
            self.settings.api_url,
            contact=self.settings.contact,
            pause_seconds=self.settings.pause_seconds,
            log=self.warn,
            **client_options,
        )

    # -- the scope ----------------------------------------------------------------------------

    def versions(self) -> dict[str, str]:
        settings = self.settings
        pages: dict[str, str] = {}

        def add(page: Mapping[str, Any]) -> None:
            if "pageid" not in page or "lastrevid" not in page:
                return
            pages[str(page["pageid"])] = str(page["lastrevid"])
            if len(pages) > settings.max_pages:
                raise SourceError(
                    f"the scope has more than MAX_PAGES = {settings.max_pages} pages; narrow CATEGORIES, "
                    "lower CATEGORY_DEPTH or raise MAX_PAGES (nothing was cut off)"
                )

        for category in settings.categories:
            self._category_pages(category, add)
        if settings.titles:
            self._title_pages(settings.titles, add)
        if settings.geo is not None:
            self._geo_pages(add)
        return pages

    def _check_category(self, category: str) -> None:
        answer = self.client.get({"action": "query", "titles": category, "prop": "info|categoryinfo"})
        found = answer.get("query", {}).get("pages") or [{}]
        page = found[0]
        where = self.settings.api_url
        if page.get("invalid"):
            raise SourceError(f"{category!r} is not a valid page title at {where}; check CATEGORIES")
        if page.get("ns") != CATEGORY_NAMESPACE:
            raise SourceError(
                f"{category!r} is not a category at {where}; write a bare name (Deep learning) "
                "or the wiki's own prefix (Kategorie:Deep Learning) in CATEGORIES"
            )
        if page.get("missing") and not page.get("categoryinfo", {}).get("size"):
            raise SourceError(
                f"the category {category!r} does not exist at {where}; check CATEGORIES and LANGUAGE"
            )

    def _category_pages(self, category: str, add: Callable[[Mapping[str, Any]], None]) -> None:
        self._check_category(category)
        seen = {category}
        queue: deque[tuple[str, int]] = deque([(category, 0)])
        while queue:
            current, depth = queue.popleft()
            batches = self.client.query(
                {
                    "generator": "categorymembers",
                    "gcmtitle": current,
                    "gcmnamespace": f"{ARTICLE_NAMESPACE}|{CATEGORY_NAMESPACE}",
                    "gcmtype": "page|subcat",
                    "gcmlimit": "max",
                    "prop": "info",
                }
            )
            for batch in batches:
                for page in batch.get("pages", []):
                    namespace = page.get("ns")
                    if namespace == CATEGORY_NAMESPACE:
                        title = page.get("title", "")
                        if depth < self.settings.category_depth and title and title not in seen:
                            seen.add(title)
                            queue.append((title, depth + 1))
                    elif namespace == ARTICLE_NAMESPACE and not page.get("redirect"):
                        add(page)

    def _title_pages(self, titles: Sequence[str], add: Callable[[Mapping[str, Any]], None]) -> None:
        for chunk in _chunks(titles, BATCH):
            for batch in self.client.query({"titles": "|".join(chunk), "redirects": "1", "prop": "info"}):
                for page in batch.get("pages", []):
                    if page.get("missing") or page.get("invalid"):
                        self.warn(f"no page titled {page.get('title', '?')!r}; left out")
                    elif page.get("redirect"):
                        # A redirect that points on to another redirect or into a loop.
                        self.warn(
                            f"{page.get('title', '?')!r} redirects without reaching an article; left out"
                        )
                    else:
                        add(page)

    def _geo_pages(self, add: Callable[[Mapping[str, Any]], None]) -> None:
        geo = self.settings.geo
        assert geo is not None
        limit = min(GEOSEARCH_LIMIT, self.settings.max_pages + 1)
        try:
            answer = self.client.get(
                {
                    "action": "query",
                    "generator": "geosearch",
                    "ggscoord": f"{geo.latitude}|{geo.longitude}",
                    "ggsradius": str(geo.radius),
                    "ggslimit": str(limit),
                    "ggsnamespace": str(ARTICLE_NAMESPACE),
                    "prop": "info",
                }
            )
        except ApiError as error:
            if error.code in ("badvalue", "unknown_generator"):
                raise SourceError(
                    f"{self.settings.api_url} offers no geosearch (the GeoData extension); "
                    "use CATEGORIES or TITLES there"
                ) from None
            raise
        found = [page for page in answer.get("query", {}).get("pages", []) if not page.get("redirect")]
        if len(found) >= GEOSEARCH_LIMIT:
            self.warn(
                f"geosearch returns at most {GEOSEARCH_LIMIT} pages; a smaller GEO radius sees them all"
            )
        for page in found:
            add(page)

    # -- the items ----------------------------------------------------------------------------

    def _existing_articles(self, ids: Sequence[str]) -> set[str]:
        existing: set[str] = set()
        numeric = [item_id for item_id in ids if item_id.isdigit()]
        for chunk in _chunks(numeric, BATCH):
            answer = self.client.get({"action": "query", "pageids": "|".join(chunk), "prop": "info"})
            for page in answer.get("query", {}).get("pages", []):
                if (
                    not (page.get("missing") or page.get("invalid") or page.get("redirect"))
                    and "pageid" in page
                ):
                    existing.add(str(page["pageid"]))
        return existing

    def fetch(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        existing = self._existing_articles(ids)
        items: list[dict[str, Any]] = []
        for item_id in ids:
            if item_id not in existing:
                continue
            try:
                answer = self.client.get(
                    {
                        "action": "parse",
                        "pageid": item_id,
                        "prop": "text|revid",
                        "disablelimitreport": "1",
                        "disableeditsection": "1",
                    }
                )
            except ApiError as error:
                if error.code in ("missingtitle", "nosuchpageid"):
                    continue  # deleted between the two requests
                raise
            parsed = answer.get("parse") or {}
            title, revision, html = parsed.get("title"), parsed.get("revid"), parsed.get("text")
            if not isinstance(title, str) or revision is None or not isinstance(html, str):
                raise SourceError(
                    f"{self.settings.api_url} answered a parse of page {item_id} without its text"
                )
            items.append(
                {
                    "id": item_id,
                    "title": title,
                    "url": self.settings.page_link(title),
                    "version": str(revision),
                    "sections": html_sections(html, self.settings.skip_sections),
                }
            )
        return items

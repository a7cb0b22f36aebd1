"""An in-test fake of the MediaWiki Action API, served by aiohttp on 127.0.0.1.

It knows just enough of ``api.php`` for the connector: ``action=query`` with ``titles``
(``redirects``, ``prop=info|categoryinfo``), ``pageids``, ``generator=categorymembers`` (two
members per batch, so continuation is exercised) and ``generator=geosearch``; and
``action=parse`` by page id. Failures can be scripted: HTTP statuses with ``Retry-After``,
``maxlag`` errors, an HTML answer.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

MEMBERS_PER_BATCH = 2


@dataclass
class FakePage:
    pageid: int
    title: str
    ns: int = 0
    revid: int = 1
    html: str = ""
    categories: tuple[str, ...] = ()
    redirect_to: str | None = None
    coordinates: tuple[float, float] | None = None


@dataclass
class Failure:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""
    content_type: str = "application/json"


def section_html(level: int, heading: str, body: str) -> str:
    """A heading as MediaWiki 1.39 writes it, with its edit link, then the body."""
    anchor = heading.replace(" ", "_")
    return (
        f'<h{level}><span class="mw-headline" id="{anchor}">{heading}</span>'
        f'<span class="mw-editsection"><span class="mw-editsection-bracket">[</span>'
        f'<a href="/w/index.php?title=X&amp;action=edit&amp;section=1">edit</a>'
        f'<span class="mw-editsection-bracket">]</span></span></h{level}>\n{body}\n'
    )


def article_html(lead: str, *sections: tuple[int, str, str]) -> str:
    parts = [f'<div class="mw-parser-output"><p>{lead}</p>\n']
    parts.extend(section_html(level, heading, body) for level, heading, body in sections)
    parts.append("<!-- NewPP limit report\nCPU time usage: 0.1 seconds\n--></div>")
    return "".join(parts)


class FakeMediaWiki:
    # Reachable from tests through the fixture, since conftest modules are not importable.
    Page = FakePage
    article_html = staticmethod(article_html)

    def __init__(self) -> None:
        self.pages: dict[int, FakePage] = {}
        self.requests: list[dict[str, Any]] = []
        self.failures: list[Failure] = []
        self.always: Failure | None = None
        self.port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # -- content ------------------------------------------------------------------------------

    def add(self, page: FakePage) -> FakePage:
        self.pages[page.pageid] = page
        return page

    def fail_next(self, **failure: Any) -> None:
        self.failures.append(Failure(**failure))

    def fail_always(self, **failure: Any) -> None:
        self.always = Failure(**failure)

    def maxlag_next(self, retry_after: str = "5") -> None:
        body = json.dumps(
            {"error": {"code": "maxlag", "info": "Waiting for a database server: 7 seconds lagged."}}
        )
        self.failures.append(
            Failure(headers={"Retry-After": retry_after, "MediaWiki-API-Error": "maxlag"}, body=body)
        )

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/w/api.php"

    @property
    def page_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/wiki/"

    def _by_title(self, title: str) -> FakePage | None:
        wanted = title.replace("_", " ").strip()
        wanted = wanted[:1].upper() + wanted[1:]
        return next((page for page in self.pages.values() if page.title == wanted), None)

    @staticmethod
    def _info(page: FakePage) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "pageid": page.pageid,
            "ns": page.ns,
            "title": page.title,
            "lastrevid": page.revid,
            "contentmodel": "wikitext",
        }
        if page.redirect_to:
            entry["redirect"] = True
        return entry

    def _members(self, category: str) -> list[FakePage]:
        return sorted(
            (page for page in self.pages.values() if category in page.categories), key=lambda page: page.title
        )

    # -- the API ------------------------------------------------------------------------------

    def _query(self, params: dict[str, str]) -> dict[str, Any]:
        if "titles" in params:
            return self._query_titles(params)
        if "pageids" in params:
            pages = []
            for raw in params["pageids"].split("|"):
                page = self.pages.get(int(raw))
                pages.append(self._info(page) if page else {"pageid": int(raw), "missing": True})
            return {"batchcomplete": True, "query": {"pages": pages}}
        generator = params.get("generator")
        if generator == "categorymembers":
            return self._query_members(params)
        if generator == "geosearch":
            return self._query_near(params)
        info = f'Unrecognized value for parameter "generator": {generator}.'
        return {"error": {"code": "badvalue", "info": info}}

    def _query_titles(self, params: dict[str, str]) -> dict[str, Any]:
        pages, redirects = [], []
        for title in params["titles"].split("|"):
            page = self._by_title(title)
            if page and page.redirect_to and params.get("redirects"):
                target = self._by_title(page.redirect_to)
                redirects.append({"from": page.title, "to": page.redirect_to})
                page = target
                title = redirects[-1]["to"]
            if page is None:
                entry: dict[str, Any] = {
                    "ns": 14 if title.startswith("Category:") else 0,
                    "title": title,
                    "missing": True,
                }
            else:
                entry = self._info(page)
            ns_title = entry["title"]
            if "categoryinfo" in params.get("prop", "") and entry["ns"] == 14:
                size = len(self._members(ns_title))
                if size or page is not None:
                    entry["categoryinfo"] = {"size": size, "pages": size, "files": 0, "subcats": 0}
            pages.append(entry)
        answer: dict[str, Any] = {"batchcomplete": True, "query": {"pages": pages}}
        if redirects:
            answer["query"]["redirects"] = redirects
        return answer

    def _query_members(self, params: dict[str, str]) -> dict[str, Any]:
        namespaces = {int(ns) for ns in params.get("gcmnamespace", "0|14").split("|")}
        members = [page for page in self._members(params["gcmtitle"]) if page.ns in namespaces]
        start = int(params.get("gcmcontinue", "0"))
        batch = members[start : start + MEMBERS_PER_BATCH]
        answer: dict[str, Any] = {"query": {"pages": [self._info(page) for page in batch]}}
        if start + MEMBERS_PER_BATCH < len(members):
            answer["continue"] = {
                "gcmcontinue": str(start + MEMBERS_PER_BATCH),
                "continue": "gcmcontinue||",
            }
        else:
            answer["batchcomplete"] = True
        return answer

    def _query_near(self, params: dict[str, str]) -> dict[str, Any]:
        latitude, longitude = (float(part) for part in params["ggscoord"].split("|"))
        radius, limit = float(params["ggsradius"]), int(params["ggslimit"])
        near = []
        for page in self.pages.values():
            if page.coordinates is None:
                continue
            # An equirectangular distance is plenty for a few kilometres.
            dx = math.radians(page.coordinates[1] - longitude) * math.cos(math.radians(latitude))
            dy = math.radians(page.coordinates[0] - latitude)
            if 6_371_000 * math.hypot(dx, dy) <= radius:
                near.append(self._info(page))
        return {"batchcomplete": True, "query": {"pages": near[:limit]}}

    def _parse(self, params: dict[str, str]) -> dict[str, Any]:
        page = self.pages.get(int(params.get("pageid", "0")))
        if page is None:
            return {
                "error": {"code": "nosuchpageid", "info": f"There is no page with ID {params.get('pageid')}."}
            }
        return {"parse": {"title": page.title, "pageid": page.pageid, "revid": page.revid, "text": page.html}}

    async def _api(self, request: web.Request) -> web.Response:
        params = dict(request.query)
        self.requests.append({"params": params, "headers": dict(request.headers)})
        failure = self.failures.pop(0) if self.failures else self.always
        if failure is not None:
            return web.Response(
                status=failure.status,
                headers=failure.headers,
                text=failure.body,
                content_type=failure.content_type,
            )
        if params.get("action") == "query":
            answer = self._query(params)
        elif params.get("action") == "parse":
            answer = self._parse(params)
        else:
            answer = {"error": {"code": "badvalue", "info": 'Unrecognized value for parameter "action".'}}
        return web.json_response(answer)

    # -- the server ---------------------------------------------------------------------------

    def start(self) -> None:
        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            app = web.Application()
            app.router.add_get("/w/api.php", self._api)
            runner = web.AppRunner(app, shutdown_timeout=0.5)
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            self.port = runner.addresses[0][1]
            ready.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=serve, daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the fake MediaWiki did not start")

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = None


def populate(wiki: FakeMediaWiki) -> None:
    """A small English topic with a subcategory, a sub-subcategory, a redirect and a place."""
    wiki.add(FakePage(100, "Category:Deep learning", ns=14))
    wiki.add(
        FakePage(101, "Category:Neural network architectures", ns=14, categories=("Category:Deep learning",))
    )
    wiki.add(
        FakePage(
            102,
            "Category:Transformers (machine learning)",
            ns=14,
            categories=("Category:Neural network architectures",),
        )
    )
    wiki.add(
        FakePage(
            1,
            "Backpropagation",
            revid=1001,
            categories=("Category:Deep learning",),
            html=article_html(
                "In machine learning, <b>backpropagation</b> computes the gradient of a loss function"
                '<sup id="cite_ref-1" class="reference"><a href="#cite_note-1">[1]</a></sup>'
                " with respect to the weights.",
                (2, "History", "<p>The method was described several times.</p>"),
                (3, "19th century", '<p>Precursors appear in <a href="/wiki/Calculus">calculus</a>.</p>'),
                (3, "Modern era", "<p>Rumelhart, Hinton and Williams popularised it in 1986.</p>"),
                (
                    2,
                    "Algorithm",
                    '<table class="wikitable"><tr><td>cell text</td></tr></table>'
                    "<p>Apply the chain rule layer by layer.</p>"
                    "<ul><li>forward pass</li><li>backward pass</li></ul>",
                ),
                (2, "See also", '<ul><li><a href="/wiki/Gradient_descent">Gradient descent</a></li></ul>'),
                (
                    2,
                    "References",
                    '<div class="reflist"><ol class="references">'
                    '<li id="cite_note-1">Smith 1986.</li></ol></div>',
                ),
                (3, "Sources", "<p>A list of sources.</p>"),
                (2, "External links", '<ul><li><a href="https://example.org">Lecture notes</a></li></ul>'),
            ),
        )
    )
    wiki.add(
        FakePage(
            2,
            "Convolutional neural network",
            revid=2002,
            categories=("Category:Neural network architectures",),
            html=article_html(
                "A <b>convolutional neural network</b> learns filters.",
                (
                    2,
                    "Architecture",
                    "<p>Convolutional layers, pooling layers and fully connected layers.</p>",
                ),
            ),
        )
    )
    wiki.add(
        FakePage(
            3,
            "Transformer (deep learning architecture)",
            revid=3003,
            categories=("Category:Transformers (machine learning)",),
            html=article_html("A <b>transformer</b> uses attention."),
        )
    )
    wiki.add(
        FakePage(
            4,
            "Backprop",
            revid=4004,
            redirect_to="Backpropagation",
            categories=("Category:Deep learning",),
            html='<div class="redirectMsg"><p>Redirect to:</p></div>',
        )
    )
    wiki.add(
        FakePage(
            5,
            "Dropout (neural networks)",
            revid=5005,
            categories=("Category:Deep learning",),
            html=article_html("<b>Dropout</b> switches units off at random during training."),
        )
    )
    wiki.add(FakePage(6, "Talk:Backpropagation", ns=1, revid=6006, categories=("Category:Deep learning",)))
    wiki.add(
        FakePage(
            7,
            "Marienplatz",
            revid=7007,
            coordinates=(48.1374, 11.5755),
            html=article_html(
                "Der <b>Marienplatz</b> ist der zentrale Platz der Münchner Innenstadt.",
                (2, "Geschichte", "<p>Der Platz war Markt- und Turnierplatz.</p>"),
                (2, "Siehe auch", "<ul><li>Liste der Plätze</li></ul>"),
                (2, "Literatur", "<ul><li>Ein Buch.</li></ul>"),
                (2, "Weblinks", "<ul><li>Stadtportal</li></ul>"),
                (2, "Einzelnachweise", '<ol class="references"><li>Quelle</li></ol>'),
            ),
        )
    )
    wiki.add(
        FakePage(
            8,
            "Frauenkirche (München)",
            revid=8008,
            coordinates=(48.1386, 11.5736),
            html=article_html("Die <b>Frauenkirche</b> ist eine Kirche."),
        )
    )
    wiki.add(
        FakePage(
            9,
            "Zugspitze",
            revid=9009,
            coordinates=(47.4211, 10.9853),
            html=article_html("Die <b>Zugspitze</b> ist ein Berg."),
        )
    )


@pytest.fixture
def wiki() -> Iterator[FakeMediaWiki]:
    fake = FakeMediaWiki()
    populate(fake)
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()

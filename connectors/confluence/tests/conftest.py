"""An in-test Confluence Data Center REST API on 127.0.0.1, and the connector run as the core runs it.

The fake follows the Data Center REST documentation for the routes the connector uses, under
``/rest/api``: ``GET /space/{spaceKey}``, ``GET /content`` (``spaceKey``, ``type``, ``status``,
``expand``, ``start`` and ``limit``; at most ``LIMIT_CAP`` results a page, with ``_links.next``
while there are more), ``GET /content/{id}`` (``expand=body.storage,version,metadata.labels,
ancestors,space``) and ``GET /content/search`` with the CQL the connector writes. A personal
access token goes in ``Authorization: Bearer``; errors are ``{"statusCode", "message",
"reason"}``. Answers can be scripted: statuses with ``Retry-After``, and a proxy page that echoes
the ``Authorization`` header.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from urllib.parse import urlencode

import pytest
from aiohttp import web

from passageway.testing import CallResult, echo_authorization, record, serve
from passageway.testing import run_connector as call

from .pages import build_site

TOKEN = "pat-NjY0MjM4NzQ1OTQ2OkPx7q0Z+c3B8yZ1mUUw/Lz"
COMMAND = [sys.executable, "-m", "passageway_connector_confluence"]
LIMIT_CAP = 3
SERVER_ZONE = timezone(timedelta(hours=2))  # CQL compares times in the server's zone


@dataclass
class FakePage:
    id: str
    space: str
    title: str
    storage: str = "<p></p>"
    parent: str | None = None
    labels: list[str] = field(default_factory=list)
    version: int = 1
    modified: datetime = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)
    type: str = "page"


@dataclass
class Scripted:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: str = '{"statusCode": 503, "message": "Service Unavailable", "reason": "Service Unavailable"}'


def _error(status: int, message: str, reason: str) -> web.Response:
    body = {
        "statusCode": status,
        "data": {"authorized": status != 401, "valid": True, "errors": [], "successful": False},
        "message": message,
        "reason": reason,
    }
    return web.json_response(body, status=status)


class FakeConfluence:
    """Spaces and pages, the REST routes over them, and a record of every request."""

    def __init__(self) -> None:
        self.spaces: dict[str, str] = {}
        self.pages: dict[str, FakePage] = {}
        self.requests: list[dict[str, Any]] = []
        self.script: list[Scripted] = []
        self.always: Scripted | None = None
        self.echo_authorization = False
        self.url = ""

    def add(self, page: FakePage) -> FakePage:
        self.pages[page.id] = page
        return page

    def edit(self, page_id: str, **changes: Any) -> None:
        page = self.pages[page_id]
        for key, value in changes.items():
            setattr(page, key, value)
        page.version += 1

    # -- the model ----------------------------------------------------------------------------

    def _ancestors(self, page: FakePage) -> list[FakePage]:
        chain, current = [], page
        while current.parent and current.parent in self.pages:
            current = self.pages[current.parent]
            chain.insert(0, current)
        return chain

    def content(self, page: FakePage, expand: str) -> dict[str, Any]:
        fields = set(expand.split(","))
        link = f"/pages/viewpage.action?pageId={page.id}"
        body: dict[str, Any] = {
            "id": page.id,
            "type": page.type,
            "status": "current",
            "title": page.title,
            "_links": {"webui": link, "self": f"{self.url}/rest/api/content/{page.id}"},
            "_expandable": {"children": "", "history": ""},
        }
        if "version" in fields:
            body["version"] = {
                "by": {"type": "known", "username": "admin"},
                "number": page.version,
                "when": page.modified.astimezone(SERVER_ZONE).isoformat(timespec="milliseconds"),
                "minorEdit": False,
            }
        if "metadata.labels" in fields:
            labels = [
                {"prefix": "global", "name": name, "id": str(1000 + index), "label": name}
                for index, name in enumerate(page.labels)
            ]
            body["metadata"] = {"labels": {"results": labels, "start": 0, "limit": 200, "size": len(labels)}}
        if "ancestors" in fields:
            body["ancestors"] = [
                {"id": ancestor.id, "type": "page", "status": "current", "title": ancestor.title}
                for ancestor in self._ancestors(page)
            ]
        if "space" in fields:
            body["space"] = {
                "id": 98000 + len(page.space),
                "key": page.space,
                "name": self.spaces.get(page.space, ""),
                "type": "global",
            }
        if "body.storage" in fields:
            body["body"] = {"storage": {"value": page.storage, "representation": "storage"}}
        return body

    def _paged(self, request: web.Request, found: list[FakePage]) -> web.Response:
        start = int(request.query.get("start", "0"))
        limit = min(int(request.query.get("limit", "25")), LIMIT_CAP)
        chunk = found[start : start + limit]
        links: dict[str, str] = {"base": self.url, "context": "", "self": f"{self.url}{request.path_qs}"}
        if start + limit < len(found):
            query = {**request.query, "start": str(start + limit), "limit": str(limit)}
            links["next"] = f"{request.path}?{urlencode(query)}"
        expand = request.query.get("expand", "")
        return web.json_response(
            {
                "results": [self.content(page, expand) for page in chunk],
                "start": start,
                "limit": limit,
                "size": len(chunk),
                "_links": links,
            }
        )

    def _cql(self, cql: str) -> list[FakePage]:
        match = re.fullmatch(
            r'space in \(([^)]*)\) and type = page and lastmodified >= "(\d{4}/\d\d/\d\d \d\d:\d\d)"', cql
        )
        if match is None:
            raise web.HTTPBadRequest(
                text=json.dumps({"statusCode": 400, "message": f"Could not parse cql : {cql}"}),
                content_type="application/json",
            )
        spaces = {part.strip().strip('"') for part in match.group(1).split(",")}
        since = datetime.strptime(match.group(2), "%Y/%m/%d %H:%M").replace(tzinfo=SERVER_ZONE)
        return [
            page
            for page in self.pages.values()
            if page.space in spaces and page.type == "page" and page.modified >= since
        ]

    # -- the routes ---------------------------------------------------------------------------

    @web.middleware
    async def _gate(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requests.append(record(request))
        if self.echo_authorization:
            return echo_authorization(request, 400)
        scripted = self.script.pop(0) if self.script else self.always
        if scripted is not None:
            return web.Response(
                status=scripted.status,
                headers=scripted.headers,
                text=scripted.body,
                content_type="application/json",
            )
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return _error(401, "This request requires authentication", "Unauthorized")
        return await handler(request)

    async def space(self, request: web.Request) -> web.Response:
        key = request.match_info["key"]
        if key not in self.spaces:
            return _error(404, f"No space with key : {key}", "Not Found")
        return web.json_response(
            {
                "id": 98000,
                "key": key,
                "name": self.spaces[key],
                "type": "global",
                "_links": {"webui": f"/display/{key}"},
            }
        )

    async def list_content(self, request: web.Request) -> web.Response:
        key, kind = request.query.get("spaceKey"), request.query.get("type", "page")
        found = [page for page in self.pages.values() if page.space == key and page.type == kind]
        return self._paged(request, sorted(found, key=lambda page: int(page.id)))

    async def one(self, request: web.Request) -> web.Response:
        page = self.pages.get(request.match_info["id"])
        if page is None:
            return _error(
                404, f"No content found with id: ContentId{{id={request.match_info['id']}}}", "Not Found"
            )
        return web.json_response(self.content(page, request.query.get("expand", "")))

    async def search(self, request: web.Request) -> web.Response:
        return self._paged(
            request, sorted(self._cql(request.query.get("cql", "")), key=lambda page: int(page.id))
        )

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._gate])
        app.router.add_get("/rest/api/space/{key}", self.space)
        app.router.add_get("/rest/api/content", self.list_content)
        app.router.add_get("/rest/api/content/search", self.search)
        app.router.add_get("/rest/api/content/{id}", self.one)
        return app


def run_connector(*argv: str, ids: list[str] | None = None, **settings: str) -> CallResult:
    """One call of the connector as a subprocess with the core's almost empty environment."""
    return call(COMMAND, argv, {"TOKEN": TOKEN, "SPACES": "OPS|HR", **settings}, ids or ())


@pytest.fixture
def confluence() -> Iterator[FakeConfluence]:
    fake = FakeConfluence()
    build_site(fake, FakePage)
    with serve(fake.app()) as url:
        fake.url = url
        yield fake

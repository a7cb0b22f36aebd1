"""An in-test Trilium ETAPI, served by aiohttp on 127.0.0.1, and the connector run as the core runs it.

The fake follows ETAPI's OpenAPI description (``src/etapi/etapi.openapi.yaml`` in Trilium's
repository): ``GET /etapi/notes`` (search with ``ancestorNoteId``, ``fastSearch`` and
``includeArchivedNotes``, answering ``{"results": [Note]}``), ``GET /etapi/notes/{noteId}``,
``GET /etapi/notes/{noteId}/content`` (``text/html``) and ``GET /etapi/app-info``. A Note carries
its attributes (inherited ones with their owner's ``noteId``), ``parentNoteIds``, ``blobId`` and
the UTC dates in Trilium's ``2026-11-02 10:00:00.000Z`` form. The token goes in the
``Authorization`` header, raw or as Basic auth with the token as password; errors are
``{"status", "code", "message"}``. Its search knows only the queries the connector sends.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

from passageway.testing import CallResult, echo_authorization, record, serve
from passageway.testing import run_connector as call

from .wiki import build_wiki

TOKEN = "etapi-Bc4bFn0Ffiok_4NpbVCDnFz7B2WU+pdhW8B5Ne3Di"
COMMAND = [sys.executable, "-m", "passageway_connector_trilium"]


@dataclass
class FakeNote:
    noteId: str
    title: str
    parents: list[str]
    type: str = "text"
    content: str = ""
    mime: str = "text/html"
    labels: dict[str, str] = field(default_factory=dict)
    inheritable: set[str] = field(default_factory=set)
    relations: list[tuple[str, str]] = field(default_factory=list)
    protected: bool = False
    modified: str = "2026-11-01 08:00:00.000Z"
    blob: int = 1


def _error(status: int, code: str, message: str) -> web.Response:
    return web.Response(
        status=status,
        content_type="application/json",
        text=json.dumps({"status": status, "code": code, "message": message}),
    )


class FakeTrilium:
    """Notes by id, the ETAPI routes over them, and a record of every request."""

    def __init__(self) -> None:
        self.notes: dict[str, FakeNote] = {"root": FakeNote("root", "root", [], type="book")}
        self.requests: list[dict[str, Any]] = []
        self.echo_authorization = False
        self.url = ""

    def add(self, note: FakeNote) -> FakeNote:
        self.notes[note.noteId] = note
        return note

    def edit(self, note_id: str, **changes: Any) -> None:
        note = self.notes[note_id]
        for key, value in changes.items():
            setattr(note, key, value)
        if "content" in changes:
            note.blob += 1

    # -- the model ----------------------------------------------------------------------------

    def _ancestors(self, note_id: str) -> list[str]:
        found, queue = [], list(self.notes[note_id].parents)
        while queue:
            parent = queue.pop(0)
            if parent in self.notes and parent not in found:
                found.append(parent)
                queue.extend(self.notes[parent].parents)
        return found

    def _attributes(self, note: FakeNote) -> list[dict[str, Any]]:
        def attribute(owner: FakeNote, kind: str, name: str, value: str) -> dict[str, Any]:
            return {
                "attributeId": f"{owner.noteId}{kind[0]}{name}"[:32],
                "noteId": owner.noteId,
                "type": kind,
                "name": name,
                "value": value,
                "position": 10,
                "isInheritable": name in owner.inheritable,
                "utcDateModified": owner.modified,
            }

        found = [attribute(note, "label", name, value) for name, value in note.labels.items()]
        found += [attribute(note, "relation", name, target) for name, target in note.relations]
        for ancestor in self._ancestors(note.noteId):
            owner = self.notes[ancestor]
            found += [
                attribute(owner, "label", name, owner.labels[name]) for name in sorted(owner.inheritable)
            ]
        return found

    def _archived(self, note: FakeNote) -> bool:
        return any(attribute["name"] == "archived" for attribute in self._attributes(note))

    def pojo(self, note: FakeNote) -> dict[str, Any]:
        return {
            "noteId": note.noteId,
            "isProtected": note.protected,
            "title": note.title,
            "type": note.type,
            "mime": note.mime,
            "blobId": f"blob{note.noteId}{note.blob}"[:32],
            "dateCreated": "2026-10-01 10:00:00.000+0200",
            "dateModified": "2026-11-01 09:00:00.000+0100",
            "utcDateCreated": "2026-10-01 08:00:00.000Z",
            "utcDateModified": note.modified,
            "parentNoteIds": list(note.parents),
            "childNoteIds": [child.noteId for child in self.notes.values() if note.noteId in child.parents],
            "parentBranchIds": [f"{parent}_{note.noteId}" for parent in note.parents],
            "childBranchIds": [
                f"{note.noteId}_{child.noteId}"
                for child in self.notes.values()
                if note.noteId in child.parents
            ],
            "attributes": self._attributes(note),
        }

    def _matches(self, note: FakeNote, query: str) -> bool:
        if query == "note.type != '-'":
            return note.type != "-"
        found = re.fullmatch(r"note\.utcDateModified >= '([0-9: .-]+Z)'", query)
        if found:
            return note.modified >= found.group(1)
        raise web.HTTPBadRequest(
            text=json.dumps(
                {
                    "status": 400,
                    "code": "SEARCH_QUERY_PARSE_ERROR",
                    "message": f"The fake cannot parse {query!r}",
                }
            ),
            content_type="application/json",
        )

    # -- the routes ---------------------------------------------------------------------------

    def _authorized(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        if header.startswith("Basic "):
            _user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            return password == TOKEN
        return header == TOKEN

    @web.middleware
    async def _gate(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requests.append(record(request))
        if self.echo_authorization:
            return echo_authorization(request, 502)
        if not self._authorized(request):
            return _error(401, "NOT_AUTHENTICATED", "Not authenticated")
        return await handler(request)

    def _note(self, request: web.Request) -> FakeNote:
        note = self.notes.get(request.match_info["note_id"])
        if note is None:
            raise web.HTTPNotFound(
                text=json.dumps(
                    {
                        "status": 404,
                        "code": "NOTE_NOT_FOUND",
                        "message": f"Note '{request.match_info['note_id']}' not found.",
                    }
                ),
                content_type="application/json",
            )
        return note

    async def search(self, request: web.Request) -> web.Response:
        query = request.query.get("search")
        if not query:
            return _error(400, "SEARCH_QUERY_PARAM_MANDATORY", "'search' query parameter is mandatory.")
        ancestor = request.query.get("ancestorNoteId", "root")
        archived = request.query.get("includeArchivedNotes") == "true"
        results = [
            self.pojo(note)
            for note in self.notes.values()
            if (note.noteId == ancestor or ancestor in self._ancestors(note.noteId))
            and (archived or not self._archived(note))
            and self._matches(note, query)
        ]
        return web.json_response({"results": results})

    async def note(self, request: web.Request) -> web.Response:
        return web.json_response(self.pojo(self._note(request)))

    async def content(self, request: web.Request) -> web.Response:
        note = self._note(request)
        if note.protected:
            return _error(
                400,
                "NOTE_IS_PROTECTED",
                f"Note '{note.noteId}' is protected and cannot be read through ETAPI",
            )
        return web.Response(
            text=note.content, content_type="text/html" if note.type == "text" else "text/plain"
        )

    async def app_info(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "appVersion": "0.63.7",
                "dbVersion": 228,
                "syncVersion": 33,
                "utcDateTime": "2026-11-02T10:00:00.000Z",
            }
        )

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._gate])
        app.router.add_get("/etapi/notes", self.search)
        app.router.add_get("/etapi/notes/{note_id}", self.note)
        app.router.add_get("/etapi/notes/{note_id}/content", self.content)
        app.router.add_get("/etapi/app-info", self.app_info)
        return app


def run_connector(*argv: str, ids: list[str] | None = None, **settings: str) -> CallResult:
    """One call of the connector as a subprocess with the core's almost empty environment."""
    return call(COMMAND, argv, {"TOKEN": TOKEN, **settings}, ids or ())


@pytest.fixture
def trilium() -> Iterator[FakeTrilium]:
    fake = FakeTrilium()
    build_wiki(fake, FakeNote)
    with serve(fake.app()) as url:
        fake.url = url
        yield fake

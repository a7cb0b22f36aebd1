"""While a source's first build runs, answers say so on both transports and /health counts
passages as they are embedded; a paste without a question is silence without embedding."""

from __future__ import annotations

import asyncio

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from passageway.testing.toy_embedder import ToyEmbedder
from tests.server_helpers import PASSWORD, make_kernel, running_server, wait_built, write_instance
from tests.waiting import until

AUTH = {"Authorization": f"Bearer {PASSWORD}"}
RYE = "How does rye bread dough with a sourdough starter rise?"


async def test_answers_during_a_first_build_name_the_building_source_on_both_transports(
    tmp_path, monkeypatch
):
    release = asyncio.Event()
    original = ToyEmbedder.embed

    async def held(self, texts, kind):  # type: ignore[no-untyped-def]
        if kind == "passage":
            await release.wait()  # the first build stays in its first embedder call
        return await original(self, texts, kind)

    monkeypatch.setattr(ToyEmbedder, "embed", held)
    kernel = make_kernel(write_instance(tmp_path))
    async with running_server(kernel) as url, httpx2.AsyncClient(timeout=30) as client:
        async def stored() -> bool:  # written: searchable by keywords
            return bool((await client.get(f"{url}/health")).json()["sources"]["notes"].get("stored"))

        await until(stored, "the first build has stored its first fetch")
        notes = (await client.get(f"{url}/health")).json()["sources"]["notes"]
        assert notes["state"] == "indexing" and notes["ready"] == 0 and notes["expected"] > 0
        line = f"notes: 0 of {notes['expected']} passages searchable by meaning so far"

        hook = await client.post(f"{url}/recall", json={"prompt": RYE}, headers=AUTH)
        assert hook.status_code == 200
        # Stored before any vector exists: found by its words, with the note that it is a build.
        context = hook.json()["context"]
        assert "Rye bread" in context and f"Still indexing: {line}" in context
        quiet = await client.post(f"{url}/recall", json={"prompt": "Who won the 1954 football world cup?"},
                                  headers=AUTH)
        assert quiet.json() == {"context": ""}  # silence sends nothing, also while a source builds

        http = httpx2.AsyncClient(headers=AUTH, timeout=30)
        async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as mcp:
            result = await mcp.call_tool("recall", {"question": RYE})
            assert not result.is_error
            assert line in result.content[0].text

        release.set()
        await wait_built(kernel)
        hook = await client.post(f"{url}/recall", json={"prompt": RYE}, headers=AUTH)
        context = hook.json()["context"]
        assert "Rye bread" in context and "Still indexing" not in context


async def test_a_paste_that_asks_nothing_is_silence_without_embedding(tmp_path, monkeypatch):
    questions: list[list[str]] = []
    original = ToyEmbedder.embed

    async def recording(self, texts, kind):  # type: ignore[no-untyped-def]
        if kind == "query":
            questions.append(list(texts))
        return await original(self, texts, kind)

    monkeypatch.setattr(ToyEmbedder, "embed", recording)
    kernel = make_kernel(write_instance(tmp_path))
    trace = 'Traceback (most recent call last):\n  File "bread.py", line 3, in <module>\n' \
            "    bake(rye)\nKeyError: 'sourdough starter'"
    async with running_server(kernel) as url, httpx2.AsyncClient(timeout=30) as client:
        await wait_built(kernel)
        paste = await client.post(f"{url}/recall", json={"prompt": trace}, headers=AUTH)
        assert paste.json() == {"context": ""}
        assert questions == []
        mixed = await client.post(f"{url}/recall", json={"prompt": f"{trace}\n\n{RYE}"}, headers=AUTH)
        assert "Rye bread" in mixed.json()["context"]
        assert questions == [[RYE]]

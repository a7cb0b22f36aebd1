"""One word for one state during a build: the log, ``passageway status``, ``/health`` and the
status page are sampled together at every embedder call and at every log line of the build, and
must agree on each source's state. ``ready`` (log) and ``ok`` (the rest) come together, once the
source answers in full; while its excerpt windows are embedded every view says so and counts them.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

import httpx2

from passageway.kernel.commands.status import WINDOWS_NOTE, render_status
from passageway.testing.toy_embedder import ToyEmbedder
from tests.server_helpers import PASSWORD, make_kernel, running_server, wait_built, write_instance

AUTH = {"Authorization": f"Bearer {PASSWORD}"}
LONG_TEXT = " ".join(f"Sentence {n} says how the lock keeper opens the {n}th gate of the canal."
                     for n in range(40))


class Samples:
    """Every view of the source ``notes`` at one moment, taken in the server's own loop."""

    def __init__(self, client: httpx2.AsyncClient, url: str) -> None:
        self.client, self.url = client, url
        self.log: list[str] = []
        self.taken: list[dict[str, Any]] = []

    async def take(self, moment: str) -> None:
        health = (await self.client.get(f"{self.url}/health", headers=AUTH)).json()
        page = (await self.client.get(f"{self.url}/", headers=AUTH)).text
        status_line = next(line for line in render_status(health, self.url).splitlines()
                           if line.startswith("  notes: "))
        row = re.search(r'<td>notes</td><td class="state (\w+)">', page)
        entry = health["sources"]["notes"]
        self.taken.append({
            "moment": moment, "state": entry["state"], "stage": entry.get("stage"),
            "windows": (entry.get("windows"), entry.get("windows_expected")),
            "status": status_line, "page_state": row.group(1) if row else None, "page": page,
            "ready_logged": any(" ready: " in line for line in self.log), "log": list(self.log),
        })


async def test_the_log_status_health_and_page_agree_at_every_moment_of_a_build(tmp_path, monkeypatch):
    items = [{"id": f"canal-{n}", "title": f"Canal {n}", "url": f"https://example.test/canal/{n}",
              "version": "1", "sections": [{"heading": "Locks", "text": LONG_TEXT}]} for n in range(6)]
    kernel = make_kernel(write_instance(tmp_path, items=items))
    original = ToyEmbedder.embed
    pending: list[asyncio.Task[None]] = []
    samples: Samples | None = None

    async def sampled(self, texts, kind):  # type: ignore[no-untyped-def]
        if samples is not None and kind == "passage":
            await samples.take("embedder call")
        return await original(self, texts, kind)

    class Sampling(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if samples is not None and record.getMessage().startswith("source notes"):
                samples.log.append(record.getMessage())
                pending.append(asyncio.ensure_future(samples.take(record.getMessage())))

    monkeypatch.setattr(ToyEmbedder, "embed", sampled)
    handler = Sampling(level=logging.INFO)
    sync_log = logging.getLogger("passageway.sync")
    previous_level = sync_log.level
    sync_log.setLevel(logging.INFO)
    sync_log.addHandler(handler)
    try:
        async with httpx2.AsyncClient(timeout=30) as client:
            samples = Samples(client, "http://127.0.0.1")
            async with running_server(kernel) as url:
                samples.url = url
                await wait_built(kernel)
                await asyncio.gather(*pending)
                await samples.take("after the build")
    finally:
        sync_log.removeHandler(handler)
        sync_log.setLevel(previous_level)

    taken = samples.taken
    assert len(taken) > 3
    for sample in taken:
        state = sample["state"]
        # status, /health and the page: one word for the source at every moment
        assert sample["status"].startswith(f"  notes: {state}: "), sample
        assert sample["page_state"] == state, sample
        # the log says ready exactly when the others say ok
        assert sample["ready_logged"] == (state == "ok"), sample
        if state == "indexing" and sample["stage"] == "windows":
            done, expected = sample["windows"]
            assert f"{WINDOWS_NOTE}: {done} of {expected}" in sample["status"], sample
            page_words = f"excerpt windows (they choose each answer's excerpt): {done} of {expected}"
            assert page_words in sample["page"], sample
            assert any("every passage searchable" in line for line in sample["log"]), sample
    stages = [sample["stage"] for sample in taken if sample["state"] == "indexing"]
    assert "passages" in stages and "windows" in stages, stages
    assert taken[-1]["state"] == "ok"
    assert sum(" ready: " in line for line in taken[-1]["log"]) == 1

"""A source's health as the sync keeps it (kernel/index/sync_health.py): public and full views, which
success clears which failure, a build's counts and its note for answers."""

from __future__ import annotations

import asyncio
import logging

import pytest

from passageway.kernel.errors import PassagewayError, SyncError
from passageway.kernel.index.sync import SourceSync
from passageway.testing.toy_embedder import ToyEmbedder
from tests.sync_helpers import FakeRunner, Setup, item


class TickingEmbedder(ToyEmbedder):
    """A toy embedder whose every call advances a fake clock by one second and records health."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        self.sync: SourceSync | None = None
        self.seen: list[dict] = []

    def clock(self) -> float:
        return self.now

    async def embed(self, texts, kind):  # type: ignore[no-untyped-def]
        if kind == "passage" and self.sync is not None:
            self.seen.append(self.sync.health().public())
        self.now += 1.0
        return await super().embed(texts, kind)


async def test_health_views_hide_the_error_text_from_the_public(tmp_path):
    runner = FakeRunner("notes", [item(1)])
    runner.fail_all = True
    async with Setup(tmp_path, runner) as sync:
        with pytest.raises(PassagewayError):
            await sync.sync_once()
        public, full = sync.health().public(), sync.health().full()
        assert public["state"] == "failing" and public["failing"] is True
        assert "last_error" not in public and "told to fail" in full["last_error"]


async def test_a_good_poll_does_not_hide_a_failed_batch(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(100)])
    runner.fail_ids = {"item-1"}
    async with Setup(tmp_path, runner) as sync:
        with pytest.raises(SyncError):
            await sync.sync_once()
        await sync.poll()
        assert sync.health().state == "failing"


async def test_a_failed_poll_is_cleared_by_the_next_good_poll(tmp_path):
    runner = FakeRunner("notes", [item(1)])
    async with Setup(tmp_path, runner) as sync:
        await sync.sync_once()
        runner.fail_all = True
        with pytest.raises(PassagewayError):
            await sync.poll()
        assert sync.health().state == "failing"
        runner.fail_all = False
        await sync.poll()
        assert sync.health().state == "ok"


async def test_a_build_counts_passages_as_each_embedder_call_returns(tmp_path, caplog):
    runner = FakeRunner("notes", [item(n) for n in range(200)])  # 2 passages each, 4 fetch batches
    embedder = TickingEmbedder()
    caplog.set_level(logging.INFO, logger="passageway.sync")
    async with Setup(tmp_path, runner, embedder=embedder, progress_seconds=5.0, embed_batch=10,
                     clock=embedder.clock) as sync:
        embedder.sync = sync
        await sync.sync_once()
    seen = embedder.seen
    first = seen[0]
    assert first["state"] == "indexing" and first["of"] == 200 and first["ready"] == 0
    # The first batch was fetched and stored (searchable by keywords) before the first call.
    assert first["fetched"] >= 50 and first["stored"] >= 100
    # Each call of 10 passages shows in health at once.
    assert [entry["ready"] for entry in seen[:3]] == [0, 10, 20]
    assert seen[-1]["fetched"] == 200 and seen[-1]["stored"] == 400
    # Before every item was chunked the total is an estimate from the first batch: 2 passages an item.
    assert first["expected"] == 400
    # No rate in the first seconds, then one, and an estimate of the time left.
    assert seen[1]["rate"] is None and seen[1]["eta_seconds"] is None
    late = seen[20]
    # 10 passages per fake second (in passages of the average length: the shortest go first)
    assert late["rate"] == pytest.approx(10.0, rel=0.03)
    assert late["eta_seconds"] == pytest.approx((400 - late["ready"]) / 10.0, rel=0.05)
    lines = [record.getMessage() for record in caplog.records]
    progress = [line for line in lines if "items fetched" in line]
    assert 5 <= len(progress) <= 9  # at most one line per 5 fake seconds of a 40-second build
    assert "passages/s" in progress[-1]
    assert "source notes ready: 200 items, 400 passages in 40.0 s" in lines
    health = sync.health().public()
    assert health["state"] == "ok" and "fetched" not in health and not sync.health().building


async def test_a_first_build_has_a_note_for_answers_and_a_rebuild_of_a_built_source_too(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(20)])
    embedder = TickingEmbedder()
    notes: list[str | None] = []
    original = embedder.embed

    async def noting(texts, kind):  # type: ignore[no-untyped-def]
        notes.append(sync.health().building_note())
        return await original(texts, kind)

    embedder.embed = noting  # type: ignore[method-assign]
    async with Setup(tmp_path, runner, embedder=embedder, embed_batch=10) as sync:
        assert sync.health().building_note() is None
        await sync.sync_once()
        assert notes[:2] == ["notes: 0 of 40 passages searchable by meaning so far",
                             "notes: 10 of 40 passages searchable by meaning so far"]
        assert sync.health().building_note() is None
        runner.set(item(3, "2"))
        notes.clear()
        await sync.reconcile()  # a reconcile is not a first build: answers carry no note
        assert notes and set(notes) == {None}


async def test_a_resync_counts_items_as_fetched_when_the_connector_has_answered(tmp_path):
    # Issue 32.13: a re-sync of 200 changed items showed "0 of 200 items fetched" while half of
    # their passages were ready, because an item counted only once its batch was written.
    runner = FakeRunner("notes", [item(n) for n in range(200)])
    async with Setup(tmp_path, runner) as sync:
        await sync.sync_once()
        for number in range(200):
            runner.set(item(number, "2"))
        seen: list[tuple[int | None, int]] = []
        original = sync.store.apply

        async def spy(updates, deletions):
            seen.append((sync.health().fetched, sync.health().ready))
            await original(updates, deletions)

        sync.store.apply = spy  # type: ignore[method-assign]
        await sync.reconcile()
        # (the sqlite store takes the passages before their vectors: none is ready at the first write)
        assert seen[0][0] is not None and seen[0][0] >= 50, seen
        assert sync.health().items == 200 and sync.health().fetched is None


class GatedEmbedder(ToyEmbedder):
    """A toy embedder whose calls wait for ``go``, so a test can look at health meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.called, self.go = asyncio.Event(), asyncio.Event()

    async def embed(self, texts, kind):  # type: ignore[no-untyped-def]
        self.called.set()
        await self.go.wait()
        return await super().embed(texts, kind)


async def test_a_restart_counts_what_the_store_holds_before_the_resumed_passes(tmp_path):
    # Issue 38.7: after a kill -9 in the embedding pass, /health said 0 items for the ~100 s of
    # the resumed pass while recall answered from the 200 items already stored.
    runner = FakeRunner("notes", [item(n) for n in range(10)])
    stopped = ToyEmbedder()
    stopped.fail = True  # the build stores its passages, then stops before their vectors
    async with Setup(tmp_path, runner, embedder=stopped) as sync:
        with pytest.raises(PassagewayError):
            await sync.sync_once()
    gated = GatedEmbedder()
    async with Setup(tmp_path, runner, embedder=gated) as sync:
        assert (sync.health().items, sync.health().passages) == (0, 0)
        resumed = asyncio.ensure_future(sync.sync_once())
        await gated.called.wait()  # the resumed embedding pass has started and is held
        assert (sync.health().items, sync.health().passages) == (10, 20)
        assert sync.health().state == "indexing"
        gated.go.set()
        await resumed
        assert (sync.health().state, sync.health().items) == ("ok", 10)

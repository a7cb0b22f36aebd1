"""The sync: build, reconcile, poll, the deletion guard, failing batches, health and the cache."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

import attrs
import pytest

from passageway.kernel.connector.runner import ConnectorRunner
from passageway.kernel.errors import DeletionRefused, PassagewayError, SyncError
from passageway.kernel.index.sync import POLL_OVERLAP_SECONDS, SourceSync
from passageway.testing.toy_embedder import ToyEmbedder, toy_vectors
from tests.sync_helpers import FakeRunner, Setup, fake_connector_settings, item, stored_passages, write_items


async def keyword_list(store, question, vector, limit):
    return (await asyncio.to_thread(store.search, question, vector, limit))[0]


async def vector_list(store, vector, limit):
    return (await asyncio.to_thread(store.search, "", vector, limit))[1]


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


async def test_first_build_stores_every_item_in_batches_of_50(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(120)])
    async with Setup(tmp_path, runner) as sync:
        await sync.sync_once()
        health = sync.health()
        assert (health.state, health.items, health.passages) == ("ok", 120, 240)
        assert health.last_success is not None and health.last_error is None
        assert [len(call) for call in runner.fetch_calls] == [50, 50, 20]
        assert await sync.store.embedder() == ("toy-hash-64", 64)
        assert await sync.store.get_state("last_poll") is not None
        assert len(await sync.store.versions()) == 120


async def test_reconcile_fetches_only_edits_and_additions_and_deletes_the_rest(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(10)])
    setup = Setup(tmp_path, runner)
    async with setup as sync:
        await sync.sync_once()
        embedded = setup.embedder.texts_embedded
        runner.fetch_calls.clear()
        runner.set(item(3, "2"), item(10))
        runner.remove("item-7")
        await sync.reconcile()
        assert runner.fetch_calls == [["item-3", "item-10"]]
        versions = await sync.store.versions()
        assert versions["item-3"] == "2" and "item-10" in versions and "item-7" not in versions
        assert len(versions) == 10
        # item-3's texts changed (version is in the text), item-10 is new: 4 passages embedded
        assert setup.embedder.texts_embedded - embedded == 4
        assert all("version 2" in text for _, _, text, _ in stored_passages(sync.store, "item-3"))
        assert sync.health().state == "ok"


async def test_a_reconcile_with_nothing_changed_fetches_and_embeds_nothing(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(30)])
    setup = Setup(tmp_path, runner)
    async with setup as sync:
        await sync.sync_once()
        calls, embedded = len(runner.fetch_calls), setup.embedder.texts_embedded
        await sync.sync_once()  # an existing index built by this embedder is reconciled
        assert len(runner.fetch_calls) == calls
        assert setup.embedder.texts_embedded == embedded
        assert runner.list_calls == 2


async def test_poll_stores_changed_items_since_the_last_poll_minus_the_overlap(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(5)])
    setup = Setup(tmp_path, runner)
    async with setup as sync:
        before = datetime.now(UTC)
        await sync.sync_once()
        last = datetime.fromisoformat((await sync.store.get_state("last_poll")).replace("Z", "+00:00"))
        assert before - timedelta(seconds=1) <= last <= datetime.now(UTC)
        runner.set(item(2, "2", updated=stamp(datetime.now(UTC))), item(40, updated=stamp(datetime.now(UTC))))
        runner.set(item(3, "1", updated=stamp(datetime.now(UTC))))  # reported, but its version is unchanged
        embedded, fetches = setup.embedder.texts_embedded, len(runner.fetch_calls)
        await sync.poll()
        assert runner.changed_calls == [last - timedelta(seconds=POLL_OVERLAP_SECONDS)]
        versions = await sync.store.versions()
        assert versions["item-2"] == "2" and versions["item-40"] == "1"
        assert setup.embedder.texts_embedded - embedded == 4  # item-3 was not embedded again
        assert len(runner.fetch_calls) == fetches  # changed delivers whole items: no fetch
        second = datetime.fromisoformat((await sync.store.get_state("last_poll")).replace("Z", "+00:00"))
        assert second > last
        assert sync.health().state == "ok"


async def test_a_poll_before_any_build_does_nothing(tmp_path):
    runner = FakeRunner("notes", [item(1, updated="2026-01-01T00:00:00Z")])
    async with Setup(tmp_path, runner) as sync:
        await sync.poll()
        assert runner.changed_calls == []
        assert (await sync.store.counts()) == (0, 0)


async def test_the_guard_refuses_31_percent_and_reports_it(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(100)])
    async with Setup(tmp_path, runner) as sync:
        await sync.sync_once()
        runner.remove(*(f"item-{n}" for n in range(31)))
        runner.set(item(50, "2"))
        with pytest.raises(DeletionRefused, match="31 of 100"):
            await sync.reconcile()
        health = sync.health()
        assert health.state == "failing" and "deletion guard" in health.last_error
        assert "deletion guard" not in str(health.public()) and "deletion guard" in str(health.full())
        versions = await sync.store.versions()
        assert len(versions) == 100 and versions["item-50"] == "1"  # the whole reconcile was refused
        runner.set(*(item(n) for n in range(1, 31)))  # the listing is complete again: 1 of 100 goes
        await sync.reconcile()
        assert sync.health().state == "ok"
        assert len(await sync.store.versions()) == 99


async def test_the_guard_refuses_to_empty_a_source_but_one_item_may_go(tmp_path):
    runner = FakeRunner("notes", [item(1), item(2)])
    async with Setup(tmp_path, runner, max_delete_fraction=1.0) as sync:
        await sync.sync_once()
        runner.remove("item-1", "item-2")
        with pytest.raises(DeletionRefused, match="all 2 items"):
            await sync.reconcile()
        assert len(await sync.store.versions()) == 2
        runner.set(item(2))
        await sync.reconcile()  # one of two is 50 %, over the fraction, but a single item always goes
        assert list(await sync.store.versions()) == ["item-2"]
        runner.remove("item-2")
        await sync.reconcile()  # the last item of a one-item source may go as well
        assert await sync.store.versions() == {}
        assert sync.health().state == "ok"


async def test_an_embedder_change_rebuilds_the_source(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(5)])
    async with Setup(tmp_path, runner) as sync:
        await sync.sync_once()
    other = ToyEmbedder(dim=32, name="toy-other-32")
    setup = Setup(tmp_path, runner, embedder=other)
    async with setup as sync:
        runner.fetch_calls.clear()
        await sync.sync_once()
        assert await sync.store.embedder() == ("toy-other-32", 32)
        assert other.texts_embedded == 10
        assert sum(len(call) for call in runner.fetch_calls) == 5
        hits = await vector_list(sync.store, toy_vectors(["river"], 32)[0], 3)
        assert hits and sync.health().passages == 10


async def test_a_batch_that_fails_once_is_fetched_one_by_one_and_nothing_is_missing(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(150)])
    runner.fail_batches = {2}
    async with Setup(tmp_path, runner) as sync:
        await sync.sync_once()
        health = sync.health()
        assert health.state == "ok" and health.items == 150
        assert (health.failed_batches, health.batches) == (1, 3)
        assert runner.fetch_calls[2:52] == [[f"item-{n}"] for n in range(50, 100)]


async def test_a_poisoned_record_costs_only_itself_and_is_fetched_last_at_the_next_sync(tmp_path):
    # Issue 32.2: one bad record in each of two batches left 0 of 200 items indexed, for good.
    runner = FakeRunner("notes", [item(n) for n in range(200)])
    runner.fail_ids = {"item-10", "item-60"}
    async with Setup(tmp_path, runner) as sync:
        with pytest.raises(SyncError, match="2 of 4 fetch batches failed") as raised:
            await sync.sync_once()
        assert "2 item(s) could not be stored" in str(raised.value)
        assert "item-10: " in str(raised.value) and "item-60: " in str(raised.value)
        health = sync.health()
        assert health.state == "failing" and health.items == 198
        assert health.full()["failed_items"] == 2 and "item-60" in health.full()["last_error"]
        assert set(await sync.store.versions()) == {f"item-{n}" for n in range(200)} - runner.fail_ids
        runner.fetch_calls.clear()
        with pytest.raises(SyncError, match="item-10"):
            await sync.reconcile()  # the bad ones alone and last; no batch is lost to them
        assert runner.fetch_calls == [["item-10"], ["item-60"]]
        runner.fail_ids = set()
        await sync.reconcile()
        assert sync.health().state == "ok" and sync.health().items == 200


@pytest.mark.parametrize(("rule", "calls"), [("timeout", 3), ("exit status", 10)])
async def test_a_source_that_is_down_costs_three_timeouts_or_ten_quick_calls(tmp_path, rule, calls):
    runner = FakeRunner("notes", [item(n) for n in range(200)])
    runner.fail_batches = set(range(2, 100))  # every call after the first
    runner.fail_rule = rule
    async with Setup(tmp_path, runner) as sync:
        with pytest.raises(SyncError, match="source looks down") as raised:
            await sync.sync_once()
        assert "1 of 4 fetch batches failed" in str(raised.value)
        assert len(runner.fetch_calls) == 1 + calls  # a batch, then some of its ids alone
        assert sync.health().items == 50


async def test_a_bad_line_is_about_one_record_and_never_stops_the_fetch(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(100)])
    runner.fail_ids = {f"item-{n}" for n in range(40, 60)}
    runner.fail_rule = "malformed line"
    async with Setup(tmp_path, runner) as sync:
        with pytest.raises(SyncError, match="20 item"):
            await sync.sync_once()
        assert sync.health().items == 80


async def test_a_refused_protocol_keeps_the_old_index_serving(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(5)])
    async with Setup(tmp_path, runner) as sync:
        await sync.sync_once()
    runner.protocol = "2"
    async with Setup(tmp_path, runner, embedder=ToyEmbedder(name="toy-new")) as sync:
        with pytest.raises(PassagewayError, match="protocol"):
            await sync.sync_once()
        assert sync.health().state == "failing"
        assert await sync.store.embedder() == ("toy-hash-64", 64)
        assert sync.health().items == 5
        assert await keyword_list(sync.store, "river", toy_vectors(["river"])[0], 5)


async def test_one_failing_source_leaves_the_other_ok_and_keeps_serving(tmp_path):
    good = FakeRunner("good", [item(n) for n in range(20)])
    bad = FakeRunner("bad", [item(n, prefix="bad") for n in range(20)])
    first, second = Setup(tmp_path, good, "good"), Setup(tmp_path, bad, "bad")
    async with first as good_sync, second as bad_sync:
        await asyncio.gather(good_sync.sync_once(), bad_sync.sync_once())
        bad.fail_all = True
        good.set(item(3, "2"))
        results = await asyncio.gather(good_sync.reconcile(), bad_sync.reconcile(), return_exceptions=True)
        assert results[0] is None and isinstance(results[1], PassagewayError)
        assert good_sync.health().state == "ok"
        assert bad_sync.health().state == "failing" and "told to fail" in bad_sync.health().last_error
        assert bad_sync.health().items == 20
        hits = await keyword_list(bad_sync.store, "river", toy_vectors(["river"])[0], 5)
        assert hits and all(hit.source == "bad" for hit in hits)


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


async def test_the_vector_cache_means_a_second_build_embeds_nothing(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(60)])
    embedder = ToyEmbedder()
    async with Setup(tmp_path, runner, embedder=embedder) as sync:
        await sync.sync_once()
        assert embedder.texts_embedded == 120
        await sync.build()
        assert embedder.texts_embedded == 120
        assert sync.health().passages == 120
    (tmp_path / "notes.db").unlink()
    (tmp_path / "notes.usearch").unlink()
    async with Setup(tmp_path, runner, embedder=embedder) as sync:
        await sync.sync_once()
        assert embedder.texts_embedded == 120  # a rebuilt source reuses every vector
        assert sync.health().items == 60
        assert len(await vector_list(sync.store, toy_vectors(["river"])[0], 200)) == 120


async def test_embedding_is_batched(tmp_path):
    runner = FakeRunner("notes", [item(n, sections=5) for n in range(20)])
    embedder = ToyEmbedder()
    async with Setup(tmp_path, runner, embedder=embedder, embed_batch=32) as sync:
        await sync.sync_once()
    assert embedder.texts_embedded == 100
    assert embedder.calls == 4  # 100 texts in 32 + 32 + 32 + 4


async def test_a_failing_embedder_fails_the_sync_and_leaves_passages_for_keywords(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(10)])
    embedder = ToyEmbedder()
    embedder.fail = True
    async with Setup(tmp_path, runner, embedder=embedder) as sync:
        with pytest.raises(PassagewayError, match="toy embedder told to fail"):
            await sync.sync_once()
        health = sync.health()
        assert (health.state, health.items, health.passages) == ("failing", 10, 20)
        assert len(await sync.store.pending(100)) == 20  # stored, waiting for their vectors
        embedder.fail = False
        await sync.sync_once()  # the next start embeds them
        assert await sync.store.pending(100) == []
        assert sync.health().state == "ok"


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


async def test_a_build_that_is_killed_keeps_the_vectors_of_every_finished_embedder_call(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(20)])  # one fetch batch, 40 passages
    embedder = ToyEmbedder()
    original = embedder.embed
    calls = 0

    async def dies_in_the_third_call(texts, kind):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls == 3:
            raise asyncio.CancelledError  # the process is stopped in the middle of the batch
        return await original(texts, kind)

    embedder.embed = dies_in_the_third_call  # type: ignore[method-assign]
    async with Setup(tmp_path, runner, embedder=embedder, embed_batch=10) as sync:
        with pytest.raises(asyncio.CancelledError):
            await sync.sync_once()
        assert len(await sync.store.versions()) == 20  # stored before their vectors
        assert len(await sync.store.pending(100)) == 20  # two calls' vectors were set
    embedder.embed = original  # type: ignore[method-assign]
    before = embedder.texts_embedded
    async with Setup(tmp_path, runner, embedder=embedder, embed_batch=10) as sync:
        await sync.sync_once()
        assert sync.health().passages == 40
    assert embedder.texts_embedded - before == 20  # the two finished calls were not repeated


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
        assert notes[:2] == ["notes: 0 of 40 passages indexed", "notes: 10 of 40 passages indexed"]
        assert sync.health().building_note() is None
        runner.set(item(3, "2"))
        notes.clear()
        await sync.reconcile()  # a reconcile is not a first build: answers carry no note
        assert notes and set(notes) == {None}


async def test_run_forever_polls_and_reconciles_on_schedule(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(3)])
    async with Setup(tmp_path, runner) as sync:
        task = asyncio.create_task(sync.run_forever(poll_seconds=0.02, reconcile_seconds=0.15))
        await asyncio.sleep(0.5)
        runner.fail_all = True  # failures go to health; the loop goes on
        await asyncio.sleep(0.2)
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert runner.list_calls >= 3  # the start, then reconciles
        assert len(runner.changed_calls) >= 5
        assert sync.health().state == "failing"


# -- with the real fake connector as a subprocess --------------------------------------------


async def test_end_to_end_with_the_fake_connector(tmp_path):
    items_file = write_items(tmp_path / "items.json", [item(n) for n in range(60)])
    settings = fake_connector_settings("notes", items_file)
    runner = ConnectorRunner(settings, environ={"PATH": "/usr/bin:/bin"})
    async with Setup(tmp_path, runner) as sync:
        await sync.sync_once()
        assert sync.health().items == 60
        write_items(items_file, [item(n, "2" if n == 5 else "1") for n in range(1, 61)])
        await sync.reconcile()
        versions = await sync.store.versions()
        assert "item-0" not in versions and versions["item-5"] == "2" and "item-60" in versions


async def test_end_to_end_a_failing_fetch_batch(tmp_path):
    items_file = write_items(tmp_path / "items.json", [item(n) for n in range(120)])
    settings = fake_connector_settings("notes", items_file, FAKE_FAIL="fetch:item-60")
    runner = ConnectorRunner(settings, environ={"PATH": "/usr/bin:/bin"})
    async with Setup(tmp_path, runner) as sync:
        with pytest.raises(SyncError, match="1 of 3 fetch batches failed") as raised:
            await sync.sync_once()
        assert sync.health().items == 119  # all but the one that fails alone
        assert "item-60: " in str(raised.value)


async def test_a_hanging_source_does_not_hold_up_another(tmp_path):
    quick_file = write_items(tmp_path / "quick.json", [item(n) for n in range(5)])
    slow_file = write_items(tmp_path / "slow.json", [item(n) for n in range(5)])
    quick = ConnectorRunner(fake_connector_settings("quick", quick_file), environ={"PATH": "/usr/bin:/bin"})
    slow_settings = fake_connector_settings("slow", slow_file, FAKE_SLEEP="check:30")
    slow_settings = attrs.evolve(slow_settings, timeout=1.5)
    slow = ConnectorRunner(slow_settings, environ={"PATH": "/usr/bin:/bin"})
    async with Setup(tmp_path, quick, "quick") as quick_sync, Setup(tmp_path, slow, "slow") as slow_sync:
        slow_task = asyncio.create_task(slow_sync.sync_once())
        started = asyncio.get_running_loop().time()
        await quick_sync.sync_once()
        assert quick_sync.health().state == "ok" and quick_sync.health().items == 5
        assert asyncio.get_running_loop().time() - started < 1.5
        with pytest.raises(PassagewayError, match="time"):
            await slow_task
        assert slow_sync.health().state == "failing"


async def test_a_reconcile_of_a_new_index_builds_it(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(3)])
    async with Setup(tmp_path, runner) as sync:
        await sync.reconcile()
        assert sync.health().items == 3 and sync.health().state == "ok"
        assert await sync.store.embedder() == ("toy-hash-64", 64)


async def test_vectors_are_stored_at_unit_length_and_a_wrong_shape_fails_the_sync(tmp_path):
    class Loud(ToyEmbedder):
        async def embed(self, texts, kind):
            return 3.0 * await super().embed(texts, kind)

    runner = FakeRunner("notes", [item(n) for n in range(3)])
    async with Setup(tmp_path, runner, embedder=Loud()) as sync:
        await sync.sync_once()
        # keyword candidates take the dot product of stored vectors: it is a cosine only at unit length
        hits = await keyword_list(sync.store, "note", toy_vectors(["note"])[0], 10)
        assert hits and all(-1.0001 <= hit.similarity <= 1.0001 for hit in hits)

    class Short(ToyEmbedder):
        async def embed(self, texts, kind):
            return (await super().embed(texts, kind))[:-1]

    runner = FakeRunner("other", [item(n) for n in range(3)])
    async with Setup(tmp_path, runner, "other", embedder=Short(name="short")) as sync:
        with pytest.raises(PassagewayError, match="shape"):
            await sync.sync_once()
        assert len(await sync.store.pending(10)) == 6  # stored for keywords, no vector stored


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


async def test_a_listed_entry_left_out_keeps_the_source_from_saying_ok(tmp_path):
    # Issue 32.13: an entry the runner leaves out (an id that is not Unicode) was silent.
    runner = FakeRunner("notes", [item(n) for n in range(3)])
    runner.left_out = ["line 2: the id 'b\ufffd' holds a lone surrogate escape"]
    async with Setup(tmp_path, runner) as sync:
        with pytest.raises(SyncError, match="1 listed entries were left out: line 2"):
            await sync.sync_once()
        assert sync.health().state == "failing" and sync.health().items == 3
        runner.left_out = []
        await sync.reconcile()
        assert sync.health().state == "ok"


async def test_bad_records_are_remembered_across_a_restart_and_never_look_like_a_source_down(tmp_path):
    # Five bad records, all that is left to fetch after a restart: each is tried alone and named,
    # where three failing in a row would have looked like a source that is down.
    runner = FakeRunner("notes", [item(n) for n in range(100)])
    runner.fail_ids = {f"item-{n}" for n in (3, 4, 5, 6, 7)}
    async with Setup(tmp_path, runner) as sync:
        with pytest.raises(SyncError):
            await sync.sync_once()
    async with Setup(tmp_path, runner) as sync:  # a restart: a new sync over the same index
        runner.fetch_calls.clear()
        with pytest.raises(SyncError, match="5 item") as raised:
            await sync.sync_once()
        assert runner.fetch_calls == [[f"item-{n}"] for n in (3, 4, 5, 6, 7)]
        assert "looks down" not in str(raised.value) and sync.health().items == 95

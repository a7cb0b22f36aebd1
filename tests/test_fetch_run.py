"""The fetch in batches (kernel/index/fetch_run.py) as a sync drives it: a failing batch fetched one id at a
time, poisoned records fetched last and remembered across restarts, a source that is down, bad lines;
the next batch fetched while the sync makes and writes the one before (one ahead, never more), and
what a cancelled run or a failing write leaves."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from passageway.kernel.connector.runner import ConnectorRunner
from passageway.kernel.errors import EmbedderError, StoreError, SyncError
from tests.sync_helpers import FakeRunner, Setup, fake_connector_settings, item, write_items


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


async def test_end_to_end_a_failing_fetch_batch(tmp_path):
    # Batches of 10, not 50: the failing batch is fetched again one id at a time, a connector
    # process per id, and 50 of them made this the slowest test of the sync (24 s under load).
    items_file = write_items(tmp_path / "items.json", [item(n) for n in range(30)])
    settings = fake_connector_settings("notes", items_file, FAKE_FAIL="fetch:item-15")
    runner = ConnectorRunner(settings, environ={"PATH": "/usr/bin:/bin"})
    async with Setup(tmp_path, runner, fetch_batch=10) as sync:
        with pytest.raises(SyncError, match="1 of 3 fetch batches failed") as raised:
            await sync.sync_once()
        assert sync.health().items == 29  # all but the one that fails alone
        assert "item-15: " in str(raised.value)


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


async def test_a_build_whose_every_fetch_fails_says_nothing_could_be_fetched_not_ready(tmp_path, caplog):
    # Issue 38.7: "ready: 0 items" was logged for a source none of whose items could be fetched.
    runner = FakeRunner("notes", [item(n) for n in range(120)])
    runner.fail_batches = set(range(1, 1000))
    caplog.set_level("INFO", logger="passageway")
    async with Setup(tmp_path, runner) as sync:
        with pytest.raises(SyncError, match="nothing could be fetched: none of the 120 items"):
            await sync.sync_once()
        health = sync.health()
        assert health.state == "failing" and health.items == 0
        assert health.full()["failed_items"] == 120
        assert "nothing could be fetched" in health.full()["last_error"]
    lines = [record.getMessage() for record in caplog.records]
    assert not [line for line in lines if "ready" in line]
    [summary] = [line for line in lines if "nothing could be fetched" in line]
    assert "120 items" in summary and "next sync" in summary


class EmptyFetch(FakeRunner):
    """A connector that lists items and then delivers none of them, without an error."""

    async def fetch(self, ids):  # type: ignore[no-untyped-def]
        self.fetch_calls.append(list(ids))
        return []


async def test_a_fetch_that_returns_none_of_the_listed_items_is_a_failure_not_ready(tmp_path, caplog):
    runner = EmptyFetch("notes", [item(n) for n in range(60)])
    caplog.set_level("INFO", logger="passageway")
    async with Setup(tmp_path, runner) as sync:
        with pytest.raises(SyncError, match="nothing could be fetched: none of the 60 items"):
            await sync.sync_once()
        assert sync.health().state == "failing" and sync.health().full()["failed_items"] == 60
    assert not [record for record in caplog.records if "ready" in record.getMessage()]


# -- one ahead: the sync's loop over the batches the run yields ---------------------------------


class Requests(FakeRunner):
    """A fake runner that notes each fetch when it is asked for (not when its task first runs),
    and can hold the fetch call numbered ``hold_at`` (1-based) until ``release`` is set."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.requested = 0
        self.hold_at = 0
        self.held, self.release = asyncio.Event(), asyncio.Event()
        self.cancelled: list[int] = []

    def fetch(self, ids):  # type: ignore[no-untyped-def]
        self.requested += 1
        return self._fetch(self.requested, ids)

    async def _fetch(self, number, ids):  # type: ignore[no-untyped-def]
        if number == self.hold_at:
            self.held.set()
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancelled.append(number)
                raise
        return await super().fetch(ids)


def eager(sync):  # type: ignore[no-untyped-def]
    """Make ``sync`` treat its store as one that takes each batch with its vectors."""
    sync.later = sync.update_maker.later = False
    return sync


@pytest.mark.parametrize("later", [True, False])
async def test_the_next_batch_is_asked_for_before_this_one_is_made_and_written_and_never_two(
        tmp_path, later):
    runner = Requests("notes", [item(n) for n in range(40)])
    async with Setup(tmp_path, runner, fetch_batch=10) as sync:
        if not later:
            eager(sync)
        asked_when_made: list[int] = []
        second_made = asyncio.Event()
        make, apply = sync.update_maker.prepare, sync.store.apply

        async def making(items, progress):  # type: ignore[no-untyped-def]
            asked_when_made.append(runner.requested)
            if len(asked_when_made) == 2:
                second_made.set()
            return await make(items, progress)

        first_write_waited: list[bool] = []

        async def writing(updates, gone):  # type: ignore[no-untyped-def]
            if not first_write_waited:  # the first write ends only once the second batch is made
                with contextlib.suppress(TimeoutError):  # a guard against a hang, not a measure
                    await asyncio.wait_for(second_made.wait(), 60)
                first_write_waited.append(second_made.is_set())
            await apply(updates, gone)

        sync.update_maker.prepare = making  # type: ignore[method-assign]
        sync.store.apply = writing  # type: ignore[method-assign]
        await sync.sync_once()
        # Batch k is made when batch k + 1 has been asked for, and not batch k + 2.
        assert asked_when_made == [2, 3, 4, 4]
        assert first_write_waited == [True]  # its write was in flight while the next was made
        assert sync.health().state == "ok" and sync.health().items == 40


@pytest.mark.parametrize("later", [True, False])
async def test_a_cancelled_sync_cancels_the_fetch_ahead_and_lets_the_write_in_flight_commit(
        tmp_path, later):
    runner = Requests("notes", [item(n) for n in range(30)])
    runner.hold_at = 2
    async with Setup(tmp_path, runner, fetch_batch=10) as sync:
        if not later:
            eager(sync)
        apply = sync.store.apply
        write_entered, let_write_end = asyncio.Event(), asyncio.Event()

        async def writing(updates, gone):  # type: ignore[no-untyped-def]
            write_entered.set()
            await let_write_end.wait()
            await apply(updates, gone)

        sync.store.apply = writing  # type: ignore[method-assign]
        task = asyncio.create_task(sync.sync_once())
        await asyncio.wait_for(asyncio.gather(runner.held.wait(), write_entered.wait()), 60)
        task.cancel()
        for _ in range(50):
            await asyncio.sleep(0)
        assert not task.done()  # it waits for the write in flight
        let_write_end.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert runner.cancelled == [2] and runner.requested == 2
        assert len(await sync.store.versions()) == 10  # the first batch, whole


@pytest.mark.parametrize("later", [True, False])
async def test_a_write_that_fails_stops_the_run_and_keeps_the_batches_before_it(tmp_path, later):
    runner = FakeRunner("notes", [item(n) for n in range(40)])
    async with Setup(tmp_path, runner, fetch_batch=10) as sync:
        if not later:
            eager(sync)
        apply = sync.store.apply
        writes = 0

        async def writing(updates, gone):  # type: ignore[no-untyped-def]
            nonlocal writes
            writes += 1
            if writes == 2:
                raise StoreError("the disk is full; free some space")
            await apply(updates, gone)

        sync.store.apply = writing  # type: ignore[method-assign]
        with pytest.raises(SyncError, match="the disk is full"):
            await sync.sync_once()
        assert writes == 2  # nothing written after the failed one
        assert len(await sync.store.versions()) == 10
        assert sync.health().full()["failed_batches"] == 1


async def test_an_embedder_that_fails_while_a_batch_is_made_stops_the_run(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(40)])
    async with Setup(tmp_path, runner, fetch_batch=10) as sync:
        eager(sync)
        make = sync.update_maker.prepare
        made = 0

        async def making(items, progress):  # type: ignore[no-untyped-def]
            nonlocal made
            made += 1
            if made == 3:
                raise EmbedderError("the embedder stopped; see its log")
            return await make(items, progress)

        sync.update_maker.prepare = making  # type: ignore[method-assign]
        with pytest.raises(SyncError, match="the embedder stopped"):
            await sync.sync_once()
        assert made == 3 and len(await sync.store.versions()) == 20
        assert len(runner.fetch_calls) == 4  # the fourth was asked for ahead, then cancelled or done

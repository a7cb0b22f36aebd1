"""The sync: build, reconcile, poll, the deletion guard, failing batches, health and the cache."""

from __future__ import annotations

import ast
import asyncio
import functools
import inspect
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
import pytest

from passageway.kernel.connector.runner import ConnectorRunner
from passageway.kernel.errors import DeletionRefused, PassagewayError, SyncError
from passageway.kernel.index.sync import POLL_OVERLAP_SECONDS, SourceSync
from passageway.testing.toy_embedder import ToyEmbedder, toy_vectors
from tests.sync_helpers import (
    FakeRunner,
    Setup,
    fake_connector_settings,
    item,
    keyword_list,
    stored_passages,
    vector_list,
    write_items,
)
from tests.waiting import HELD_CONNECTOR, WAIT_SECONDS, until


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


async def test_run_forever_polls_and_reconciles_on_schedule(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(3)])
    async with Setup(tmp_path, runner) as sync:
        task = asyncio.create_task(sync.run_forever(poll_seconds=0.02, reconcile_seconds=0.15))
        # Counted calls, not a time: on a busy machine 0.5 s may hold a single poll.
        await until(lambda: runner.list_calls >= 3 and len(runner.changed_calls) >= 5,
                    "the start, two reconciles and five polls")
        runner.fail_all = True  # failures go to health; the loop goes on
        await until(lambda: sync.health().state == "failing", "a failing call reaches the health")
        for _ in range(10):
            await asyncio.sleep(0.02)  # more polls, failing too
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


async def test_a_hanging_source_does_not_hold_up_another(tmp_path):
    quick_file = write_items(tmp_path / "quick.json", [item(n) for n in range(5)])
    slow_file = write_items(tmp_path / "slow.json", [item(n) for n in range(5)])
    quick = ConnectorRunner(fake_connector_settings("quick", quick_file), environ={"PATH": "/usr/bin:/bin"})
    # The slow source's connector hangs at its check until the test lets it go: the quick source
    # must finish all the same (an event decides the order; no timeout has to run out). Timing
    # out a hanging connector is the runner's, tested in test_connector.py.
    let_go, script = tmp_path / "let-slow-go", tmp_path / "held_check.py"
    script.write_text(HELD_CONNECTOR, encoding="utf-8")
    slow_settings = fake_connector_settings("slow", slow_file, HOLD_MODE="check", HOLD_UNTIL=str(let_go))
    slow = ConnectorRunner(attrs.evolve(slow_settings, command=(sys.executable, str(script)), timeout=600),
                           environ={"PATH": "/usr/bin:/bin"})
    async with Setup(tmp_path, quick, "quick") as quick_sync, Setup(tmp_path, slow, "slow") as slow_sync:
        slow_task = asyncio.create_task(slow_sync.sync_once())
        await asyncio.wait_for(quick_sync.sync_once(), WAIT_SECONDS)  # not behind the held one
        assert quick_sync.health().state == "ok" and quick_sync.health().items == 5
        assert not slow_task.done() and slow_sync.health().items == 0
        let_go.touch()
        await asyncio.wait_for(slow_task, WAIT_SECONDS)
        assert slow_sync.health().state == "ok" and slow_sync.health().items == 5


async def test_a_reconcile_of_a_new_index_builds_it(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(3)])
    async with Setup(tmp_path, runner) as sync:
        await sync.reconcile()
        assert sync.health().items == 3 and sync.health().state == "ok"
        assert await sync.store.embedder() == ("toy-hash-64", 64)


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


# -- one conductor: nothing on the index path calls the sync back ------------------------------

INDEX = Path(__file__).parent.parent / "kernel" / "index"


def test_the_sync_hands_none_of_its_methods_to_anything():
    """Read statically: in SourceSync, ``self.<method>`` is only ever called, never passed on,
    stored or wrapped (the callbacks of issue 39 made a loop no reader could follow)."""
    tree = ast.parse((INDEX / "sync.py").read_text(encoding="utf-8"))
    [cls] = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "SourceSync"]
    methods = {node.name for node in cls.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
               and not any(isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list)}
    called = {id(node.func) for node in ast.walk(cls) if isinstance(node, ast.Call)}
    handed = [f"line {node.lineno}: self.{node.attr}" for node in ast.walk(cls)
              if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id == "self" and node.attr in methods and id(node) not in called]
    assert methods and handed == []


def _of_the_sync(value: object) -> bool:
    if isinstance(value, functools.partial):
        return any(_of_the_sync(part) for part in (value.func, *value.args, *value.keywords.values()))
    return inspect.ismethod(value) and isinstance(value.__self__, SourceSync)


def _arguments(frame) -> list[object]:  # type: ignore[no-untyped-def]
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount
    values = [frame.f_locals.get(name) for name in code.co_varnames[:count]]
    if code.co_flags & inspect.CO_VARARGS:
        values.extend(frame.f_locals.get(code.co_varnames[count], ()))
        count += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        values.extend(frame.f_locals.get(code.co_varnames[count], {}).values())
    return values


@pytest.mark.parametrize("later", [True, False])
async def test_no_function_of_the_index_path_is_called_with_a_bound_method_of_the_sync(tmp_path, later):
    """Watched at run time: every call into kernel/index during a build, a reconcile and a poll."""
    runner = FakeRunner("notes", [item(n, updated="2024-01-01T00:00:00Z") for n in range(30)])
    handed: list[str] = []
    calls = 0

    def watch(frame, event, _arg):  # type: ignore[no-untyped-def]
        nonlocal calls
        if event == "call" and "kernel/index/" in frame.f_code.co_filename.replace("\\", "/"):
            calls += 1
            handed.extend(f"{frame.f_code.co_qualname}({value!r})" for value in _arguments(frame)
                          if _of_the_sync(value))

    async with Setup(tmp_path, runner, fetch_batch=10) as sync:
        if not later:
            sync.later = sync.update_maker.later = False
        sys.setprofile(watch)
        try:
            await sync.sync_once()
            runner.set(item(3, "2", updated="2099-01-01T00:00:00Z"), item(40))
            await sync.poll()
            runner.remove("item-5")
            await sync.reconcile()
        finally:
            sys.setprofile(None)
        assert sync.health().state == "ok" and sync.health().items == 30
    assert calls > 100 and handed == []

"""Two servers on one PostgreSQL index: one syncs, both answer, the other takes over."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from passageway_store_postgres.testing import fresh_schema, server_uri

from passageway.kernel.app import Kernel
from passageway.kernel.config import load_settings
from passageway.kernel.plugins import build_plugin_manager
from passageway.testing import toy_plugin

ITEMS = 150  # three fetch batches of 50


def items() -> list[dict[str, object]]:
    return [{"id": f"note-{n}", "title": f"Lighthouse note {n}", "url": f"https://example.test/{n}",
             "version": "1", "sections": [{"text": f"The lighthouse keeper wrote entry number {n}."}]}
            for n in range(ITEMS)]


def environment(folder: Path, dsn: str, schema_name: str) -> dict[str, str]:
    """One server's environment: its own data folder, the shared database and schema."""
    folder.mkdir()
    items_path = folder / "items.json"
    items_path.write_text(json.dumps(items()), encoding="utf-8")
    config = folder / "passageway.toml"
    config.write_text(
        '[embedder]\nkind = "toy"\n\n'
        f'[store]\ndsn = "env:PG_DSN"\nschema = "{schema_name}"\npool_size = 2\n\n'
        '[[connector]]\nname = "notes"\n'
        f'command = [{json.dumps(sys.executable)}, "-m", "passageway.testing.fake_connector"]\n'
        f'env = {{ FAKE_ITEMS = {json.dumps(str(items_path))}, FAKE_SLEEP = "fetch:0.6" }}\n',
        encoding="utf-8")
    return {
        "HOME": str(folder), "PATH": "/usr/bin:/bin", "PG_DSN": dsn,
        "PASSAGEWAY_CONFIG": str(config), "PASSAGEWAY_DATA_DIR": str(folder / "data"),
        "PASSAGEWAY_LOGIN_PASSWORD": "replica-test-password", "PASSAGEWAY_STORE": "postgres",
        "PASSAGEWAY_LOAD_PLUGINS": "postgres", "PASSAGEWAY_POLL_SECONDS": "0.3",
        "PASSAGEWAY_RECONCILE_SECONDS": "3600",
    }


async def started(environ: dict[str, str]) -> Kernel:
    manager = build_plugin_manager(environ, extra=(("toy", toy_plugin),))
    kernel = Kernel.create(load_settings(environ), manager, environ)
    assert kernel.config_error is None, kernel.config_error
    await kernel.start_embedder()
    await kernel.open_stores()
    kernel.start_background_sync()
    return kernel


async def stopped(kernel: Kernel) -> None:
    await kernel.stop_background_sync()
    await kernel.close_stores()
    await kernel.close_embedder()


async def until(condition, timeout: float = 120.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


def notes(kernel: Kernel) -> dict[str, object]:
    return kernel.health(include_errors=True)["sources"]["notes"]


async def test_one_server_syncs_both_answer_and_the_other_finishes_a_build_when_it_dies(tmp_path):
    try:
        dsn = server_uri()
    except RuntimeError as error:
        pytest.skip(str(error))
    schema_name = fresh_schema("replicas")
    first = await started(environment(tmp_path / "first", dsn, schema_name))
    await until(lambda: notes(first).get("syncing") == first.syncs.replica)
    second = await started(environment(tmp_path / "second", dsn, schema_name))
    try:
        # the first server builds; the second follows and shows the same state
        await until(lambda: 0 < int(notes(second)["items"]) < ITEMS)
        assert notes(second)["syncing"] == first.syncs.replica
        assert notes(second)["replica"] == second.syncs.replica
        assert notes(first)["state"] == notes(second)["state"] == "indexing"
        answers = await asyncio.gather(first.recall("lighthouse keeper entry"),
                                       second.recall("lighthouse keeper entry"))
        assert all(answer.hits for answer in answers)
        # the first server dies mid-build: the second takes the lead and finishes it
        await stopped(first)
        store = second.sources["notes"].store
        assert store is not None and (await store.counts())[0] < ITEMS  # it did die mid-build
        await until(lambda: notes(second).get("syncing") == second.syncs.replica, timeout=5)
        await until(lambda: notes(second)["state"] == "ok" and notes(second)["items"] == ITEMS)
        assert len(await store.versions()) == ITEMS
        assert notes(second)["failing"] is False
    finally:
        await stopped(first)
        await stopped(second)


async def test_health_is_failing_while_the_database_is_down_and_ok_after(tmp_path, quick_outage):
    # Issue 32, item 12: /health said ok for the three minutes the database was down (every
    # recall a 503), and turned failing only once it was back.
    from passageway_store_postgres.testing import StoppableServer

    try:
        database = StoppableServer()
    except RuntimeError as error:
        pytest.skip(str(error))
    kernel = await started(environment(tmp_path / "alone", database.uri, fresh_schema("down")))
    try:
        await until(lambda: notes(kernel)["state"] == "ok" and notes(kernel)["items"] == ITEMS, timeout=60)
        database.stop()
        await until(lambda: notes(kernel)["state"] == "failing", timeout=20)
        assert kernel.health(include_errors=True)["status"] == "degraded"
        # which words depend on the moment it went: a query cut off ("the PostgreSQL connection was
        # lost") or no connection at all ("the database …"); either names the store's server
        assert any(word in notes(kernel)["error"] for word in ("PostgreSQL", "database", "store"))
        database.start()
        await until(lambda: notes(kernel)["state"] == "ok", timeout=30)
        assert (await kernel.recall("lighthouse keeper entry")).hits
    finally:
        await stopped(kernel)

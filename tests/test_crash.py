"""``kill -9`` during a sync: the index stays consistent, no call is half stored, the next sync
completes. The sync runs in a child Python process against the real fake connector."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from passageway.builtin.storage import SqliteStore
from passageway.kernel.text.chunking import passages_for
from tests.sync_helpers import item, stored_passages, write_items

ITEMS = 200
BATCH = 50

CHILD = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path

    from passageway.builtin.storage import SqliteStore
    from passageway.kernel.config import ConnectorSettings
    from passageway.kernel.connector.runner import ConnectorRunner
    from passageway.kernel.index.sync import SourceSync
    from passageway.builtin.storage.vector_cache import SqliteVectorCache
    from passageway.testing.toy_embedder import ToyEmbedder


    class SlowEmbedder(ToyEmbedder):
        async def embed(self, texts, kind):
            await asyncio.sleep(0.03)
            return await super().embed(texts, kind)


    async def main(folder, items_file):
        embedder = SlowEmbedder()
        store = SqliteStore(folder / "notes.db", "notes")
        await store.open()
        cache = SqliteVectorCache.for_embedder(folder, embedder.name, embedder.dim)
        await cache.open()
        settings = ConnectorSettings(
            name="notes", command=(sys.executable, "-m", "passageway.testing.fake_connector"),
            env={"FAKE_ITEMS": str(items_file), "FAKE_SLEEP": "fetch:0.1"}, timeout=60)
        runner = ConnectorRunner(settings, environ={"PATH": "/usr/bin:/bin"})
        sync = SourceSync(settings, store, embedder, runner, cache, embed_batch=8)
        print("ready", flush=True)
        await sync.sync_once()
        print(json.dumps(sync.health().full()), flush=True)
        await store.close()
        await cache.close()


    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2])))
    """
)


def start_child(folder: Path, items_file: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(folder), str(items_file)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        cwd=Path(__file__).resolve().parent.parent,
    )


def kill_after_ready(child: subprocess.Popen[str], delay: float) -> None:
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line.strip() == "ready", child.stderr.read() if child.stderr else line
    time.sleep(delay)
    os.killpg(child.pid, signal.SIGKILL)  # the child and the connector it may be running
    child.wait(timeout=10)
    if child.stdout:
        child.stdout.close()
    if child.stderr:
        child.stderr.close()


async def stored_state(folder: Path) -> tuple[dict[str, str], list[str], int]:
    """The stored versions, the problems found, and how many passages wait for their vector."""
    store = SqliteStore(folder / "notes.db", "notes")
    await store.open()
    try:
        problems = await store.check_integrity()
        versions = await store.versions()
        for item_id in versions:
            number = int(item_id.rsplit("-", 1)[1])
            expected = [(p.ordinal, p.heading, p.text, p.digest) for p in passages_for(item(number))]
            if stored_passages(store, item_id) != expected:
                problems.append(f"{item_id} is stored incompletely")
        return versions, problems, len(await store.pending(10 * ITEMS))
    finally:
        await store.close()


def whole_batches(missing: list[str], added: set[str]) -> bool:
    """Whether ``added`` is made of whole fetch batches of ``missing`` (in listing order)."""
    batches = [set(missing[start : start + BATCH]) for start in range(0, len(missing), BATCH)]
    return all(batch <= added or not (batch & added) for batch in batches)


async def test_kill_9_during_sync_leaves_a_consistent_index_and_the_next_sync_completes(tmp_path):
    listing = [item(n) for n in range(ITEMS)]
    items_file = write_items(tmp_path / "items.json", listing)
    order = [entry.id for entry in listing]
    stored: dict[str, str] = {}
    kills_with_progress = 0
    # Four kills at fixed delays, then longer ones only while no kill has landed mid-sync yet
    # (a loaded machine may not even have started fetching after 1.5 s).
    for attempt, delay in enumerate((1.2, 0.9, 1.5, 0.6, 2.5, 4.0, 6.0)):
        if attempt >= 4 and (kills_with_progress or len(stored) == ITEMS):
            break
        missing = [item_id for item_id in order if item_id not in stored]
        child = start_child(tmp_path, items_file)
        kill_after_ready(child, delay)
        if not (tmp_path / "notes.db").exists():
            continue
        after, problems, waiting = await stored_state(tmp_path)
        assert problems == []
        assert set(stored) <= set(after)
        added = set(after) - set(stored)
        assert whole_batches(missing, added), "a fetch call was stored in part"
        # In the middle: items still to fetch, or passages stored that wait for their vectors.
        kills_with_progress += bool(added) and (len(after) < ITEMS or waiting > 0)
        stored = after
    assert kills_with_progress >= 1, "no kill landed in the middle of a sync; lengthen the run"

    child = start_child(tmp_path, items_file)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    lines = out.strip().splitlines()
    assert lines[0] == "ready"
    health = json.loads(lines[-1])
    assert health["state"] == "ok" and health["items"] == ITEMS, health
    final, problems, waiting = await stored_state(tmp_path)
    assert problems == [] and len(final) == ITEMS and waiting == 0

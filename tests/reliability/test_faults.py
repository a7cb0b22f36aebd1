"""``kill -9`` of a real server at random points of a first build and of a reconcile.

After every kill the server starts again; at the end every item is indexed in its last version,
``PRAGMA integrity_check`` says ok, an item once stored is never lost by a kill, and no passage was
embedded again beyond one embedder call per kill (vectors reach the cache call by call).
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from pathlib import Path
from typing import Any

from passageway.kernel.index.item_updates import EMBED_BATCH
from passageway.kernel.records import item_to_json
from tests.reliability.conftest import FULL, scale
from tests.sync_helpers import item

SECTIONS = 2  # passages per item in these tests


def items_file_records(count: int, version: str = "1", start: int = 0) -> list[dict[str, Any]]:
    return [item_to_json(item(number, version, sections=SECTIONS)) for number in range(start, start + count)]


def index_state(database: Path) -> tuple[str, dict[str, str]]:
    """``PRAGMA integrity_check`` and ``id → version`` of a stopped server's index."""
    connection = sqlite3.connect(database)
    try:
        check = connection.execute("PRAGMA integrity_check").fetchone()[0]
        versions = dict(connection.execute("SELECT id, version FROM items").fetchall())
    finally:
        connection.close()
    return check, versions


def vectors_pending(database: Path) -> int:
    """Passages a stopped server stored before their vector (the first build stores text first)."""
    connection = sqlite3.connect(database)
    try:
        return connection.execute("SELECT count(*) FROM passages WHERE length(vector) = 0").fetchone()[0]
    finally:
        connection.close()


def embedded_again(log: Path) -> tuple[int, int]:
    """(texts embedded in all, texts embedded more than once) from the toy embedder's log."""
    lines = log.read_text().split() if log.exists() else []
    return len(lines), len(lines) - len(set(lines))


def kill_at_random(server: Any, rng: random.Random, kills: int, seen: dict[str, str],
                   database: Path, latest: float, done: dict[str, str]) -> list[float]:
    """Start, wait until the sync works, kill -9 after a random delay of at most ``latest`` seconds,
    check that nothing stored was lost, and again ``kills`` times.

    Returns the moments (seconds into the sync) of the kills that landed while work was left (the
    index was not ``done`` yet, or some of its passages still waited for their vector: items are
    stored before their vectors, so most of a first build's work comes after its last item).
    """
    moments = []
    for _ in range(kills):
        server.start()
        server.wait_until(lambda report: report["sources"]["notes"]["state"] != "ok"
                          or report["sources"]["notes"]["items"] == len(done), timeout=60)
        moment = rng.uniform(0.05, latest)
        time.sleep(moment)
        server.kill9()
        check, versions = index_state(database)
        if versions != done or vectors_pending(database):
            moments.append(round(moment, 2))
        assert check == "ok"
        lost = [item_id for item_id in seen if item_id not in versions]
        assert not lost, f"a kill lost stored items such as {lost[:3]}"
        # Items the listing no longer holds may go (the reconcile deletes them); the rest must stay.
        seen.update({item_id: version for item_id, version in versions.items() if item_id in done})
    return moments


def test_kill_9_during_a_first_build_and_a_reconcile(server_factory, tmp_path, figures):
    rng = random.Random(scale(22, int(time.time())))
    count = scale(200, 600)
    build_kills = scale(2, 10)
    reconcile_kills = scale(1, 8)
    embed_log = tmp_path / "embedded.txt"
    server = server_factory(items=items_file_records(count), FAKE_SLEEP=scale("fetch:0.4", "fetch:1.0"),
                            TOY_EMBED_DELAY=scale("0.05", "0.1"), TOY_EMBED_LOG=str(embed_log))
    database = tmp_path / "data" / "notes.db"
    seen: dict[str, str] = {}

    # The first build, killed at random points.
    complete = {f"item-{n}": "1" for n in range(count)}
    moments = kill_at_random(server, rng, build_kills, seen, database, scale(0.6, 1.0), complete)
    server.start()
    server.wait_until(lambda report: report["sources"]["notes"]["state"] == "ok"
                      and report["sources"]["notes"]["items"] == count, timeout=scale(180, 600))
    server.stop()
    check, versions = index_state(database)
    assert check == "ok" and versions == complete
    total, again = embedded_again(embed_log)
    assert total - again == count * SECTIONS  # every passage was embedded ...
    assert again <= build_kills * EMBED_BATCH  # ... and again at most one embedder call per kill

    # A reconcile: a quarter edited, a tenth added, a twentieth deleted (under the deletion guard).
    records = items_file_records(count)
    edited = {n for n in range(count) if n % 4 == 0}
    deleted = {n for n in range(count) if n % 20 == 1}
    added = count // 10
    changed = [record for n, record in enumerate(records) if n not in deleted and n not in edited]
    changed += [item_to_json(item(n, "2", sections=SECTIONS)) for n in sorted(edited)]
    changed += items_file_records(added, start=count)
    Path(server.environ["PASSAGEWAY_CONFIG"]).with_name("items.json").write_text(
        json.dumps(changed), encoding="utf-8")
    expected = {record["id"]: record["version"] for record in changed}
    seen = {item_id: version for item_id, version in versions.items() if item_id in expected}
    moments += kill_at_random(server, rng, reconcile_kills, seen, database, scale(0.4, 0.6), expected)
    server.start()
    server.wait_until(lambda report: report["sources"]["notes"]["state"] == "ok"
                      and report["sources"]["notes"]["items"] == len(expected), timeout=scale(180, 600))
    server.stop()
    check, versions = index_state(database)
    assert check == "ok"
    assert versions == expected
    server.assert_clean_log()
    # The kills must land in the work, or the test proves nothing; most do (a slow start or a
    # long delay can let a short reconcile finish first).
    assert len(moments) >= (build_kills + reconcile_kills) // 2, moments
    figures.add(
        "faults", kills=build_kills + reconcile_kills, build_kills=build_kills,
        reconcile_kills=reconcile_kills, server_starts=server.starts, items_expected=len(expected),
        items_lost=len(set(expected) - set(versions)), integrity_checks_failed=0,
        texts_embedded_again=again, kills_with_work_left=len(moments),
        kill_moments_seconds=moments if FULL else moments[:3],
    )

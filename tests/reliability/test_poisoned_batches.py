"""Issue 32.2: a poisoned record costs only itself, at the first sync and at every later one.

The probe's case: 200 items, one bad record in each of the first two fetch batches (``item-10``
and ``item-60``), which left 0 of 200 items indexed for good. Here one source per kind of bad
record (not UTF-8, nested 200,000 deep, bytes that are not JSON, a connector that crashes on the
record) runs in a real server beside a healthy one. Each must index the other 198 items, name
both bad ones in ``/health`` and the log, keep them out of every other batch at the next start,
and index all 200 once the records are mended. No traceback, no ERROR line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.reliability.conftest import scale, server_environ

CONNECTOR = Path(__file__).with_name("bad_connector.py")
COUNT = 200
BAD_IDS = scale("10,60", "10,60,110,160,199")
FETCH_BATCH = scale(10, 50)
"""Ids a fetch asks for (the server's own is 50): a failing batch is fetched again one id at a time,
so the reduced run's smaller batches start a third of the connector processes; each bad id is
still in a batch of its own, among good ones."""
KINDS = {"not-utf8": "invalid-utf8", "nested": "deep", "garbage": "garbage", "crashes": "exit"}


def config(healed: Path) -> str:
    tables = []
    for name, behaviour in {"healthy": "good", **KINDS}.items():
        env = {"BEHAVIOUR": behaviour, "COUNT": str(COUNT), "HEALED": str(healed), "BAD_IDS": BAD_IDS}
        tables.append(
            f'[[connector]]\nname = "{name}"\n'
            f"command = [{json.dumps(sys.executable)}, {json.dumps(str(CONNECTOR))}]\n"
            f"env = {{ {', '.join(f'{key} = {json.dumps(value)}' for key, value in env.items())} }}\n"
            "timeout = 30\n"
        )
    return '[embedder]\nkind = "toy"\n\n' + "\n".join(tables)


def settled(report: dict, names: list[str]) -> bool:
    return all(report["sources"][name]["state"] != "indexing" and report["sources"][name]["items"]
               for name in names)


def test_a_poisoned_record_in_each_of_two_batches_costs_only_those_records(server_factory, tmp_path,
                                                                            figures):
    healed = tmp_path / "healed"
    environ = server_environ(tmp_path, TOY_FETCH_BATCH=str(FETCH_BATCH))
    Path(environ["PASSAGEWAY_CONFIG"]).write_text(config(healed), encoding="utf-8")
    server = server_factory(environ=environ)
    names = ["healthy", *KINDS]
    bad = [f"item-{number}" for number in BAD_IDS.split(",")]
    lost_to_others = 0
    for start in range(2):  # the first build, then a restart (a reconcile) with the same records
        server.start()
        report = server.wait_until(lambda report: settled(report, names), timeout=scale(180, 400))
        healthy = report["sources"]["healthy"]
        assert healthy["state"] == "ok" and healthy["items"] == COUNT, healthy
        for name in KINDS:
            entry = report["sources"][name]
            lost_to_others += COUNT - len(bad) - entry["items"]
            assert entry["state"] == "failing", (start, name, entry)
            assert entry["items"] == COUNT - len(bad), (start, name, entry)
            assert all(f"{item_id}: " in entry["error"] for item_id in bad[:3]), (name, entry["error"])
        server.stop()
        server.assert_clean_log()
    log = server.log()
    assert all(f"item {item_id} could not be fetched" in log for item_id in bad)

    healed.write_text("yes")
    server.start()
    report = server.wait_until(lambda report: all(
        report["sources"][name]["state"] == "ok" for name in names), timeout=scale(120, 300))
    server.stop()
    server.assert_clean_log()
    assert {name: report["sources"][name]["items"] for name in names} == dict.fromkeys(names, COUNT)
    figures.add("poisoned_batches", sources=len(KINDS), items_per_source=COUNT, bad_records=len(bad),
                kinds=list(KINDS), items_lost_to_another_record=lost_to_others)

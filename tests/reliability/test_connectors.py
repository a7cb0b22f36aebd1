"""Connector misbehaviour against a real server: one source per way of breaking the protocol.

Each source lists 120 items, and every fetch that asks for ``item-60`` misbehaves. The server must
store every other item (the failing batch is fetched again one id at a time: issue 32.2; the
reduced run asks for 10 ids a fetch instead of 50, so that it starts fewer connectors), mark
that source failing and name ``item-60`` (or, for text that is not Unicode, repair it and store
all), keep the other sources whole, write no traceback, and once the connectors behave again, the
next start (a reconcile) must fetch what is missing: no item is lost.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.reliability.conftest import scale, server_environ

CONNECTOR = Path(__file__).with_name("bad_connector.py")
COUNT = 120
FETCH_BATCH = scale(10, 50)  # ids a fetch asks for (the server's own is 50)
BATCHES = -(-COUNT // FETCH_BATCH)
BEHAVIOURS = ["garbage", "invalid-utf8", "surrogate", "huge-line", "duplicate", "hang", "exit", "half"]
STORED_WHOLE = {"surrogate"}  # repaired, not refused


def config(healed: Path, count: int) -> str:
    tables = []
    for behaviour in ["good", *BEHAVIOURS]:
        env = {"BEHAVIOUR": behaviour, "COUNT": str(count), "HEALED": str(healed), "BAD_IDS": "60:60"}
        tables.append(
            f'[[connector]]\nname = "{behaviour}"\n'
            f"command = [{json.dumps(sys.executable)}, {json.dumps(str(CONNECTOR))}]\n"
            f"env = {{ {', '.join(f'{key} = {json.dumps(value)}' for key, value in env.items())} }}\n"
            f"timeout = {scale(4, 10)}\n"
        )
    return '[embedder]\nkind = "toy"\n\n' + "\n".join(tables)


def test_each_misbehaving_connector_costs_only_its_batch_and_nothing_is_lost(server_factory, tmp_path,
                                                                             figures):
    healed = tmp_path / "healed"
    environ = server_environ(tmp_path, TOY_FETCH_BATCH=str(FETCH_BATCH))
    Path(environ["PASSAGEWAY_CONFIG"]).write_text(config(healed, COUNT), encoding="utf-8")
    server = server_factory(environ=environ)
    server.start()
    names = ["good", *BEHAVIOURS]
    report = server.wait_until(lambda report: all(
        report["sources"][name]["state"] != "indexing" for name in names), timeout=scale(120, 300))
    for name in names:
        entry = report["sources"][name]
        if name == "good" or name in STORED_WHOLE:
            assert entry["state"] == "ok" and entry["items"] == COUNT, (name, entry)
        else:
            assert entry["state"] == "failing", (name, entry)
            assert entry["items"] == COUNT - 1, (name, entry)  # the bad record alone
            assert f"1 of {BATCHES} fetch batches failed" in entry["error"], (name, entry)
            assert "item-60: " in entry["error"], (name, entry)
    server.stop()
    server.assert_clean_log()
    assert "lone surrogate escape" in server.log()

    healed.write_text("yes")
    server.start()
    report = server.wait_until(lambda report: all(
        report["sources"][name]["state"] == "ok" for name in names), timeout=scale(120, 300))
    lost = {name: COUNT - report["sources"][name]["items"] for name in names}
    server.stop()
    server.assert_clean_log()
    assert lost == dict.fromkeys(names, 0)
    figures.add("connectors", faults=len(BEHAVIOURS), behaviours=BEHAVIOURS, items_per_source=COUNT,
                items_lost=sum(lost.values()), healthy_source_disturbed=0)

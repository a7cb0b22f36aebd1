"""The guide's SDK example passes the contract check every connector must pass."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

contract = pytest.importorskip("passageway.testing.contract", reason="the contract check is not written yet")

GUIDE_EXAMPLE = Path(__file__).with_name("folder_sdk.py")


def test_guide_example_passes_the_contract(tmp_path):
    (tmp_path / "a.txt").write_text("Lighthouses guide ships.\n", encoding="utf-8")
    (tmp_path / "deeper").mkdir()
    (tmp_path / "deeper" / "b.txt").write_text("Grüße.\n", encoding="utf-8")
    command = [sys.executable, str(GUIDE_EXAMPLE)]
    connector = contract.Connector("notes", command, env={"FOLDER": str(tmp_path)})
    report = contract.check_connector(connector)
    assert report.failed_rules == []
    assert report.status("fetch returns every listed item") == "pass"

"""The markdown connector passes the contract check, on a made-up folder and on the corpus."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

contract = pytest.importorskip("passageway.testing.contract", reason="the contract check is not written yet")

COMMAND = [sys.executable, "-m", "passageway_connector_markdown"]
CORPUS = Path(__file__).resolve().parents[3] / "corpus"


def test_a_folder_of_notes_passes_the_contract(tmp_path):
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "certs.md").write_text(
        "---\ntitle: Certificates\ntags: [ops]\n---\n# Certificates\n\nRotate yearly.\n\n## Steps\n\n"
        "See [[Deploy]].\n", encoding="utf-8")
    (tmp_path / "ops" / "deploy.md").write_text(
        "# Deploy\n\nShip it.\n\n## Roll back { #roll-back .warning }\n\nRevert.\n\n"
        "## Über uns {#über-uns}\n\nWir.\n", encoding="utf-8")
    (tmp_path / "binary.md").write_bytes(b"\x00\x01")
    report = contract.check_connector(contract.Connector("notes", COMMAND, env={"FOLDER": str(tmp_path)}))
    assert report.failed_rules == []
    assert report.status("fetch returns every listed item") == "pass"


def test_the_corpus_passes_the_contract():
    connector = contract.Connector("corpus-en", COMMAND, env={"FOLDER": str(CORPUS / "en")})
    report = contract.check_connector(connector)
    assert report.failed_rules == []
    assert report.status("fetch returns every listed item") == "pass"

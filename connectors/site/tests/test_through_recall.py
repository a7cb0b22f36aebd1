"""A built site served by the connector is searchable through recall (`passageway eval`, in-process)."""

from __future__ import annotations

import json
import sys

import pytest

from passageway.kernel.cli import main
from passageway.testing import toy_cli


@pytest.fixture(autouse=True)
def toy_embedder(monkeypatch, tmp_path):
    toy_cli(monkeypatch, tmp_path / "home")


@pytest.mark.parametrize("items", ["pages", "passages"])
def test_recall_finds_the_passage_of_the_site(site, tmp_path, capsys, items):
    config = tmp_path / "passageway.toml"
    config.write_text(
        '[embedder]\nkind = "toy"\nmin_similarity = 0.3\n\n[[connector]]\nname = "docs"\n'
        f'command = ["{sys.executable}", "-m", "passageway_connector_site"]\n'
        f'env = {{ SITE_DIR = "{site}", ITEMS = "{items}", SITE_URL = "https://docs.example.com" }}\n',
        encoding="utf-8",
    )
    expected = "/guide/config"
    if items == "passages":
        expected += "#understand-the-three-stages-where-files-are-read"
    cases = tmp_path / "cases.toml"
    cases.write_text(
        f'[[case]]\nquery = "which folder are configuration files read from, current or home"\n'
        f'expect_id = ["{expected}"]\nexpect_text = ["home folder"]\n',
        encoding="utf-8",
    )
    out = tmp_path / "out"
    code = main(["eval", str(cases), "--config", str(config), "--out", str(out), "--include-cases"])
    assert code == 0, capsys.readouterr().err
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    (source,) = report["index"]["sources"]
    assert (source["items"], source["error"]) == (3 if items == "pages" else 15, None)
    assert source["passages"] > 15  # recall splits the longer passages again at its own cap
    (case,) = report["cases"]
    assert case["rank"] == 1, case

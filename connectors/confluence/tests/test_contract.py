"""The Confluence connector passes the connector contract check against the in-test REST API."""

from __future__ import annotations

import re
from pathlib import Path

from passageway_connector_confluence import SETTINGS

from passageway.testing import Connector, check_connector

from .conftest import COMMAND, TOKEN

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_connector_passes_the_contract(confluence):
    env = {"URL": confluence.url, "SPACES": "OPS|HR"}
    report = check_connector(Connector("wiki", COMMAND, env=env, secrets={"TOKEN": TOKEN}))
    assert report.status("fetch returns every listed item") == "pass"
    assert report.status("changed answers") == "pass"
    assert report.status("no secret in the output") == "pass"


def test_every_setting_is_in_the_readme_table():
    rows = set(re.findall(r"^\| `([A-Z_]+)` +\|", README.read_text(encoding="utf-8"), flags=re.MULTILINE))
    assert rows == set(SETTINGS)


def test_passageway_init_writes_an_example_for_this_connector():
    import tomllib

    from passageway.kernel.commands.init import render_template

    template = render_template()  # as init writes it: the interpreter filled in
    commented = template[template.index("# [[connector]]") :].splitlines()
    config = tomllib.loads("\n".join(line.removeprefix("#").removeprefix(" ") for line in commented))
    [example] = [
        table for table in config["connector"] if "passageway_connector_confluence" in table["command"]
    ]
    assert example["secrets"] == {"TOKEN": example["secrets"]["TOKEN"]}
    assert example["secrets"]["TOKEN"].startswith("env:") and set(example["env"]) <= set(SETTINGS)


def test_passageway_check_connector_passes_from_the_command_line(confluence, monkeypatch, capsys):
    from passageway.kernel.cli import main

    monkeypatch.setenv("CONFLUENCE_CHECK_TOKEN", TOKEN)
    code = main(
        [
            "check-connector",
            "--name",
            "wiki",
            "--env",
            f"URL={confluence.url}",
            "--env",
            "SPACES=OPS",
            "--secret",
            "TOKEN=CONFLUENCE_CHECK_TOKEN",
            "--",
            *COMMAND,
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "all rules pass" in printed and TOKEN not in printed

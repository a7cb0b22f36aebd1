"""The site connector passes the contract check, with one item per page and one per passage."""

from __future__ import annotations

import sys

import pytest

from passageway.testing import Connector, check_connector

COMMAND = [sys.executable, "-m", "passageway_connector_site"]


@pytest.mark.parametrize("items", ["pages", "passages"])
def test_an_indexed_site_passes_the_contract(site, items):
    connector = Connector("docs", COMMAND, env={"SITE_DIR": str(site), "ITEMS": items,
                                               "SITE_URL": "https://docs.example.com"})
    report = check_connector(connector)
    assert report.failed_rules == []
    assert report.status("fetch returns every listed item") == "pass"

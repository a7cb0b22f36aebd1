"""The site connector's items, each case through a real subprocess on an indexed hand-made site."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime

GUIDE_HEADINGS = [
    None,
    "Understand the three stages",
    "Understand the three stages › Where files are read",
    "Notes",
    "Short › The subsection",
    "Lonely",
    "Notes",
    "Related reading",
]


def test_one_item_per_page_with_its_passages_as_sections(connector):
    items = connector.fetch_all(SITE_URL="https://docs.example.com/")
    assert [item["id"] for item in items] == ["/guide/config", "/reference/table", "/de/guide/config"]
    guide, table, german = items
    assert guide["title"] == "Organize project configuration"
    assert guide["url"] == "https://docs.example.com/guide/config"
    assert [section.get("heading") for section in guide["sections"]] == GUIDE_HEADINGS
    assert guide["sections"][4]["text"] == "Read this first.\n\nThe short section above joins this passage."
    assert guide["labels"] == ["how-to", "production|current|en", "audience:maintainers"]
    assert guide["links"] == ["/reference/table"]  # /guide/defaults is not a page of the site
    assert [section["heading"] for section in table["sections"]] == [
        "Keys", "Keys", "Generated code", "Long section", "Long section",
    ]
    assert "links" not in table and table["labels"] == ["reference", "production|current|en"]
    assert german["title"] == "Konfiguration organisieren"
    assert german["labels"] == ["how-to", "production|current|de"]


def test_one_variant_only(connector):
    items = connector.fetch_all(VARIANT="production|current|de")
    assert [item["id"] for item in items] == ["/de/guide/config"]


def test_one_item_per_passage_links_to_its_section(connector):
    items = connector.fetch_all(ITEMS="passages", SITE_URL="https://docs.example.com")
    by_id = {item["id"]: item for item in items}
    assert len(items) == 15
    notes = by_id["/guide/config#notes-2"]
    assert notes["url"] == "https://docs.example.com/guide/config#notes-1"
    assert notes["sections"] == [{"heading": "Notes", "text": "The second notes section."}]
    assert by_id["/guide/config#lonely"]["url"] == "https://docs.example.com/guide/config"
    assert by_id["/guide/config#intro"]["links"] == ["/reference/table#keys"]
    assert by_id["/de/guide/config#intro"]["sections"][0].get("heading") is None


def test_links_to_section_anchors_twins_and_relative_pages_name_the_page(connector, site):
    chunks_path = site / "ai" / "chunks.json"
    document = json.loads(chunks_path.read_text())
    document["chunks"][0]["text"] += (
        "\n\nSee [keys](/reference/table#keys), [the twin](../reference/table.md), "
        "[German](https://docs.example.com/de/guide/config) and [elsewhere](https://example.org/x)."
    )
    chunks_path.write_text(json.dumps(document))
    (guide,) = connector.records("fetch", ids=["/guide/config"], SITE_URL="https://docs.example.com")
    assert guide["links"] == ["/reference/table", "/de/guide/config"]


def test_a_changed_passage_changes_only_its_pages_version(connector, site):
    before = {entry["id"]: entry["version"] for entry in connector.records("list")}
    chunks_path = site / "ai" / "chunks.json"
    document = json.loads(chunks_path.read_text())
    document["chunks"][-1]["digest"] = "f" * 64
    chunks_path.write_text(json.dumps(document))
    after = {entry["id"]: entry["version"] for entry in connector.records("list")}
    assert [item_id for item_id in before if before[item_id] != after[item_id]] == ["/de/guide/config"]


def test_changed_returns_everything_after_a_new_index_and_nothing_before(connector, site):
    past = datetime.fromtimestamp(time.time() - 3600, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    os.utime(site / "ai" / "chunks.json", (time.time() - 7200, time.time() - 7200))
    assert connector.records("changed", "--since", past) == []
    os.utime(site / "ai" / "chunks.json")
    assert len(connector.records("changed", "--since", past)) == 3


def test_a_site_without_an_index_or_with_bad_settings_fails_clearly(connector, site):
    (site / "ai" / "chunks.json").unlink()
    result = connector.run("list")
    assert result.returncode == 1 and "run `passageway index" in result.stderr
    assert connector.run("list", SITE_DIR=str(site / "nowhere")).returncode == 2
    assert connector.run("list", ITEMS="sections").returncode == 2
    assert connector.run("list", SITE_URL="docs.example.com").returncode == 2
    (site / "ai" / "chunks.json").write_text(json.dumps({"schemaVersion": 1, "chunks": [{"id": "x"}]}))
    result = connector.run("list")
    assert result.returncode == 1 and "chunks/0 has no docId" in result.stderr

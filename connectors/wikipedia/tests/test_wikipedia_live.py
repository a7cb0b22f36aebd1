"""Opt-in: the connector against the real Wikipedia. Needs internet; run with PASSAGEWAY_LIVE=1."""

from __future__ import annotations

import io
import json
import os

import pytest
from passageway_connector_wikipedia import WikipediaConnector

pytestmark = pytest.mark.skipif(
    os.environ.get("PASSAGEWAY_LIVE") != "1", reason="talks to the real Wikipedia; set PASSAGEWAY_LIVE=1"
)

CONTACT = "passageway live test (https://github.com/)"


def call(mode: str, env: dict[str, str], ids: list[str] | None = None) -> list[dict]:
    stdin = io.StringIO("".join(json.dumps({"id": item_id}) + "\n" for item_id in ids or []))
    stdout, stderr = io.StringIO(), io.StringIO()
    code = WikipediaConnector.run([mode], {"CONTACT": CONTACT, **env}, stdin, stdout, stderr)
    assert code == 0, stderr.getvalue()
    return [json.loads(line) for line in stdout.getvalue().splitlines()]


def test_english_title_through_a_redirect():
    listing = call("list", {"TITLES": "Backprop"})
    assert len(listing) == 1
    (item,) = call("fetch", {"TITLES": "Backprop"}, ids=[listing[0]["id"]])
    assert item["title"] == "Backpropagation"
    assert item["url"] == "https://en.wikipedia.org/wiki/Backpropagation"
    headings = [section.get("heading") or "" for section in item["sections"]]
    assert not any(heading.startswith(("References", "External links", "See also")) for heading in headings)
    assert sum(len(section["text"]) for section in item["sections"]) > 2000


def test_german_category_without_subcategories():
    env = {"LANGUAGE": "de", "CATEGORIES": "Kategorie:Maschinelles Lernen", "CATEGORY_DEPTH": "0"}
    listing = call("list", env)
    assert 5 <= len(listing) <= 500
    items = call("fetch", env, ids=[entry["id"] for entry in listing[:3]])
    for item in items:
        assert item["url"].startswith("https://de.wikipedia.org/wiki/")
        assert all(
            section.get("heading") not in ("Einzelnachweise", "Weblinks") for section in item["sections"]
        )

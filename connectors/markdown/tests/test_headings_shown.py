"""Headings as a page shows them: a note's heading trails, its title and the anchors of its parts
are made from the text a reader sees (links without targets, no emphasis marks), starship's
installing page from corpus/docs as the example."""

from __future__ import annotations

import shutil
from pathlib import Path

from passageway_connector_markdown.connector import has_heading_markup

INSTALLING = Path(__file__).resolve().parents[3] / "corpus/docs/starship/en/installing/README.md"


def test_link_headings_show_their_text(notes):
    shutil.copy(INSTALLING, notes.root / "installing.md")
    item = notes.item("installing.md")
    assert item["title"] == "Advanced Installation"
    headings = [section["heading"] for section in item["sections"]]
    assert headings[1:5] == ["Chocolatey › Prerequisites", "Chocolatey › Installation",
                             "termux › Installation", "Funtoo Linux › Installation"]
    assert "Nix › Getting the Binary › Declarative, single user, via home-manager" in headings
    assert not any("](" in heading for heading in headings if heading)


def test_a_split_pages_parts_are_named_and_anchored_by_the_shown_heading(notes):
    shutil.copy(INSTALLING, notes.root / "installing.md")
    items = notes.fetch_all(SPLIT_BYTES="100").by_id
    assert sorted(items) == ["installing.md", "installing.md#chocolatey", "installing.md#funtoo-linux",
                             "installing.md#nix", "installing.md#termux"]
    chocolatey = items["installing.md#chocolatey"]
    assert chocolatey["title"] == "Advanced Installation › Chocolatey"
    assert chocolatey["url"].endswith("/installing.md#chocolatey")
    assert [section["heading"] for section in chocolatey["sections"]] == ["Prerequisites", "Installation"]


def test_a_note_whose_headings_hold_markup_gets_a_new_version_once(notes, monkeypatch):
    from passageway_connector_markdown import connector as module

    notes.write("links.md", "# Guide\n\n## [Install](https://example.com)\n\ntext\n")
    notes.write("setext.md", "Install *now*\n---\n\ntext\n")
    notes.write("plain.md", "# Guide\n\n## Install\n\ntext with a [link](x.md) and *emphasis*\n")
    now = module.MarkdownConnector({"FOLDER": str(notes.root)}).versions()
    monkeypatch.setattr(module, "HEADING_MARKUP_MARK", b"an older reader")
    before = module.MarkdownConnector({"FOLDER": str(notes.root)}).versions()
    assert now["links.md"] != before["links.md"]
    assert now["setext.md"] != before["setext.md"]
    assert now["plain.md"] == before["plain.md"]


def test_heading_markup_is_found_in_heading_lines_only():
    assert has_heading_markup(b"text\n### Add one *CLI option*\n")
    assert has_heading_markup(b"#### on_&lt;event_name&gt;()")
    assert has_heading_markup(b"Using `mod_version`\n=====\n")
    assert not has_heading_markup(b"# Title\n\nA [link](x) and `code`.\n\n---\n\nmore\n")
    assert not has_heading_markup(b"#hashtag [x](y)\n")

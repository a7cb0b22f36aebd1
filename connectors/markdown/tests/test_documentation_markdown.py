"""Real documentation markdown (issue 35, item 4): excerpts of Python-Markdown's docs
(tests/data/python-markdown, BSD licence) read as their site shows them."""

from __future__ import annotations

import shutil
from pathlib import Path

DATA = Path(__file__).with_name("data") / "python-markdown"


def fetched(notes, name: str) -> dict:
    shutil.copy(DATA / name, notes.root / name)
    return notes.item(name)


def test_underlined_headings_split_a_page_and_give_its_title(notes):
    item = fetched(notes, "meta_data.md")
    assert item["title"] == "Meta-Data"  # "Meta-Data" over "========="
    headings = [section["heading"] for section in item["sections"]]
    assert headings == [None, "Summary", "Syntax"]
    text = "\n".join(section["text"] for section in item["sections"])
    assert "===" not in text and "\n---" not in text
    syntax = item["sections"][2]["text"]
    assert syntax.startswith("Meta-data consists of a series of keywords")


def test_reference_definitions_are_left_out_and_admonitions_show_their_title(notes):
    summary = fetched(notes, "meta_data.md")["sections"][1]["text"]
    assert "fletcherpenney.net" not in summary and "]: " not in summary
    assert "[MultiMarkdown][]" in summary  # the link itself stays, as written
    assert "!!!" not in summary
    # The admonition's title on a line of its own, its body no longer indented.
    assert "\nNote\n" in summary
    assert "\nThis extension is in __maintenance mode__." in summary


def test_admonition_titles_replace_their_markup(notes):
    text = fetched(notes, "contributing.md")["sections"][0]["text"]
    assert "!!!" not in text and "seealso" not in text
    assert "\nSee Also\n" in text and "\nNote\n" in text
    assert "\nPython-Markdown provides [test tools] which simply test Markdown syntax." in text


def test_attribute_lists_give_anchors_and_leave_the_heading_text(notes):
    item = fetched(notes, "api.md")
    assert item["title"] == "Writing Extensions for Python-Markdown"
    sections = {section["heading"]: section for section in item["sections"]}
    preprocessors = sections["Phases of processing › Preprocessors"]
    assert preprocessors["anchor"] == "preprocessors"
    assert "{:" not in " ".join(filter(None, sections))
    example = sections["Phases of processing › Preprocessors › Example"]["text"]
    # Fenced code stays code: its lines, its fences and its comment, never a heading.
    assert "```python\nfrom markdown.preprocessors import Preprocessor\nimport re\n" in example
    assert "                # any line without NO RENDER is passed through\n" in example
    assert example.endswith("        return new_lines\n```")


def test_a_note_with_documentation_markup_gets_a_new_version_once(notes, monkeypatch):
    from passageway_connector_markdown import connector as module

    notes.write("setext.md", "Title\n=====\n\ntext\n")
    notes.write("plain.md", "# Title\n\ntext with a {brace} and a #tag\n")
    now = module.MarkdownConnector({"FOLDER": str(notes.root)}).versions()
    monkeypatch.setattr(module, "DOCS_MARKUP_MARK", b"an older reader")
    before = module.MarkdownConnector({"FOLDER": str(notes.root)}).versions()
    assert now["setext.md"] != before["setext.md"]
    assert now["plain.md"] == before["plain.md"]

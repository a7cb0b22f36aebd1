"""The chunker on Markdown twins: the defects D1, D2, D5 and D6 of issue 31, a skipped page, and
linear time on many equal headings."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from passageway_passage_index import PassageIndexError, build_index, chunks_document

from passageway.kernel.cli import main


def write_site(site: Path, pages: dict[str, str | bytes], headings: dict[str, list] | None = None) -> Path:
    """A build-contract site with one page per entry of ``pages`` (name to twin content)."""
    site.mkdir(exist_ok=True)
    documents = []
    for name, content in pages.items():
        documents.append({
            "id": name, "title": name.title(), "type": "guide", "url": f"/{name}",
            "markdownUrl": f"/{name}.md",
            "publication": {"channel": "c", "version": "v", "language": "en"}, "digest": "a" * 64,
        })
        twin = site / f"{name}.md"
        twin.write_bytes(content) if isinstance(content, bytes) else twin.write_text(content)
    (site / "documents.json").write_text(json.dumps({"schemaVersion": 1, "documents": documents}))
    if headings is not None:
        pages_index = [{"url": f"/{name}", "headings": found} for name, found in headings.items()]
        (site / "search-index.json").write_text(json.dumps({"schemaVersion": 1, "pages": pages_index}))
    return site


def passages(site: Path) -> list[dict]:
    return chunks_document(site)[1]["chunks"]


def test_d1_a_heading_with_underscores_keeps_its_anchor(tmp_path):
    twin = "## The `__init__` hooks\n\nText.\n\n## *Bold* _words_\n\nMore.\n"
    site = write_site(tmp_path / "s", {"p": twin},
                      {"p": [{"level": 2, "text": "The __init__ hooks", "id": "init-hooks"},
                             {"level": 2, "text": "Bold words", "id": "bold-words"}]})
    found = [(p["headingPath"], p["url"]) for p in passages(site)]
    assert found == [(["The __init__ hooks"], "/p#init-hooks"), (["Bold words"], "/p#bold-words")]


def test_d2_a_heading_attribute_is_not_part_of_the_name_and_gives_the_anchor(tmp_path):
    site = write_site(tmp_path / "s", {"p": (
        "## Output format {#output-format}\n\nOne.\n\n## Second { #second-id .wide }\n\nTwo.\n\n"
        "## Listed {: #listed }\n\nThree.\n"
    )}, {"p": [{"level": 2, "text": "Listed", "id": "from-index"}]})
    found = [(p["id"], p["headingPath"], p["url"]) for p in passages(site)]
    assert found == [
        ("p#output-format", ["Output format"], "/p#output-format"),
        ("p#second", ["Second"], "/p#second-id"),
        ("p#listed", ["Listed"], "/p#from-index"),  # the search index wins where it lists one
    ]


def test_d5_a_level_three_heading_before_any_level_two_and_setext_headings_start_sections(tmp_path):
    site = write_site(tmp_path / "s", {"p": (
        "Page\n====\n\nIntro.\n\n### Early\n\nEarly text.\n\nSettings\n--------\n\nSet things.\n\n"
        "- a list item\n---\n\nNot a heading above.\n"
    )}, {"p": [{"level": 3, "text": "Early", "id": "early"},
               {"level": 2, "text": "Settings", "id": "settings"}]})
    found = [(p["id"], p["headingPath"], p["url"], p["text"]) for p in passages(site)]
    assert found == [
        ("p#intro", [], "/p", "Intro."),
        ("p#early", ["Early"], "/p#early", "Early text."),
        ("p#settings", ["Settings"], "/p#settings",
         "Set things.\n\n- a list item\n---\n\nNot a heading above."),
    ]


def test_d6_html_comments_start_no_section_and_are_not_indexed(tmp_path):
    site = write_site(tmp_path / "s", {"p": (
        "## Real\n\nShown <!-- hidden inline --> text.\n\n<!--\n## Draft\nSecret draft.\n-->\n\nAfter.\n\n"
        "```html\n<!-- code keeps its comment -->\n```\n"
    )})
    (passage,) = passages(site)
    assert passage["headingPath"] == ["Real"]
    assert "Draft" not in passage["text"] and "hidden" not in passage["text"]
    assert "<!-- code keeps its comment -->" in passage["search"]["literalLines"]


def test_a_page_that_is_not_utf8_is_skipped_with_a_warning_or_stops_with_strict(tmp_path, capsys):
    site = write_site(tmp_path / "s", {"good": "## Fine\n\nText.\n", "bad": b"## Bad\n\n\xff\xfe broken\n"})
    assert main(["index", str(site)]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["documents"] == 1 and summary["skipped"] == 1
    assert "skipped documents.json: documents/1/markdownUrl: /bad.md is not UTF-8 text" in captured.err
    assert captured.err.count("\n") == 1
    assert main(["index", "--strict", str(site)]) == 2
    error = capsys.readouterr().err
    assert "/bad.md is not UTF-8 text; fix the page, or leave out --strict" in error
    assert error.count("\n") == 1


def test_many_equal_headings_take_linear_time(tmp_path):
    def seconds(count: int) -> float:
        site = write_site(tmp_path / f"s{count}", {"p": "## Same\n\nx\n\n" * count})
        start = time.thread_time()  # processor time: a busy machine stretches wall-clock time
        found = passages(site)
        assert found[-1]["id"] == f"p#same-{count}"
        return time.thread_time() - start

    small, large = seconds(2_000), seconds(20_000)
    assert large < small * 25, (small, large)  # ten times the headings, about ten times the time


def test_build_index_refuses_a_folder_with_nothing_to_read(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(PassageIndexError, match=r"no documents\.json and no HTML page with text"):
        build_index(tmp_path / "empty")

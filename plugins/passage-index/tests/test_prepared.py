"""Prepared search content: the defects D3, D4 and D6 (raw HTML) of issue 31."""

from __future__ import annotations

from passageway_passage_index.prepared import search_content


def test_d3_a_fenced_block_inside_a_list_item_is_literal():
    found = search_content(
        "1. Write the class:\n\n   ```python\n   class Glow:\n       pass\n   ```\n2. Register it.")
    assert found["paragraphs"] == ["Write the class:", "Register it."]
    assert found["literalLines"] == ["class Glow:", "    pass"]


def test_d4_a_list_of_links_to_other_sites_is_content_and_one_of_own_pages_is_navigation():
    found = search_content(
        "- [rich](https://github.com/Textualize/rich)\n- [click](https://click.palletsprojects.com/)\n\n"
        "* [Install](../install.html)\n* [Usage](/guide/usage/ \"title\")"
    )
    assert found["paragraphs"] == ["rich", "click"]


def test_d6_a_raw_html_paragraph_gives_its_text_not_its_markup():
    found = search_content(
        '<div class="note">\n<b>Careful</b>: themes change colours only.\n</div>\n\nAfter.')
    assert found["paragraphs"] == ["Careful: themes change colours only.", "After."]

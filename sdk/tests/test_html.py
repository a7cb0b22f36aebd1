"""The HTML helpers: HTML to markdown text, and long text cut into parts."""

from __future__ import annotations

import time

from passageway_sdk import MarkdownWriter, cut_text, html_to_markdown, split_markdown
from passageway_sdk.html import MAX_LIST_INDENT


def test_headings_lists_tables_and_code_become_markdown():
    html = (
        "<p>Intro &amp; more</p><h2>Setup</h2><h4>Detail</h4><ul><li>one<ul><li>nested</li></ul></li>"
        "<li>two</li></ul><ol><li>a</li><li>b</li></ol><table><tr><th>K</th><th>V</th></tr>"
        "<tr><td>a|b</td><td>1</td></tr></table><pre><code>x = 1\n\n# not a heading</code></pre>"
        "<p>#hashtag <img src='x.png'>after</p><script>alert(1)</script>"
    )
    assert html_to_markdown(html) == (
        "Intro & more\n\n## Setup\n\n**Detail**\n\n- one\n  - nested\n- two\n\n1. a\n2. b\n\n"
        "| K | V |\n|---|---|\n| a\\|b | 1 |\n\n```\nx = 1\n\n# not a heading\n```\n\n\\#hashtag after"
    )


def test_the_heading_map_picks_the_levels_and_split_markdown_reads_them():
    text = html_to_markdown("<h2>A</h2><p>x</p><h3>B</h3><p>y</p><h1>C</h1><p>z</p>", {"h2": 2, "h3": 3})
    assert split_markdown(text) == [
        {"heading": "A", "text": "x"},
        {"heading": "A › B", "text": "y\n\n**C**\n\nz"},
    ]


def test_links_are_collected_for_a_subclass():
    writer = MarkdownWriter()
    writer.feed('<p><a href="#root/abc">one</a> and <a href="https://x.org">two</a></p>')
    assert writer.hrefs == ["#root/abc", "https://x.org"]
    assert writer.markdown() == "one and two"


def test_cut_text_cuts_between_paragraphs_then_sentences_then_words():
    assert cut_text("short") == ["short"]
    assert cut_text("   ") == []
    paragraphs = "\n\n".join(["A" * 60] * 5)
    assert cut_text(paragraphs, 130) == ["\n\n".join(["A" * 60] * 2)] * 2 + ["A" * 60]
    sentences = " ".join(["This is a sentence."] * 20)
    parts = cut_text(sentences, 100)
    assert all(len(part) <= 100 and part.endswith(".") for part in parts)
    assert " ".join(parts) == sentences
    words = cut_text("word " * 100, 50)
    assert all(len(part) <= 50 for part in words) and " ".join(words).split() == ["word"] * 100


def test_line_breaks_between_tags_add_no_blank_lines():
    html = (
        "<ul>\n  <li>one\n    <ul>\n      <li>nested</li>\n    </ul>\n  </li>\n  <li>two</li>\n</ul>\n"
        "<p>after</p>"
    )
    assert html_to_markdown(html) == "- one\n  - nested\n- two\n\nafter"


def test_nested_lists_give_output_linear_in_their_depth():
    # Issue 32.10: two spaces per level made N nested lists N² characters (144 KB -> 64 MB).
    for depth in (2000, 4000):
        html = "<ul><li>x" * depth + "</li></ul>" * depth
        markdown = html_to_markdown(html)
        assert len(markdown) < 3 * len(html), (depth, len(markdown))
    lines = html_to_markdown("<ul><li>a<ul><li>b<ul><li>c</li></ul></li></ul></li></ul>").splitlines()
    assert lines == ["- a", "  - b", "    - c"]  # shallow nesting keeps its indentation
    deep = html_to_markdown("<ol><li>x" * 30).splitlines()
    assert deep[-1] == "  " * MAX_LIST_INDENT + "1. x"


def test_one_long_sentence_is_cut_in_linear_time():
    text = "word " * 1_600_000  # 8 MB without a sentence end
    began = time.thread_time()  # processor time: a busy machine stretches wall-clock time
    parts = cut_text(text, 1400)
    # Each cut copied the rest of the sentence: about 12 s here, against 0.4 s cut in place.
    assert time.thread_time() - began < 5
    assert all(len(part) <= 1400 for part in parts) and "".join(parts).count("word") == 1_600_000

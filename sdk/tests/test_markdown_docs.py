"""What documentation sites write, read as they show it: underlined headings, attribute lists,
reference-link definitions, rules, admonitions and tabs (issue 35, item 4)."""

from __future__ import annotations

import textwrap

from passageway_sdk import first_h1, heading_id, split_markdown


def md(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def test_underlined_headings_split_and_a_rule_after_a_blank_line_does_not():
    text = md("""
        Meta-Data
        =========

        Summary {: #summary }
        -------

        One paragraph.

        ---

        After a rule.
        Last line of a paragraph
        ---
        text
        - a list item
        ---
        after the list
    """)
    assert first_h1(text) == "Meta-Data"
    sections = split_markdown(text, skip_first_h1=True)
    assert [section["heading"] for section in sections] == ["Summary", "Last line of a paragraph"]
    assert sections[0]["anchor"] == "summary"
    assert "---" not in sections[0]["text"] and "After a rule." in sections[0]["text"]
    # A rule under a list item is a rule: the item stays text, the rule is left out.
    assert sections[1]["text"] == "text\n- a list item\n\nafter the list"


def test_front_matter_at_the_top_is_not_an_underlined_heading():
    text = "---\ntitle: Guide\ntags: a\n---\nBody\n"
    assert split_markdown(text) == [{"heading": None, "text": "---\ntitle: Guide\ntags: a\n---\nBody"}]
    # Without its closing line (before a blank line) the first --- is only a rule.
    assert split_markdown("---\nIntro\n\nmore\n") == [{"heading": None, "text": "Intro\n\nmore"}]


def test_attribute_lists_in_every_form():
    assert heading_id("## Install {: #install }") == "install"
    assert heading_id("## Install {:#install .wide}") == "install"
    assert heading_id("### A hash style header ### {: #hash }") == "hash"
    text = md("""
        ### A hash style header ### {: #hash }
        A paragraph with an attribute list.
        {: .note }
        See [the guide](g.md){: target="_blank" }.
    """)
    assert split_markdown(text) == [{
        "heading": "A hash style header", "anchor": "hash",
        "text": "A paragraph with an attribute list.\nSee [the guide](g.md).",
    }]


def test_reference_definitions_are_left_out_but_footnotes_stay():
    text = md("""
        It follows [MultiMarkdown][] and [the spec][spec].

        [MultiMarkdown]: https://fletcherpenney.net/multimarkdown/#metadata
          [spec]: <https://spec.example> "The spec"
        [^1]: A footnote is text.
    """)
    assert split_markdown(text) == [{
        "heading": None,
        "text": "It follows [MultiMarkdown][] and [the spec][spec].\n\n[^1]: A footnote is text.",
    }]


def test_admonitions_and_tabs_show_their_title_and_lose_their_indentation():
    text = md('''
        !!! seealso "See Also"
            Python-Markdown provides test tools.

            ```python
            # a comment, not a heading
            run()
            ```

        ??? note
            Collapsed.

        ???+ danger highlight ""
            No title.

        === "Linux"

            apt install x

        /// details | Why
        Because.
        ///
        Outside.
    ''')
    assert split_markdown(text) == [{"heading": None, "text": (
        "See Also\n\nPython-Markdown provides test tools.\n\n"
        "```python\n# a comment, not a heading\nrun()\n```\n\n"
        "Note\n\nCollapsed.\n\nNo title.\n\nLinux\n\n\napt install x\n\n"
        "Why\n\nBecause.\nOutside."
    )}]


def test_lines_that_only_look_like_markup_stay_text():
    text = md("""
        !!!not an admonition
        === not a tab
        [not a definition] : x
        Keep {braces} and {this one}
    """)
    assert split_markdown(text) == [{"heading": None, "text": text.rstrip()}]

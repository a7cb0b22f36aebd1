"""The markdown helpers: sections with heading trails, the first H1, code stripped for links."""

from __future__ import annotations

import textwrap

from passageway_sdk import first_h1, heading_id, message_errors, split_markdown, strip_code
from passageway_sdk.markdown import MAX_ANCHOR_LENGTH


def md(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


NOTE = md("""
    Intro before any heading.

    # Guide

    Welcome.

    ## Setup

    Install it.

    Then configure it.

    ### Linux

    apt install x

    ### macOS

    ## Use

    ```sh
    # not a heading
    run it
    ```
    #### Deep
    deep text
""")


def test_every_heading_level_starts_a_section_with_its_trail():
    assert split_markdown(NOTE) == [
        {"heading": None, "text": "Intro before any heading."},
        {"heading": "Guide", "text": "Welcome."},
        {"heading": "Guide › Setup", "text": "Install it.\n\nThen configure it."},
        {"heading": "Guide › Setup › Linux", "text": "apt install x"},
        {"heading": "Guide › Use", "text": "```sh\n# not a heading\nrun it\n```"},
        {"heading": "Guide › Use › Deep", "text": "deep text"},
    ]


def test_skip_first_h1_leaves_the_title_out_of_every_trail():
    sections = split_markdown(NOTE, skip_first_h1=True)
    assert [section["heading"] for section in sections] == [
        None, None, "Setup", "Setup › Linux", "Use", "Use › Deep",
    ]
    assert sections[1]["text"] == "Welcome."


def test_only_the_first_h1_is_skipped():
    text = md("""
        # Title
        one
        # Second part
        two
        ## Inner
        three
    """)
    assert split_markdown(text, skip_first_h1=True) == [
        {"heading": None, "text": "one"},
        {"heading": "Second part", "text": "two"},
        {"heading": "Second part › Inner", "text": "three"},
    ]


def test_heading_syntax():
    text = md("""
        #NoSpace stays text
        ####### seven is text
           ### Indented three ###
        body
        ## C#
        sharp
    """)
    assert split_markdown(text) == [
        {"heading": None, "text": "#NoSpace stays text\n####### seven is text"},
        {"heading": "Indented three", "text": "body"},
        {"heading": "C#", "text": "sharp"},
    ]


def test_a_heading_attribute_block_is_left_out_of_the_heading_and_gives_its_id():
    text = md("""
        ## Create a Project { #create-a-project }
        one
        ### Learn More {#learn-more .wide data-x="1"} ###
        two
        ## Keep {braces} and {this one}
        three
    """)
    assert split_markdown(text) == [
        {"heading": "Create a Project", "text": "one", "anchor": "create-a-project"},
        {"heading": "Create a Project › Learn More", "text": "two", "anchor": "learn-more"},
        {"heading": "Keep {braces} and {this one}", "text": "three"},
    ]
    assert heading_id("## Create a Project { #create-a-project }") == "create-a-project"
    assert heading_id("### Learn More {.wide #learn-more}") == "learn-more"
    assert heading_id("## Keep {braces}") is None and heading_id("plain {#x}") is None


def test_a_sections_anchor_is_its_own_headings_id_and_always_one_the_protocol_accepts():
    text = md(f"""
        # Guide {{#guide}}
        Welcome.
        ## Über uns {{ #über-uns }}
        us
        ### Team
        no id of its own: no anchor, not the parent's
        ### Quoted {{title="a #b" #real}}
        q
        ```md
        ## In code {{#code}}
        ```
        ## Far {{#{"x" * (MAX_ANCHOR_LENGTH + 1)}}}
        too long an id
        ## Pandoc {{#sec:intro.part_1}}
        p
    """)
    sections = split_markdown(text, skip_first_h1=True)
    assert [(section["heading"], section.get("anchor")) for section in sections] == [
        (None, None),  # the title's text: the page's top, no anchor
        ("Über uns", "über-uns"),
        ("Über uns › Team", None),
        ("Über uns › Quoted", "real"),
        ("Far", None),
        ("Pandoc", "sec:intro.part_1"),
    ]
    assert "## In code {#code}" in sections[3]["text"]
    assert split_markdown("# Guide {#guide}\nWelcome.")[0]["anchor"] == "guide"
    record = {"id": "a", "title": "A", "url": "", "version": "1", "sections": sections}
    assert message_errors("item", record) == []
    assert heading_id('## Title {title="a #b"}') is None


def test_fences_of_both_kinds_and_lengths_hide_headings():
    text = md("""
        ~~~~
        # inside tilde
        ```
        # still inside: a shorter or other fence does not close
        ~~~~
        ````md
        ```
        # inside backticks
        ````
        # Out
        done
    """)
    sections = split_markdown(text)
    assert [section["heading"] for section in sections] == [None, "Out"]
    assert "# inside backticks" in sections[0]["text"]
    assert first_h1(text) == "Out"


def test_an_unclosed_fence_runs_to_the_end():
    text = "before\n```\n# hidden\n"
    assert split_markdown(text) == [{"heading": None, "text": "before\n```\n# hidden"}]
    assert first_h1(text) is None


def test_empty_sections_are_dropped_and_blank_edges_trimmed():
    text = "# A\n\n\n# B\n\n   \n\nline one\n\nline two   \n\n\n"
    assert split_markdown(text) == [{"heading": "B", "text": "line one\n\nline two"}]
    assert split_markdown("") == []


def test_first_h1():
    assert first_h1("## Sub\n# Real title #\ntext") == "Real title"
    assert first_h1("no headings here") is None
    assert first_h1("```\n# code\n```\n") is None


def test_strip_code_removes_fenced_blocks_and_inline_code():
    text = md("""
        See [real](a.md) and `[fake](b.md)` and ``[also fake](c.md) with ` inside``.
        ```
        [[InCode]]
        ```
        [[Real note]]
    """)
    stripped = strip_code(text)
    assert "[real](a.md)" in stripped and "[[Real note]]" in stripped
    assert "b.md" not in stripped and "c.md" not in stripped and "InCode" not in stripped

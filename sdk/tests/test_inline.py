"""Headings as a page shows them: inline markup read away (passageway_sdk.inline), on real headings
of the documentation corpus (corpus/docs) and on the edge cases CommonMark settles."""

from __future__ import annotations

from pathlib import Path

import pytest
from passageway_sdk import first_h1, split_markdown
from passageway_sdk.inline import code_spans, shown_text, without_code_spans

DOCS = Path(__file__).resolve().parents[2] / "corpus" / "docs"


@pytest.mark.parametrize(("written", "shown"), [
    # Links show their text (starship, starlette, typer).
    ("[Chocolatey](https://chocolatey.org)", "Chocolatey"),
    ("Declarative, single user, via [home-manager](https://github.com/nix-community/home-manager)",
     "Declarative, single user, via home-manager"),
    ("[Nerd Font Symbols](./nerd-font.md)", "Nerd Font Symbols"),
    ("[ProxyHeadersMiddleware](https://github.com/encode/uvicorn/blob/master/uvicorn/middleware/proxy_headers.py)",
     "ProxyHeadersMiddleware"),
    ("[starlette-apispec][starlette-apispec]", "starlette-apispec"),
    ("[`argparse`](https://docs.python.org/3/library/argparse.html)", "`argparse`"),
    # Emphasis marks go (typer, mkdocs); code spans stay as written, backticks and all.
    ("Add one *CLI option*", "Add one CLI option"),
    ("Design based on **FastAPI**", "Design based on FastAPI"),
    ("**min_search_length**", "min_search_length"),
    ("Using `mod_version`", "Using `mod_version`"),
    ("Do top level `format` and `<module>.disabled` do the same thing?",
     "Do top level `format` and `<module>.disabled` do the same thing?"),
    ("Add a `__main__.py`", "Add a `__main__.py`"),
    # Entities show their character (mkdocs), escapes theirs.
    ("on_&lt;event_name&gt;()", "on_<event_name>()"),
    (r"$HOME\.starship\config.toml", r"$HOME.starship\config.toml"),
    (r"\[not a link\](x) and \*stars\*", "[not a link](x) and *stars*"),
    # What shows as written: words with underscores, lone marks, unclosed brackets.
    ("site_name", "site_name"),
    ("Use *args and **kwargs", "Use *args and **kwargs"),
    ("2 * 3 * 4", "2 * 3 * 4"),
    ("[WIP] plan", "[WIP] plan"),
    ("Q&A", "Q&A"),
    ("Plain  heading", "Plain  heading"),  # no markup: unchanged, spaces and all
    # Images show their alt text, autolinks their address, tags nothing.
    ("[![badge](https://img.shields.io/x.svg)](https://ci.example) Status", "badge Status"),
    ("<https://example.com> mirror", "https://example.com mirror"),
    ("Search <small>beta</small>", "Search beta"),
    ("Wiki [Foo_(bar)](https://en.wikipedia.org/wiki/Foo_(bar) \"title\")", "Wiki Foo_(bar)"),
    ("***both*** and _one_ and __two__", "both and one and two"),
    ("`a \\` b", "`a \\` b"),  # a backslash in code is code
    ("`[x](y)` *and* [z](w)", "`[x](y)` and z"),
])
def test_a_heading_shows_as_a_page_renders_it(written, shown):
    assert shown_text(written) == shown


def test_a_shortcut_reference_is_a_link_only_when_the_document_defines_it():
    assert shown_text("[Typer] and [WIP]", labels={"typer"}) == "Typer and [WIP]"
    text = "# Guide\n\n## Install [Typer]\n\nRun it.\n\n[typer]: https://typer.tiangolo.com\n"
    assert split_markdown(text, skip_first_h1=True) == [
        {"heading": "Install Typer", "text": "Run it."}]
    assert split_markdown("## Install [Typer]\n\nRun it.\n")[0]["heading"] == "Install [Typer]"


@pytest.mark.parametrize("language", ["en", "de"])
def test_starships_installing_page_shows_clean_headings(language):
    text = (DOCS / "starship" / language / "installing" / "README.md").read_text(encoding="utf-8")
    headings = [section["heading"] for section in split_markdown(text, skip_first_h1=True)]
    first = "Voraussetzungen" if language == "de" else "Prerequisites"
    assert f"Chocolatey › {first}" in headings
    assert "termux › Installation" in headings
    assert not [heading for heading in headings if heading and ("](" in heading or "[" in heading)]
    assert any(heading and heading.startswith("Nix › ") and heading.endswith("home-manager")
               for heading in headings)


def test_no_heading_of_the_documentation_corpus_keeps_link_or_emphasis_markup():
    for path in sorted(DOCS.rglob("*.md")):
        for section in split_markdown(path.read_text(encoding="utf-8")):
            heading = section["heading"] or ""
            outside_code = without_code_spans(heading)
            assert "](" not in outside_code and "**" not in outside_code, (path, heading)
            assert "&lt;" not in outside_code and "\\" not in outside_code, (path, heading)


def test_attribute_ids_still_win_and_the_title_is_shown_text():
    text = "# [Typer](https://typer.tiangolo.com) *docs*\n\n## Install `typer` {: #install }\n\nRun it.\n"
    assert first_h1(text) == "Typer docs"
    assert split_markdown(text, skip_first_h1=True) == [
        {"heading": "Install `typer`", "text": "Run it.", "anchor": "install"}]
    setext = "[Guide](g.md) *one*\n---\n\nText.\n"
    assert split_markdown(setext) == [{"heading": "Guide one", "text": "Text."}]


def test_code_spans_pair_runs_of_the_same_length():
    text = "a ``b ` c`` d `e` `f"
    assert [text[start:end] for start, end in code_spans(text)] == ["``b ` c``", "`e`"]
    escaped = "\\`a` `b`"  # the first backtick is escaped: the second opens
    assert [escaped[start:end] for start, end in code_spans(escaped, escapes=True)] == ["` `"]
    assert without_code_spans(text) == "a  d  `f"

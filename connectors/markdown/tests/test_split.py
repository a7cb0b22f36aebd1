"""SPLIT_BYTES: a note larger than it is one item per top-level section (issue 35, item 5)."""

from __future__ import annotations

import textwrap

PAGE = """
    # Configuration

    Intro text, with a link to [the guide](guide.md).

    ### Config File Location

    A deeper heading with no top-level heading above it is a top-level section too.

    ## Prompt

    The prompt.

    ### Options

    Prompt options.

    ## AWS {#aws-module}

    The aws module.

    ## Battery

    The battery.

    ## Battery

    A second one of that name, in the same part.
"""


def test_a_long_note_is_one_item_per_top_level_section(notes):
    notes.write("guide.md", "# Guide\n\nShort.\n")
    notes.write("config.md", PAGE)
    versions = notes.list(SPLIT_BYTES="100")
    assert sorted(versions) == ["config.md", "config.md#aws-module", "config.md#battery",
                                "config.md#config-file-location", "config.md#prompt", "guide.md"]
    assert len(set(versions.values())) == len(versions)  # each part has a version of its own
    items = notes.fetch_all(SPLIT_BYTES="100").by_id
    assert set(items) == set(versions)
    first = items["config.md"]
    assert first["title"] == "Configuration" and first["links"] == ["guide.md"]
    assert [section["heading"] for section in first["sections"]] == [None]
    assert first["url"].endswith("/config.md")
    # A part is named by its page and its section; its sections' trails start below the section.
    prompt = items["config.md#prompt"]
    assert prompt["title"] == "Configuration › Prompt" and "links" not in prompt
    assert [section["heading"] for section in prompt["sections"]] == [None, "Options"]
    assert [section["text"] for section in prompt["sections"]] == ["The prompt.", "Prompt options."]
    assert prompt["url"] == first["url"] + "#prompt"
    # The heading's own id is the part's id, its address's fragment and its first section's anchor.
    aws = items["config.md#aws-module"]
    assert aws["title"] == "Configuration › AWS" and aws["url"] == first["url"] + "#aws-module"
    assert aws["sections"] == [{"heading": None, "text": "The aws module.", "anchor": "aws-module"}]
    assert [section["text"] for section in items["config.md#battery"]["sections"]] == [
        "The battery.", "A second one of that name, in the same part."]
    # One part alone, as the core asks for it after a change.
    assert notes.run("fetch", ids=["config.md#aws-module"], SPLIT_BYTES="100").by_id.keys() == {
        "config.md#aws-module"}
    changed = notes.run("changed", "--since", "2000-01-01T00:00:00Z", SPLIT_BYTES="100")
    assert changed.code == 0 and set(changed.by_id) == set(versions)


def test_an_edit_to_one_section_changes_that_part_alone(notes):
    notes.write("config.md", PAGE)
    before = notes.list(SPLIT_BYTES="100")
    notes.write("config.md", PAGE.replace("The aws module.", "The AWS module, edited."))
    after = notes.list(SPLIT_BYTES="100")
    assert set(after) == set(before)
    assert [item_id for item_id in after if after[item_id] != before[item_id]] == ["config.md#aws-module"]
    # Touching the file (a new modification time) changes nothing.
    path = notes.root / "config.md"
    path.touch()
    assert notes.list(SPLIT_BYTES="100") == after


def test_a_front_matter_title_and_address_name_the_parts(notes):
    notes.write("config.md", "---\ntitle: Settings\nurl: https://docs.example/config/\n---\n"
                + textwrap.dedent(PAGE).replace("# Configuration\n", ""))
    items = notes.fetch_all(SPLIT_BYTES="100").by_id
    assert items["config.md#prompt"]["title"] == "Settings › Prompt"
    assert items["config.md#prompt"]["url"] == "https://docs.example/config/#prompt"
    assert items["config.md"]["url"] == "https://docs.example/config/"


def test_a_page_that_starts_at_a_heading_keeps_its_id_on_the_first_section(notes):
    notes.write("ref.md", "# Reference\n\n## One\n\nFirst.\n\n## Two\n\nSecond.\n")
    items = notes.fetch_all(SPLIT_BYTES="10").by_id
    assert sorted(items) == ["ref.md", "ref.md#two"]
    assert items["ref.md"]["title"] == "Reference › One"
    assert items["ref.md"]["sections"] == [{"heading": None, "text": "First."}]
    assert items["ref.md"]["url"].endswith("/ref.md#one")


def test_by_default_and_under_the_limit_no_note_is_split(notes):
    notes.write("config.md", PAGE)
    assert list(notes.list()) == ["config.md"]  # the default, 0: never
    assert list(notes.list(SPLIT_BYTES="100000")) == ["config.md"]
    assert list(notes.list(SPLIT_BYTES="0")) == ["config.md"]
    [item] = notes.fetch_all(SPLIT_BYTES="0").records
    assert len(item["sections"]) == 7
    assert item["title"] == "Configuration"


def test_a_long_note_without_two_top_level_sections_stays_one_item(notes):
    notes.write("title-only.md", "# Title {#" + "a" * 300 + "\n")
    notes.write("one.md", "# Title\n\n## Only\n\n" + "Text. " * 60 + "\n")
    items = notes.fetch_all(SPLIT_BYTES="100").by_id
    assert set(items) == {"title-only.md", "one.md"}
    assert [section["heading"] for section in items["one.md"]["sections"]] == ["Only"]
    assert items["one.md"]["title"] == "Title"


def test_a_wrong_split_bytes_is_a_settings_error(notes):
    wrong = {"lots": "is not a whole number of bytes", "-1": "must be 0 (never split) or more"}
    for value, words in wrong.items():
        result = notes.run("list", SPLIT_BYTES=value)
        assert result.code == 2 and words in result.stderr, result.stderr

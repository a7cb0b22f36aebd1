"""SPLIT_BYTES: a note larger than it is one item per top-level section (issue 35, item 5)."""

from __future__ import annotations

PAGE = """
    # Configuration

    Intro text, with a link to [the guide](guide.md).

    ### Config File Location

    Before any top-level section: it stays with the intro.

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
    assert sorted(versions) == ["config.md", "config.md#aws-module", "config.md#battery", "config.md#prompt",
                                "guide.md"]
    assert len(set(versions.values())) == len(versions)  # each part has a version of its own
    items = notes.fetch_all(SPLIT_BYTES="100").by_id
    assert set(items) == set(versions)
    first = items["config.md"]
    assert first["title"] == "Configuration" and first["links"] == ["guide.md"]
    assert [section["heading"] for section in first["sections"]] == [None, "Config File Location"]
    prompt = items["config.md#prompt"]
    assert prompt["title"] == "Configuration" and "links" not in prompt
    assert [section["heading"] for section in prompt["sections"]] == ["Prompt", "Prompt › Options"]
    assert prompt["url"] == first["url"]
    assert items["config.md#aws-module"]["sections"][0]["anchor"] == "aws-module"
    assert [section["text"] for section in items["config.md#battery"]["sections"]] == [
        "The battery.", "A second one of that name, in the same part."]
    # One part alone, as the core asks for it after a change.
    assert notes.run("fetch", ids=["config.md#aws-module"], SPLIT_BYTES="100").by_id.keys() == {
        "config.md#aws-module"}
    changed = notes.run("changed", "--since", "2000-01-01T00:00:00Z", SPLIT_BYTES="100")
    assert changed.code == 0 and set(changed.by_id) == set(versions)


def test_by_default_and_under_the_limit_no_note_is_split(notes):
    notes.write("config.md", PAGE)
    assert list(notes.list()) == ["config.md"]  # the default, 0: never
    assert list(notes.list(SPLIT_BYTES="100000")) == ["config.md"]
    assert list(notes.list(SPLIT_BYTES="0")) == ["config.md"]
    [item] = notes.fetch_all(SPLIT_BYTES="0").records
    assert len(item["sections"]) == 7


def test_a_long_note_without_two_top_level_sections_stays_one_item(notes):
    notes.write("title-only.md", "# Title {#" + "a" * 300 + "\n")
    notes.write("one.md", "# Title\n\nIntro.\n\n## Only\n\n" + "Text. " * 60 + "\n")
    items = notes.fetch_all(SPLIT_BYTES="100").by_id
    assert set(items) == {"title-only.md", "one.md"}
    assert [section["heading"] for section in items["one.md"]["sections"]] == [None, "Only"]


def test_a_wrong_split_bytes_is_a_settings_error(notes):
    wrong = {"lots": "is not a whole number of bytes", "-1": "must be 0 (never split) or more"}
    for value, words in wrong.items():
        result = notes.run("list", SPLIT_BYTES=value)
        assert result.code == 2 and words in result.stderr, result.stderr

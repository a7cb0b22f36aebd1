"""The markdown connector's behaviour, each case through a real subprocess."""

from __future__ import annotations

import io
import os
import time
from datetime import UTC, datetime, timedelta

import pytest

# ---------------------------------------------------------------------------------------------
# Items
# ---------------------------------------------------------------------------------------------


def test_the_readme_example(notes):
    notes.write("ops/rotating-certificates.md", """
        ---
        title: Rotating certificates
        tags: [ops, security]
        url: https://wiki.example.org/ops/certs
        ---
        # Rotating certificates

        Rotate the signing certificate every year.

        ## Steps

        1. Create the new certificate.
        2. Follow [the deploy guide](deploy.md).
    """)
    notes.write("ops/deploy.md", "# Deploy\n\nShip it.\n")
    item = notes.item("ops/rotating-certificates.md")
    assert item["title"] == "Rotating certificates"
    assert item["url"] == "https://wiki.example.org/ops/certs"
    assert item["path"] == ["ops"]
    assert item["labels"] == ["ops", "security"]
    assert item["links"] == ["ops/deploy.md"]
    assert item["sections"] == [
        {"heading": None, "text": "Rotate the signing certificate every year."},
        {"heading": "Steps",
         "text": "1. Create the new certificate.\n2. Follow [the deploy guide](deploy.md)."},
    ]
    assert "weight" not in item


def test_check_list_and_fetch_agree(notes):
    notes.write("a.md", "# A\n\ntext a\n")
    notes.write("sub/b.markdown", "text b\n")
    notes.write("sub/c.txt", "not markdown\n")
    check = notes.run("check")
    assert check.code == 0 and check.records == [{"ok": True, "count": 2, "protocol": "1"}]
    versions = notes.list()
    assert set(versions) == {"a.md", "sub/b.markdown"}
    fetched = notes.fetch_all()
    assert {item["id"]: item["version"] for item in fetched.records} == versions
    assert fetched.stderr == ""


def test_titles_urls_and_breadcrumbs(notes):
    notes.write("deep/er/plain.md", "Just text.\n")
    notes.write("h1.md", "# Heading title\n\nBody.\n")
    notes.write("front.md", "---\ntitle: Front title\n---\n# Another heading\n\nBody.\n")
    items = notes.fetch_all().by_id
    plain = items["deep/er/plain.md"]
    assert plain["title"] == "plain"
    assert plain["url"] == (notes.root / "deep/er/plain.md").as_uri()
    assert plain["path"] == ["deep", "er"]
    assert items["h1.md"]["title"] == "Heading title"
    assert items["h1.md"]["sections"] == [{"heading": None, "text": "Body."}]
    assert "path" not in items["h1.md"]
    # A first heading that differs from the front matter title stays a section heading.
    assert items["front.md"]["title"] == "Front title"
    assert items["front.md"]["sections"] == [{"heading": "Another heading", "text": "Body."}]


def test_heading_trails(notes):
    notes.write("guide.md", """
        Before.

        # Guide

        ## Setup

        ### Linux

        apt install x

        ```sh
        # a comment, not a heading
        ```

        ## Use

        Run it.
    """)
    sections = notes.item("guide.md")["sections"]
    assert sections == [
        {"heading": None, "text": "Before."},
        {"heading": "Setup › Linux", "text": "apt install x\n\n```sh\n# a comment, not a heading\n```"},
        {"heading": "Use", "text": "Run it."},
    ]


def test_heading_attribute_blocks_stay_out_of_titles_and_trails(notes):
    notes.write("venv.md", """
        # Virtual Environments { #virtual-environments }

        ## Create a Project { #create-a-project }

        Make a folder.
    """)
    item = notes.item("venv.md")
    assert item["title"] == "Virtual Environments"
    assert item["sections"] == [
        {"heading": "Create a Project", "text": "Make a folder.", "anchor": "create-a-project"}]


def test_a_headings_id_is_its_sections_anchor_and_passes_the_protocol(notes):
    notes.write("guide.md", """
        ---
        url: https://docs.example/guide/
        ---
        # Guide {#guide}

        Intro.

        ## Install {#install .tabbed}

        pip install it

        ### On Linux

        apt install it

        ## Über uns { #über-uns }

        Wir.
    """)
    result = notes.run("fetch", ids=["guide.md"])
    assert result.code == 0 and result.stderr == "", result.stderr
    [item] = result.records
    assert [(section["heading"], section.get("anchor")) for section in item["sections"]] == [
        (None, None), ("Install", "install"), ("Install › On Linux", None), ("Über uns", "über-uns")]
    assert item["url"] == "https://docs.example/guide/"


def test_only_notes_whose_headings_may_have_ids_get_a_new_version(notes, monkeypatch):
    """The version of a note with heading ids changes once (so an index built before anchors
    fetches it again and gets them); a note without keeps the version it had."""
    from passageway_connector_markdown import connector as module

    notes.write("ids.md", "# Title\n\n## Install { #install }\n\nRun it.\n")
    notes.write("plain.md", "# Title {.wide}\n\n## Install\n\nRun `x {y}`, see issue #12.\n")
    now = module.MarkdownConnector({"FOLDER": str(notes.root)}).versions()
    monkeypatch.setattr(module, "has_heading_id", lambda data: False)
    before = module.MarkdownConnector({"FOLDER": str(notes.root)}).versions()
    assert now["ids.md"] != before["ids.md"]
    assert now["plain.md"] == before["plain.md"]


def test_front_matter_values_stay_text(notes):
    notes.write("n.md", """
        ---
        title: no
        updated: 2026-10-28
        tags: alpha, beta ,, alpha
        weight: 1.5
        extra: [ignored]
        ---
        Body.
    """)
    item = notes.item("n.md")
    assert item["title"] == "no"
    assert item["updated"] == "2026-10-28"
    assert item["labels"] == ["alpha", "beta"]
    assert item["weight"] == 1.5


def test_updated_falls_back_to_the_file_time_in_utc(notes):
    path = notes.write("n.md", "Body.\n")
    moment = datetime(2026, 10, 28, 9, 30, 15, tzinfo=UTC).timestamp()
    os.utime(path, (moment, moment))
    assert notes.item("n.md")["updated"] == "2026-10-28T09:30:15Z"


def test_odd_front_matter_values_are_warned_and_ignored(notes):
    path = notes.write("n.md", "---\nweight: 3\nupdated: last week\ntitle: [a, b]\n---\n# Real\n\nBody.\n")
    moment = datetime(2026, 1, 2, tzinfo=UTC).timestamp()
    os.utime(path, (moment, moment))
    result = notes.run("fetch", ids=["n.md"])
    assert result.code == 0
    [item] = result.records
    assert "weight" not in item and item["updated"] == "2026-01-02T00:00:00Z" and item["title"] == "Real"
    assert "n.md: weight '3' is not a number from 0 to 2; ignored" in result.stderr
    assert "n.md: updated 'last week' is not an ISO 8601 date" in result.stderr


def test_a_bom_is_removed_and_crlf_read(notes):
    text = "\ufeff---\r\ntitle: Bom\r\n---\r\nLine one\r\n\r\nLine two\r\n"
    (notes.root / "bom.md").write_bytes(text.encode("utf-8"))
    item = notes.item("bom.md")
    assert item["title"] == "Bom"
    assert item["sections"] == [{"heading": None, "text": "Line one\n\nLine two"}]


# ---------------------------------------------------------------------------------------------
# Ids and versions
# ---------------------------------------------------------------------------------------------


def test_a_front_matter_id_survives_a_move(notes):
    notes.write("old/place.md", "---\nid: note-42\n---\nBody.\n")
    assert list(notes.list()) == ["note-42"]
    (notes.root / "old/place.md").rename(notes.root / "moved.md")
    assert list(notes.list()) == ["note-42"]
    assert notes.item("note-42")["url"] == (notes.root / "moved.md").as_uri()


def test_the_version_follows_the_content(notes):
    path = notes.write("a.md", "---\ntitle: A\n---\nBody.\n")
    first = notes.list()["a.md"]
    assert notes.list()["a.md"] == first  # stable across calls
    os.utime(path, (time.time() + 5, time.time() + 5))
    assert notes.list()["a.md"] == first  # a touch is not a change
    notes.write("a.md", "---\ntitle: B\n---\nBody.\n")
    assert notes.list()["a.md"] != first  # front matter counts


def test_a_link_that_starts_to_resolve_changes_the_version(notes):
    notes.write("a.md", "See [[Later]] and [b](b.md).\n")
    before = notes.list()["a.md"]
    assert "links" not in notes.item("a.md")
    notes.write("later.md", "Now it exists.\n")
    after = notes.list()
    assert after["a.md"] != before
    assert notes.item("a.md")["links"] == ["later.md"]


# ---------------------------------------------------------------------------------------------
# Links
# ---------------------------------------------------------------------------------------------


def test_links_between_notes(notes):
    notes.write("index.md", """
        [Part](guides/setup.md#linux), [again](./guides/setup.md), [up](../outside.md),
        [web](https://example.org/x.md), [mail](mailto:a@b.c), [image](pic.png), [self](index.md),
        [[Deploy Notes]], [[deploy notes|shown text]], [[Missing]], [[Shared]], [[guides/shared]],
        [spaces](with%20space.md), ![picture](guides/setup.md)

        `[[InCode]]` and

        ```
        [code](code.md)
        ```
    """)
    notes.write("guides/setup.md", "Setup.\n")
    notes.write("Deploy Notes.md", "Deploy.\n")
    notes.write("with space.md", "Spaces.\n")
    notes.write("shared.md", "One.\n")
    notes.write("guides/shared.md", "Two.\n")
    notes.write("InCode.md", "Only in code.\n")
    notes.write("code.md", "Only in code.\n")
    (notes.root / "pic.png").write_bytes(b"\x89PNG")
    item = notes.item("index.md")
    assert item["links"] == ["guides/setup.md", "with space.md", "Deploy Notes.md", "guides/shared.md"]
    assert "[[Deploy Notes]]" in item["sections"][0]["text"]  # the text itself is unchanged


def test_a_link_out_of_the_folder_is_neither_followed_nor_a_link(notes, tmp_path):
    (tmp_path / "outside.md").write_text("outside\n")
    notes.write("a/b.md", "[passwords](../../etc/passwd) [out](../../outside.md) [root](/../outside.md)\n")
    result = notes.run("fetch", ids=["a/b.md"])
    assert result.code == 0 and result.stderr == ""
    [item] = result.records
    assert "links" not in item
    assert "root:" not in result.stdout
    # A symbolic link named like a note that points at the same file is not read either.
    (notes.root / "passwd.md").symlink_to("/etc/passwd")
    result = notes.fetch_all()
    assert result.code == 0 and set(result.by_id) == {"a/b.md"}
    assert "root:" not in result.stdout
    assert "skipped passwd.md: it links outside FOLDER" in result.stderr


def test_a_leading_slash_is_the_folder(notes):
    notes.write("a/b.md", "[top](/top.md)\n")
    notes.write("top.md", "Top.\n")
    assert notes.item("a/b.md")["links"] == ["top.md"]


def test_links_use_the_target_id(notes):
    notes.write("a.md", "[b](b.md) [[B]]\n")
    notes.write("b.md", "---\nid: stable-b\n---\nB.\n")
    assert notes.item("a.md")["links"] == ["stable-b"]


# ---------------------------------------------------------------------------------------------
# Which files
# ---------------------------------------------------------------------------------------------


def test_hidden_and_node_modules_are_skipped(notes):
    for relative in ["kept.md", ".hidden.md", ".obsidian/workspace.md", "node_modules/pkg/readme.md",
                     "sub/.git/notes.md", "sub/kept.md"]:
        notes.write(relative, "text\n")
    assert set(notes.list()) == {"kept.md", "sub/kept.md"}


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, {"a.md", "drafts/b.md", "x/drafts/c.md", "d.draft.md", "e.markdown"}),
        ({"EXCLUDE": "drafts/**|*.draft.md"}, {"a.md", "x/drafts/c.md", "e.markdown"}),
        ({"EXCLUDE": "**/drafts/**"}, {"a.md", "d.draft.md", "e.markdown"}),
        ({"INCLUDE": "*.txt"}, {"f.txt", "x/g.txt"}),
        ({"INCLUDE": "x/*"}, {"x/g.txt"}),
        ({"INCLUDE": "x/**"}, {"x/g.txt", "x/drafts/c.md"}),
        ({"INCLUDE": "*.MD"}, {"UPPER.MD"}),
        ({"INCLUDE": "?.md"}, {"a.md", "drafts/b.md", "x/drafts/c.md"}),
    ],
)
def test_include_and_exclude(notes, settings, expected):
    for relative in ["a.md", "drafts/b.md", "x/drafts/c.md", "d.draft.md", "e.markdown", "f.txt", "x/g.txt",
                     "UPPER.MD"]:
        notes.write(relative, "text\n")
    assert set(notes.list(**settings)) == expected


def test_symlinks(notes, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("outside the folder\n")
    notes.write("real/inside.md", "inside\n")
    (notes.root / "linked-folder").symlink_to(outside, target_is_directory=True)
    (notes.root / "linked-inside.md").symlink_to(notes.root / "real/inside.md")
    (notes.root / "linked-outside.md").symlink_to(outside / "secret.md")
    result = notes.fetch_all()
    assert result.code == 0
    assert set(result.by_id) == {"real/inside.md", "linked-inside.md"}
    assert "outside the folder" not in result.stdout
    assert "skipped linked-folder: it links to a folder" in result.stderr
    assert "skipped linked-outside.md: it links outside FOLDER" in result.stderr


def test_a_symlink_loop_is_skipped(notes):
    notes.write("ok.md", "fine\n")
    (notes.root / "loop").symlink_to(notes.root, target_is_directory=True)
    (notes.root / "a.md").symlink_to(notes.root / "b.md")
    (notes.root / "b.md").symlink_to(notes.root / "a.md")
    for mode in ("list", "check"):
        result = notes.run(mode)
        assert result.code == 0
    result = notes.run("list")
    assert [entry["id"] for entry in result.records] == ["ok.md"]
    assert "skipped a.md: the link is broken, loops, or does not point at a file" in result.stderr
    assert "skipped b.md: the link is broken, loops, or does not point at a file" in result.stderr
    assert "skipped loop: it links to a folder" in result.stderr


# ---------------------------------------------------------------------------------------------
# Bad input: a warning, the rest of the folder indexed, exit 0
# ---------------------------------------------------------------------------------------------


def test_a_binary_file_named_md_is_skipped(notes):
    notes.write("good.md", "fine\n")
    (notes.root / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    result = notes.fetch_all()
    assert result.code == 0 and set(result.by_id) == {"good.md"}
    assert "markdown connector: warning: skipped image.md: it holds binary data, not text" in result.stderr


def test_a_file_that_is_not_utf8_is_skipped(notes):
    notes.write("good.md", "fine\n")
    (notes.root / "latin1.md").write_bytes("Grüße aus Köln\n".encode("latin-1"))
    result = notes.run("list")
    assert result.code == 0 and [entry["id"] for entry in result.records] == ["good.md"]
    assert "skipped latin1.md: it is not UTF-8 text" in result.stderr


def test_an_oversize_note_is_skipped(notes):
    notes.write("good.md", "fine\n")
    (notes.root / "huge.md").write_bytes(b"word " * (5 * 1024 * 1024 // 5))
    result = notes.fetch_all()
    assert result.code == 0 and set(result.by_id) == {"good.md"}
    assert f"skipped huge.md: {5 * 1024 * 1024} bytes is over MAX_FILE_BYTES (1048576)" in result.stderr
    assert set(notes.list(MAX_FILE_BYTES="6000000")) == {"good.md", "huge.md"}


def test_invalid_front_matter_is_warned_and_ignored(notes):
    notes.write("broken.md", "---\ntitle: [unclosed\nid: x\n---\n# Heading\n\nBody.\n")
    notes.write("list.md", "---\n- a\n- b\n---\nBody.\n")
    result = notes.fetch_all()
    assert result.code == 0
    broken = result.by_id["broken.md"]
    assert broken["title"] == "Heading"
    assert broken["sections"] == [{"heading": None, "text": "Body."}]
    assert "broken.md: the front matter is not valid YAML (line" in result.stderr
    assert "list.md: the front matter is not a set of keys" in result.stderr
    assert result.by_id["list.md"]["sections"] == [{"heading": None, "text": "Body."}]


def test_an_unclosed_front_matter_block_is_text(notes):
    notes.write("rule.md", "---\nnot front matter\n")
    # A rule shows nothing: it is left out of the text (the SDK's split_markdown).
    assert notes.item("rule.md")["sections"] == [{"heading": None, "text": "not front matter"}]


def test_two_files_with_the_same_id_fail_the_call(notes):
    notes.write("a.md", "---\nid: same\n---\nA\n")
    notes.write("sub/b.md", "---\nid: same\n---\nB\n")
    notes.write("c.md", "C\n")
    for mode in ("list", "check", "fetch"):
        result = notes.run(mode, ids=["c.md"])
        assert result.code == 1, mode
        assert result.stdout == ""
        assert result.stderr == ("markdown connector: a.md and sub/b.md both have the id 'same'; "
                                 "give one of them another `id` in its front matter\n")


def test_a_path_used_as_another_files_id_is_a_duplicate(notes):
    notes.write("a.md", "A\n")
    notes.write("b.md", "---\nid: a.md\n---\nB\n")
    result = notes.run("list")
    assert (result.code, result.stdout) == (1, "")
    assert "a.md and b.md both have the id 'a.md'" in result.stderr


def test_a_file_deleted_between_list_and_fetch_is_skipped(notes):
    notes.write("stays.md", "stays\n")
    notes.write("goes.md", "goes\n")
    ids = sorted(notes.list())
    (notes.root / "goes.md").unlink()
    result = notes.run("fetch", ids=ids)
    assert result.code == 0 and result.stderr == ""
    assert list(result.by_id) == ["stays.md"]


# ---------------------------------------------------------------------------------------------
# changed
# ---------------------------------------------------------------------------------------------


def test_changed_uses_the_later_of_modification_and_change_time(notes):
    old = notes.write("copied-in.md", "old dates\n")
    year_2000 = datetime(2000, 1, 1, tzinfo=UTC).timestamp()
    os.utime(old, (year_2000, year_2000))  # as a copy that kept its dates; its change time is now
    hour_ago = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    result = notes.run("changed", "--since", hour_ago)
    assert result.code == 0 and list(result.by_id) == ["copied-in.md"]
    assert result.records[0]["updated"] == "2000-01-01T00:00:00Z"
    later = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert notes.run("changed", "--since", later).stdout == ""


def test_changed_needs_since(notes):
    result = notes.run("changed")
    assert (result.code, result.stdout) == (2, "")
    assert "changed needs --since" in result.stderr


# ---------------------------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"FOLDER": ""}, "FOLDER is not set"),
        ({"FOLDER": "/nonexistent/folder"}, "FOLDER '/nonexistent/folder' is not an existing folder; "
                                            "create it, or set FOLDER (the source's env in passageway.toml) "
                                            "to the folder of your markdown files\n"),
        ({"MAX_FILE_BYTES": "1MB"}, "MAX_FILE_BYTES '1MB' is not a whole number of bytes"),
        ({"MAX_FILE_BYTES": "0"}, "MAX_FILE_BYTES must be at least 1"),
        ({"INCLUDE": " | "}, "INCLUDE ' | ' holds no pattern"),
    ],
)
def test_wrong_settings_exit_2(notes, settings, message):
    result = notes.run("list", **settings)
    assert (result.code, result.stdout) == (2, "")
    assert result.stderr.startswith(f"markdown connector: {message}")
    assert "Traceback" not in result.stderr


def test_non_ascii_file_names_in_an_empty_environment(notes):
    notes.write("Grüße/Café.md", "# Café\n\nKaffee.\n")
    item = notes.item("Grüße/Café.md")
    assert item["title"] == "Café" and item["path"] == ["Grüße"]


def test_a_file_name_that_is_not_utf8_is_skipped(notes):
    notes.write("good.md", "fine\n")
    with open(os.fsencode(notes.root) + b"/bad\xff.md", "wb") as handle:
        handle.write(b"text\n")
    result = notes.run("list")
    assert result.code == 0 and [entry["id"] for entry in result.records] == ["good.md"]
    assert "skipped 'bad\\udcff.md': its name is not UTF-8" in result.stderr


def test_site_generator_dates_become_utc(notes):
    notes.write("post.md", "---\nupdated: 2026-10-28 09:00:00 +0200\n---\nBody.\n")
    assert notes.item("post.md")["updated"] == "2026-10-28T07:00:00Z"


def test_an_unreadable_folder_fails_instead_of_listing_nothing(notes, monkeypatch):
    # Run in-process: as root (CI) a folder cannot be made unreadable, so the refusal is simulated.
    from passageway_connector_markdown import connector as module
    from passageway_connector_markdown import folder

    notes.write("a.md", "text\n")
    real_scandir = os.scandir

    def refusing_scandir(path):
        if os.fspath(path) == str(notes.root.resolve()):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(folder.os, "scandir", refusing_scandir)
    out, err = io.StringIO(), io.StringIO()
    code = module.MarkdownConnector.run(["list"], {"FOLDER": str(notes.root)}, io.StringIO(), out, err)
    assert (code, out.getvalue()) == (1, "")
    assert err.getvalue() == (f"markdown connector: cannot read FOLDER {str(notes.root.resolve())!r}: "
                              "Permission denied\n")

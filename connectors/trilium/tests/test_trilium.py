"""The Trilium connector against the in-test ETAPI: the items, the tree, changes, errors and secrets."""

from __future__ import annotations

import base64

import pytest

from .conftest import TOKEN, run_connector

INDEXED = {
    "areawiki",
    "concepts1",
    "backprop1",
    "graddesc1",
    "summary01",
    "sauerteig",
    "convention",
    "attnsrc01",
    "year2026",
    "day110201",
    "deploysh1",
    "hugenote1",
}


def listing(trilium, **settings: str) -> dict[str, str]:
    result = run_connector("list", URL=trilium.url, **settings)
    assert result.code == 0, result.stderr
    return {entry["id"]: entry["version"] for entry in result.records}


def fetch_all(trilium, **settings: str) -> dict[str, dict]:
    result = run_connector("fetch", ids=sorted(listing(trilium)), URL=trilium.url, **settings)
    assert result.code == 0, result.stderr
    return result.by_id


def test_text_and_code_notes_are_items_and_plumbing_is_left_out(trilium):
    # Left out: the locks, templates and views areas, the archived, protected and image notes,
    # Trilium's hidden subtree, root and the folders that are book notes.
    assert set(listing(trilium)) == INDEXED


def test_areas_give_weights_labels_and_paths(trilium):
    items = fetch_all(trilium)
    assert {item_id: item["weight"] for item_id, item in items.items()} == {
        **dict.fromkeys(["areawiki", "concepts1", "backprop1", "graddesc1", "summary01", "sauerteig"], 1.0),
        "convention": 1.0,
        "attnsrc01": 0.8,
        "year2026": 0.6,
        "day110201": 0.6,
        "deploysh1": 0.6,
        "hugenote1": 0.6,
    }
    backprop = items["backprop1"]
    assert backprop["labels"] == ["area:wiki", "type:concept", "topic:training", "status:stable"]
    assert backprop["path"] == ["Concepts"]
    assert items["sauerteig"]["path"] == ["Küche"]
    assert items["day110201"]["path"] == ["2026"] and items["day110201"]["labels"] == ["area:journal"]
    assert "path" not in items["areawiki"] and "labels" not in items["deploysh1"]
    assert backprop["url"] == f"{trilium.url}/#root/backprop1"
    assert backprop["updated"] == "2026-11-01 08:00:00.000Z"


def test_relations_text_links_and_the_reverse_link_of_a_source(trilium):
    items = fetch_all(trilium)
    assert items["backprop1"]["links"] == ["graddesc1"]  # relation and text link, once; no template
    assert "links" not in items["graddesc1"]  # its relation points into the locks area
    assert items["summary01"]["links"] == ["attnsrc01"]
    assert items["attnsrc01"]["links"] == ["summary01"]  # the source links back to its summary


def test_headings_split_sections_and_lists_tables_and_code_stay_readable(trilium):
    items = fetch_all(trilium)
    backprop = [(section["heading"], section["text"][:24]) for section in items["backprop1"]["sections"]]
    assert backprop == [
        (None, "Backpropagation computes"),
        ("How it works", "A forward pass stores th"),
        ("How it works › Vanishing gradients", "With saturating activati"),
        ("History", "Rumelhart, Hinton and Wi"),
    ]
    source = {section["heading"]: section["text"] for section in items["attnsrc01"]["sections"]}
    assert (
        source["Results"]
        == "| Task | BLEU |\n|---|---|\n| English to German | 28.4 |\n| English to French | 41.8 |"
    )
    assert source["Training"] == "1. Eight P100 GPUs\n2. Twelve hours for the base model"
    variants = items["graddesc1"]["sections"][1]["text"]
    assert variants.splitlines()[1] == "  - with momentum it keeps a running average"
    assert "Den Ofen mit dem gusseisernen Topf" in items["sauerteig"]["sections"][1]["text"]
    assert items["concepts1"]["sections"] == []


def test_a_code_note_is_cut_at_blank_lines_and_a_long_section_at_about_350_tokens(trilium):
    blocks = [f"step_{number}() {{\n  run --verbose --target host-{number}\n}}" * 8 for number in range(12)]
    trilium.edit("deploysh1", content="\n\n".join(blocks))
    trilium.edit("graddesc1", content="<h2>Long</h2>" + "<p>" + "A sentence about descent. " * 200 + "</p>")
    items = fetch_all(trilium)
    code = items["deploysh1"]["sections"]
    assert len(code) > 1 and all(len(section["text"]) <= 1400 for section in code)
    assert "\n\n".join(section["text"] for section in code) == "\n\n".join(blocks)
    long = items["graddesc1"]["sections"]
    assert len(long) >= 3 and {section["heading"] for section in long} == {"Long"}
    assert all(len(section["text"]) <= 1400 and section["text"].endswith(".") for section in long)


def test_a_note_over_max_note_bytes_is_skipped_with_a_warning_but_stays_listed(trilium):
    result = run_connector("fetch", ids=["hugenote1", "backprop1"], URL=trilium.url, MAX_NOTE_BYTES="20000")
    assert result.code == 0
    assert set(result.by_id) == {"backprop1"}
    assert "hugenote1" in result.stderr and "MAX_NOTE_BYTES = 20000" in result.stderr
    assert "hugenote1" in listing(trilium, MAX_NOTE_BYTES="20000")


@pytest.mark.parametrize(
    ("note_id", "change"),
    [
        ("backprop1", {"content": "<p>rewritten</p>"}),
        ("backprop1", {"title": "Backprop"}),
        ("backprop1", {"labels": {"wikiType": "concept"}}),
        ("backprop1", {"parents": ["areawiki"]}),
        ("concepts1", {"title": "Ideas"}),  # a renamed ancestor changes the path
        ("summary01", {"relations": []}),  # the source loses its reverse link
    ],
    ids=["content", "title", "attributes", "moved", "ancestor renamed", "citing summary"],
)
def test_the_version_changes_with_content_title_attributes_and_place(trilium, note_id, change):
    before = listing(trilium)
    trilium.edit(note_id, **change)
    after = listing(trilium)
    watched = {"concepts1": "backprop1", "summary01": "attnsrc01"}.get(note_id, note_id)
    assert after[watched] != before[watched]
    assert after["sauerteig"] == before["sauerteig"]


def test_changed_asks_for_modified_notes_only(trilium):
    trilium.requests.clear()
    quiet = run_connector("changed", "--since", "2026-11-01T09:00:00Z", URL=trilium.url)
    assert quiet.code == 0 and quiet.stdout == ""
    assert len(trilium.requests) == 1
    assert trilium.requests[0]["query"]["search"] == "note.utcDateModified >= '2026-11-01 09:00:00.000Z'"
    trilium.edit("graddesc1", content="<p>new text</p>", modified="2026-11-02 10:00:00.000Z")
    trilium.edit("lock00001", modified="2026-11-02 10:00:00.000Z")  # modified, but not an item
    result = run_connector("changed", "--since", "2026-11-01T09:00:00Z", URL=trilium.url)
    assert result.code == 0, result.stderr
    assert [record["id"] for record in result.records] == ["graddesc1"]
    assert result.records[0]["version"] == listing(trilium)["graddesc1"]


def test_only_get_requests_with_the_token_in_the_authorization_header(trilium):
    fetch_all(trilium)
    assert trilium.requests
    assert {request["method"] for request in trilium.requests} == {"GET"}
    assert {request["headers"]["Authorization"] for request in trilium.requests} == {TOKEN}
    assert all(request["path"].startswith("/etapi/") for request in trilium.requests)


def test_the_fake_takes_basic_auth_as_etapi_does(trilium):
    import urllib.request

    basic = base64.b64encode(f"trilium:{TOKEN}".encode()).decode()
    request = urllib.request.Request(
        f"{trilium.url}/etapi/app-info", headers={"Authorization": f"Basic {basic}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def test_a_wrong_token_says_to_check_it_and_never_prints_it(trilium):
    wrong = "wrong-token-7f3a9c2e"
    result = run_connector("list", URL=trilium.url, TOKEN=wrong)
    assert result.code == 1 and result.stdout == ""
    assert (
        "HTTP 401" in result.stderr
        and "NOT_AUTHENTICATED" in result.stderr
        and "check TOKEN" in result.stderr
    )
    assert wrong not in result.stderr


def test_a_token_echoed_back_by_a_proxy_is_masked(trilium):
    trilium.echo_authorization = True
    result = run_connector("list", URL=trilium.url)
    assert result.code == 1
    assert "HTTP 502" in result.stderr and "Authorization: ***" in result.stderr
    assert TOKEN not in result.stderr


def test_an_unreachable_server_names_the_address():
    result = run_connector("check", URL="http://127.0.0.1:9", TIMEOUT="5")
    assert result.code == 1
    assert (
        "cannot reach Trilium at http://127.0.0.1:9/etapi" in result.stderr and "check URL" in result.stderr
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"URL": ""}, "URL is required"),
        ({"TOKEN": ""}, "TOKEN is required"),
        ({"URL": "trilium:8080"}, "URL must be an http:// or https:// address"),
        ({"WEB_URL": "ftp://notes"}, "WEB_URL must be an http:// or https:// address"),
        ({"TIMEOUT": "soon"}, "TIMEOUT must be a number"),
        ({"MAX_NOTE_BYTES": "10"}, "MAX_NOTE_BYTES must be a number from 1024"),
    ],
)
def test_a_wrong_setting_exits_2_naming_it(trilium, settings, message):
    result = run_connector("check", **{"URL": trilium.url, **settings})
    assert result.code == 2 and message in result.stderr


def test_web_url_makes_the_links_and_url_may_end_in_etapi(trilium):
    result = run_connector(
        "fetch", ids=["backprop1"], URL=trilium.url + "/etapi/", WEB_URL="https://notes.example.org/"
    )
    assert result.code == 0, result.stderr
    assert result.records[0]["url"] == "https://notes.example.org/#root/backprop1"

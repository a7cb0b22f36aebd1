"""The Confluence connector against the in-test Data Center REST API: pages, macros, changes, errors."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest
from passageway_connector_confluence import ConfluenceConnector

from .conftest import TOKEN, Scripted, run_connector

OPS = ["100", "101", "102", "103", "104", "105", "106", "107", "108"]


def listing(confluence, **settings: str) -> dict[str, str]:
    result = run_connector("list", URL=confluence.url, **settings)
    assert result.code == 0, result.stderr
    return {record["id"]: record["version"] for record in result.by_id.values()}


def fetch(confluence, ids: list[str], **settings: str) -> dict[str, dict]:
    result = run_connector("fetch", ids=ids, URL=confluence.url, **settings)
    assert result.code == 0, result.stderr
    return result.by_id


def test_the_pages_of_the_spaces_are_listed_page_by_page(confluence):
    assert sorted(listing(confluence)) == [*OPS, "200"]  # no blog post
    starts = [
        request["query"]["start"]
        for request in confluence.requests
        if request["path"] == "/rest/api/content" and request["query"]["spaceKey"] == "OPS"
    ]
    assert starts == ["0", "3", "6"]  # the fake gives three at a time; _links.next is followed


def test_every_macro_rule(confluence):
    sections = fetch(confluence, ["102"])["102"]["sections"]
    assert [section["heading"] for section in sections] == [
        None,
        "Before you start",
        "Before you start › Steps",
        "Before you start › Steps › Checking",
    ]
    intro, before, steps, checking = (section["text"] for section in sections)
    assert intro == "Certificates are rotated every year. Status: APPROVED"  # status title; no toc, emoticon
    assert (
        before == "The old certificate stays valid for two weeks.\n\nNever share the private key."
    )  # no jira
    assert steps == (
        "- Order the new certificate\n- Install it on the load balancer\n\n"
        "```\nopenssl req -new -key site.key -out site.csr\n# check it\n"
        "openssl req -in site.csr -noout -text\n```"
    )
    assert checking.split("\n\n") == [
        "Follow Deploy the app afterwards, or read the onboarding guide and the TLS notes.",
        "The chain includes the intermediate certificate.",  # expand keeps its body, not its title
        "```\n-----BEGIN CERTIFICATE REQUEST-----\n  (placeholder)\n```",
        "Rotation takes an hour.",  # excerpt in a layout cell
        "| Host | Expires |\n|---|---|\n| www | 2027-01-31 |",  # panel with a table and a <time>
        "- Renew\n  - in time",  # section and column
    ]
    assert "diagram.png" not in checking and "Heads up" not in before and "OPS-1234" not in before


def test_labels_path_link_weight_and_updated(confluence):
    items = fetch(confluence, ["102", "108", "200"])
    certificates = items["102"]
    assert certificates["labels"] == ["space:OPS", "security", "tls"]
    assert certificates["path"] == ["Operations", "Runbooks"]
    assert certificates["weight"] == 1.0
    assert certificates["url"] == f"{confluence.url}/pages/viewpage.action?pageId=102"
    assert certificates["updated"] == "2026-11-01T10:00:00.000+02:00"
    assert items["108"]["path"] == ["Runbooks", "Linux", "Servers", "Kernel"]  # nearest last, four
    assert items["200"]["labels"] == ["space:HR", "howto"]
    assert "path" not in items["200"]


def test_the_version_changes_with_the_page_version_and_with_labels(confluence):
    before = listing(confluence)
    confluence.edit("103", storage="<p>Run the new pipeline.</p>")
    confluence.pages["104"].labels.append("later")  # a label alone does not raise the page version
    after = listing(confluence)
    assert after["103"] != before["103"] and after["104"] != before["104"]
    assert {key: value for key, value in after.items() if key not in ("103", "104")} == {
        key: value for key, value in before.items() if key not in ("103", "104")
    }
    assert fetch(confluence, ["104"])["104"]["version"] == after["104"]


def test_include_and_exclude_labels(confluence):
    assert sorted(listing(confluence, INCLUDE_LABELS="howto|TLS")) == ["102", "103", "200"]
    assert "104" not in listing(confluence, EXCLUDE_LABELS="draft")
    assert fetch(confluence, ["103", "104"], EXCLUDE_LABELS="draft").keys() == {"103"}


def test_fetch_leaves_out_gone_pages_other_spaces_and_blog_posts(confluence):
    assert fetch(confluence, ["999", "110", "200", "not-a-page-id", "101"], SPACES="OPS").keys() == {"101"}


def test_more_pages_than_max_pages_fail_instead_of_being_cut(confluence):
    result = run_connector("list", URL=confluence.url, MAX_PAGES="5")
    assert result.code == 1 and result.stdout == ""
    assert "more than MAX_PAGES = 5 pages" in result.stderr


def test_an_empty_space_warns_and_a_missing_one_fails(confluence):
    result = run_connector("list", URL=confluence.url, SPACES="HR|EMPTY")
    assert result.code == 0 and list(result.by_id) == ["200"]
    assert "warning: the space EMPTY lists no pages" in result.stderr
    missing = run_connector("list", URL=confluence.url, SPACES="OPS|NOPE")
    assert (
        missing.code == 1
        and "the space 'NOPE' does not exist or the token's user cannot see it" in missing.stderr
    )


def test_changed_asks_cql_fourteen_hours_early(confluence):
    confluence.edit("103", storage="<p>new</p>", modified=datetime(2026, 11, 2, 10, 0, tzinfo=UTC))
    confluence.edit("200", modified=datetime(2026, 11, 2, 9, 0, tzinfo=UTC))
    result = run_connector("changed", "--since", "2026-11-02T19:30:00Z", URL=confluence.url)
    assert result.code == 0, result.stderr
    [query] = [
        request["query"] for request in confluence.requests if request["path"] == "/rest/api/content/search"
    ]
    assert query["cql"] == 'space in ("OPS", "HR") and type = page and lastmodified >= "2026/11/02 05:30"'
    assert sorted(result.by_id) == ["103", "200"]
    assert result.by_id["103"]["version"] == listing(confluence)["103"]


def test_only_get_requests_with_the_token_as_bearer(confluence):
    fetch(confluence, OPS)
    assert {request["method"] for request in confluence.requests} == {"GET"}
    assert {request["headers"]["Authorization"] for request in confluence.requests} == {f"Bearer {TOKEN}"}


def test_a_401_says_to_check_the_token_and_never_prints_it(confluence):
    wrong = "wrong-pat-55aa1c"
    result = run_connector("list", URL=confluence.url, TOKEN=wrong)
    assert result.code == 1 and result.stdout == ""
    assert "HTTP 401" in result.stderr and "check TOKEN" in result.stderr and wrong not in result.stderr


def test_a_token_echoed_back_by_a_proxy_is_masked(confluence):
    confluence.echo_authorization = True
    result = run_connector("list", URL=confluence.url)
    assert result.code == 1 and "HTTP 400" in result.stderr and "Authorization: Bearer ***" in result.stderr
    assert TOKEN not in result.stderr


def in_process(confluence, *argv: str, **options):
    """Run one call in-process, with the client's waits recorded instead of slept."""
    waits: list[float] = []
    stdout, stderr = io.StringIO(), io.StringIO()
    env = {"URL": confluence.url, "SPACES": "HR", "TOKEN": TOKEN}
    code = ConfluenceConnector.run(
        list(argv), env, io.StringIO(), stdout, stderr, sleep=waits.append, **options
    )
    return code, waits, stdout.getvalue(), stderr.getvalue()


def test_429_and_5xx_are_retried_with_a_growing_wait_and_long_waits_are_logged(confluence):
    confluence.script = [Scripted(503), Scripted(502), Scripted(429, {"Retry-After": "20"}), Scripted(500)]
    code, waits, stdout, stderr = in_process(confluence, "list")
    assert code == 0 and '"200"' in stdout
    assert waits == [1.0, 2.0, 20.0, 8.0]
    assert "HTTP 429 from" in stderr and "waiting 20 s (3 s of 900 s waited)" in stderr
    assert "waiting 8 s" not in stderr  # shorter waits are not logged


def test_retry_after_is_capped_and_the_total_wait_gives_up(confluence):
    confluence.always = Scripted(503, {"Retry-After": "100000"})
    code, waits, stdout, stderr = in_process(confluence, "list", total_wait_cap=700.0)
    assert code == 1 and stdout == ""
    assert waits == [300.0, 300.0, 100.0]
    assert "gave up after 4 attempts" in stderr and "(700 s of waiting): HTTP 503" in stderr


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"URL": ""}, "URL is required"),
        ({"URL": "wiki.example.org"}, "URL must be an http:// or https:// address"),
        ({"SPACES": ""}, "SPACES is required"),
        ({"SPACES": "OPS|not a key"}, "SPACES holds 'not a key'"),
        ({"TOKEN": ""}, "TOKEN is required"),
        ({"MAX_PAGES": "0"}, "MAX_PAGES must be a number from 1"),
        ({"TIMEOUT": "x"}, "TIMEOUT must be a number"),
        ({"PAUSE_SECONDS": "-1"}, "PAUSE_SECONDS must be a number from 0 to 60"),
        ({"VERIFY_TLS": "no"}, "VERIFY_TLS must be true or false"),
    ],
)
def test_a_wrong_setting_exits_2_naming_it(confluence, settings, message):
    result = run_connector("check", **{"URL": confluence.url, **settings})
    assert result.code == 2 and message in result.stderr

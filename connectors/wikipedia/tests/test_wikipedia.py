"""The Wikipedia connector against an in-test fake MediaWiki API (see conftest.py)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from typing import Any

import pytest
from passageway_connector_wikipedia import WikipediaConnector, html_sections, load_settings
from passageway_connector_wikipedia.api import user_agent


def call(
    wiki: Any, mode: str, env: dict[str, str], ids: list[str] | None = None, **options: Any
) -> tuple[int, list[dict[str, Any]], str]:
    """Run one mode in-process; waits are recorded in ``options["sleep"]`` if given, else skipped."""
    full_env = {"API_URL": wiki.api_url, "PAGE_URL": wiki.page_url, "PAUSE_SECONDS": "0", **env}
    options.setdefault("sleep", lambda seconds: None)
    stdin = io.StringIO("".join(json.dumps({"id": item_id}) + "\n" for item_id in ids or []))
    stdout, stderr = io.StringIO(), io.StringIO()
    code = WikipediaConnector.run([mode], full_env, stdin, stdout, stderr, **options)
    return code, [json.loads(line) for line in stdout.getvalue().splitlines()], stderr.getvalue()


def listed(lines: list[dict[str, Any]]) -> dict[str, str]:
    return {line["id"]: line["version"] for line in lines}


# -- scope ------------------------------------------------------------------------------------


def test_category_with_one_level_of_subcategories(wiki):
    code, lines, stderr = call(wiki, "list", {"CATEGORIES": "Deep learning"})
    assert code == 0, stderr
    # Backpropagation and Dropout directly, the CNN through the subcategory; not the transformer
    # (two levels down), not the redirect "Backprop", not the talk page.
    assert listed(lines) == {"1": "1001", "5": "5005", "2": "2002"}


def test_category_depth_zero_and_two(wiki):
    _, lines, _ = call(wiki, "list", {"CATEGORIES": "Category:Deep learning", "CATEGORY_DEPTH": "0"})
    assert set(listed(lines)) == {"1", "5"}
    _, lines, _ = call(wiki, "list", {"CATEGORIES": "Deep learning", "CATEGORY_DEPTH": "2"})
    assert set(listed(lines)) == {"1", "2", "3", "5"}


def test_several_categories_are_joined_without_duplicates(wiki):
    env = {"CATEGORIES": "Deep learning|Neural network architectures", "CATEGORY_DEPTH": "0"}
    code, lines, _ = call(wiki, "list", env)
    assert code == 0
    assert [line["id"] for line in lines].count("1") == 1
    assert set(listed(lines)) == {"1", "2", "5"}


def test_titles_follow_redirects_and_ignore_missing_pages(wiki):
    code, lines, stderr = call(wiki, "list", {"TITLES": "Backprop|No such article|dropout_(neural_networks)"})
    assert code == 0, stderr
    assert listed(lines) == {"1": "1001", "5": "5005"}
    assert "no page titled 'No such article'" in stderr


def test_geo_finds_the_pages_near_a_point(wiki):
    code, lines, stderr = call(wiki, "list", {"GEO": "48.1372,11.5756,1000", "LANGUAGE": "de"})
    assert code == 0, stderr
    assert set(listed(lines)) == {"7", "8"}  # not the Zugspitze, 80 km away
    request = wiki.requests[-1]["params"]
    assert request["ggscoord"] == "48.1372|11.5756" and request["ggsradius"] == "1000"


def test_check_counts_the_scope(wiki):
    code, lines, _ = call(wiki, "check", {"CATEGORIES": "Deep learning", "TITLES": "Marienplatz"})
    assert code == 0
    assert lines == [{"ok": True, "count": 4, "protocol": "1"}]


# -- items ------------------------------------------------------------------------------------


def test_fetch_gives_sections_by_heading_trail_without_boilerplate(wiki):
    code, lines, stderr = call(wiki, "fetch", {"CATEGORIES": "Deep learning"}, ids=["1"])
    assert code == 0, stderr
    (item,) = lines
    assert item["id"] == "1" and item["version"] == "1001" and item["title"] == "Backpropagation"
    assert item["url"] == wiki.page_url + "Backpropagation"
    assert item["sections"] == [
        {
            "text": "In machine learning, backpropagation computes the gradient of a loss function "
            "with respect to the weights."
        },
        {"heading": "History", "text": "The method was described several times."},
        {"heading": "History › 19th century", "text": "Precursors appear in calculus."},
        {"heading": "History › Modern era", "text": "Rumelhart, Hinton and Williams popularised it in 1986."},
        {
            "heading": "Algorithm",
            "text": "Apply the chain rule layer by layer.\n\n- forward pass\n\n- backward pass",
        },
    ]
    assert "changed" not in item


def test_german_boilerplate_is_skipped_and_skip_sections_can_be_set(wiki):
    _, lines, _ = call(wiki, "fetch", {"TITLES": "Marienplatz"}, ids=["7"])
    assert [section.get("heading") for section in lines[0]["sections"]] == [None, "Geschichte"]
    _, lines, _ = call(wiki, "fetch", {"TITLES": "Marienplatz", "SKIP_SECTIONS": "none"}, ids=["7"])
    # The reference list itself is never prose, so "Einzelnachweise" stays empty and is dropped.
    assert [section.get("heading") for section in lines[0]["sections"]] == [
        None,
        "Geschichte",
        "Siehe auch",
        "Literatur",
        "Weblinks",
    ]
    _, lines, _ = call(
        wiki, "fetch", {"TITLES": "Marienplatz", "SKIP_SECTIONS": "geschichte|Weblinks"}, ids=["7"]
    )
    assert [section.get("heading") for section in lines[0]["sections"]] == [None, "Siehe auch", "Literatur"]


def test_fetch_leaves_out_missing_ids_and_redirects(wiki):
    code, lines, _ = call(
        wiki, "fetch", {"TITLES": "Backpropagation"}, ids=["5", "999", "4", "not-a-number", "1"]
    )
    assert code == 0
    assert [item["id"] for item in lines] == ["5", "1"]


def test_page_url_with_a_placeholder_and_special_characters(wiki):
    env = {"TITLES": "x", "PAGE_URL": "https://wiki.example/index.php?title=$1"}
    _, lines, _ = call(wiki, "fetch", env, ids=["8"])
    assert lines[0]["url"] == "https://wiki.example/index.php?title=Frauenkirche_(M%C3%BCnchen)"


# -- politeness and retries -------------------------------------------------------------------


def test_every_request_is_identified_and_asks_for_maxlag(wiki):
    call(wiki, "list", {"CATEGORIES": "Deep learning", "CONTACT": "ops@example.org"})
    assert wiki.requests
    for request in wiki.requests:
        assert request["headers"]["User-Agent"].startswith("passageway-connector-wikipedia/")
        assert "(ops@example.org)" in request["headers"]["User-Agent"]
        assert request["params"]["maxlag"] == "5" and request["params"]["format"] == "json"
    assert "(" not in user_agent("")


def test_requests_are_paused(wiki):
    waits: list[float] = []
    code, _, _ = call(
        wiki, "list", {"TITLES": "Backpropagation|Marienplatz", "PAUSE_SECONDS": "0.2"}, sleep=waits.append
    )
    assert code == 0
    # One query; no pause before the first request of a call.
    assert len(wiki.requests) == 1 and waits == []
    waits.clear()
    code, _, _ = call(
        wiki, "fetch", {"TITLES": "x", "PAUSE_SECONDS": "0.2"}, ids=["1", "2"], sleep=waits.append
    )
    assert code == 0
    assert len(waits) == 2 and all(0 < wait <= 0.2 for wait in waits)  # before each of the two parses


def test_maxlag_and_429_are_retried_honouring_retry_after(wiki):
    wiki.maxlag_next(retry_after="3")
    wiki.fail_next(status=429, headers={"Retry-After": "20"})
    wiki.fail_next(status=503)
    waits: list[float] = []
    code, lines, stderr = call(wiki, "list", {"TITLES": "Backpropagation"}, sleep=waits.append)
    assert code == 0, stderr
    assert listed(lines) == {"1": "1001"}
    assert waits == [3, 20, 4]  # Retry-After when longer than the back-off (1, 2, 4)
    # Only the wait of 10 s or more is logged, as it starts.
    assert "HTTP 429" in stderr and "waiting 20 s (3 s of 900 s waited)" in stderr
    assert "lags" not in stderr and "HTTP 503" not in stderr


def test_back_off_doubles_to_sixty_and_retry_after_is_capped(wiki):
    for _ in range(8):
        wiki.fail_next(status=502)
    wiki.fail_next(status=429, headers={"Retry-After": "3600"})
    waits: list[float] = []
    code, _, stderr = call(wiki, "list", {"TITLES": "Backpropagation"}, sleep=waits.append)
    assert code == 0, stderr
    assert waits == [1, 2, 4, 8, 16, 32, 60, 60, 300]


def test_network_errors_are_retried(wiki):
    port = wiki.port
    wiki.stop()  # nobody listens any more
    waits: list[float] = []
    env = {"TITLES": "x", "API_URL": f"http://127.0.0.1:{port}/w/api.php"}
    code, lines, stderr = call(wiki, "list", env, sleep=waits.append, total_wait_cap=5)
    assert code == 1 and lines == []
    assert waits == [1, 2, 2]  # the last wait is cut to the cap
    assert "gave up after 4 attempts" in stderr and "5 s of waiting" in stderr and "cannot reach" in stderr


def test_a_5xx_that_never_recovers_gives_up_at_the_wait_limit(wiki):
    # Test-shortened limits, really slept: 0.05 s doubling to 0.1 s, at most 0.3 s in total.
    wiki.fail_always(status=503, body="<html>Service Unavailable</html>", content_type="text/html")
    code, lines, stderr = call(
        wiki,
        "fetch",
        {"TITLES": "x"},
        ids=["1"],
        sleep=__import__("time").sleep,
        first_wait=0.05,
        max_wait=0.1,
        total_wait_cap=0.3,
    )
    assert code == 1 and lines == []
    assert stderr.startswith("wikipedia connector: gave up after ")
    assert "attempts" in stderr and "HTTP 503" in stderr
    assert len(wiki.requests) == 5  # waits 0.05, 0.1, 0.1, 0.05 (cut to the cap)


# -- bad input --------------------------------------------------------------------------------


def test_a_category_that_does_not_exist(wiki):
    code, lines, stderr = call(wiki, "list", {"CATEGORIES": "Deep lerning"})
    assert (code, lines) == (1, [])
    assert "the category 'Category:Deep lerning' does not exist" in stderr


def test_a_prefixed_name_that_is_not_a_category(wiki):
    code, _, stderr = call(wiki, "list", {"CATEGORIES": "Talk:Backpropagation"})
    assert code == 1 and "is not a category" in stderr


def test_a_scope_over_max_pages_fails_instead_of_truncating(wiki):
    code, lines, stderr = call(wiki, "list", {"CATEGORIES": "Deep learning", "MAX_PAGES": "2"})
    assert (code, lines) == (1, [])
    assert "more than MAX_PAGES = 2 pages" in stderr and "nothing was cut off" in stderr
    code, lines, _ = call(wiki, "list", {"CATEGORIES": "Deep learning", "MAX_PAGES": "3"})
    assert code == 0 and len(lines) == 3


def test_an_api_that_answers_html(wiki):
    wiki.fail_always(body="<!DOCTYPE html><html><body>Main Page</body></html>", content_type="text/html")
    code, lines, stderr = call(wiki, "list", {"TITLES": "Backpropagation"})
    assert (code, lines) == (1, [])
    assert "answered HTML instead of the MediaWiki API's JSON; check API_URL" in stderr
    assert len(wiki.requests) == 1


def test_a_500_is_not_retried(wiki):
    wiki.fail_always(status=500)
    code, lines, stderr = call(wiki, "check", {"TITLES": "Backpropagation"})
    assert (code, lines) == (1, [])
    assert "answered HTTP 500" in stderr and len(wiki.requests) == 1


def test_a_failure_in_mid_fetch_prints_nothing(wiki):
    wiki.fail_next(
        body=json.dumps(
            {
                "query": {
                    "pages": [
                        {"pageid": 1, "ns": 0, "title": "Backpropagation", "lastrevid": 1001},
                        {"pageid": 2, "ns": 0, "title": "Convolutional neural network", "lastrevid": 2002},
                    ]
                }
            }
        )
    )
    wiki.fail_next(
        body=json.dumps({"parse": {"title": "Backpropagation", "revid": 1001, "text": "<p>x</p>"}})
    )
    wiki.fail_next(body=json.dumps({"error": {"code": "internal_api_error_DBQueryError", "info": "boom"}}))
    code, lines, stderr = call(wiki, "fetch", {"TITLES": "x"}, ids=["1", "2"])
    assert (code, lines) == (1, [])
    assert "MediaWiki API error internal_api_error_DBQueryError: boom" in stderr


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "set at least one of CATEGORIES"),
        ({"TITLES": "x", "CATEGORY_DEPTH": "-1"}, "CATEGORY_DEPTH must be a whole number"),
        ({"TITLES": "x", "MAX_PAGES": "0"}, "MAX_PAGES must be"),
        ({"GEO": "48.1,11.5"}, "GEO must be latitude,longitude,radius"),
        ({"GEO": "48.1,11.5,50000"}, "radius must be from 10 to 10000"),
        ({"TITLES": "x", "LANGUAGE": "en.evil"}, "LANGUAGE must be"),
        ({"TITLES": "x", "API_URL": "file:///etc/passwd"}, "API_URL must be an http"),
        ({"TITLES": "x", "PAUSE_SECONDS": "soon"}, "PAUSE_SECONDS must be"),
    ],
)
def test_bad_settings_exit_2(env, message):
    result = subprocess.run(
        [sys.executable, "-m", "passageway_connector_wikipedia", "list"],
        env={"PATH": os.environ.get("PATH", ""), "PASSAGEWAY_PROTOCOL": "1", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("wikipedia connector: ") and message in result.stderr


def test_settings_defaults():
    settings = load_settings({"CATEGORIES": "Deep learning|Kategorie:Deep Learning"})
    assert settings.categories == ("Category:Deep learning", "Kategorie:Deep Learning")
    assert settings.api_url == "https://en.wikipedia.org/w/api.php"
    assert settings.page_link("Deep learning") == "https://en.wikipedia.org/wiki/Deep_learning"
    assert (settings.category_depth, settings.max_pages, settings.pause_seconds) == (1, 500, 0.1)
    assert "einzelnachweise" in settings.skip_sections and "references" in settings.skip_sections
    german = load_settings({"LANGUAGE": "de", "TITLES": "München"})
    assert german.api_url == "https://de.wikipedia.org/w/api.php"


# -- the HTML ---------------------------------------------------------------------------------


def test_html_of_recent_mediawiki_versions():
    # MediaWiki 1.42+ wraps each heading in a div and puts the edit link beside it.
    html = (
        '<div class="mw-parser-output"><div class="shortdescription">Technique</div>'
        '<div role="note" class="hatnote navigation-not-searchable">For the band, see X.</div>'
        '<table class="infobox"><tr><td>Infobox</td></tr></table>'
        "<p>Lead with <i>style</i> &amp; an entity.<style>.x{color:red}</style></p>"
        '<meta property="mw:PageProp/toc" />'
        '<div class="mw-heading mw-heading2"><h2 id="Use">Use</h2>'
        '<span class="mw-editsection">[edit]</span></div>'
        '<p>Loss <span class="mwe-math-element"><math alttext="{\\displaystyle L(w)}"><semantics><mi>L</mi>'
        "</semantics></math></span> falls.</p>"
        '<figure typeof="mw:File/Thumb"><img src="a.png"/><figcaption>A caption</figcaption></figure>'
        "<pre>code  line\n  indented</pre>"
        '<div class="mw-heading mw-heading3"><h3 id="Detail">Detail</h3></div><p>Fine<br>print.</p>'
        '<div class="navbox"><p>Navigation</p></div></div>'
    )
    assert html_sections(html) == [
        {"text": "Lead with style & an entity."},
        {"heading": "Use", "text": "Loss L(w) falls.\n\ncode  line\n  indented"},
        {"heading": "Use › Detail", "text": "Fine print."},
    ]


def test_a_skipped_heading_skips_its_subsections_only():
    html = (
        "<h2>A</h2><p>a</p><h2>Notes</h2><p>n</p><h3>Inner</h3><p>i</p><h4>Deeper</h4><p>d</p>"
        "<h2>B</h2><p>b</p><h3>C</h3><p>c</p>"
    )
    assert html_sections(html, ["notes"]) == [
        {"heading": "A", "text": "a"},
        {"heading": "B", "text": "b"},
        {"heading": "B › C", "text": "c"},
    ]


# -- the contract -----------------------------------------------------------------------------


def test_the_connector_passes_the_contract_check(wiki):
    from passageway.testing import Connector, check_connector

    env = {
        "API_URL": wiki.api_url,
        "PAGE_URL": wiki.page_url,
        "PAUSE_SECONDS": "0",
        "CATEGORIES": "Deep learning",
        "TITLES": "Marienplatz",
    }
    report = check_connector(
        Connector("wikipedia", [sys.executable, "-m", "passageway_connector_wikipedia"], env=env)
    )
    assert report.status("list answers") == "pass"
    assert "4 items" in report.render()

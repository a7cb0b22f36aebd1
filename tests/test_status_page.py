"""``GET /``: the status page shows the health report, with the same auth rule as ``/health``."""

from __future__ import annotations

import re

import httpx2

from passageway.builtin.transport.status_page import REFRESH_SECONDS, render_page
from tests.cli_helpers import built_server
from tests.server_helpers import PASSWORD, make_kernel, running_server, write_instance
from tests.waiting import until

AUTH = {"Authorization": f"Bearer {PASSWORD}"}


def _self_contained(page: str) -> bool:
    """No script and nothing loaded from elsewhere: no src=, no href=, no <link>."""
    return not re.search(r"<script|<link|\bsrc=|\bhref=|url\(", page, re.IGNORECASE)


async def test_the_page_shows_every_source_and_does_not_reload_when_built(tmp_path):
    async with built_server(tmp_path) as (kernel, url), httpx2.AsyncClient() as client:
        response = await client.get(f"{url}/")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/html")
        page = response.text
        assert "<title>passageway: ok</title>" in page
        assert f"version {kernel.version}" in page
        assert '<tr><td>notes</td><td class="state ok">ok</td><td>4</td><td>4</td>' in page
        last_success = kernel.health(include_errors=False)["sources"]["notes"]["last_success"]
        assert f"<td>{last_success}</td>" in page
        assert "http-equiv" not in page  # nothing builds: no reload
        assert _self_contained(page)


async def test_a_foreign_host_sees_only_the_status(tmp_path):
    # The rule of /health (tests/test_auth.py): a page reached through DNS rebinding must not let
    # a web page's script read source names and counts from a server on the loopback address.
    from tests.test_auth import raw_request

    async with built_server(tmp_path) as (_kernel, url):
        for host, shown in (("attacker.example", False), ("localhost.attacker.example:80", False),
                            ("127.0.0.1", True), ("localhost:8082", True)):
            answer = await raw_request(url, (
                f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").encode())
            assert answer.startswith(b"HTTP/1.1 200"), answer[:100]
            assert b"<title>passageway: ok</title>" in answer
            assert (b"<td>notes</td>" in answer) is shown, host


async def test_errors_only_with_the_password(tmp_path):
    failing = built_server(tmp_path, fail="check,list,fetch")
    async with failing as (kernel, url), httpx2.AsyncClient() as client:
        error = kernel.health(include_errors=True)["sources"]["notes"]["error"]
        public = (await client.get(f"{url}/")).text
        assert "<title>passageway: degraded</title>" in public
        assert 'class="state failing">failing</td>' in public
        assert '<div class="error-text">' not in public
        private = (await client.get(f"{url}/", headers=AUTH)).text
        from html import escape

        assert f'<div class="error-text">{escape(error)}</div>' in private
        assert "FAKE_FAIL" in error
        assert PASSWORD not in private


async def test_the_page_reloads_itself_while_a_source_builds(tmp_path):
    # The fetch sleeps far longer than the test needs, so the build is still at its fetch when the
    # page is asked for (the stop kills the connector); the list is done once the health has `of`.
    kernel = make_kernel(write_instance(tmp_path, sleep="fetch:120"))
    async with running_server(kernel) as url, httpx2.AsyncClient() as client:
        await until(lambda: kernel.health(include_errors=False)["sources"].get("notes", {}).get("of"),
                    "the build has listed the items")
        page = (await client.get(f"{url}/")).text
        assert "<title>passageway: indexing</title>" in page
        assert f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">' in page
        assert '<progress value="0" max="4"></progress> 0 of 4 items' in page


def test_the_page_escapes_what_it_shows():
    page = render_page({
        "status": "degraded", "version": "1", "instance": "<b>work</b>",
        "embedder": {"state": "ok", "name": "e"},
        "sources": {
            "<i>s</i>": {"state": "failing", "items": 0, "passages": 0, "error": "<script>x</script>"},
        },
    })
    assert "<script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert "<title>passageway &lt;b&gt;work&lt;/b&gt;: degraded</title>" in page
    assert "<td>&lt;i&gt;s&lt;/i&gt;</td>" in page
    assert _self_contained(page)


def test_a_broken_configuration_shows_its_reason_and_reloads():
    page = render_page({"status": "error", "version": "1", "instance": None, "error": "unknown key 'nmae'"})
    assert "unknown key &#x27;nmae&#x27;" in page
    assert "http-equiv" in page  # it reloads: a restart with a fixed file shows up by itself


def test_a_building_source_shows_every_figure_of_its_build():
    from passageway.kernel.commands.status import source_line

    entry = {"state": "indexing", "items": 12, "passages": 30, "fetched": 12, "of": 40, "stored": 30,
             "ready": 20, "expected": 100, "embedded": 20, "windows": 3, "windows_expected": 150,
             "rate": 4.0, "eta_seconds": 90.0}
    page = render_page({"status": "indexing", "version": "1", "instance": None,
                        "embedder": {"state": "ok", "name": "e"}, "sources": {"docs": entry}})
    assert "20 of 100 passages, 12 of 40 items, 30 passages stored, 3 of 150 windows, 4.0 passages/s" in page
    line = source_line("docs", entry)
    assert ("12 of 40 items fetched, 30 passages stored, 20 of 100 passages ready, 3 of 150 windows, "
            "4.0 passages/s, about") in line

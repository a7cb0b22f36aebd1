"""Redirect addresses read as a browser reads them (issue 32, item 3)."""

from __future__ import annotations

import pytest

from passageway.builtin.transport.redirect_address import browser_host, redirect_problem


@pytest.mark.parametrize(("address", "host"), [
    ("http://127.0.0.1:9/cb", "127.0.0.1"),
    ("http://evil.example\\@127.0.0.1/cb", "evil.example"),  # "\" ends the authority in a browser
    ("HTTP://Evil.Example/cb", "evil.example"),
    ("http:\\\\evil.example/cb", "evil.example"),
    ("http:evil.example/cb", "evil.example"),
    (" \thttp://ev\til.example/cb\n", "evil.example"),
    ("http://user:pw@evil.example:81/cb", "evil.example"),
    ("http://a@b@evil.example/cb", "evil.example"),
    ("http://[::1]:9/cb", "[::1]"),
    ("https://evil.example?@127.0.0.1/", "evil.example"),
    ("https://evil.example#@127.0.0.1/", "evil.example"),
    ("com.example.app:/callback", None),
])
def test_the_host_is_the_one_a_browser_goes_to(address, host):
    assert browser_host(address) == host


@pytest.mark.parametrize("address", [
    "http://127.0.0.1:9/callback", "http://localhost/cb", "http://[::1]:33418/cb",
    "https://claude.ai/api/mcp/auth_callback", "com.example.app:/callback", "HTTP://127.0.0.1/cb",
])
def test_ordinary_redirect_addresses_are_accepted(address):
    assert redirect_problem(address) is None


@pytest.mark.parametrize("address", [
    "http://evil.example\\@127.0.0.1/cb",  # the probe's address: a browser goes to evil.example
    "http://evil.example%5C@127.0.0.1/cb", "http://evil.example@127.0.0.1/cb",
    "http://127.0.0.1\\@evil.example/cb", "https://good.example\\@evil.example/",
    "http://127.0.0.1.evil.example/cb", "http://localhost.evil.example/cb",
    "http://2130706433/cb", "http://0x7f.1/cb", "http://0177.0.0.1/cb", "http://127.1/cb",
    "http://127.0.0.1./cb", "http://%31%32%37.0.0.1/cb", "http://127.0.0.1/c\r\nSet-Cookie: a=b",
    "http://127.0.0.1/cb\x00", "http://127.0.0.1/c\nb", "http://127.0.0.1/cb#frag", "http://127.0.0.1/é",
    "http://127.0.0.1/" + "a" * 2000, "javascript:alert(1)", "data:text/html,x", "file:///etc/passwd",
    "http://evil.example/cb", "http:///cb", "", "nodot:/cb", "http://[::1/cb", "https://",
])
def test_addresses_a_browser_could_read_otherwise_are_refused(address):
    assert redirect_problem(address) is not None

"""Issue 32.1: connector tokens never follow a redirect to another origin.

A fake Trilium or Confluence on 127.0.0.1 answers every request with a redirect to a second fake
on another port (another origin), or to another scheme; the second one counts every
``Authorization`` header it receives. Each redirect status is tried with each bundled connector.
The call must fail with one line naming both origins, and the second server must receive no
credential. A redirect within the origin is followed, with the token, and the call succeeds.
"""

from __future__ import annotations

import pytest

from passageway.testing.fake_server import serve
from tests.reliability.conftest import scale
from tests.reliability.remote_fakes import Remote, run

STATUSES = scale([302, 307], [301, 302, 303, 307, 308])
KINDS = ["trilium", "confluence"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_redirect_to_another_origin_sends_the_token_nowhere_and_names_both(kind, figures):
    leaked = calls = 0
    other = Remote("ok", kind)
    with serve(other.app()) as other_url:
        targets = [other_url, other_url.replace("127.0.0.1", "localhost")]  # another port; another host
        for status in STATUSES:
            for target in targets:
                home = Remote(f"redirect:{status}:{target}", kind)
                with serve(home.app()) as home_url:
                    call = run(kind, home_url, "list", TIMEOUT="10")
                calls += 1
                assert call.code == 1, (status, target, call)
                assert len(call.error_lines) == 1, call.stderr
                line = call.error_lines[0]
                assert "another origin" in line and home_url.split("//")[1] in line, line
                assert target.split("//")[1].split("/")[0] in line, line
                assert home.tokens_received() == 1  # the first request went where URL points
    leaked = other.tokens_received()
    assert leaked == 0, other.requests
    figures.add("redirects", calls=calls, credentials_to_other_origins=leaked)


@pytest.mark.parametrize("kind", KINDS)
def test_a_redirect_within_the_origin_is_followed_with_the_token(kind, figures):
    home = Remote("redirect-here:307", kind)
    with serve(home.app()) as home_url:
        call = run(kind, home_url, "list", TIMEOUT="10")
    assert call.code == 0, call.stderr
    assert call.stdout.strip()
    moved = [authorization for path, authorization in home.requests if path.startswith("/moved")]
    assert moved and all(moved)
    figures.add("redirects", same_origin_followed=1)

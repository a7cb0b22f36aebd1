"""Issue 32.9: a Trilium or Confluence server that answers with hostility cannot hold a connector.

Each bundled connector runs ``list`` (as the server does) against a fake that answers without end
(1.5 GB and more, with and without a length), drips a byte every 0.2 s, nests its JSON 200,000
deep, or (Confluence's paging) repeats its ``next`` link or lists without end. Every call must end
with exit status 1 and one clear line on stderr (no traceback), within the connector's
``TIMEOUT`` and a bounded memory, after a bounded number of requests.
"""

from __future__ import annotations

import pytest

from passageway.testing.fake_server import serve
from tests.reliability.conftest import scale
from tests.reliability.remote_fakes import Remote, run

TIMEOUT = 3  # the connectors' TIMEOUT setting in these calls, in seconds
CASES = [
    ("trilium", "huge", "more than the"),
    ("trilium", "huge-declared", "1500000000 bytes"),
    ("trilium", "drip", f"did not finish within {TIMEOUT} s"),
    ("trilium", "deep", "nested too deep"),
    ("confluence", "huge", "more than the"),
    ("confluence", "huge-declared", "1500000000 bytes"),
    ("confluence", "drip", f"did not finish within {TIMEOUT} s"),
    ("confluence", "deep", "nested too deep"),
    ("confluence", "repeat-cursor", "the same"),
    ("confluence", "endless", "paging is broken"),
]
MOST_MIB = 400  # peak resident memory of one call: the 128 MiB answer cap and Python around it
REPEATS = scale(1, 3)


@pytest.mark.parametrize(("kind", "behaviour", "expected"), CASES,
                         ids=[f"{kind}-{behaviour}" for kind, behaviour, _ in CASES])
def test_every_hostile_answer_ends_within_the_limits_with_one_clear_error(kind, behaviour, expected,
                                                                          figures):
    slowest, largest = 0.0, 0.0
    for _ in range(REPEATS):
        remote = Remote(behaviour, kind)
        with serve(remote.app()) as url:
            # MAX_PAGES bounds the endless listing (10 x MAX_PAGES results at most), also when
            # INCLUDE_LABELS leaves every page out (so the count of pages kept never grows).
            extra = {"MAX_PAGES": "100", "INCLUDE_LABELS": "wanted"} if kind == "confluence" else {}
            call = run(kind, url, "list", timeout=120, TIMEOUT=str(TIMEOUT), **extra)
        assert call.code == 1, (call.code, call.stderr[-2000:])
        assert len(call.error_lines) == 1 and "Traceback" not in call.stderr, call.stderr[-2000:]
        assert expected in call.error_lines[0], call.error_lines[0]
        # The clear error above shows the connector ended the call itself (a kill at 120 s leaves
        # none); the time is a figure, bounded only at ten times the connector's own TIMEOUT x 2.
        assert call.seconds < 10 * 2 * TIMEOUT, call.seconds
        assert call.peak_mib < MOST_MIB, call.peak_mib
        assert len(remote.requests) <= 200, len(remote.requests)
        figures.add("hostile_remote", calls=1, clear_errors=1, requests=len(remote.requests))
        slowest, largest = max(slowest, call.seconds), max(largest, call.peak_mib)
    figures.add("hostile_remote", **{f"seconds_{kind}_{behaviour}": round(slowest, 1),
                                     f"peak_mib_{kind}_{behaviour}": largest})

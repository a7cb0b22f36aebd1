"""Reading a server's Retry-After header (passageway_sdk.http)."""

from __future__ import annotations

from passageway_sdk import retry_after_seconds


def test_seconds_and_http_dates_are_read_and_anything_else_is_none():
    assert retry_after_seconds("7") == 7
    assert retry_after_seconds(" 2.5 ") == 2.5
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0) == 0  # past
    assert retry_after_seconds("-3") == 0
    for unreadable in (None, "", "  ", "soon", "inf", "nan"):
        assert retry_after_seconds(unreadable) is None

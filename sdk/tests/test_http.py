"""passageway_sdk.http: Retry-After, same-origin redirects, deadlines, answer sizes, deep JSON."""

from __future__ import annotations

import contextlib
import http.server
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator

import pytest
from passageway_sdk import (
    AnswerTooLarge,
    CrossOriginRedirect,
    JsonTooDeep,
    RequestTimeout,
    deadline,
    load_json,
    opener,
    read_capped,
    retry_after_seconds,
)
from passageway_sdk.http import origin


def test_seconds_and_http_dates_are_read_and_anything_else_is_none():
    assert retry_after_seconds("7") == 7
    assert retry_after_seconds(" 2.5 ") == 2.5
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0) == 0  # past
    assert retry_after_seconds("-3") == 0
    for unreadable in (None, "", "  ", "soon", "inf", "nan"):
        assert retry_after_seconds(unreadable) is None


# ---------------------------------------------------------------------------------------------
# Redirects, deadlines, sizes, deep JSON (issue 32: servers are trusted with nothing)
# ---------------------------------------------------------------------------------------------


Handler = Callable[[http.server.BaseHTTPRequestHandler], None]


@contextlib.contextmanager
def serving(answer: Handler) -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A server on 127.0.0.1 whose GETs ``answer`` writes; yields its address and the headers
    of every request it got."""
    seen: list[dict[str, str]] = []

    class One(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append({"path": self.path, **{key.lower(): value for key, value in self.headers.items()}})
            with contextlib.suppress(OSError):
                answer(self)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), One)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def ok(handler: http.server.BaseHTTPRequestHandler, body: bytes = b'{"ok": true}') -> None:
    handler.send_response(200)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def moved(to: str) -> Handler:
    def answer(handler: http.server.BaseHTTPRequestHandler) -> None:
        if handler.path.startswith("/moved"):
            handler.send_response(302)
            handler.send_header("Location", to)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
        else:
            ok(handler)
    return answer


def test_origins_write_out_the_default_port_and_tell_scheme_host_and_port_apart():
    assert origin("http://Trilium:80/etapi") == origin("http://trilium/x") == "http://trilium:80"
    assert origin("https://a.example/") == "https://a.example:443"
    assert len({origin("http://a:8080"), origin("https://a:8080"), origin("http://b:8080"),
                origin("http://a:8081")}) == 4


def test_a_redirect_to_another_origin_is_refused_and_the_token_never_reaches_it():
    with serving(ok) as (other, other_seen), serving(moved(f"{other}/stolen")) as (home, home_seen):
        request = urllib.request.Request(f"{home}/moved", headers={"Authorization": "secret-token"})
        with pytest.raises(CrossOriginRedirect) as caught:
            opener().open(request, timeout=10)
    message = str(caught.value)
    assert origin(home) in message and origin(other) in message and "another origin" in message
    assert "secret-token" not in message
    assert home_seen and not other_seen  # nothing at all was sent to the other origin


def test_a_redirect_within_the_origin_is_followed_with_the_token():
    with serving(moved("/landing")) as (home, seen):
        request = urllib.request.Request(f"{home}/moved", headers={"Authorization": "secret-token"})
        with opener().open(request, timeout=10) as response:
            assert response.read() == b'{"ok": true}'
    assert [entry["path"] for entry in seen] == ["/moved", "/landing"]
    assert seen[1]["authorization"] == "secret-token"


def drip(handler: http.server.BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Length", "1000")
    handler.end_headers()
    for _ in range(1000):
        handler.wfile.write(b" ")
        handler.wfile.flush()
        time.sleep(0.05)


def test_a_deadline_ends_a_drip_that_never_trips_the_socket_timeout():
    with serving(drip) as (home, _seen):
        began = time.monotonic()
        with (
            pytest.raises(RequestTimeout, match=r"did not finish within 1 s"),
            deadline(1.0, "GET /slow") as check,
            opener().open(f"{home}/slow", timeout=5) as response,
        ):
            read_capped(response, 10_000, "GET /slow", check)
        assert time.monotonic() - began < 30  # the drip lasts 50 s; the deadline ends it after 1 s


def test_a_deadline_outside_the_main_thread_still_ends_the_read_between_chunks():
    caught: list[BaseException] = []

    def work(home: str) -> None:
        try:
            with deadline(0.5, "GET /slow") as check, opener().open(f"{home}/slow", timeout=5) as response:
                read_capped(response, 10_000, "GET /slow", check)
        except BaseException as error:
            caught.append(error)

    with serving(drip) as (home, _seen):
        thread = threading.Thread(target=work, args=(home,))
        thread.start()
        thread.join(10)
    assert caught and isinstance(caught[0], RequestTimeout)


def test_an_answer_larger_than_the_cap_fails_and_cut_returns_one_byte_more():
    body = b"x" * 200_000
    with serving(lambda handler: ok(handler, body)) as (home, _seen):
        with opener().open(home, timeout=5) as response, pytest.raises(AnswerTooLarge, match="200000 bytes"):
            read_capped(response, 1000, "GET /")
        with opener().open(home, timeout=5) as response:
            assert len(read_capped(response, 1000, "GET /", cut=True)) == 1001

    def unsized(handler: http.server.BaseHTTPRequestHandler) -> None:  # no Content-Length
        handler.send_response(200)
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.write(body)

    with (
        serving(unsized) as (home, _seen),
        opener().open(home, timeout=5) as response,
        pytest.raises(AnswerTooLarge, match="more than the 1000 bytes"),
    ):
        read_capped(response, 1000, "GET /")


def test_json_nested_too_deep_is_a_value_error_not_a_recursion_error():
    with pytest.raises(JsonTooDeep):
        load_json(b"[" * 200_000 + b"]" * 200_000)
    assert issubclass(JsonTooDeep, ValueError)
    assert load_json(b'{"a": [1]}') == {"a": [1]}

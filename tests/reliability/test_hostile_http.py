"""Hostile HTTP against a real server with OAuth on: every request the probe sent and more.

Each request is written as raw bytes, so that nothing a client library would refuse to send is
left out. None may answer 500, the server's log must hold no traceback and no ERROR line, and
afterwards the server is healthy and still answers a good question.
"""

from __future__ import annotations

import base64
import json
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from passageway.builtin.transport.oauth_state import pkce_challenge
from tests.reliability.conftest import scale
from tests.server_helpers import PASSWORD

BEARER = f"Bearer {PASSWORD}".encode()
REDIRECT = "http://127.0.0.1:9/callback"
NESTED = b"[" * 100_000 + b"]" * 100_000
BIG = b'{"prompt": "' + b"a" * 5_000_000 + b'"}'
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Raw:
    """Sends raw HTTP/1.1 requests to one server and counts them."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sent = 0
        self.statuses: dict[int, int] = {}

    def send(self, data: bytes) -> Answer:
        self.sent += 1
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as connection:
            connection.sendall(data)
            chunks = []
            while chunk := connection.recv(65536):
                chunks.append(chunk)
        raw = b"".join(chunks)
        head, _, body = raw.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ")[1]) if lines and lines[0].startswith(b"HTTP/") else 0
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.decode("latin-1").lower()] = value.decode("latin-1").strip()
        if headers.get("transfer-encoding") == "chunked":
            body = _unchunk(body)
        self.statuses[status] = self.statuses.get(status, 0) + 1
        return Answer(status, headers, body)

    def request(self, method: str, target: str, body: bytes = b"", *, content_type: str | None = None,
                headers: dict[str, bytes] | None = None, host: bytes | None = None) -> Answer:
        host = host or f"127.0.0.1:{self.port}".encode()
        lines = [f"{method} {target} HTTP/1.1".encode(), b"Host: " + host, b"Connection: close"]
        if content_type:
            lines.append(b"Content-Type: " + content_type.encode())
        for name, value in (headers or {}).items():
            lines.append(name.encode() + b": " + value)
        lines.append(f"Content-Length: {len(body)}".encode())
        return self.send(b"\r\n".join(lines) + b"\r\n\r\n" + body)


def _unchunk(body: bytes) -> bytes:
    out = b""
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out += rest[:size]
        body = rest[size + 2:]
    return out


def test_hostile_requests_get_no_500_and_leave_no_traceback(server_factory, tmp_path, figures):
    from tests.server_helpers import free_port

    port = free_port()
    server = server_factory(PASSAGEWAY_PORT=str(port), PASSAGEWAY_BASE_URL=f"http://127.0.0.1:{port}")
    server.start()
    server.wait_until(lambda report: report["status"] == "ok")
    raw = Raw(port)
    checks: list[tuple[str, Callable[[], Answer], Callable[[Answer], bool]]] = []

    def case(name: str, send: Callable[[], Answer],
             expect: Callable[[Answer], bool] = lambda answer: True) -> None:
        checks.append((name, send, expect))

    auth = {"Authorization": BEARER}
    json_type = "application/json"
    form_type = "application/x-www-form-urlencoded"
    mcp_headers = {**auth, "Accept": b"application/json, text/event-stream"}

    # Headers that are not UTF-8, on every route, /health included.
    for method, path in (("GET", "/health"), ("POST", "/recall"), ("POST", "/mcp"), ("GET", "/mcp"),
                         ("POST", "/token"), ("POST", "/register"), ("GET", "/authorize")):
        case(f"non-UTF-8 Authorization on {path}", lambda m=method, p=path: raw.request(
            m, p, headers={"Authorization": b"Bearer \xff\xfe\x80"}))
    case("non-UTF-8 Basic credentials on /token", lambda: raw.request(
        "POST", "/token", b"grant_type=refresh_token", content_type=form_type,
        headers={"Authorization": b"Basic " + base64.b64encode(b"\xff\xfe:\xff")}), lambda a: a.status == 401)
    # JSON nested 100,000 deep.
    case("nested JSON on /register", lambda: raw.request("POST", "/register", NESTED, content_type=json_type),
         lambda a: a.status == 400)
    case("nested JSON on /recall", lambda: raw.request("POST", "/recall", NESTED, content_type=json_type,
                                                       headers=auth), lambda a: a.status == 400)
    case("nested JSON on /mcp", lambda: raw.request("POST", "/mcp", NESTED, content_type=json_type,
                                                    headers=mcp_headers))
    # Bodies that are not UTF-8.
    case("non-UTF-8 form on /token", lambda: raw.request(
        "POST", "/token", b"grant_type=\xff\xfe&code=\x80", content_type=form_type),
        lambda a: a.status == 400)
    case("non-UTF-8 form on /authorize", lambda: raw.request(
        "POST", "/authorize", b"client_id=\xff&password=\xfe", content_type=form_type),
        lambda a: a.status == 400)
    case("non-UTF-8 JSON on /recall", lambda: raw.request(
        "POST", "/recall", b'{"prompt": "\xff\xfe"}', content_type=json_type, headers=auth),
        lambda a: a.status == 400)
    case("non-UTF-8 JSON on /register", lambda: raw.request(
        "POST", "/register", b'{"redirect_uris": ["\xff"]}', content_type=json_type),
        lambda a: a.status == 400)
    # Query strings with any character.
    for query in ("x=%E2%82%AC", "x=%FF%FE", "x=%C3%A9&y=%00", "%%%", "a=" + "b" * 4000):
        case(f"/mcp?{query[:20]}", lambda q=query: raw.request(
            "POST", f"/mcp?{q}", INITIALIZE.encode(), content_type=json_type, headers=mcp_headers))
    case("/authorize with a non-UTF-8 query", lambda: raw.request("GET", "/authorize?client_id=%FF%FE"),
         lambda a: a.status == 400)
    # Text that is not Unicode, and memory that must stay bounded.
    case("a lone surrogate in a prompt", lambda: raw.request(
        "POST", "/recall", b'{"prompt": "how do rivers flow \\ud800 to the sea?"}', content_type=json_type,
        headers=auth), lambda a: a.status == 400)
    case("a lone surrogate in an MCP question", lambda: mcp_call(raw, "how do rivers \\udfff flow?"))
    case("a 3.9 MB session id (over the body limit)", lambda: raw.request("POST", "/recall", json.dumps({
        "prompt": "how does a telescope gather light?", "session_id": secrets.token_hex(1_950_000),
    }).encode(), content_type=json_type, headers=auth), lambda a: a.status == 413)
    for _ in range(scale(3, 50)):
        case("a 250 KB session id", lambda: raw.request("POST", "/recall", json.dumps({
            "prompt": "how does a telescope gather light?", "session_id": secrets.token_hex(125_000),
        }).encode(), content_type=json_type, headers=auth), lambda a: a.status == 200)
    # Oversized bodies and wrong content types.
    for path in ("/recall", "/mcp", "/register", "/token", "/authorize"):
        case(f"5 MB body on {path}", lambda p=path: raw.request(
            "POST", p, BIG, content_type=json_type, headers=mcp_headers),
            lambda a: a.status in (400, 401, 413))
    case("text/plain on /recall", lambda: raw.request("POST", "/recall", b"how do rivers flow?",
                                                      content_type="text/plain", headers=auth),
         lambda a: a.status == 400)
    case("JSON on /token", lambda: raw.request("POST", "/token", b'{"grant_type": "refresh_token"}',
                                               content_type=json_type), lambda a: 400 <= a.status < 500)
    case("a form on /register", lambda: raw.request("POST", "/register", b"redirect_uris=x",
                                                    content_type=form_type), lambda a: a.status == 400)
    case("text/plain on /mcp", lambda: raw.request("POST", "/mcp", b"tools/list", content_type="text/plain",
                                                   headers=mcp_headers), lambda a: 400 <= a.status < 500)
    case("multipart garbage on /token", lambda: raw.request(
        "POST", "/token", b"--x\r\nContent-Disposition: form-data\r\n\r\n\xff\r\n--x--",
        content_type="multipart/form-data; boundary=x"), lambda a: 400 <= a.status < 500)
    case("JSON values Python reads but JSON has not", lambda: raw.request(
        "POST", "/recall", b'{"prompt": NaN, "session_id": Infinity}', content_type=json_type, headers=auth),
        lambda a: a.status == 400)
    case("a number with a million digits", lambda: raw.request(
        "POST", "/recall", b'{"prompt": "x", "cwd": ' + b"9" * 1_000_000 + b"}", content_type=json_type,
        headers=auth), lambda a: a.status in (400, 413))
    # Bad tokens.
    for token in (b"Bearer wrong", b"Bearer", b"Basic " + BEARER, b"bearer  " + b"x" * 7000, BEARER + b" x",
                  b"Bearer " + PASSWORD.encode() + b"\x00"):
        for path in ("/recall", "/mcp"):
            case(f"token {token[:12]!r} on {path}", lambda t=token, p=path: raw.request(
                "POST", p, b'{"prompt": "rivers"}', content_type=json_type, headers={"Authorization": t}),
                lambda a: a.status in (400, 401))  # a NUL byte is refused by the HTTP parser
    # Methods and paths that do not exist.
    for method, path in (("PUT", "/recall"), ("GET", "/recall"), ("PATCH", "/mcp"),
                         ("GET", "/../../etc/passwd"), ("GET", "/%2e%2e/%2e%2e/etc/passwd"),
                         ("DELETE", "/health"), ("GET", "/.env")):
        case(f"{method} {path}", lambda m=method, p=path: raw.request(m, p, headers=auth),
             lambda a: 400 <= a.status < 500)
    # Query syntax of the keyword index in questions.
    for question in ('"', 'NEAR(rivers sea, 2)', "rivers AND NOT OR", "* ^ -", "title:rivers", "(((",
                     "\x00\x01\x02 rivers", "rivers " * 3000):
        case(f"FTS5 syntax {question[:12]!r}", lambda q=question: raw.request(
            "POST", "/recall", json.dumps({"prompt": q}).encode(), content_type=json_type, headers=auth),
            lambda a: a.status == 200)
        case(f"FTS5 syntax {question[:12]!r} over MCP", lambda q=question: mcp_call(raw, q))
    # A Host that is not this server (DNS rebinding): the status only.
    case("/health under a foreign Host", lambda: raw.request("GET", "/health", host=b"attacker.example"),
         lambda a: a.status == 200 and a.json() == {"status": "ok"})
    case("/mcp under a foreign Host", lambda: raw.request(
        "POST", "/mcp", INITIALIZE.encode(), content_type=json_type, headers=mcp_headers,
        host=b"attacker.example"), lambda a: 400 <= a.status < 500)
    # HTTP that is not HTTP.
    for data in (b"GARBAGE\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64,
                 b"GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
                 b"GET /health HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 70_000 + b"\r\n\r\n",
                 b"POST /recall HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                 b"GET /health HTTP/9.9\r\nHost: x\r\n\r\n"):
        case(f"malformed HTTP {data[:12]!r}", lambda d=data: raw.send(d), lambda a: a.status in (0, 400, 505))

    for name, send, expect in checks:
        answer = send()
        problem = f"{name}: {answer.status} {answer.body[:300]!r}\n{server.log()[-2000:]}"
        assert answer.status < 500, problem
        assert expect(answer), problem
    oauth_requests = abuse_oauth(raw, port)

    health = server.health()
    assert health["status"] == "ok" and health["embedder"]["state"] == "ok", health
    good = raw.request("POST", "/recall", b'{"prompt": "how does item 3 describe rivers?"}',
                       content_type=json_type, headers=auth)
    assert good.status == 200
    rss = server.rss_kib()
    server.stop()
    server.assert_clean_log()
    assert raw.statuses.get(500, 0) == 0
    figures.add("hostile_http", requests=raw.sent, cases=len(checks) + oauth_requests, server_errors=0,
                tracebacks=0, statuses={str(key): value for key, value in sorted(raw.statuses.items())},
                rss_after_kib=rss)


def mcp_call(raw: Raw, question: str) -> Answer:
    """initialize, then tools/call recall, in one session; the answer of the call."""
    headers = {"Authorization": BEARER, "Accept": b"application/json, text/event-stream"}
    started = raw.request("POST", "/mcp", INITIALIZE.encode(), content_type="application/json",
                          headers=headers)
    assert started.status == 200, started.body[:200]
    session = started.headers["mcp-session-id"].encode()
    headers = {**headers, "Mcp-Session-Id": session, "Mcp-Protocol-Version": b"2025-06-18"}
    raw.request("POST", "/mcp", b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
                content_type="application/json", headers=headers)
    body = ('{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "recall", '
            '"arguments": {"question": ' + json.dumps(question) + "}}}")
    body = body.replace("\\\\ud", "\\ud")  # keep a lone surrogate escape as it was written
    answer = raw.request("POST", "/mcp", body.encode(), content_type="application/json", headers=headers)
    raw.request("DELETE", "/mcp", headers=headers)
    return answer


def abuse_oauth(raw: Raw, port: int) -> int:
    """The OAuth attacks of the probe; returns how many requests they took."""
    before = raw.sent
    form = "application/x-www-form-urlencoded"

    def register(uris: list[str], **extra: Any) -> Answer:
        return raw.request("POST", "/register", json.dumps({"redirect_uris": uris, **extra}).encode(),
                           content_type="application/json")

    for bad in ("javascript:alert(1)", "http://evil.example/cb", "file:///etc/passwd", "data:text/html,x",
                ""):
        assert register([bad]).status == 400
    client_id = register([REDIRECT], client_name="<script>alert(1)</script>").json()["client_id"]
    verifier = secrets.token_urlsafe(48)
    params = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": "s",
              "code_challenge": pkce_challenge(verifier), "code_challenge_method": "S256"}
    page = raw.request("GET", "/authorize?" + urlencode(params))
    assert page.status == 200 and b"<script>alert" not in page.body and b"127.0.0.1" in page.body
    for broken in ({"code_challenge": ""}, {"code_challenge_method": "plain"}, {"response_type": "token"}):
        answer = raw.request("GET", "/authorize?" + urlencode({**params, **broken}))
        assert answer.status == 302 and "error=" in answer.headers["location"]
    assert raw.request("GET", "/authorize?" + urlencode({**params, "client_id": "nobody"})).status == 400
    assert raw.request("GET", "/authorize?" + urlencode({**params, "redirect_uri": "https://evil.example/"})
                       ).status == 400
    login = raw.request("POST", "/authorize", urlencode({**params, "password": PASSWORD}).encode(),
                        content_type=form)
    code = parse_qs(urlsplit(login.headers["location"]).query)["code"][0]
    exchange = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                "client_id": client_id, "code_verifier": "x" * 43}
    assert raw.request("POST", "/token", urlencode(exchange).encode(), content_type=form).status == 400
    exchange["code_verifier"] = verifier  # the code was spent by the wrong verifier
    assert raw.request("POST", "/token", urlencode(exchange).encode(), content_type=form).status == 400
    for _ in range(12):  # a flood of registrations from one address
        last = register([REDIRECT])
    assert last.status == 429
    for _ in range(6):  # guessing the password
        last = raw.request("POST", "/authorize", urlencode({**params, "password": "guess"}).encode(),
                           content_type=form)
    assert last.status == 429
    assert raw.request("POST", "/token", b"grant_type=refresh_token&refresh_token=x&client_id=" +
                       client_id.encode(), content_type=form).status == 400
    assert raw.request("POST", "/token", b"grant_type=password&username=a&password=b&client_id=" +
                       client_id.encode(), content_type=form).status == 400
    return raw.sent - before

"""The OpenAI-compatible embedder against an in-test fake of the OpenAI and Voyage APIs."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from passageway_embedder_openai import load_settings, run
from passageway_embedder_openai.client import retry_after_seconds

FAST = {"first_wait": 0.05, "max_wait": 0.2}


def talk(env: dict[str, str], requests: Iterable[Any], **options: Any) -> tuple[list[dict], str]:
    """Run the program in-process on these requests; return the parsed replies and stderr."""
    lines = (item if isinstance(item, str) else json.dumps(item) for item in requests)
    stdin = _LineFeed(lines)
    stdout, stderr = io.StringIO(), io.StringIO()
    code = run(env, stdin, stdout, stderr, **{**FAST, **options})  # type: ignore[arg-type]
    assert code == 0, stderr.getvalue()
    replies = [json.loads(line) for line in stdout.getvalue().splitlines()]
    return replies, stderr.getvalue()


class _LineFeed:
    """A stdin that produces its lines lazily, so a test can act between two requests."""

    def __init__(self, lines: Iterator[str]) -> None:
        self._lines = lines

    def __iter__(self) -> Iterator[str]:
        for line in self._lines:
            yield line + "\n"


def embed(kind: str, *texts: str) -> dict[str, Any]:
    return {"op": "embed", "kind": kind, "texts": list(texts)}


def test_info_probes_and_embeds_in_order_with_prefixes(fake_api):
    env = {
        "MODEL": "nomic-embed-text",
        "BASE_URL": fake_api.base_url + "/embeddings/",
        "QUERY_PREFIX": "search_query: ",
        "PASSAGE_PREFIX": "search_document: ",
    }
    replies, stderr = talk(
        env,
        [
            {"op": "info"},
            embed("passage", "Lighthouses guide ships.", "Bananas are yellow.", "Third"),
            embed("query", "what guides ships?"),
        ],
    )
    info, passages, query = replies
    assert info["dim"] == fake_api.dim
    assert info["protocol"] == "1"
    assert info["name"].startswith(f"openai:nomic-embed-text@127.0.0.1:{fake_api.port}#")
    # The probe embeds one word, with the passage prefix like any passage.
    assert fake_api.requests[0]["json"]["input"] == ["search_document: passageway"]
    assert passages["vectors"] == [
        fake_api.vector("search_document: Lighthouses guide ships."),
        fake_api.vector("search_document: Bananas are yellow."),
        fake_api.vector("search_document: Third"),
    ]
    assert query["vectors"] == [fake_api.vector("search_query: what guides ships?")]
    for request in fake_api.requests:
        assert request["path"] == "/v1/embeddings"
        assert request["json"]["model"] == "nomic-embed-text"
        assert "input_type" not in request["json"] and "dimensions" not in request["json"]
        assert "Authorization" not in request["headers"]
    # Questions never reach the log.
    assert "guides ships" not in stderr


def test_dimensions_answers_info_without_a_request_and_is_sent(fake_api, api_key):
    env = {
        "MODEL": "text-embedding-3-small",
        "BASE_URL": fake_api.base_url,
        "DIMENSIONS": "4",
        "API_KEY": api_key,
    }
    replies, _ = talk(env, [{"op": "info"}, embed("passage", "one")])
    assert replies[0] == {
        "name": f"openai:text-embedding-3-small@127.0.0.1:{fake_api.port}",
        "dim": 4,
        "protocol": "1",
    }
    assert len(fake_api.requests) == 1  # only the embed
    assert fake_api.requests[0]["json"]["dimensions"] == 4
    assert fake_api.requests[0]["headers"]["Authorization"] == f"Bearer {api_key}"
    assert replies[1]["vectors"] == [fake_api.vector("one", 4)]


def test_dimensions_that_the_service_does_not_honour_is_an_error(fake_api):
    env = {"MODEL": "m", "BASE_URL": fake_api.base_url, "DIMENSIONS": "6", "NAME": "mine"}
    # The fake honours `dimensions`; this scripted answer plays a model that ignores the field.
    body = json.dumps({"data": [{"index": 0, "embedding": fake_api.vector("x", 8)}]})
    fake_api.then(status=200, body=body)
    replies, _ = talk(env, [{"op": "info"}, embed("passage", "x")])
    assert replies[0] == {"name": "mine", "dim": 6, "protocol": "1"}
    assert "DIMENSIONS is 6" in replies[1]["error"] and "8 numbers" in replies[1]["error"]


def test_voyage_sends_input_type_and_output_dimension(fake_api, api_key):
    env = {
        "PROVIDER": "voyage",
        "MODEL": "voyage-3",
        "BASE_URL": fake_api.base_url,
        "API_KEY": api_key,
        "DIMENSIONS": "5",
    }
    replies, _ = talk(env, [embed("query", "a question"), embed("passage", "a passage")])
    assert [len(reply["vectors"][0]) for reply in replies] == [5, 5]
    first, second = (request["json"] for request in fake_api.requests)
    assert first["input_type"] == "query" and second["input_type"] == "document"
    assert first["output_dimension"] == 5 and "dimensions" not in first


def test_voyage_without_dimensions_sends_no_output_dimension(fake_api, api_key):
    env = {"PROVIDER": "voyage", "MODEL": "voyage-3", "BASE_URL": fake_api.base_url, "API_KEY": api_key}
    replies, _ = talk(env, [{"op": "info"}])
    assert replies[0]["name"] == f"voyage:voyage-3@127.0.0.1:{fake_api.port}"
    assert "output_dimension" not in fake_api.requests[0]["json"]
    assert fake_api.requests[0]["json"]["input_type"] == "document"


def test_429_with_retry_after_is_waited_out(fake_api):
    fake_api.then(status=429, headers={"Retry-After": "1"})
    env = {"MODEL": "m", "BASE_URL": fake_api.base_url, "TIMEOUT": "10"}
    waits: list[float] = []
    replies, stderr = talk(env, [embed("passage", "hello")], sleep=waits.append)
    assert replies == [{"vectors": [fake_api.vector("hello")]}]
    assert len(fake_api.requests) == 2
    # Retry-After (1 s) is longer than the first back-off (0.05 s here), so it wins.
    assert waits == [1]
    assert "HTTP 429" in stderr and "retrying in 1 s" in stderr


def test_500s_then_success(fake_api):
    for _ in range(3):
        fake_api.then(status=500)
    waits: list[float] = []
    replies, stderr = talk(
        {"MODEL": "m", "BASE_URL": fake_api.base_url}, [embed("query", "q")], sleep=waits.append
    )
    assert replies == [{"vectors": [fake_api.vector("q")]}]
    assert len(fake_api.requests) == 4
    assert waits == [0.05, 0.1, 0.2]  # doubling from first_wait
    assert stderr.count("HTTP 500") == 3


def test_backoff_doubles_from_one_second_to_sixty_by_default(fake_api):
    # Real default waits, recorded instead of slept.
    for status in (503, 529, 500, 504, 502, 503, 507, 429):  # 429 and every 5xx
        fake_api.then(status=status)
    waits: list[float] = []
    replies, _ = talk(
        {"MODEL": "m", "BASE_URL": fake_api.base_url, "TIMEOUT": "1000"},
        [embed("query", "q")],
        sleep=waits.append,
        first_wait=1.0,
        max_wait=60.0,
    )
    assert "vectors" in replies[0]
    assert waits == [1, 2, 4, 8, 16, 32, 60, 60]


def test_500_forever_gives_up_within_timeout_and_keeps_serving(fake_api):
    fake_api.always(status=500)
    env = {"MODEL": "m", "BASE_URL": fake_api.base_url, "TIMEOUT": "1"}
    now, waits = [0.0], []

    def sleep(seconds: float) -> None:  # a clock that only the waits move, so load cannot
        waits.append(seconds)
        now[0] += seconds

    replies, _ = talk(env, [embed("passage", "x"), {"op": "bogus"}], clock=lambda: now[0], sleep=sleep)
    error = replies[0]["error"]
    assert "gave up after 7 attempts" in error and "HTTP 500" in error
    assert waits == [0.05, 0.1, 0.2, 0.2, 0.2, 0.2]  # 0.95 s: the next 0.2 s would pass TIMEOUT
    # The process stays in use: the next request gets its own answer.
    assert "unknown op" in replies[1]["error"]


def test_a_request_that_times_out_mid_answer_is_not_repeated(fake_api):
    fake_api.then(delay=3)
    env = {"MODEL": "m", "BASE_URL": fake_api.base_url, "TIMEOUT": "0.5"}
    replies, _ = talk(env, [embed("passage", "x")])
    # The socket's TIMEOUT ended the read (the answer takes 3 s), and the request is not sent again.
    assert "did not finish answering within TIMEOUT (0.5 s)" in replies[0]["error"]
    assert "not repeated" in replies[0]["error"]
    assert len(fake_api.requests) == 1


def test_the_key_is_masked_when_a_gateway_echoes_it(fake_api, api_key):
    fake_api.then(status=502, echo_authorization=True)
    fake_api.always(status=401, echo_authorization=True)
    env = {"MODEL": "m", "BASE_URL": fake_api.base_url, "API_KEY": api_key}
    stdin = io.StringIO(json.dumps(embed("passage", "x")) + "\n")
    stdout, stderr = io.StringIO(), io.StringIO()
    assert run(env, stdin, stdout, stderr, **FAST) == 0
    reply = json.loads(stdout.getvalue())
    assert "HTTP 401" in reply["error"] and "Bearer ***" in reply["error"]
    assert "HTTP 502" in stderr.getvalue() and "Bearer ***" in stderr.getvalue()
    assert api_key not in stdout.getvalue() + stderr.getvalue()
    # The gateway did see the key: the masking, not a missing header, kept it out.
    assert fake_api.requests[0]["headers"]["Authorization"] == f"Bearer {api_key}"


def test_dimensions_lets_info_answer_while_the_service_is_down(unstarted_api, unused_port):
    def requests() -> Iterator[Any]:
        yield {"op": "info"}
        yield embed("passage", "x")
        unstarted_api.start(unused_port)  # the service comes up
        yield embed("passage", "x")

    env = {
        "MODEL": "m",
        "BASE_URL": f"http://127.0.0.1:{unused_port}/v1",
        "DIMENSIONS": "8",
        "TIMEOUT": "0.5",
    }
    replies, _ = talk(env, requests())
    assert replies[0]["dim"] == 8
    assert "cannot reach" in replies[1]["error"]
    assert replies[2] == {"vectors": [unstarted_api.vector("x")]}


def test_info_without_dimensions_fails_while_the_service_is_down(unused_port):
    env = {"MODEL": "m", "BASE_URL": f"http://127.0.0.1:{unused_port}/v1", "TIMEOUT": "0.3"}
    replies, _ = talk(env, [{"op": "info"}])
    assert "cannot reach" in replies[0]["error"]


def test_non_retryable_http_errors_and_bad_answers(fake_api):
    fake_api.then(status=400, body='{"error": {"message": "model not found: m"}}')
    fake_api.then(status=200, body="<html>proxy login</html>")
    fake_api.then(status=200, body=json.dumps({"data": []}))
    replies, _ = talk(
        {"MODEL": "m", "BASE_URL": fake_api.base_url},
        [
            embed("query", "a"),
            embed("query", "a"),
            embed("query", "a"),
            "not json",
            {"op": "embed", "kind": "other", "texts": ["a"]},
            {"op": "embed", "kind": "query", "texts": []},
        ],
    )
    assert replies[0]["error"].startswith("HTTP 400") and "model not found: m" in replies[0]["error"]
    assert "not JSON" in replies[1]["error"]
    assert "0 vectors for 1 texts" in replies[2]["error"]
    assert "not a JSON object" in replies[3]["error"]
    assert "'kind'" in replies[4]["error"]
    assert replies[5] == {"vectors": []}
    assert len(fake_api.requests) == 3  # none of these was retried


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "MODEL is required"),
        ({"MODEL": "m", "PROVIDER": "cohere"}, "PROVIDER must be"),
        ({"MODEL": "m", "BASE_URL": "ftp://example.org"}, "BASE_URL must be an http"),
        (
            {"MODEL": "m", "BASE_URL": "http://user:hunter2@localhost:11434/v1"},
            "must not contain a user name",
        ),
        ({"MODEL": "m", "BASE_URL": "http://localhost/v1", "DIMENSIONS": "big"}, "DIMENSIONS must be"),
        ({"MODEL": "m", "BASE_URL": "http://localhost/v1", "TIMEOUT": "0"}, "TIMEOUT must be"),
        ({"MODEL": "text-embedding-3-small"}, "api.openai.com needs API_KEY"),
        ({"MODEL": "voyage-3", "PROVIDER": "voyage"}, "api.voyageai.com needs API_KEY"),
    ],
)
def test_bad_settings_exit_2_with_a_clear_message(env, message):
    result = subprocess.run(
        [sys.executable, "-m", "passageway_embedder_openai"],
        env={"PATH": os.environ.get("PATH", ""), **env},
        input=json.dumps({"op": "info"}) + "\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("openai embedder: ") and message in result.stderr
    assert "hunter2" not in result.stderr
    assert "Traceback" not in result.stderr


def test_settings_defaults():
    settings = load_settings({"MODEL": "text-embedding-3-small", "API_KEY": "k"})
    assert settings.endpoint == "https://api.openai.com/v1/embeddings"
    assert settings.timeout == 50
    assert settings.name == "openai:text-embedding-3-small@api.openai.com"
    voyage = load_settings({"MODEL": "voyage-3", "PROVIDER": "voyage", "API_KEY": "k"})
    assert voyage.endpoint == "https://api.voyageai.com/v1/embeddings"
    one = load_settings(
        {"MODEL": "m", "BASE_URL": "http://h:1/v1", "QUERY_PREFIX": "a", "PASSAGE_PREFIX": "bc"}
    )
    other = load_settings(
        {"MODEL": "m", "BASE_URL": "http://h:1/v1", "QUERY_PREFIX": "ab", "PASSAGE_PREFIX": "c"}
    )
    assert one.name != other.name and one.name.startswith("openai:m@h:1#")


def test_retry_after_forms():
    assert retry_after_seconds("7") == 7
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10


def test_runs_as_a_subprocess_and_keeps_stdout_clean(fake_api, api_key):
    env = {
        "PATH": os.environ.get("PATH", ""),
        "MODEL": "m",
        "BASE_URL": fake_api.base_url,
        "API_KEY": api_key,
    }
    requests = [{"op": "info"}, embed("passage", "a", "b")]
    result = subprocess.run(
        [sys.executable, "-m", "passageway_embedder_openai"],
        env=env,
        input="".join(json.dumps(request) + "\n" for request in requests),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    replies = [json.loads(line) for line in result.stdout.splitlines()]
    assert replies[0]["dim"] == 8
    assert replies[1]["vectors"] == [fake_api.vector("a"), fake_api.vector("b")]
    assert api_key not in result.stderr


def test_the_program_passes_the_embedder_contract(fake_api, api_key):
    from passageway.testing import BlockingEmbedder, CommandEmbedder, check_embedder

    fake_api.dim = 64
    embedder = BlockingEmbedder(CommandEmbedder(
        "openai-fake",
        [sys.executable, "-m", "passageway_embedder_openai"],
        env={
            "MODEL": "m",
            "BASE_URL": fake_api.base_url,
            "QUERY_PREFIX": "query: ",
            "PASSAGE_PREFIX": "passage: ",
        },
        secrets={"API_KEY": api_key},
        timeout=30,
    ))
    try:
        check_embedder(embedder)
        assert embedder.dim == 64
        assert embedder.name.startswith(f"openai:m@127.0.0.1:{fake_api.port}#")
    finally:
        embedder.close()
    assert all(request["headers"]["Authorization"] == f"Bearer {api_key}" for request in fake_api.requests)

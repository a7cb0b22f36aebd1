"""``POST /recall`` for the prompt hook: the question filter, per-session memory, the cwd boost,
long prompts, and the hook script's own self-test."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import httpx2
import pytest

from passageway.builtin.transport.hook_endpoint import (
    MAX_BODY_BYTES,
    MAX_PROMPT_CHARS,
    SessionMemory,
    _session_key,
    folder_words,
)
from passageway.kernel.query.prompt import is_question
from tests.server_helpers import PASSWORD, make_kernel, running_server, wait_built, write_instance

AUTH = {"Authorization": f"Bearer {PASSWORD}"}
TELESCOPE = "how does a refracting telescope gather starlight with a lens?"
HOOKS = Path(__file__).resolve().parent.parent / "hooks"


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("/compact", False),
        ("/passageway-status now", False),
        ("ok", False),
        ("OK!", False),
        ("weiter", False),
        ("Mach weiter", False),
        ("thanks", False),
        ("thank you", False),
        ("yes", False),
        ("", False),
        ("   ", False),
        ("and the second one?", False),
        ("why?", False),
        ("what about this?", False),
        ("und das?", False),
        ("how does the refracting telescope work?", True),
        ("Wie funktioniert die Rheinschifffahrt?", True),
        ("telescope lenses", True),
        ("ok, and what about the sourdough starter?", True),
    ],
)
def test_question_filter(prompt, expected):
    assert is_question(prompt) is expected


@pytest.mark.parametrize(
    ("cwd", "words"),
    [
        ("/home/me/code/passageway-project", ("passageway",)),
        ("/Users/anna/Documents/trilium_notes", ("trilium", "notes")),
        ("/srv/wiki/garden-planner", ("wiki", "garden", "planner")),
        ("/", ()),
        (None, ()),
        ("C:\\Users\\anna\\kitchen-recipes", ("anna", "kitchen", "recipes")),
    ],
)
def test_folder_words(cwd, words):
    assert folder_words(cwd) == words


def test_session_memory_is_bounded_and_expires():
    memory = SessionMemory(max_sessions=3, ttl=100)
    for number in range(5):
        memory.remember(f"s{number}", [("notes", f"item-{number}")], now=float(number))
    assert len(memory) == 3
    assert memory.sent("s0", now=5) == ()
    assert memory.sent("s4", now=5) == (("notes", "item-4"),)
    assert memory.sent("s4", now=200) == ()  # expired
    memory.remember(None, [("notes", "x")])
    assert memory.sent(None) == ()


def test_session_memory_keeps_the_latest_items_per_session():
    memory = SessionMemory(max_items=2)
    memory.remember("s", [("a", "1"), ("a", "2"), ("a", "3")], now=0)
    assert memory.sent("s", now=1) == (("a", "2"), ("a", "3"))


@pytest.fixture
async def served(tmp_path):  # type: ignore[no-untyped-def]
    kernel = make_kernel(write_instance(tmp_path))
    async with running_server(kernel) as url, httpx2.AsyncClient(timeout=30) as client:
        await wait_built(kernel)
        yield client, url


async def post(client: httpx2.AsyncClient, url: str, prompt: str, **fields: str) -> httpx2.Response:
    return await client.post(f"{url}/recall", json={"prompt": prompt, **fields}, headers=AUTH)


async def test_a_question_gets_context(served):
    client, url = served
    response = await post(client, url, TELESCOPE, session_id="a", cwd="/tmp")
    assert response.status_code == 200
    context = response.json()["context"]
    assert "Refracting telescope" in context and "https://example.test/telescope" in context


async def test_non_questions_get_nothing_without_a_search(served):
    client, url = served
    for prompt in ("/compact", "ok", "weiter", "thanks"):
        response = await post(client, url, prompt, session_id="a")
        assert response.json() == {"context": ""}


async def test_nothing_relevant_is_an_empty_context(served):
    client, url = served
    response = await post(client, url, "quarterly tax declaration deadline", session_id="a")
    assert response.status_code == 200
    assert response.json() == {"context": ""}


async def test_a_session_is_not_sent_the_same_item_twice(served):
    client, url = served
    first = (await post(client, url, TELESCOPE, session_id="one")).json()["context"]
    assert "Refracting telescope" in first
    second = (await post(client, url, TELESCOPE, session_id="one")).json()["context"]
    assert "Refracting telescope" not in second
    other_session = (await post(client, url, TELESCOPE, session_id="two")).json()["context"]
    assert "Refracting telescope" in other_session
    no_session = (await post(client, url, TELESCOPE)).json()["context"]
    assert "Refracting telescope" in no_session


async def test_cwd_folder_names_boost_matching_items(served):
    client, url = served
    question = "sourdough starter ferments with wild yeast"
    plain = (await post(client, url, question, session_id="p", cwd="/tmp/elsewhere")).json()["context"]
    boosted = (await post(client, url, question, session_id="b",
                          cwd="/home/me/code/passageway-project")).json()["context"]
    # Rye bread carries the label "passageway-project"; the folder name lifts it above sourdough.
    assert plain.index("Sourdough bread") < plain.index("Rye bread")
    assert boosted.index("Rye bread") < boosted.index("Sourdough bread")


async def test_a_long_prompt_is_read_to_twenty_thousand_characters_and_reduced_to_its_question(tmp_path):
    kernel = make_kernel(write_instance(tmp_path))
    paste = "\n".join(f"2026-11-30 10:{n // 60:02d}:{n % 60:02d} INFO worker {n} done" for n in range(2_000))
    late = "Which lens does a reflecting telescope use?"
    async with running_server(kernel) as url, httpx2.AsyncClient(timeout=30) as client:
        await wait_built(kernel)
        assert kernel.questions is not None
        prompt = TELESCOPE + "\n" + paste + "\n" + late  # the late question is past 20,000 characters
        assert prompt.index(late) > MAX_PROMPT_CHARS
        response = await post(client, url, prompt, session_id="long")
        assert response.status_code == 200
        assert "Refracting telescope" in response.json()["context"]
        assert kernel.questions.served == [TELESCOPE]  # what reached the embedder: the question alone
        # A paste with no question is not searched at all.
        response = await post(client, url, paste, session_id="paste")
        assert response.json() == {"context": ""} and kernel.questions.served == [TELESCOPE]


async def test_a_body_over_the_limit_is_refused_with_413_before_it_is_read(served):
    client, url = served
    body = b'{"prompt": "' + b"a" * (MAX_BODY_BYTES + 10) + b'"}'
    response = await client.post(f"{url}/recall", content=body, headers=AUTH)
    assert response.status_code == 413
    assert "larger than 262144 bytes" in response.json()["error"]

    async def chunks():  # no Content-Length: the limit holds while reading
        for _ in range(40):
            yield b"x" * 8192

    response = await client.post(f"{url}/recall", content=chunks(), headers=AUTH)
    assert response.status_code == 413
    # Twenty thousand characters at their longest JSON escape still fit.
    longest = json.dumps({"prompt": "\U0001f600" * MAX_PROMPT_CHARS, "session_id": "s" * 100}).encode()
    assert len(longest) > 12 * MAX_PROMPT_CHARS
    response = await client.post(f"{url}/recall", content=longest, headers=AUTH)
    assert response.status_code == 200


async def test_bad_requests(served):
    client, url = served
    response = await client.post(f"{url}/recall", content=b"not json", headers=AUTH)
    assert response.status_code == 400
    response = await client.post(f"{url}/recall", json={"prompt": 5}, headers=AUTH)
    assert response.status_code == 400
    response = await client.post(f"{url}/recall", json=["prompt"], headers=AUTH)
    assert response.status_code == 400


async def test_failing_embedder_is_an_error_not_an_empty_context(tmp_path):
    kernel = make_kernel(write_instance(tmp_path))
    async with running_server(kernel) as url, httpx2.AsyncClient() as client:
        await wait_built(kernel)
        kernel.embedder.fail = True
        response = await post(client, url, TELESCOPE)
        assert response.status_code == 503
        assert response.json()["context"] == ""
        assert "embedder" in response.json()["error"]


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("python3") is None,
                    reason="the hook self-test needs bash and python3")
def test_hook_script_self_test():
    result = subprocess.run(["bash", str(HOOKS / "test-recall-hook.sh")], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all checks passed" in result.stdout
    assert "FAIL" not in result.stdout


def test_hooks_json_registers_the_prompt_hook():
    import json

    config = json.loads((HOOKS / "hooks.json").read_text())
    entries = config["hooks"]["UserPromptSubmit"]
    commands = [hook["command"] for entry in entries for hook in entry["hooks"]]
    assert any("recall-hook.sh" in command and "${CLAUDE_PLUGIN_ROOT}" in command for command in commands)
    assert (HOOKS / "recall-hook.sh").is_file()


async def test_a_question_cut_out_of_a_paste_yields_to_typed_questions_at_the_embedder(tmp_path, monkeypatch):
    from passageway.kernel.query import question_queue
    from passageway.testing.toy_embedder import ToyEmbedder

    seen: list[tuple[str, bool]] = []
    original = ToyEmbedder.embed

    async def recording(self, texts, kind):  # type: ignore[no-untyped-def]
        if kind == "query":
            seen.append((texts[0], question_queue._YIELDING.get()))
        return await original(self, texts, kind)

    monkeypatch.setattr(ToyEmbedder, "embed", recording)
    kernel = make_kernel(write_instance(tmp_path))
    trace = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nKeyError: "lens"'
    async with running_server(kernel) as url, httpx2.AsyncClient(timeout=30) as client:
        await wait_built(kernel)
        await post(client, url, TELESCOPE)
        await post(client, url, f"{trace}\n\n{TELESCOPE}")
    assert seen == [(TELESCOPE, False), (TELESCOPE, True)]


async def test_a_prompt_is_reduced_once_and_yields_once_on_its_way_to_the_embedder(tmp_path, monkeypatch):
    """Kernel.recall reduces the prompt once and enters the queue's yielding once."""
    from passageway.kernel.query import prompt, question_queue, recall

    reductions: list[str] = []
    yields: list[bool] = []

    def counting_asked(text):  # type: ignore[no-untyped-def]
        reductions.append(text)
        return prompt.asked(text)

    original_yielding = question_queue.yielding

    def counting_yielding():  # type: ignore[no-untyped-def]
        yields.append(True)
        return original_yielding()

    monkeypatch.setattr(recall, "asked", counting_asked)
    monkeypatch.setattr(recall, "yielding", counting_yielding)
    kernel = make_kernel(write_instance(tmp_path))
    trace = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nKeyError: "lens"'
    async with running_server(kernel) as url, httpx2.AsyncClient(timeout=30) as client:
        await wait_built(kernel)
        response = await post(client, url, f"{trace}\n\n{TELESCOPE}", session_id="once")
    assert "Refracting telescope" in response.json()["context"]
    assert len(reductions) == 1 and len(yields) == 1


# Found by the hostile probe (issue 22)

async def test_json_nested_too_deeply_is_the_clients_400(served):
    client, url = served
    response = await client.post(f"{url}/recall", content=b"[" * 100_000 + b"]" * 100_000,
                                 headers={**AUTH, "Content-Type": "application/json"})
    assert response.status_code == 400
    assert "nested too deeply" in response.json()["error"]


async def test_a_lone_surrogate_in_the_prompt_is_a_400_and_leaves_health_alone(served):
    client, url = served
    body = b'{"prompt": "how do telescopes gather light \\ud800 at night?", "session_id": "s"}'
    response = await client.post(f"{url}/recall", content=body,
                                 headers={**AUTH, "Content-Type": "application/json"})
    assert response.status_code == 400
    assert "surrogate" in response.json()["error"]
    health = (await client.get(f"{url}/health")).json()
    assert health["status"] == "ok" and health["embedder"]["state"] == "ok"


async def test_an_overlong_session_id_is_remembered_by_its_digest(served):
    client, url = served
    long_id = "s" * 200_000  # the body stays under the 256 KiB limit
    first = (await post(client, url, TELESCOPE, session_id=long_id)).json()["context"]
    second = (await post(client, url, TELESCOPE, session_id=long_id)).json()["context"]
    assert "Refracting telescope" in first and "Refracting telescope" not in second
    assert _session_key(long_id) == _session_key("s" * 200_000) != _session_key("s" * 199_999)
    assert len(_session_key(long_id)) < 80
    assert _session_key("0b5e-uuid") == "0b5e-uuid"


def test_session_memory_holds_a_bounded_number_of_characters():
    memory = SessionMemory(max_chars=10_000)
    memory.remember("s", [("notes", f"{n:04d}" + "x" * 996) for n in range(100)], now=0)
    kept = memory.sent("s", now=1)
    assert 0 < len(kept) <= 10 and sum(len(a) + len(b) for a, b in kept) <= 10_000
    assert kept[-1][1].startswith("0099")  # the latest stay


async def test_a_prompt_is_reduced_off_the_event_loop(tmp_path, monkeypatch):
    # 38.3: the reduction ran on the event loop, so a slow prompt held /health as long.
    import asyncio
    import threading

    from passageway.kernel.query import prompt, recall

    entered, release = threading.Event(), threading.Event()

    def slow_asked(text):  # type: ignore[no-untyped-def]
        entered.set()
        release.wait(10)
        return prompt.asked(text)

    monkeypatch.setattr(recall, "asked", slow_asked)
    kernel = make_kernel(write_instance(tmp_path))
    async with running_server(kernel) as url, httpx2.AsyncClient(timeout=30) as client:
        await wait_built(kernel)
        pending = asyncio.create_task(post(client, url, TELESCOPE))
        try:
            assert await asyncio.to_thread(entered.wait, 10)
            health = await client.get(f"{url}/health")
            assert health.status_code == 200 and not pending.done()  # answered while it reduces
        finally:
            release.set()
        assert "Refracting telescope" in (await pending).json()["context"]

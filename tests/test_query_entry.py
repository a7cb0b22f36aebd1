"""The query path's one entry: ``Kernel.recall(Question)`` for both doors, in the order the
module docstring of ``kernel/query/recall.py`` gives, the gate built once, the budget fitted over
every line of the answer."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import attrs
import httpx2

from passageway import hookimpl
from passageway.builtin.ranking import FusionRanker
from passageway.kernel.app import Kernel
from passageway.kernel.config import load_settings
from passageway.kernel.embedder import ForwardingEmbedder
from passageway.kernel.plugins import build_plugin_manager
from passageway.kernel.query.rendering import BUDGET_TOKENS, approx_tokens, render_answer
from passageway.kernel.records import Question
from passageway.kernel.store import Candidate
from passageway.testing.recall import kernel_over
from passageway.testing.toy_embedder import ToyEmbedder
from tests.server_helpers import PASSWORD, make_kernel, running_server, wait_built, write_instance
from tests.test_mcp import mcp_client
from tests.test_recall import FixedStore

AUTH = {"Authorization": f"Bearer {PASSWORD}"}
TELESCOPE = "how does a refracting telescope gather starlight with a lens?"


def recording(kernel: Kernel) -> tuple[list[Question], list[Any]]:
    """Replace ``kernel.recall`` by one that records each request and its answer."""
    asked: list[Question] = []
    answers: list[Any] = []
    original = kernel.recall

    async def recall(question):  # type: ignore[no-untyped-def]
        asked.append(question)
        answers.append(await original(question))
        return answers[-1]

    kernel.recall = recall  # type: ignore[method-assign]
    return asked, answers


async def test_both_doors_answer_a_question_identically(tmp_path):
    kernel = make_kernel(write_instance(tmp_path))
    asked, answers = recording(kernel)
    async with running_server(kernel) as url, httpx2.AsyncClient(timeout=30) as client:
        await wait_built(kernel)
        hook = (await client.post(f"{url}/recall", json={"prompt": TELESCOPE}, headers=AUTH)).json()
        async with mcp_client(url) as mcp:
            tool = (await mcp.call_tool("recall", {"question": TELESCOPE})).content[0].text
    assert "Refracting telescope" in hook["context"]
    assert hook["context"] == tool
    assert answers[0] == answers[1]
    # The one difference between the doors is a field of the request: the hook wants questions only.
    assert asked == [Question(TELESCOPE, only_questions=True), Question(TELESCOPE)]


async def test_a_prompt_that_is_not_a_question_differs_by_the_request_field_alone(tmp_path):
    # "telescope lenses, the second one?" is a short follow-up to the filter: its content word
    # "telescope" still counts, so use one without any.
    prompt = "ok"
    kernel = make_kernel(write_instance(tmp_path))
    asked, answers = recording(kernel)
    async with running_server(kernel) as url, httpx2.AsyncClient(timeout=30) as client:
        await wait_built(kernel)
        hook = (await client.post(f"{url}/recall", json={"prompt": prompt}, headers=AUTH)).json()
        async with mcp_client(url) as mcp:
            await mcp.call_tool("recall", {"question": prompt})
        served = list(kernel.questions.served) if kernel.questions else []
    assert hook == {"context": ""}
    assert asked == [Question(prompt, only_questions=True), Question(prompt)]
    assert answers[0].silent
    assert served == [prompt]  # only the MCP door's request searched
    # Asked with the same field, the kernel gives the same answer whichever door sent it.
    assert attrs.evolve(asked[0], only_questions=False) == asked[1]


async def test_one_post_recall_enters_the_query_path_only_through_kernel_recall(tmp_path):
    """A trace of one POST /recall: no kernel/query function runs before Kernel.recall is entered,
    and after it returns no transport function runs before the answer is rendered."""
    kernel = make_kernel(write_instance(tmp_path))
    events: list[tuple[str, str, str]] = []

    def profile(frame, event, arg):  # type: ignore[no-untyped-def]
        module = frame.f_globals.get("__name__", "")
        if event in ("call", "return") and module.startswith("passageway."):
            events.append((event, module, frame.f_code.co_name))

    async with running_server(kernel) as url, httpx2.AsyncClient(timeout=30) as client:
        await wait_built(kernel)
        sys.setprofile(profile)
        try:
            response = await client.post(f"{url}/recall", json={"prompt": TELESCOPE, "session_id": "s",
                                                                "cwd": "/tmp"}, headers=AUTH)
        finally:
            sys.setprofile(None)
    assert "Refracting telescope" in response.json()["context"]
    entry = ("passageway.kernel.app", "recall")
    marks = [number for number, (_, module, name) in enumerate(events) if (module, name) == entry]
    first, last = marks[0], marks[-1]  # a coroutine is entered (and left) at every await
    before = {module for _, module, _ in events[:first]}
    assert "passageway.builtin.transport.hook_endpoint" in before
    assert not {module for module in before if module.startswith("passageway.kernel.query")}
    assert any(module.startswith("passageway.kernel.query.") for _, module, _ in events[first:last])
    rendering = ("passageway.kernel.query.rendering", "render_answer")
    rendered = next(number for number, (_, module, name) in enumerate(events)
                    if number > last and (module, name) == rendering)
    between = {(module, name) for event, module, name in events[last + 1:rendered] if event == "call"}
    # The handler itself resumes when Kernel.recall returns; nothing else of the transport runs.
    assert not {(module, name) for module, name in between
                if module.startswith("passageway.builtin.transport") and name != "handle"}


class CountingEmbedder(ToyEmbedder):
    """A toy whose gate numbers count how often they are read."""

    reads = 0

    @property
    def cross_language_offset(self) -> float:
        CountingEmbedder.reads += 1
        return self._offset

    @cross_language_offset.setter
    def cross_language_offset(self, value: float) -> None:
        self._offset = value


async def test_the_gate_is_built_once_when_the_embedder_starts(tmp_path, monkeypatch):
    monkeypatch.setattr(CountingEmbedder, "reads", 0)
    class Plugin:
        @hookimpl
        def passageway_register_embedders(self, register):  # type: ignore[no-untyped-def]
            register("counting", lambda settings, context: CountingEmbedder())

    environ = write_instance(tmp_path)
    config = Path(environ["PASSAGEWAY_CONFIG"])
    config.write_text(config.read_text(encoding="utf-8").replace('kind = "toy"', 'kind = "counting"'),
                      encoding="utf-8")
    manager = build_plugin_manager(environ, extra=(("counting", Plugin()),), load_entry_points=False)
    async with Kernel.open(load_settings(environ), manager, environ) as kernel:
        await kernel.sync_once()
        assert CountingEmbedder.reads >= 1 and kernel.gate is not None
        reads = CountingEmbedder.reads
        wrapped: list[object] = []
        original = ForwardingEmbedder.__init__

        def counting_init(self, inner):  # type: ignore[no-untyped-def]
            wrapped.append(inner)
            original(self, inner)

        monkeypatch.setattr(ForwardingEmbedder, "__init__", counting_init)
        for _ in range(3):
            assert (await kernel.recall(TELESCOPE)).hits
        assert CountingEmbedder.reads == reads  # not read, nor checked, again per question
        assert wrapped == []  # and the embedder is not wrapped per question


class BuildingSync:
    """A source's sync whose first build is running, with a long note."""

    def health(self) -> Any:
        return self

    def building_note(self) -> str:
        return "notes: " + "48 of 96 passages searchable by meaning so far, the rest on its way " * 3


async def test_an_answer_with_a_building_note_stays_within_its_budget():
    def passage(number: int) -> Candidate:
        text = " ".join(f"Sentence {n} of part {number} tells how a lens bends starlight." for n in range(60))
        return Candidate("fixed", number, f"part-{number}", f"Telescope part {number}", f"u{number}", None,
                         text, 0.9 - number / 100, number)

    store = FixedStore([passage(number) for number in range(3)])
    kernel = kernel_over([store], ToyEmbedder(min_similarity=0.5), FusionRanker("vector"))
    plain = await kernel.recall("lens starlight")
    kernel.sources["0"].sync = BuildingSync()  # type: ignore[assignment]
    answer = await kernel.recall("lens starlight")
    assert len(answer.hits) == len(plain.hits) == 3 and answer.notes and not plain.notes
    rendered = render_answer(answer)
    assert "Still indexing: notes:" in rendered
    assert approx_tokens(render_answer(plain)) > BUDGET_TOKENS - 30  # the budget is full without the note
    assert approx_tokens(rendered) <= BUDGET_TOKENS  # and the note's line is paid from the excerpts


async def test_a_request_carries_the_excerpt_rule_and_the_ranker_and_threshold():
    passage = Candidate("fixed", 1, "lens", "Lenses", "u1", None, "A lens bends starlight. " * 40, 0.9, 0)
    kernel = kernel_over([FixedStore([passage])], ToyEmbedder(min_similarity=0.5), FusionRanker("vector"))
    calls: list[int] = []

    def rule(text: str, question: str, limit: int, windows: Any) -> str:
        calls.append(limit)
        return "a lens, cut by the bench's rule"

    answer = await kernel.recall(Question("lens starlight", excerpt_rule=rule))
    assert [hit.text for hit in answer.hits] == ["a lens, cut by the bench's rule"] and calls
    assert (await kernel.recall(Question("lens starlight", threshold=0.95))).silent
    assert (await kernel.recall(Question("lens starlight", ranker=FusionRanker("keyword")))).hits

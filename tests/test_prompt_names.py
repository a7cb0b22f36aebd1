"""The names of a paste (kernel/query/prompt_names.py): collected, checked against the sources,
embedded with the question only when a source shows them as code."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import ClassVar

from passageway.builtin.ranking import FusionRanker
from passageway.kernel.query import prompt_names
from passageway.kernel.query.prompt import asked
from passageway.kernel.query.prompt_names import (
    MAX_EVIDENCE,
    known_names,
    paste_terms,
    shown_as_code,
    with_names,
)
from passageway.kernel.store import Candidate
from passageway.testing.recall import recall_over as recall
from passageway.testing.toy_embedder import ToyEmbedder

TYPER_PASTE = """class Network(str, Enum):
    simple = "simple"

@app.callback()
def main(ctx: typer.Context, version: bool = typer.Option(None, callback=version_callback)):
    ...
$ python main.py --network CONV
Error: Invalid value for '--network': 'CONV' is not one of 'simple', 'conv'."""

WEBSOCKET_PASTE = """async def ws(websocket):
    await websocket.accept()
ERROR:    Exception in ASGI application
starlette.websockets.WebSocketDisconnect: 1001"""


def passage(text: str, key: int = 0) -> Candidate:
    return Candidate("docs", key, f"page-{key}", "Page", "", None, text, 0.5, key)


def test_the_names_of_code_and_of_a_trace_are_collected_in_their_kinds_order():
    terms = paste_terms(TYPER_PASTE.split("\n"), "How do I accept CONV as well?")
    # flags, then names of the code (base class, decorator, annotation, dotted call), then keyword
    # arguments and settings keys; not the generic "str", nor what the question already says
    assert terms == ("--network", "Enum", "app.callback", "typer.Context", "typer.Option", "main.py",
                     "simple", "callback")


def test_the_exception_of_a_trace_comes_first_and_generic_ones_not_at_all():
    trace = 'File "app.py", line 3, in main\nValueError: no\nstarlette.exceptions.HTTPException: 404'
    assert paste_terms(trace.split("\n")) == ("HTTPException", "starlette.exceptions.HTTPException")
    assert paste_terms(WEBSOCKET_PASTE.split("\n")) == (
        "websocket.accept", "starlette.websockets.WebSocketDisconnect")


def test_a_name_is_known_when_a_passage_shows_it_as_code():
    candidates = [
        passage("Declare a parameter of type `typer.Context` to get the context.", 0),
        passage("An Enum gives a fixed set of choices.\n\n```python\nclass Network(str, Enum):\n```", 1),
        passage("The callback runs before the command. Exit with typer.Exit.", 2),
    ]
    assert shown_as_code(candidates[0].text) == "`typer.Context`"
    # typer.Exit is in prose only; a longer name does not count for a shorter one
    known = known_names(["typer.Exit", "typer", "typer.Context", "Enum"], candidates)
    assert known == ("typer.Context", "Enum")
    assert known_names(["ImportStringError", "shard_0"], candidates) == ()
    names = [f"name_{n}" for n in range(6)]
    assert len(known_names(names, [passage(" ".join(f"`{name}`" for name in names))])) == MAX_EVIDENCE


class RecordingStore:
    """A store that returns ``passages`` to every search and records the keyword queries."""

    source = "docs"

    def __init__(self, passages: list[Candidate]) -> None:
        self.passages = passages
        self.asked: list[str] = []

    def search(self, question, vector, limit):  # type: ignore[no-untyped-def]
        self.asked.append(question)
        return list(self.passages), list(self.passages)

    async def items(self, item_ids):  # type: ignore[no-untyped-def]
        return []


class RecordingEmbedder(ToyEmbedder):
    embedded: ClassVar[list[str]] = []

    async def embed(self, texts, kind):  # type: ignore[no-untyped-def]
        if kind == "query":
            self.embedded.extend(texts)
        return await super().embed(texts, kind)


class RecordingRanker(FusionRanker):
    questions: ClassVar[list[str]] = []

    def rank(self, question, question_vector, keyword, vector, gate):  # type: ignore[no-untyped-def]
        self.questions.append(question)
        return super().rank(question, question_vector, keyword, vector, gate)


PROMPT = f"{WEBSOCKET_PASTE}\nwhat's the right way to notice that the client went away?"
QUESTION = "what's the right way to notice that the client went away?"


async def test_the_names_a_source_shows_as_code_are_embedded_with_the_question(monkeypatch):
    shown = passage("After `websocket.accept()`, catch `WebSocketDisconnect` to stop the loop.")
    store, embedder, ranker = RecordingStore([shown]), RecordingEmbedder(), RecordingRanker()
    embedder.embedded.clear()
    ranker.questions.clear()
    await recall(PROMPT, [store], embedder, ranker)
    assert embedder.embedded == [QUESTION, with_names(QUESTION, ["websocket.accept"])]
    assert set(ranker.questions) == {QUESTION}  # the ranker and its gate read the question alone
    # by default the names stay out of the keyword search; the question alone is searched twice
    assert prompt_names.KEYWORD_NAMES == "none" and prompt_names.BARE_FIRST
    assert len(store.asked) == 2 and not any("websocketdisconnect" in asked for asked in store.asked)
    monkeypatch.setattr(prompt_names, "KEYWORD_NAMES", "all")
    store.asked.clear()
    await recall(PROMPT, [store], embedder, ranker)
    assert len(store.asked) == 2 and "websocketdisconnect" in store.asked[0]


async def test_names_no_source_shows_change_nothing():
    prose_only = passage("Call websocket.accept first; when the client goes away, the loop ends.")
    store, embedder = RecordingStore([prose_only]), RecordingEmbedder()
    embedder.embedded.clear()
    await recall(PROMPT, [store], embedder, FusionRanker())
    assert embedder.embedded == [QUESTION] and len(store.asked) == 1


async def test_the_sentence_before_a_question_that_reads_alone_is_searched_second():
    story = "The loop never ends after the tab is closed."
    question = "How do I notice that the client went away?"
    prose_only = passage("When the client goes away, the loop ends.")  # no name of the paste is known
    store, embedder, ranker = RecordingStore([prose_only]), RecordingEmbedder(), RecordingRanker()
    embedder.embedded.clear()
    ranker.questions.clear()
    answer = await recall(f"{WEBSOCKET_PASTE}\n{story} {question}", [store], embedder, ranker)
    # first the question alone, then the story with it; the ranker reads the question alone
    assert embedder.embedded == [question, f"{story} {question}"]
    assert set(ranker.questions) == {question}
    assert len(store.asked) == 2 and "tab" not in store.asked[0] and "tab" in store.asked[1]
    assert [hit.item_id for hit in answer.hits] == ["page-0"]


class JudgingRanker(FusionRanker):
    """Answers only when the text it judges holds ``needed``; records what it judged."""

    def __init__(self, needed: str) -> None:
        super().__init__()
        self.needed, self.judged = needed, []

    def answerable(self, question, hits, keyword, vector, sentences, gate):  # type: ignore[no-untyped-def]
        self.judged.append(question)
        return self.needed in question


async def test_a_question_silent_alone_is_judged_again_with_its_context():
    story = "The loop never ends after the tab is closed."
    question = "How do I notice that the client went away?"
    prompt = f"{WEBSOCKET_PASTE}\n{story} {question}"
    store = RecordingStore([passage("When the client goes away, the loop ends.")])
    for needed, silent, judged in (("notice", False, [question]),
                                   ("tab", False, [question, f"{story} {question}"]),
                                   ("nothing like this", True, [question, f"{story} {question}"])):
        ranker = JudgingRanker(needed)
        assert (await recall(prompt, [store], RecordingEmbedder(), ranker)).silent is silent
        assert ranker.judged == judged
    # a question without context is judged once, as any question
    ranker = JudgingRanker("tab")
    assert (await recall(f"{WEBSOCKET_PASTE}\n{question}", [store], RecordingEmbedder(), ranker)).silent
    assert ranker.judged == [question]


async def test_a_pure_paste_stays_silent_however_well_the_sources_know_its_names():
    shown = passage("Catch `WebSocketDisconnect` and `websocket.accept` as shown.")
    store, embedder = RecordingStore([shown]), RecordingEmbedder()
    embedder.embedded.clear()
    assert (await recall(WEBSOCKET_PASTE, [store], embedder, FusionRanker())).silent
    assert embedder.embedded == [] and store.asked == []


DOCS = Path(__file__).resolve().parent.parent / "corpus" / "docs"


def test_the_pastes_of_the_documentation_set_that_ask_nothing_reduce_to_nothing():
    cases = tomllib.loads((DOCS / "pastes.toml").read_text("utf-8"))["case"]
    alone = [case["query"] for case in cases if case["group"] == "paste-only"]
    assert len(alone) == 10 and all(asked(query).silent for query in alone)
    questions = [case["query"] for case in cases if case["group"] != "paste-only"]
    assert len(questions) == 30 and not any(asked(query).silent for query in questions)


def test_a_setting_key_is_read_in_one_pass_over_a_long_pasted_run():
    # Issue 38: the key pattern tried every separator of a run in turn, quadratic on a letter
    # and 19,900 underscores. Read whole, 200,000 characters take well under a second; the old
    # pattern would take hours, so the generous bound below cannot be met by it.
    import time

    from passageway.kernel.query.prompt_names import _setting_key

    started = time.perf_counter()
    assert _setting_key("a" + "_" * 200_000) is None
    assert _setting_key("a" + "_" * 200_000 + " = 1") == "a" + "_" * 200_000
    assert time.perf_counter() - started < 10


def test_a_setting_key_is_what_the_split_pattern_found():
    import random
    import re

    from passageway.kernel.query.prompt_names import _setting_key

    split = re.compile(r"^\s*\"?([A-Za-z][\w.-]*[_.-][\w.-]*|[a-z][a-z0-9]*)\"?\s*[:=]")
    chance = random.Random(38)
    for _ in range(20_000):
        line = "".join(chance.choice('aZ_.-9 ":=\tb') for _ in range(chance.randint(0, 14)))
        found = split.match(line)
        assert _setting_key(line) == (found.group(1) if found else None), line

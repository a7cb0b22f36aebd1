"""The question queue: one question at a time at the embedder, typed questions before pastes'."""

from __future__ import annotations

import asyncio

import pytest

from passageway.kernel.errors import EmbedderError
from passageway.kernel.query.question_queue import QuestionQueue, yielding
from passageway.testing.toy_embedder import ToyEmbedder


class SlowToy(ToyEmbedder):
    """A toy embedder whose calls wait until the test opens ``release``; it records how many run
    at once. Nothing here waits on the clock, so a busy machine cannot reorder the calls."""

    def __init__(self, *, held: bool = False) -> None:
        super().__init__()
        self.running = 0
        self.most = 0
        self.called = asyncio.Event()
        self.release = asyncio.Event()
        if not held:
            self.release.set()

    async def embed(self, texts, kind):  # type: ignore[no-untyped-def]
        self.running += 1
        self.most = max(self.most, self.running)
        self.called.set()
        try:
            await self.release.wait()
            await asyncio.sleep(0)
            if self.fail:
                raise EmbedderError("toy embedder told to fail")
            return await super().embed(texts, kind)
        finally:
            self.running -= 1


async def settle() -> None:
    """Let every task that can run reach its next wait (no timer is involved)."""
    for _ in range(20):
        await asyncio.sleep(0)


async def ask(queue: QuestionQueue, text: str, *, pasted: bool = False):  # type: ignore[no-untyped-def]
    if pasted:
        with yielding():
            return await queue.embed([text], "query")
    return await queue.embed([text], "query")


async def test_a_typed_question_goes_before_questions_cut_out_of_pastes_but_after_the_call_under_way():
    toy = SlowToy(held=True)
    queue = QuestionQueue(toy)
    tasks = [asyncio.create_task(ask(queue, f"paste {n}", pasted=True)) for n in range(4)]
    await toy.called.wait()
    await settle()  # "paste 0" is at the embedder, three wait
    tasks.append(asyncio.create_task(ask(queue, "typed")))
    await settle()
    toy.release.set()
    results = await asyncio.gather(*tasks)
    assert queue.served == ["paste 0", "typed", "paste 1", "paste 2", "paste 3"]
    assert toy.most == 1
    assert all(result.shape == (1, toy.dim) for result in results)


async def test_questions_of_one_kind_keep_their_order():
    queue = QuestionQueue(SlowToy())
    await asyncio.gather(*(ask(queue, f"q{n}") for n in range(5)))
    assert queue.served == [f"q{n}" for n in range(5)]


async def test_a_cancelled_question_does_not_stop_the_queue():
    toy = SlowToy(held=True)
    queue = QuestionQueue(toy)
    first = asyncio.create_task(ask(queue, "first"))
    await toy.called.wait()
    gone = asyncio.create_task(ask(queue, "gone"))
    kept = asyncio.create_task(ask(queue, "kept"))
    await settle()  # both wait behind "first"
    gone.cancel()
    await settle()
    toy.release.set()
    await asyncio.gather(first, kept)
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert queue.served == ["first", "kept"]
    assert (await ask(queue, "later")).shape == (1, toy.dim)  # the queue is free again


async def test_an_embedder_error_reaches_its_question_and_the_next_question_is_served():
    toy = SlowToy()
    queue = QuestionQueue(toy)
    toy.fail = True
    with pytest.raises(EmbedderError):
        await ask(queue, "fails")
    toy.fail = False
    assert (await ask(queue, "works")).shape == (1, toy.dim)


async def test_passages_and_lists_go_straight_through_and_attributes_are_the_embedders():
    toy = SlowToy()
    queue = QuestionQueue(toy)
    assert (await queue.embed(["a", "b"], "query")).shape == (2, toy.dim)
    assert (await queue.embed(["a"], "passage")).shape == (1, toy.dim)
    assert queue.served == []
    assert (queue.name, queue.dim, queue.min_similarity) == (toy.name, toy.dim, toy.min_similarity)

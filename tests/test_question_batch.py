"""Questions that wait together go to the embedder in one call, each gets its own vector."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from passageway.kernel.errors import EmbedderError
from passageway.kernel.question_batch import QuestionBatcher
from passageway.testing.toy_embedder import ToyEmbedder, toy_vectors


class SlowToy(ToyEmbedder):
    """A toy embedder whose calls take a while and are recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    async def embed(self, texts, kind):  # type: ignore[no-untyped-def]
        self.batches.append(list(texts))
        await asyncio.sleep(0.05)
        if self.fail:
            raise EmbedderError("toy embedder told to fail")
        return await super().embed(texts, kind)


async def test_questions_that_arrive_during_a_call_share_the_next_call_and_keep_their_vectors():
    toy = SlowToy()
    batcher = QuestionBatcher(toy)
    questions = [f"question number {n}" for n in range(6)]
    first = asyncio.create_task(batcher.embed([questions[0]], "query"))
    await asyncio.sleep(0.01)  # the first call is under way
    rest = [asyncio.create_task(batcher.embed([text], "query")) for text in questions[1:]]
    vectors = await asyncio.gather(first, *rest)
    assert toy.batches == [questions[:1], questions[1:]]
    for text, vector in zip(questions, vectors, strict=True):
        assert vector.shape == (1, toy.dim)
        assert np.allclose(vector[0], toy_vectors([text])[0])


async def test_a_failing_call_fails_every_question_in_it_and_the_next_call_works():
    toy = SlowToy()
    batcher = QuestionBatcher(toy)
    toy.fail = True
    results = await asyncio.gather(*(batcher.embed([f"q{n}"], "query") for n in range(3)),
                                   return_exceptions=True)
    assert all(isinstance(result, EmbedderError) for result in results)
    toy.fail = False
    assert (await batcher.embed(["q9"], "query")).shape == (1, toy.dim)


async def test_a_cancelled_question_leaves_the_others_answered():
    toy = SlowToy()
    batcher = QuestionBatcher(toy)
    busy = asyncio.create_task(batcher.embed(["first"], "query"))
    await asyncio.sleep(0.01)
    gone = asyncio.create_task(batcher.embed(["gone"], "query"))
    kept = asyncio.create_task(batcher.embed(["kept"], "query"))
    await asyncio.sleep(0)
    gone.cancel()
    assert (await kept).shape == (1, toy.dim)
    await busy
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert toy.batches == [["first"], ["kept"]]


async def test_passages_and_lists_go_straight_through_and_attributes_are_the_embedders():
    toy = SlowToy()
    batcher = QuestionBatcher(toy)
    assert (await batcher.embed(["a", "b"], "query")).shape == (2, toy.dim)
    assert (await batcher.embed(["a"], "passage")).shape == (1, toy.dim)
    assert batcher.calls == 0
    assert (batcher.name, batcher.dim, batcher.min_similarity) == (toy.name, toy.dim, toy.min_similarity)

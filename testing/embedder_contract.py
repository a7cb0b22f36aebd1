"""What every embedder must do, as one check a test can call.

:func:`check_embedder` takes any object with the :class:`passageway.kernel.embedder.Embedder`
methods, synchronous or awaitable (wrap a program's
:class:`~passageway.builtin.embedders.embed_command.CommandEmbedder` in
:class:`passageway.testing.blocking.BlockingEmbedder` so that it can be closed afterwards on the
loop it ran on), and raises ``AssertionError`` naming the first
rule broken. :func:`check_embedder_async` does the same inside a running loop.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from passageway.kernel.embedder import cross_language_offset_of
from passageway.kernel.errors import EmbedderError

LIGHTHOUSE_PASSAGE = "Lighthouses guide ships at night with a bright light on the coast."
BANANA_PASSAGE = "Bananas are yellow fruit that grow in bunches on tall tropical plants."
LIGHTHOUSE_QUERY = "Which lighthouses guide ships at night on the coast?"
OTHER_TEXTS = ("A short note.", "Ein deutscher Satz über das Wetter im Herbst.")


def check_embedder(embedder: Any) -> None:
    """Start ``embedder`` and check the contract; raises ``AssertionError`` with the broken rule."""
    loop = asyncio.new_event_loop()
    try:

        def call(value: Any) -> Any:
            return loop.run_until_complete(value) if inspect.isawaitable(value) else value

        _check(embedder, call)
    finally:
        loop.close()


async def check_embedder_async(embedder: Any) -> None:
    """:func:`check_embedder` for code already inside an event loop."""
    async def resolve(value: Any) -> Any:
        return await value if inspect.isawaitable(value) else value

    await resolve(embedder.start())
    single = await resolve(embedder.embed([LIGHTHOUSE_PASSAGE], "passage"))
    again = await resolve(embedder.embed([LIGHTHOUSE_PASSAGE], "passage"))
    batch = await resolve(embedder.embed([OTHER_TEXTS[0], LIGHTHOUSE_PASSAGE, OTHER_TEXTS[1]], "passage"))
    banana = await resolve(embedder.embed([BANANA_PASSAGE], "passage"))
    query = await resolve(embedder.embed([LIGHTHOUSE_QUERY], "query"))
    _judge(embedder, single, again, batch, banana, query)


def _check(embedder: Any, call: Callable[[Any], Any]) -> None:
    call(embedder.start())
    single = call(embedder.embed([LIGHTHOUSE_PASSAGE], "passage"))
    again = call(embedder.embed([LIGHTHOUSE_PASSAGE], "passage"))
    batch = call(embedder.embed([OTHER_TEXTS[0], LIGHTHOUSE_PASSAGE, OTHER_TEXTS[1]], "passage"))
    banana = call(embedder.embed([BANANA_PASSAGE], "passage"))
    query = call(embedder.embed([LIGHTHOUSE_QUERY], "query"))
    _judge(embedder, single, again, batch, banana, query)


def _judge(
    embedder: Any,
    single: np.ndarray,
    again: np.ndarray,
    batch: np.ndarray,
    banana: np.ndarray,
    query: np.ndarray,
) -> None:
    name, dim = embedder.name, embedder.dim
    assert isinstance(name, str) and name, "the embedder needs a non-empty name"
    assert isinstance(dim, int) and dim > 0, f"dim must be a positive whole number, got {dim!r}"
    gate = embedder.min_similarity
    assert 0.0 <= gate <= 1.0, f"min_similarity must be from 0 to 1, got {gate}"
    try:
        cross_language_offset_of(embedder)
    except EmbedderError as error:
        raise AssertionError(str(error)) from None
    for label, matrix, rows in (("one text", single, 1), ("three texts", batch, 3), ("a query", query, 1)):
        assert isinstance(matrix, np.ndarray), f"{label}: embed must return a numpy array, got {type(matrix)}"
        assert matrix.shape == (rows, dim), f"{label}: expected shape {(rows, dim)}, got {matrix.shape}"
        assert matrix.dtype == np.float32, f"{label}: expected float32, got {matrix.dtype}"
        assert np.isfinite(matrix).all(), f"{label}: a vector holds a non-finite number"
        norms = np.linalg.norm(matrix, axis=1)
        assert np.allclose(norms, 1.0, atol=1e-3), f"{label}: vectors must have unit length, got {norms}"
    assert _cosine(single[0], again[0]) > 0.9999, "the same text must give the same vector twice"
    assert _cosine(single[0], batch[1]) > 0.999, "a text must give the same vector alone and in a batch"
    to_lighthouse = _cosine(query[0], single[0])
    to_banana = _cosine(query[0], banana[0])
    assert to_lighthouse > to_banana, (
        f"a question about lighthouses must be closer to the lighthouse passage ({to_lighthouse:.3f}) "
        f"than to the banana passage ({to_banana:.3f})"
    )
    assert _cosine(single[0], banana[0]) < 0.9999, "lighthouses and bananas got the same vector"


def _cosine(left: np.ndarray, right: np.ndarray) -> float:
    return float(np.dot(left, right) / (np.linalg.norm(left) * np.linalg.norm(right)))


__all__ = ["check_embedder", "check_embedder_async"]

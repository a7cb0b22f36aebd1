"""The two embedding passes after a fetch, for a store that takes passages before their vectors.

A :class:`~passageway.kernel.store.LaterVectors` store gets each fetched batch at once, without
vectors, so its passages are found by keywords within seconds. Then:

1. **passages**: every stored passage still without a vector is embedded (those whose digest is
   in the vector cache are not), fewest tokens first within each round so that batches pad little,
   and each embedder call's vectors are handed to the store as soon as it ends: vector search
   covers more of the source with every call;
2. **windows**: once no passage waits, the excerpt windows (:mod:`~passageway.kernel.text.windows`)
   of every passage are embedded into the vector cache; recall uses the word rule for a passage
   until its windows are there.

An embedder that can pool spans of a text from its forward pass (``BaseEmbedder.embed_spans``, the
built-in model on onnxruntime) gets each long passage's windows as spans in the first pass and
gives their vectors with the passage's: the second pass then finds them in the cache and embeds
only the windows of passages whose vector came from the cache. Any other embedder embeds every
window as a text of its own in the second pass.

Both passes read what is left from the store (and the ``windows`` state key says whether the
second one is due), so a server killed in the middle resumes them at its next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Protocol

import numpy as np

from passageway.kernel.embedder import Embedder, with_defaults
from passageway.kernel.errors import EmbedderError
from passageway.kernel.index.sync_health import BuildProgress
from passageway.kernel.store import LaterVectors, Store, VectorCache
from passageway.kernel.text.chunking import digest_of
from passageway.kernel.text.windows import window_spans, window_texts

PENDING_ROUND = 512
"""Passages read from the store per round of the first pass (sorted by length within it)."""
TEXTS_ROUND = 512
"""Passages read per round of the windows pass."""
WINDOWS_STATE = "windows"
"""State key: ``due`` while passages were stored whose windows may lack a vector, ``done`` after."""

Spans = dict[str, list[tuple[str, int, int]]]
"""A passage's digest -> its windows as ``(window digest, start, end)`` spans of its embedding input
(:func:`~passageway.kernel.text.windows.window_spans`)."""


class Embeds(Protocol):
    """What the passes need of the sync's update maker (:class:`.item_updates.UpdateMaker`): its
    calls of ``embed_batch`` texts, each call's vectors into the vector cache."""

    @property
    def embed_batch(self) -> int: ...

    async def shortest_first(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]: ...

    async def embed(self, pairs: list[tuple[str, str]], progress: BuildProgress | None,
                    counted: bool = True, spans: Spans | None = None) -> dict[str, np.ndarray]: ...


class LaterStore(Store, LaterVectors, Protocol):
    """A store with both protocols (for typing only)."""


async def embed_pending(store: LaterStore, cache: VectorCache, maker: Embeds, progress: BuildProgress | None,
                        log: logging.Logger) -> int:
    """The first pass: give every passage of ``store`` without a vector one; how many were
    embedded now (the rest came from the cache). ``progress`` (a running fetch's) counts them."""
    embedded = 0
    while True:
        waiting = await store.pending(PENDING_ROUND)
        if not waiting:
            return embedded
        cached = await cache.get_many([passage.digest for passage in waiting])
        ready = [(p.item_id, p.ordinal, cached[p.digest]) for p in waiting if p.digest in cached]
        await store.set_vectors(ready)
        missing: dict[str, str] = {}
        spans: Spans = {}
        for passage in waiting:
            if passage.digest not in cached and passage.digest not in missing:
                missing[passage.digest] = passage.embedding_input
                spans[passage.digest] = window_spans(passage.text, passage.embedding_input)
        pairs = await maker.shortest_first(list(missing.items()))
        for start in range(0, len(pairs), maker.embed_batch):
            made = await maker.embed(pairs[start : start + maker.embed_batch], progress, spans=spans)
            embedded += len(made)
            await store.set_vectors(
                [(p.item_id, p.ordinal, made[p.digest]) for p in waiting if p.digest in made])
        if not ready and not pairs:  # nothing could be set: do not spin on it
            log.warning("source %s: %d passages wait for a vector that cannot be set", store.source,
                        len(waiting))
            return embedded


async def embed_all_windows(store: LaterStore, cache: VectorCache, maker: Embeds,
                            progress: BuildProgress | None) -> int:
    """The second pass, when due: the windows of every passage into the cache, fewest tokens first
    in each round; how many were embedded. ``progress`` hears of the windows already in the cache."""
    if await store.get_state(WINDOWS_STATE) != "due":
        return 0
    embedded, after = 0, 0
    while True:
        rows = await store.passage_texts(after, TEXTS_ROUND)
        if not rows:
            break
        after = rows[-1][0]
        wanted = {digest_of(text): text for _, passage in rows for text in window_texts(passage)}
        present = await cache.get_many(list(wanted)) if wanted else {}
        if progress is not None and present:
            progress.windows_cached([wanted[digest] for digest in present])
        missing = await maker.shortest_first([(digest, text) for digest, text in wanted.items()
                                        if digest not in present])
        if missing:
            await maker.embed(missing, progress, counted=False)
            embedded += len(missing)
    await store.set_state(WINDOWS_STATE, "done")
    return embedded


async def embed_into_cache(embedder: Embedder, cache: VectorCache, pairs: list[tuple[str, str]], batch: int,
                           progress: BuildProgress | None, *, windows: bool = False,
                           spans: Spans | None = None) -> tuple[dict[str, np.ndarray], float]:
    """Vectors for ``(digest, text)`` pairs in embedder calls of ``batch``, and the seconds spent
    awaiting the embedder. With ``spans`` (passages only), a call whose texts have windows goes
    to ``embed_spans`` first, and the windows' vectors it gives go into the cache beside the
    passages' (not into the result); when it gives none, the windows wait for the second pass.

    Each call's vectors go to the vector cache at once, so work survives a crash or a kill in
    the middle: the next start embeds only what no call finished. Vectors are made unit length
    (a dot product is then the cosine); a reply of the wrong shape raises ``EmbedderError``.
    """
    result: dict[str, np.ndarray] = {}
    seconds = 0.0
    model = with_defaults(embedder)
    for start in range(0, len(pairs), batch):
        chunk = pairs[start : start + batch]
        if progress is not None:
            progress.embedding()  # the rate counts from the first call, windows' too
        began = time.perf_counter()
        texts = [text for _, text in chunk]
        chunk_spans = [(spans or {}).get(digest, []) for digest, _ in chunk]
        pooled = None
        if any(chunk_spans):
            pooled = await model.embed_spans(texts, [[(first, end) for _, first, end in each]
                                                     for each in chunk_spans])
        if pooled is None:
            matrix = np.asarray(await embedder.embed(texts, "passage"), dtype=np.float32)
            windows_made: dict[str, np.ndarray] = {}
        else:
            matrix = np.asarray(pooled[0], dtype=np.float32)
            windows_made = _span_vectors(embedder, chunk_spans, pooled[1])
        seconds += time.perf_counter() - began
        _check_shape(embedder, matrix, len(chunk))
        made = {digest: vector for (digest, _), vector in zip(chunk, _unit(matrix), strict=True)}
        await cache.put_many({**windows_made, **made})
        result.update(made)
        if progress is not None:
            progress.embedded(texts, windows=windows)
    return result, seconds


def _check_shape(embedder: Embedder, matrix: np.ndarray, count: int) -> None:
    if matrix.shape != (count, embedder.dim):
        raise EmbedderError(
            f"the embedder {embedder.name!r} returned vectors of shape {matrix.shape} for "
            f"{count} texts of dimension {embedder.dim}; check the embedder program"
        )


def _unit(matrix: np.ndarray) -> np.ndarray:
    """``matrix``'s rows made unit length (a zero row stays zero), float32."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def _span_vectors(embedder: Embedder, spans: list[list[tuple[str, int, int]]], vectors: list[np.ndarray]
                  ) -> dict[str, np.ndarray]:
    """The windows' vectors from ``embed_spans``, checked and by window digest."""
    if len(vectors) != len(spans):
        raise EmbedderError(f"the embedder {embedder.name!r} returned span vectors for {len(vectors)} "
                            f"texts, not {len(spans)}; check the embedder plugin")
    made: dict[str, np.ndarray] = {}
    for each, matrix in zip(spans, vectors, strict=True):
        if each:
            matrix = np.asarray(matrix, dtype=np.float32)
            _check_shape(embedder, matrix, len(each))
            made.update(zip((digest for digest, _, _ in each), _unit(matrix), strict=True))
    return made


@contextlib.asynccontextmanager
async def embedding_meanwhile(embed: Callable[[], Awaitable[object]]) -> AsyncIterator[asyncio.Event]:
    """Embed the passages that writes store while the body (the sync's loop over a fetch run)
    runs: ``embed`` (the first pass, :func:`embed_pending` with its arguments bound) runs each
    time the event given to the body is set (by each write), and once more after the body; an
    error in the body ends both, and an error of ``embed`` is raised when the body is done."""
    done = False
    stored_more = asyncio.Event()

    async def embedding() -> None:
        while not done:
            await stored_more.wait()
            stored_more.clear()
            await embed()

    task = asyncio.create_task(embedding())
    try:
        yield stored_more
    except BaseException:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        raise
    finally:
        done = True
        stored_more.set()
    await task

"""From fetched items to the updates a store applies: chunk, reuse cached vectors, embed the rest.

Every sync operation (build, reconcile, poll) turns each fetched batch into
:class:`~passageway.kernel.store.ItemUpdate` records the same way, so that work lives here and
:mod:`.sync` keeps only the operations and their order. An :class:`UpdateMaker` chunks the items
(:mod:`.chunking`), takes the vectors the :class:`~passageway.kernel.store.VectorCache` already
holds by digest, and embeds the rest in calls of :data:`EMBED_BATCH`, each call's vectors into
the cache at once (:func:`.sync_passes.embed_into_cache`).

For a store that takes passages before their vectors (``later``), an item whose passages are not
all in the cache is handed over without vectors, and the passes of :mod:`.sync_passes` embed it
after; any other store gets every vector with its batch, and the excerpt windows
(:mod:`.windows`) are embedded first, so their time counts in the build's rate.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence

import numpy as np

from passageway.kernel.embedder import Embedder, with_defaults
from passageway.kernel.index.sync_health import BuildProgress
from passageway.kernel.index.sync_passes import Spans, embed_into_cache
from passageway.kernel.index.window_vectors import embed_windows, shortest_first
from passageway.kernel.records import Item, Passage
from passageway.kernel.store import ItemUpdate, VectorCache
from passageway.kernel.text.chunking import passages_for
from passageway.kernel.text.windows import window_texts

EMBED_BATCH = 32
"""Texts per embedder call."""


class UpdateMaker:
    """Chunks and embeds one source's fetched items; ``embed_seconds`` sums the embedder's time."""

    def __init__(self, embedder: Embedder, vector_cache: VectorCache, *, cap: int, embed_batch: int,
                 later: bool) -> None:
        self.embedder = embedder
        self.vector_cache = vector_cache
        self.cap = cap
        self.embed_batch = embed_batch
        self.later = later
        self.embed_seconds = 0.0
        """Time spent awaiting the embedder (the benchmark compares it with the total)."""

    async def prepare(self, items: Sequence[Item], progress: BuildProgress | None
                      ) -> tuple[list[ItemUpdate], int]:
        """The updates of ``items`` and how many passages were embedded now (reused vectors are
        not counted); ``progress`` (a running fetch's) is told what was chunked."""
        chunked = [(item, passages_for(item, self.cap)) for item in items]
        all_passages: list[Passage] = [passage for _, passages in chunked for passage in passages]
        vectors = await self.vector_cache.get_many([passage.digest for passage in all_passages])
        missing: dict[str, str] = {}
        for passage in all_passages:
            if passage.digest not in vectors:
                missing.setdefault(passage.digest, passage.embedding_input)
        if progress is not None:
            windows = dict.fromkeys(text for passage in all_passages for text in window_texts(passage.text))
            progress.chunked_items(len(items), [passage.embedding_input for passage in all_passages],
                                   list(missing.values()), list(windows))
        if self.later:  # stored at once, without vectors where any is missing (sync_passes.py)
            return [
                ItemUpdate(item=item, passages=passages, vectors=self.matrix(passages, vectors)
                           if all(passage.digest in vectors for passage in passages) else None)
                for item, passages in chunked
            ], 0
        # The windows that excerpts are chosen by (kernel/query/excerpts.py), into the same cache, before
        # the passages: their time then counts in the passages/s rate and the time left, rather
        # than showing as a last stretch with every passage ready and "0 s left".
        await embed_windows([passage.text for passage in all_passages], self.vector_cache,
                            functools.partial(self.embed, progress=progress, counted=False), self.tokens)
        if missing:
            vectors.update(await self.embed(list(missing.items()), progress))
        updates = [ItemUpdate(item=item, passages=passages, vectors=self.matrix(passages, vectors))
                   for item, passages in chunked]
        return updates, len(missing)

    def tokens(self, text: str) -> int:
        """How many tokens the embedder reads for ``text`` (its own count where it has one): what
        texts are sorted by before they are cut into calls, so that a call's batch pads little."""
        return with_defaults(self.embedder).count_tokens(text)

    async def shortest_first(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
        """``(digest, text)`` pairs in the order they go to the embedder: fewest tokens first
        (:func:`.window_vectors.shortest_first`). Counting a round's tokens takes up to a few
        tenths of a second, so it runs on a thread, not on the loop that answers questions."""
        return await asyncio.to_thread(shortest_first, pairs, self.tokens)

    def matrix(self, passages: Sequence[Passage], vectors: dict[str, np.ndarray]) -> np.ndarray:
        """The vectors of ``passages`` in their order, one row each."""
        if not passages:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.vstack([vectors[passage.digest] for passage in passages]).astype(np.float32)

    async def embed(self, pairs: list[tuple[str, str]], progress: BuildProgress | None,
                    counted: bool = True, spans: Spans | None = None) -> dict[str, np.ndarray]:
        """Vectors for ``(digest, text)`` pairs, in embedder calls of ``embed_batch``, each call's
        into the vector cache at once (``counted=False``: excerpt windows; ``spans``: the windows
        to pool from the passages' own pass, :func:`.sync_passes.embed_into_cache`)."""
        made, seconds = await embed_into_cache(self.embedder, self.vector_cache, pairs, self.embed_batch,
                                               progress, windows=not counted, spans=spans)
        self.embed_seconds += seconds
        return made

"""The two embedding passes after a fetch, for a store that takes passages before their vectors.

A :class:`~passageway.kernel.store.LaterVectors` store gets each fetched batch at once, without
vectors, so its passages are found by keywords within seconds. Then:

1. **passages**: every stored passage still without a vector is embedded (those whose digest is
   in the vector cache are not), shortest first within each round so that batches pad little,
   and each embedder call's vectors are handed to the store as soon as it ends: vector search
   covers more of the source with every call;
2. **windows**: once no passage waits, the excerpt windows (:mod:`~passageway.kernel.index.windows`)
   of every passage are embedded into the vector cache; recall uses the word rule for a passage
   until its windows are there.

Both passes read what is left from the store (and the ``windows`` state key says whether the
second one is due), so a server killed in the middle resumes them at its next start.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

import numpy as np

from passageway.kernel.index.chunking import digest_of
from passageway.kernel.index.windows import window_texts
from passageway.kernel.store import LaterVectors, Store, VectorCache

PENDING_ROUND = 512
"""Passages read from the store per round of the first pass (sorted by length within it)."""
TEXTS_ROUND = 512
"""Passages read per round of the windows pass."""
WINDOWS_STATE = "windows"
"""State key: ``due`` while passages were stored whose windows may lack a vector, ``done`` after."""

Embed = Callable[[list[tuple[str, str]], bool], Awaitable[dict[str, np.ndarray]]]
"""The sync's embedding call: ``(digest, text)`` pairs and whether they count as passages."""


class LaterStore(Store, LaterVectors, Protocol):
    """A store with both protocols (for typing only)."""


async def embed_pending(store: LaterStore, cache: VectorCache, embed: Embed, embed_batch: int,
                        log: logging.Logger) -> int:
    """The first pass: give every passage of ``store`` without a vector one; how many were
    embedded now (the rest came from the cache)."""
    embedded = 0
    while True:
        waiting = await store.pending(PENDING_ROUND)
        if not waiting:
            return embedded
        cached = await cache.get_many([passage.digest for passage in waiting])
        ready = [(p.item_id, p.ordinal, cached[p.digest]) for p in waiting if p.digest in cached]
        await store.set_vectors(ready)
        missing: dict[str, str] = {}
        for passage in waiting:
            if passage.digest not in cached:
                missing.setdefault(passage.digest, passage.embedding_input)
        pairs = sorted(missing.items(), key=lambda pair: len(pair[1]))
        for start in range(0, len(pairs), embed_batch):
            made = await embed(pairs[start : start + embed_batch], True)
            embedded += len(made)
            await store.set_vectors(
                [(p.item_id, p.ordinal, made[p.digest]) for p in waiting if p.digest in made])
        if not ready and not pairs:  # nothing could be set: do not spin on it
            log.warning("source %s: %d passages wait for a vector that cannot be set", store.source,
                        len(waiting))
            return embedded


async def embed_all_windows(store: LaterStore, cache: VectorCache, embed: Embed,
                            cached: Callable[[list[str]], None] | None = None) -> int:
    """The second pass, when due: the windows of every passage into the cache, shortest first in
    each round; how many were embedded. ``cached`` hears of the windows already in the cache."""
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
        if cached is not None and present:
            cached([wanted[digest] for digest in present])
        missing = sorted(((digest, text) for digest, text in wanted.items() if digest not in present),
                         key=lambda pair: len(pair[1]))
        if missing:
            await embed(missing, False)
            embedded += len(missing)
    await store.set_state(WINDOWS_STATE, "done")
    return embedded

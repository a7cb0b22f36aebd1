"""The vectors of a long passage's windows: the index's half of choosing excerpts.

The sync makes sure every window (:mod:`passageway.kernel.text.windows`) of a passage it stored has
a vector in the embedder's digest vector cache (:func:`embed_windows`); recall looks them up through
the same cache (:class:`VectorLookup`) to start an excerpt at the window closest to the question.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol

import numpy as np

from passageway.kernel.text.chunking import digest_of
from passageway.kernel.text.windows import window_texts


class VectorLookup(Protocol):
    """What recall needs of the vector cache: vectors by digest (missing digests left out)."""

    async def get_many(self, digests: Sequence[str]) -> Mapping[str, np.ndarray]: ...


async def embed_windows(
    passage_texts: Sequence[str],
    cache: VectorLookup,
    embed: Callable[[list[tuple[str, str]]], Awaitable[object]],
    tokens: Callable[[str], int] = len,
) -> int:
    """Make sure every window of ``passage_texts`` has a vector in ``cache``; the count embedded.

    ``embed`` receives the missing ``(digest, text)`` pairs, shortest first by ``tokens`` (the
    embedder's token count; characters without it), so that the texts of one embedder call are of
    nearly one length and a batch pads little; it must embed them into the cache (the sync's own
    embedding call does, with its checks and its unit-length rule).
    """
    wanted: dict[str, str] = {}
    for passage_text in passage_texts:
        for text in window_texts(passage_text):
            wanted.setdefault(digest_of(text), text)
    if not wanted:
        return 0
    present = await cache.get_many(list(wanted))
    missing = await asyncio.to_thread(  # counting tokens is CPU work: off the loop
        shortest_first, [(digest, text) for digest, text in wanted.items() if digest not in present], tokens)
    if missing:
        await embed(missing)
    return len(missing)


def shortest_first(pairs: Sequence[tuple[str, str]], tokens: Callable[[str], int] = len
                   ) -> list[tuple[str, str]]:
    """``(digest, text)`` pairs ordered by ``tokens(text)``, then by length and text: the order in
    which the sync hands texts to the embedder in calls. Sorting by the model's own token count
    rather than by characters keeps a call's texts of nearly one length in tokens (German and code
    take more tokens a character than English prose), which is what a batch is padded to: on the
    sample corpus 3 % of the windows' tokens are padding against 11 % sorted by characters
    (``bench/window_build.py``). The order changes no vector."""
    return sorted(pairs, key=lambda pair: (tokens(pair[1]), len(pair[1]), pair[1]))

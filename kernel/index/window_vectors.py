"""The vectors of a long passage's windows: the index's half of choosing excerpts.

The sync makes sure every window (:mod:`passageway.kernel.text.windows`) of a passage it stored has
a vector in the embedder's digest vector cache (:func:`embed_windows`); recall looks them up through
the same cache (:class:`VectorLookup`) to start an excerpt at the window closest to the question.
"""

from __future__ import annotations

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
) -> int:
    """Make sure every window of ``passage_texts`` has a vector in ``cache``; the count embedded.

    ``embed`` receives the missing ``(digest, text)`` pairs, shortest first (texts of similar
    length batch with little padding), and must embed them into the cache (the sync's own
    embedding call does, with its checks and its unit-length rule).
    """
    wanted: dict[str, str] = {}
    for passage_text in passage_texts:
        for text in window_texts(passage_text):
            wanted.setdefault(digest_of(text), text)
    if not wanted:
        return 0
    present = await cache.get_many(list(wanted))
    missing = sorted(((digest, text) for digest, text in wanted.items() if digest not in present),
                     key=lambda pair: len(pair[1]))
    if missing:
        await embed(missing)
    return len(missing)

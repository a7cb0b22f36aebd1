"""Recall over stores of a test's own, through the kernel's one entry (``Kernel.recall``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from passageway.kernel.app import Kernel
from passageway.kernel.records import Answer, Question


async def recall(
    prompt: str, stores: Sequence[Any], embedder: Any, ranker: Any, *, min_similarity: float | None = None,
    boost_words: Iterable[str] = (), exclude_items: Iterable[tuple[str, str]] = (), vector_cache: Any = None,
    excerpt_rule: Any = None,
) -> Answer:
    """What ``Kernel.recall`` answers for ``prompt`` from ``stores`` with ``embedder`` and ``ranker``
    (``min_similarity`` in place of the embedder's)."""
    kernel = Kernel.over(stores, embedder, ranker, vector_cache)
    return await kernel.recall(Question(
        prompt, exclude_items=tuple(exclude_items), boost_words=tuple(boost_words),
        threshold=min_similarity, excerpt_rule=excerpt_rule,
    ))

"""Recall over stores of a test's or a bench's own, through the kernel's one entry.

:func:`kernel_over` builds a :class:`~passageway.kernel.app.Kernel` without settings or syncs that
answers from stores already open with an embedder already started; :func:`recall_over` asks it
one question. Both doors, ``passageway eval`` and these helpers all reach ``Kernel.recall``, so a
test exercises the same steps in the same order as a served question.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from passageway.kernel.app import Kernel
from passageway.kernel.config_file import ConnectorSettings
from passageway.kernel.embedder import Embedder, with_defaults
from passageway.kernel.index.sources import Source
from passageway.kernel.ranking import Gate, Ranker
from passageway.kernel.records import Answer, Question
from passageway.kernel.store import Store


def kernel_over(stores: Iterable[Store], embedder: Embedder, ranker: Ranker, vector_cache: Any = None
                ) -> Kernel:
    """A kernel that answers from ``stores`` (open) with ``embedder`` (started) and ``ranker``, the
    gate the embedder's own.

    :raises EmbedderError: the embedder's ``cross_language_offset`` is not usable.
    """
    kernel = Kernel(None)
    kernel.embedder, kernel.embedder_started = with_defaults(embedder), True
    kernel.ranker, kernel.vector_cache, kernel.gate = ranker, vector_cache, Gate.of(embedder)
    kernel.sources = {str(number): Source(ConnectorSettings(str(number), ()), store)
                      for number, store in enumerate(stores)}
    return kernel


async def recall_over(
    prompt: str, stores: Iterable[Store], embedder: Embedder, ranker: Ranker, *,
    min_similarity: float | None = None, boost_words: Iterable[str] = (),
    exclude_items: Iterable[tuple[str, str]] = (), vector_cache: Any = None, excerpt_rule: Any = None,
) -> Answer:
    """What ``Kernel.recall`` answers for ``prompt`` from ``stores``; ``min_similarity`` replaces
    the embedder's (the request's ``threshold``), the other keywords are the request's fields."""
    kernel = kernel_over(stores, embedder, ranker, vector_cache)
    return await kernel.recall(Question(
        prompt, exclude_items=tuple(exclude_items), boost_words=tuple(boost_words),
        threshold=min_similarity, excerpt_rule=excerpt_rule,
    ))

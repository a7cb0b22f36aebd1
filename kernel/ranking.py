"""The ranking contract: what a ranker receives and returns, and the gate it applies.

A ranker (registered through ``passageway_register_rankers``) fuses the keyword and vector
candidates of every source and applies the relevance gate: it returns the passages that passed,
best first, or none, which is silence. Recall asks it once per question and reads the first
:data:`DEPTH` of its list: :data:`MAX_HITS` for the answer, the rest to take the place of copies
that the duplicate rule filters out (``kernel/query/duplicates.py``). The :class:`Gate` holds the
numbers that belong to the model rather than to the ranker. Plugin authors import these names from
``passageway``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import attrs
import numpy as np

from passageway.kernel.embedder import Embedder, cross_language_offset_of
from passageway.kernel.store import Candidate

CANDIDATES = 50
"""How many passages each signal (keyword, vector) contributes, across all sources."""

MAX_HITS = 3
"""At most this many passages in an answer."""

DEPTH = 9
"""How many of a ranker's passages recall reads: the :data:`MAX_HITS` of an answer and six more,
so that up to six copies of content already in the answer (another source's translation, a
mirrored page) can be filtered out and their slots still filled. Six is how often the duplicate
rule used to ask the ranker again at most, so the answers it can fill stayed the same."""


@attrs.frozen
class Ranked:
    """A candidate that passed the gate, with the score it was ordered by.

    ``matched`` is the number of distinct content words of the question found in the passage (its
    title, heading and text); ``reason`` says which path of the gate let it through
    (``"similarity"`` or ``"words"``), for eval reports and debugging.
    """

    candidate: Candidate
    score: float
    matched: int = 0
    reason: str = "similarity"


@attrs.frozen
class Gate:
    """The relevance gate of one question: numbers that belong to the model, not to the ranker.

    ``min_similarity`` is the cosine a passage must reach; ``cross_language_offset`` is how much
    lower that bar is for a passage in another language than the question, because a model's
    cosines between languages run lower by an amount of its own (0: no lower bar). Both come from
    the embedder (:meth:`of`); ``passageway eval --threshold`` overrides only ``min_similarity``.
    """

    min_similarity: float
    cross_language_offset: float = 0.0

    @classmethod
    def of(cls, embedder: Embedder, min_similarity: float | None = None) -> Gate:
        """``embedder``'s gate; ``min_similarity``, when given, replaces the embedder's own.

        :raises EmbedderError: the embedder's ``cross_language_offset`` is not a number from 0 to
            1 (see :func:`passageway.kernel.embedder.cross_language_offset_of`).
        """
        threshold = embedder.min_similarity if min_similarity is None else min_similarity
        return cls(float(threshold), cross_language_offset_of(embedder))


@runtime_checkable
class Ranker(Protocol):
    """Fuses candidates from every source and applies the relevance gate.

    ``rank`` receives the merged keyword and vector lists (each at most :data:`CANDIDATES`, ranks
    renumbered from 0 across sources, ``similarity`` filled for both) and the :class:`Gate` of the
    embedder (its ``min_similarity`` and ``cross_language_offset``). It returns the
    :class:`Ranked` that passed the gate, best first, at most one per item; an empty list means
    silence. Recall calls it once per question and reads the first :data:`DEPTH` entries (a
    ranker may stop there): the answer is the first :data:`MAX_HITS` that are not copies of one
    another, so a shorter list only leaves fewer passages to stand in for copies. It must not do
    I/O: it runs on the event loop.
    """

    name: str

    def rank(
        self,
        question: str,
        question_vector: np.ndarray,
        keyword: list[Candidate],
        vector: list[Candidate],
        gate: Gate,
    ) -> list[Ranked]: ...


@runtime_checkable
class AnswerCheck(Protocol):
    """A ranker that can also judge a whole answer (optional; the built-in rankers can).

    After the gate and the duplicate rule, recall hands the answer's hits (best first, at least
    one) to ``answerable`` with the candidate lists the ranker received, the gate, and for each
    hit the best cosine of its excerpt windows with the question (None when the hit has no
    window vectors: a short passage, an index without them). ``False`` makes the answer
    silence: the hits are close to the question, but the question as a whole looks unanswered
    by them (docs/ranking-and-gate.md, "The answerability score"). It must not do I/O.
    """

    def answerable(
        self,
        question: str,
        hits: Sequence[Candidate],
        keyword: Sequence[Candidate],
        vector: Sequence[Candidate],
        sentences: Sequence[float | None],
        gate: Gate,
    ) -> bool: ...

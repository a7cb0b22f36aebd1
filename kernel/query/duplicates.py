"""One slot per content: the same text from two sources fills one of the three places, not two.

The same content often lives in two places: a page and its translation, a page mirrored into two
tools, a note copied into another folder. Both copies match a question equally well, so without
this rule an answer spends two of its three slots (and two shares of its 400 tokens) on one
paragraph. Recall applies it to the ranker's hits before they are final (:func:`distinct`):

1. Two hits are *duplicates* when their passages have the same digest (the same embedding input),
   or when the cosine between their passage vectors reaches the cut: :data:`DUPLICATE_ACROSS` for
   two languages, :data:`DUPLICATE_COSINE` for one, measured on the sample corpus's English and
   German copies against different paragraphs of one article (``bench/duplicate_cut.py``).
   Across languages, a pair below the cut but at least :data:`MUTUAL_FLOOR` similar is one
   content too when each passage is the other's nearest among the question's candidates in its
   language (:func:`mutual`): a translation stands out among the paragraphs of its article even
   when this model rates it lower than it rates two different paragraphs of another article. The
   passage vectors come from the embedder's digest vector cache by their digests, so any store
   works; a hit whose vector is missing is compared by digest only.
2. Of two duplicates, the one in the question's language stays (English and German told apart
   by their stopwords, as the gate does); when both or neither are, the better-ranked one stays.
   The other one's item is left out and the ranker asked again, so its slot goes to the next
   passage that passes the gate, and a duplicate of that one is treated the same way.
3. Nothing is hidden: the kept hit names the sources of the copies it stands for
   (:attr:`~passageway.kernel.records.Hit.also_in`), and the rendered answer says
   "also in: corpus-de".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from passageway.kernel.index.windows import VectorLookup
from passageway.kernel.query.excerpts import candidate_digest
from passageway.kernel.query.stopwords import language_of
from passageway.kernel.store import Candidate

DUPLICATE_COSINE = 0.97
"""Two passages in one language at least this similar are one content. Different paragraphs of one
article reach 0.939 with the built-in model (``bench/duplicate_cut.py``), so only a copy with small
edits passes this."""

DUPLICATE_ACROSS = 0.88
"""Two passages in different languages at least this similar are one content (a translation).
A model's cosines between languages run lower (the gate's offset): on the sample corpus the en/de
translations lie from 0.864 to 0.944 and different paragraphs of one article across languages up
to 0.876 (``bench/duplicate_cut.py``). The cut is the lowest that takes no different pair for one:
it recognises 91 of the 95 translations."""

MUTUAL_FLOOR = 0.85
"""Across languages, two passages at least this similar are one content when they are each
other's nearest (:func:`mutual`). With the article's passages as the pool, every translation of the
sample corpus is its paragraph's mutual nearest and no different pair is, at floors from 0.84 to
0.86 (``bench/duplicate_cut.py``)."""

MAX_ROUNDS = 6
"""How often the ranker is asked again at most: each round removes one copy."""


def _duplicates(a: str, b: str, vectors: dict[str, np.ndarray], cut: float) -> bool:
    if a == b:
        return True
    if a not in vectors or b not in vectors:
        return False
    return float(np.dot(vectors[a], vectors[b])) >= cut


def _cut(one: str | None, other: str | None, same: float, across: float) -> float:
    """The cut for two candidates of languages ``one`` and ``other``: ``across`` when they differ,
    else ``same``."""
    return across if one is not None and other is not None and one != other else same


class Pool:
    """The question's candidate passages by language, their vectors fetched from the cache on
    first need (one lookup): what :func:`mutual` compares a pair of hits against."""

    def __init__(self, candidates: Sequence[Candidate], cache: VectorLookup | None) -> None:
        self._candidates = candidates
        self._cache = cache
        self._by_language: dict[str | None, np.ndarray] | None = None

    async def of(self, language: str | None) -> np.ndarray:
        """The vectors of the candidates in ``language`` (one row each; none when unknown)."""
        if self._by_language is None:
            digests: dict[str | None, dict[str, None]] = {}
            for candidate in self._candidates:
                digests.setdefault(language_of(candidate.text), {})[candidate_digest(candidate)] = None
            wanted = list(dict.fromkeys(digest for found in digests.values() for digest in found))
            vectors = await self._cache.get_many(wanted) if self._cache is not None and wanted else {}
            self._by_language = {
                name: np.asarray([vectors[digest] for digest in found if digest in vectors], dtype=np.float32)
                for name, found in digests.items()
            }
        return self._by_language.get(language, np.zeros((0, 0), dtype=np.float32))


async def mutual(a: np.ndarray, a_language: str | None, b: np.ndarray, b_language: str | None,
                 pool: Pool, floor: float = MUTUAL_FLOOR) -> bool:
    """Whether passages ``a`` and ``b`` (vectors, in two languages) are one content by the mutual
    rule: at least ``floor`` similar, ``b`` the nearest to ``a`` among the candidates in ``b``'s
    language, and ``a`` the nearest to ``b`` among those in ``a``'s."""
    if a_language is None or b_language is None or a_language == b_language:
        return False
    cosine = float(np.dot(a, b))
    if cosine < floor:
        return False
    for one, other_language in ((a, b_language), (b, a_language)):
        others = await pool.of(other_language)
        if len(others) and float(np.max(others @ one)) > cosine + 1e-6:
            return False
    return True


async def distinct(
    rank: Callable[[frozenset[tuple[str, str]]], Sequence],
    question: str,
    cache: VectorLookup | None,
    *,
    cut: float = DUPLICATE_COSINE,
    across: float = DUPLICATE_ACROSS,
    first: Sequence | None = None,
    pool: Pool | None = None,
) -> tuple[list, dict[tuple[str, str], tuple[str, ...]]]:
    """The hits of ``rank`` with no two duplicates, and the sources each kept hit stands for.

    :param rank: the ranker's hits (``Ranked``, best first) with the given ``(source, item_id)``
        pairs left out.
    :param first: ``rank(frozenset())`` when the caller has it already.
    :param pool: the question's candidate passages (both searches, every source), for the mutual
        rule across languages; without it only the cuts apply.
    :returns: the hits, and ``(source, item_id)`` of a kept hit → the sources of its dropped
        copies, in the order they were dropped.
    """
    left_out: set[tuple[str, str]] = set()
    also: dict[tuple[str, str], list[str]] = {}
    vectors: dict[str, np.ndarray] = {}
    language = language_of(question)
    ranked = list(first) if first is not None else list(rank(frozenset()))
    for _ in range(MAX_ROUNDS):
        if len(ranked) < 2:
            break
        digests = [candidate_digest(entry.candidate) for entry in ranked]
        languages = [language_of(entry.candidate.text) for entry in ranked]
        wanted = [digest for digest in digests if digest not in vectors]
        if cache is not None and wanted:
            vectors.update({digest: np.asarray(vector, dtype=np.float32)
                            for digest, vector in (await cache.get_many(wanted)).items()})
        pair = None
        for first_hit, second in _pairs(len(ranked)):
            if _duplicates(digests[first_hit], digests[second], vectors,
                           _cut(languages[first_hit], languages[second], cut, across)) or (
                    pool is not None and digests[first_hit] in vectors and digests[second] in vectors
                    and await mutual(vectors[digests[first_hit]], languages[first_hit],
                                     vectors[digests[second]], languages[second], pool)):
                pair = (first_hit, second)
                break
        if pair is None:
            break
        keep, drop = _choice(languages, pair, language)
        kept, dropped = ranked[keep].candidate, ranked[drop].candidate
        dropped_key = (dropped.source, dropped.item_id)
        left_out.add(dropped_key)
        names = also.setdefault((kept.source, kept.item_id), [])
        for name in (dropped.source, *also.pop(dropped_key, ())):
            if name != kept.source and name not in names:
                names.append(name)
        ranked = list(rank(frozenset(left_out)))
    return ranked, {key: tuple(names) for key, names in also.items() if names}


def _pairs(count: int) -> list[tuple[int, int]]:
    return [(first, second) for second in range(count) for first in range(second)]


def _choice(languages: Sequence[str | None], pair: tuple[int, int], language: str | None
            ) -> tuple[int, int]:
    """``(keep, drop)``: the one in the question's language, else the better-ranked one."""
    first, second = pair
    if language is not None:
        in_first = languages[first] == language
        in_second = languages[second] == language
        if in_second and not in_first:
            return second, first
    return first, second

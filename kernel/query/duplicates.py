"""One slot per content: the same text from two sources fills one of the three places, not two.

The same content often lives in two places: a page and its translation, a page mirrored into two
tools, a note copied into another folder. Both copies match a question equally well, so without
this rule an answer spends two of its three slots (and two shares of its 400 tokens) on one
paragraph. Recall applies it to the ranker's list before the hits are final (:func:`distinct`), as a
filter: the ranker is asked once, for up to :data:`~passageway.kernel.ranking.DEPTH` passages best
first, and the answer is the first three of them that are not copies of one another:

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
   The other one is left out and its slot goes to the next passage of the ranker's list (one that
   passed the gate), and a duplicate of that one is treated the same way. The list is read as the
   ranker ordered it with every candidate present: a copy left out does not reorder the rest.
3. Nothing is hidden: the kept hit names the sources of the copies it stands for
   (:attr:`~passageway.kernel.records.Hit.also_in`), and the rendered answer says
   "also in: corpus-de".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from passageway.kernel.index.window_vectors import VectorLookup
from passageway.kernel.query.excerpts import candidate_digest
from passageway.kernel.ranking import MAX_HITS, Ranked
from passageway.kernel.store import Candidate
from passageway.kernel.text.stopwords import language_of

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
    ranked: Sequence[Ranked],
    question: str,
    cache: VectorLookup | None,
    *,
    cut: float = DUPLICATE_COSINE,
    across: float = DUPLICATE_ACROSS,
    pool: Pool | None = None,
    limit: int = MAX_HITS,
) -> tuple[list[Ranked], dict[tuple[str, str], tuple[str, ...]]]:
    """The first ``limit`` entries of ``ranked`` with no two duplicates, and the sources each kept
    hit stands for. A filter: ``ranked`` is read in its order and never reordered.

    Each entry is compared with the hits kept so far, in their order. A duplicate of one of them
    either goes (and the next entry is read) or, in the question's language when the kept one is
    not, takes that one's place and is compared with the rest. This is the rule of asking again
    with the copy left out, on a list whose order does not change when a copy leaves it.

    :param ranked: the ranker's passages, best first, at most one per item (recall passes the first
        :data:`~passageway.kernel.ranking.DEPTH`).
    :param cache: the passages' vectors by digest; a passage without one is compared by digest.
    :param pool: the question's candidate passages (both searches, every source), for the mutual
        rule across languages; without it only the cuts apply.
    :returns: the hits, and ``(source, item_id)`` of a kept hit → the sources of its dropped
        copies, in the order they were dropped.
    """
    language = language_of(question)
    # Worked out as the entries are reached: without copies, only the first ``limit`` are.
    digests: list[str] = []
    languages: list[str | None] = []
    vectors: dict[str, np.ndarray] = {}
    also: dict[tuple[str, str], list[str]] = {}
    kept: list[int] = []  # indexes into ranked, in its order

    async def same(one: int, other: int) -> bool:
        a, b = digests[one], digests[other]
        return _duplicates(a, b, vectors, _cut(languages[one], languages[other], cut, across)) or (
            pool is not None and a in vectors and b in vectors
            and await mutual(vectors[a], languages[one], vectors[b], languages[other], pool))

    for index in range(len(ranked)):
        if len(kept) == limit:
            break
        if index == len(digests):
            # The next entries for as many slots as are free, their vectors in one lookup:
            # without copies that is the first ``limit`` entries and nothing more.
            reached = ranked[index:index + limit - len(kept)]
            digests += [candidate_digest(entry.candidate) for entry in reached]
            languages += [language_of(entry.candidate.text) for entry in reached]
            wanted = [digest for digest in digests[index:] if digest not in vectors]
            if cache is not None and wanted and len(ranked) > 1:
                vectors.update({digest: np.asarray(vector, dtype=np.float32)
                                for digest, vector in (await cache.get_many(wanted)).items()})
        staying = True
        for other in list(kept):
            if not await same(other, index):
                continue
            keep, drop = _choice(languages, (other, index), language)
            _merge(also, ranked[keep].candidate, ranked[drop].candidate)
            if drop == index:
                staying = False
                break
            kept.remove(other)
        if staying:
            kept.append(index)
    hits = [ranked[index] for index in kept]
    return hits, {key: tuple(names) for key, names in also.items() if names}


def _merge(also: dict[tuple[str, str], list[str]], kept: Candidate, dropped: Candidate) -> None:
    """Note ``dropped``'s source, and the sources it stood for, under ``kept``."""
    dropped_key = (dropped.source, dropped.item_id)
    names = also.setdefault((kept.source, kept.item_id), [])
    for name in (dropped.source, *also.pop(dropped_key, ())):
        if name != kept.source and name not in names:
            names.append(name)


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

"""The steps of the query path: what is asked, embed, candidates, rank and gate, excerpts.

:meth:`passageway.kernel.app.Kernel.recall` is the one entry of the path (the MCP tool, the hook
endpoint, ``passageway eval`` and the benches all call it with a
:class:`~passageway.kernel.records.Question`); it calls the steps below top to bottom, each a
function that returns values:

1. **What is asked** (:func:`what_is_asked`). A prompt is reduced to its question sentences
   (:func:`passageway.kernel.query.prompt.asked`: a pasted file, log or trace is not searched), and
   cut to the embedder's input limit in its tokens (:func:`within_limit`). Every later step, the
   gate's word counts included, sees only the reduced question.
2. **Worth a search?** (:func:`worth_searching`). A prompt that asks nothing is silence, without
   embedding or searching anything; so is one that is not a question when the caller asks for
   questions only (the hook: ``Question.only_questions``).
3. **Embed** the question (``kind="query"``). An embedder failure raises :class:`EmbedderError`:
   an error must never look like "the sources have nothing" (V6).
4. **Candidates** (:func:`candidates`). Every store is asked for its 50 best passages by keywords
   and by vector (``Store.search``; all stores one after the other in one worker thread, so a
   question costs one thread hand-over). The keyword search gets the question's *content words*
   only (:func:`passageway.kernel.text.stopwords.content_words`), so the function words of one
   language cannot fill the list with noise from a source in another. The per-source lists are
   merged into one list per signal (vector by cosine, keyword by the store's score) and cut to
   50. A store that raises is left out and logged with its source name and the error, never the
   question; the others still answer. Only when *every* store fails does recall raise
   :class:`StoreError`, because an answer from no index at all is not silence. The names in a
   paste around the question join the keyword search (``Asked.terms``), and those a candidate
   shows as code are embedded with the question for a second search
   (:mod:`passageway.kernel.query.prompt_names`), with the sentence before the question that
   says what went wrong (``Asked.context``); the first search, the question alone, leads.
5. **Session rules** (the hook): ``exclude_items`` drop items already shown in this session;
   ``boost_words`` raise the ``weight`` of items whose title, path or labels contain one of them
   by :data:`BOOST`.
6. **Rank and gate** with the configured :class:`Ranker` (or the request's), asked once: the
   passages that pass, best first, of which recall reads the first
   :data:`~passageway.kernel.ranking.DEPTH`. The :class:`Gate` it applies is the embedder's (the
   model's), built once when the embedder starts: its ``min_similarity`` (or the request's
   ``threshold``) and its ``cross_language_offset``, because similarity scales differ between models.
7. **One slot per content**: the duplicate rule (:mod:`passageway.kernel.query.duplicates`)
   filters that list down to at most three hits, none a copy of another; none is silence.
8. **The answer as a whole**: a ranker that judges answers may still choose silence; a question
   with context that it leaves silent is judged once more with its context (:func:`judged_hits`).
9. **Excerpts**: each hit shows its passage and its item's next most similar one, with the
   windows its excerpt may start at (:mod:`passageway.kernel.query.excerpts`).
10. **Related items**: up to three indexed items the hits link to.
11. **Notes and budget**: the notes of sources still building, then every line of the answer
    within the 400-token budget, each excerpt cut by the request's rule
    (:func:`passageway.kernel.query.rendering.fit_budget`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Sequence
from itertools import zip_longest

import attrs
import numpy as np

from passageway.kernel.embedder import MAX_TOKENS, BaseEmbedder, Embedder, with_defaults
from passageway.kernel.errors import EmbedderError
from passageway.kernel.index.window_vectors import VectorLookup
from passageway.kernel.query import prompt_names
from passageway.kernel.query.duplicates import Pool, distinct
from passageway.kernel.query.excerpts import HitWindows, anchors, joined, prefetch, with_neighbour
from passageway.kernel.query.prompt import Asked, asked, fit_to_tokens, is_question
from passageway.kernel.query.prompt_names import known_names, with_names
from passageway.kernel.query.question_queue import yielding
from passageway.kernel.query.search import gather_candidates
from passageway.kernel.ranking import DEPTH, MAX_HITS, AnswerCheck, Gate, Ranked, Ranker
from passageway.kernel.records import Hit, Related
from passageway.kernel.store import Candidate, Store
from passageway.kernel.text.not_unicode import repaired
from passageway.kernel.text.stopwords import words
from passageway.kernel.text.windows import flat, window_plan

log = logging.getLogger("passageway.recall")

MAX_RELATED = 3

BOOST = 0.1
"""The factor by which a boost word raises an item's weight (1.1 × its weight)."""


# ---------------------------------------------------------------------------------------------
# Session rules
# ---------------------------------------------------------------------------------------------


def _session_rules(found: list[Candidate], excluded: set[tuple[str, str]], boost: frozenset[str]
                   ) -> list[Candidate]:
    """``found`` without the excluded items, each boosted by the session's words."""
    if not excluded and not boost:
        return found
    return [_boosted(c, boost) for c in found if (c.source, c.item_id) not in excluded]


def alternated(first: Sequence[Ranked], second: Sequence[Ranked]) -> list[Ranked]:
    """``first`` and ``second`` taken in turn, ``first`` leading, each item once."""
    merged: list[Ranked] = []
    seen: set[tuple[str, str]] = set()
    for pair in zip_longest(first, second):
        for entry in pair:
            if entry is not None and (entry.candidate.source, entry.candidate.item_id) not in seen:
                seen.add((entry.candidate.source, entry.candidate.item_id))
                merged.append(entry)
    return merged


def _boosted(candidate: Candidate, boost: frozenset[str]) -> Candidate:
    if not boost:
        return candidate
    place = set(words(" ".join((candidate.title, *candidate.path, *candidate.labels))))
    if place & boost:
        return attrs.evolve(candidate, weight=candidate.weight * (1.0 + BOOST))
    return candidate


# ---------------------------------------------------------------------------------------------
# The steps of the query path, in the order Kernel.recall calls them
# ---------------------------------------------------------------------------------------------


def what_is_asked(prompt: str) -> Asked:
    """Step 1: ``prompt`` (Unicode repaired) reduced to its question sentences
    (:func:`passageway.kernel.query.prompt.asked`). Pure Python; recall runs it in a thread."""
    return asked(repaired(prompt))


def worth_searching(reduced: Asked, only_questions: bool) -> bool:
    """Step 2: whether to search at all: the prompt asks something, and when the caller wants
    questions only (``Question.only_questions``), it is one (:func:`is_question`)."""
    return bool(reduced.text) and (not only_questions or is_question(reduced.text))


def within_limit(reduced: Asked, embedder: BaseEmbedder) -> Asked:
    """``reduced`` cut to ``embedder``'s input limit in its own tokens."""
    if not reduced.text:
        return reduced
    limit = embedder.max_tokens if embedder.max_tokens > 0 else MAX_TOKENS
    return attrs.evolve(reduced, text=fit_to_tokens(reduced.text, embedder.count_tokens, limit))


def question_for(prompt: str, embedder: Embedder) -> Asked:
    """What recall embeds and searches for ``prompt`` (steps 1 and 3's cut, on the caller's
    thread): for benches that gather a question's candidates once and replay them."""
    return within_limit(what_is_asked(prompt), with_defaults(embedder))


async def embedded_question(reduced: Asked, embedder: Embedder) -> np.ndarray:
    """Step 3: the question's vector; a question cut out of a longer prompt lets typed ones go
    first (:mod:`passageway.kernel.query.question_queue`).

    :raises EmbedderError: the embedder failed, whatever it raised.
    """
    return await _embedded(reduced.text, embedder, reduced.why == "questions")


@attrs.frozen(eq=False)
class Found:
    """The candidates of one question: the vector searched with, the merged keyword and vector
    lists, and ``first``, the bare question's own search when a paste's names or the sentence
    before the question (``Asked.context``) led to a second one whose answer alternates with it
    (:mod:`passageway.kernel.query.prompt_names`)."""

    vector: np.ndarray
    keyword: list[Candidate]
    by_vector: list[Candidate]
    first: Found | None = None


async def candidates(reduced: Asked, vector: np.ndarray, stores: Sequence[Store], embedder: Embedder
                     ) -> Found:
    """Step 4: every store's candidates (:func:`gather_candidates`). The names of a paste around
    the question join the keyword search; those a candidate shows as code are embedded with the
    question for a second search. The ranker and the gate still read the question alone.

    :raises EmbedderError: the question with its names could not be embedded.
    :raises StoreError: every store failed.
    """
    question, rule = reduced.text, prompt_names.KEYWORD_NAMES
    searched = " ".join((question, *reduced.terms)) if rule == "all" else question
    keyword, by_vector, _failed = await gather_candidates(searched, vector, stores)
    names = known_names(reduced.terms, [*keyword, *by_vector])
    if not names and not reduced.context:
        return Found(vector, keyword, by_vector)
    first = Found(vector, keyword, by_vector) if prompt_names.BARE_FIRST or not names else None
    told = " ".join(part for part in (reduced.context, question) if part)
    vector = await _embedded(with_names(told, names), embedder, True)
    searched = " ".join((told, *names)) if rule == "known" else " ".join((reduced.context, searched)).strip()
    keyword, by_vector, _failed = await gather_candidates(searched, vector, stores)
    return Found(vector, keyword, by_vector, first)


def with_session_rules(found: Found, exclude_items: Iterable[tuple[str, str]], boost_words: Iterable[str]
                       ) -> Found:
    """Step 5: ``found`` without the items already shown, each item boosted by :data:`BOOST` when
    its title, path or labels hold a boost word (the hook's session and folder names)."""
    excluded = set(exclude_items)
    boost = frozenset(word for text in boost_words for word in words(text) if len(word) > 2)
    return _ruled(found, excluded, boost)


def _ruled(found: Found, excluded: set[tuple[str, str]], boost: frozenset[str]) -> Found:
    first = None if found.first is None else _ruled(found.first, excluded, boost)
    return Found(found.vector, _session_rules(found.keyword, excluded, boost),
                 _session_rules(found.by_vector, excluded, boost), first)


def ranked(question: str, found: Found, ranker: Ranker, gate: Gate) -> tuple[list[Ranked], Found]:
    """Step 6, rank and gate: the ranker's list cut to :data:`DEPTH` (asked twice for a paste
    whose bare search stays first, the two lists alternated), and the search the answer as a
    whole is judged by."""
    ordered = list(ranker.rank(question, found.vector, found.keyword, found.by_vector, gate))[:DEPTH]
    first = found.first
    if first is None:
        return ordered, found
    leading = ranker.rank(question, first.vector, first.keyword, first.by_vector, gate)
    return alternated(leading, ordered)[:DEPTH], (first if leading else found)


async def distinct_hits(ordered: list[Ranked], question: str, found: Found, vector_cache: VectorLookup | None
                        ) -> tuple[list[Ranked], dict[tuple[str, str], tuple[str, ...]], VectorLookup | None]:
    """Step 7, one slot per content: at most :data:`MAX_HITS` of ``ordered``, none a copy of
    another (:mod:`passageway.kernel.query.duplicates`); the sources each kept hit is also in, and
    the window vectors fetched for them (used again by the excerpts)."""
    pool = [*found.by_vector, *found.keyword]
    lookup = await prefetch(vector_cache, [entry.candidate for entry in ordered[:MAX_HITS]], pool)
    kept, copies = await distinct(ordered, question, lookup, pool=Pool(pool, vector_cache))
    return kept, copies, lookup


async def answerable(question: str, kept: list[Ranked], judged: Found, ranker: Ranker, gate: Gate,
                     lookup: VectorLookup | None) -> bool:
    """Step 8, the answer as a whole: there are hits, and a ranker that judges answers
    (:class:`AnswerCheck`) does not choose silence."""
    if not kept:
        return False
    if not isinstance(ranker, AnswerCheck):
        return True
    hits = [entry.candidate for entry in kept]
    sentences = await sentence_cosines(hits, judged.vector, lookup)
    return ranker.answerable(question, hits, judged.keyword, judged.by_vector, sentences, gate)


Judged = tuple[str, Found, list[Ranked], dict[tuple[str, str], tuple[str, ...]], VectorLookup | None]
"""What :func:`judged_hits` answers: the text judged, its search, the kept hits, their copies and
the window vectors fetched for them."""


async def judged_hits(reduced: Asked, found: Found, ranker: Ranker, gate: Gate,
                      vector_cache: VectorLookup | None) -> Judged | None:
    """Steps 6 to 8 (:func:`ranked`, :func:`distinct_hits`, :func:`answerable`); None is silence.

    A question with context (``Asked.context``: the sentence before it beside a paste) is judged
    by the question alone first; when that is silence, once more as the context and the question
    together, on the search made with both, which is how the question was read before it had a
    context of its own. The text that answered goes on to the excerpts and the budget."""
    attempts = [(reduced.text, found)]
    if reduced.context and found.first is not None:
        attempts.append((f"{reduced.context} {reduced.text}", attrs.evolve(found, first=None)))
    for text, searched in attempts:
        ordered, judged = ranked(text, searched, ranker, gate)
        kept, copies, lookup = await distinct_hits(ordered, text, searched, vector_cache)
        if await answerable(text, kept, judged, ranker, gate, lookup):
            return text, searched, kept, copies, lookup
    return None


async def excerpt_texts(kept: list[Ranked], copies: dict[tuple[str, str], tuple[str, ...]], found: Found,
                        lookup: VectorLookup | None) -> tuple[tuple[Hit, ...], dict[str, HitWindows]]:
    """Step 9: the hits, each with its passage and its item's next most similar one as its text
    (:func:`passageway.kernel.query.excerpts.with_neighbour`), and each text's windows with their
    similarity to the question, where its excerpt will start (cut by the budget, step 11), with
    where the hit's own passage lies in it (:class:`~passageway.kernel.query.excerpts.HitWindows`)."""
    pool = [*found.by_vector, *found.keyword]
    parts = [with_neighbour(entry.candidate, pool) for entry in kept]
    hits = tuple(
        attrs.evolve(_hit(entry), text=joined(part),
                     also_in=copies.get((entry.candidate.source, entry.candidate.item_id), ()))
        for entry, part in zip(kept, parts, strict=True)
    )
    owns = [entry.candidate.text for entry in kept]
    return hits, await anchors(list(zip(parts, owns, strict=True)), found.vector, lookup)


async def sentence_cosines(hits: Sequence[Candidate], question_vector: np.ndarray,
                           lookup: VectorLookup | None) -> list[float | None]:
    """For each hit, the best cosine of its excerpt windows with the question (the vectors the
    index made for excerpts, already fetched for the excerpts); None for a hit without them."""
    if lookup is None:
        return [None] * len(hits)
    plans = [window_plan(flat(hit.text)) for hit in hits]
    found = await lookup.get_many([digest for plan in plans for _, digest in plan])
    query = np.asarray(question_vector, dtype=np.float32).reshape(-1)
    best: list[float | None] = []
    for plan in plans:
        cosines = [float(np.dot(np.asarray(found[digest], dtype=np.float32), query))
                   for _, digest in plan if digest in found]
        best.append(max(cosines) if cosines else None)
    return best


async def _embedded(text: str, embedder: Embedder, pasted: bool) -> np.ndarray:
    """``text``'s query vector; a question cut out of a longer prompt (``pasted``) lets typed
    questions go first (question_queue).

    :raises EmbedderError: the embedder failed, whatever it raised.
    """
    try:
        with yielding() if pasted else contextlib.nullcontext():
            vectors = await embedder.embed([text], "query")
    except EmbedderError:
        raise
    except Exception as error:  # an embedder plugin's bug must not read as silence either
        raise EmbedderError(
            f"the embedder failed on the question: {type(error).__name__}: {error}"
        ) from error
    return np.asarray(vectors, dtype=np.float32).reshape(-1)


def _hit(entry: Ranked) -> Hit:
    candidate = entry.candidate
    return Hit(
        source=candidate.source,
        item_id=candidate.item_id,
        title=candidate.title,
        url=candidate.url,
        heading=candidate.heading,
        text=candidate.text,
        score=entry.score,
        similarity=candidate.similarity,
        path=candidate.path,
        labels=candidate.labels,
        updated=candidate.updated,
        links=candidate.links,
        anchor=candidate.anchor,
    )


async def related_items(ranked: Sequence[Ranked], stores: Sequence[Store]) -> tuple[Related, ...]:
    """Step 10: up to three indexed items the hits link to, in the hits' order, without the hits."""
    shown = {entry.candidate.item_id for entry in ranked}
    wanted: list[str] = []
    for entry in ranked:
        for link in entry.candidate.links:
            if link not in shown and link not in wanted:
                wanted.append(link)
    if not wanted:
        return ()
    results = await asyncio.gather(*(store.items(wanted) for store in stores), return_exceptions=True)
    found: dict[str, Related] = {}
    for store, result in zip(stores, results, strict=True):
        if isinstance(result, BaseException):
            if not isinstance(result, Exception):
                raise result
            log.warning("recall: related items of source %r skipped: %s", store.source, type(result).__name__)
            continue
        for item in result:
            found.setdefault(item.item_id, Related(store.source, item.item_id, item.title, item.url))
    return tuple(found[item_id] for item_id in wanted if item_id in found)[:MAX_RELATED]

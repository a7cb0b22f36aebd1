"""The query path: embed the question, gather candidates from every source, rank, gate, trim.

``recall`` is what the MCP tool, the hook endpoint and ``passageway eval`` call (through
``Kernel.recall``). Its steps:

0. **What is asked.** A prompt is reduced to its question sentences first
   (:func:`passageway.kernel.query.prompt.asked`: a pasted file, log or trace is not searched), and cut
   to the embedder's input limit in its tokens; the names in a paste around the question join
   the keyword search (``Asked.terms``), and those a candidate shows as code are embedded with
   the question for a second search (:mod:`passageway.kernel.query.prompt_names`). A prompt
   that asks nothing is silence, without embedding or searching anything. Every later step, the
   gate's word counts included, sees only the reduced question.
1. **Embed** the question (``kind="query"``). An embedder failure raises :class:`EmbedderError`:
   an error must never look like "the sources have nothing" (V6).
2. **Candidates.** Every store is asked for its 50 best passages by keywords and by vector
   (``Store.search``; all stores one after the other in one worker thread, so a question costs
   one thread hand-over). The keyword search gets the question's *content words* only
   (:func:`passageway.kernel.text.stopwords.content_words`), so the function words of one language
   cannot fill the list with noise from a source in another. The per-source lists are merged
   into one list per signal (vector by cosine, keyword by the store's score) and cut to 50. A
   store that raises is left out and logged with its source name and the error, never the
   question; the others still answer. Only when *every* store fails does recall raise
   :class:`StoreError`, because an answer from no index at all is not silence.
3. **Session rules** (hook endpoint): ``exclude_items`` drop items already shown in this session;
   ``boost_words`` raise the ``weight`` of items whose title, path or labels contain one of them
   by :data:`BOOST`.
4. **Rank and gate** with the configured :class:`Ranker`, asked once: the passages that pass,
   best first, of which recall reads the first :data:`~passageway.kernel.ranking.DEPTH`. The
   :class:`Gate` it applies is the embedder's (the model's): its ``min_similarity`` and its
   ``cross_language_offset``, because similarity scales differ between models.
   **One slot per content**: the duplicate rule (:mod:`passageway.kernel.query.duplicates`)
   filters that list down to at most three hits, none a copy of another; none is silence.
5. **The answer**: the hits' passages as excerpts plus up to three related items (the hits'
   ``links`` that are indexed), trimmed to the 400-token budget and rendered by
   :mod:`passageway.kernel.query.rendering`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import zip_longest

import attrs
import numpy as np

from passageway.kernel.embedder import MAX_TOKENS, Embedder, with_defaults
from passageway.kernel.errors import EmbedderError, StoreError
from passageway.kernel.index.window_vectors import VectorLookup
from passageway.kernel.query import prompt_names
from passageway.kernel.query.duplicates import Pool, distinct
from passageway.kernel.query.excerpts import anchors, joined, prefetch, with_neighbour
from passageway.kernel.query.prompt import Asked, asked, fit_to_tokens
from passageway.kernel.query.prompt_names import known_names, with_names
from passageway.kernel.query.question_queue import yielding
from passageway.kernel.query.rendering import fit_budget
from passageway.kernel.ranking import CANDIDATES, DEPTH, MAX_HITS, AnswerCheck, Gate, Ranked, Ranker
from passageway.kernel.records import Answer, Hit, Related
from passageway.kernel.store import Candidate, Store
from passageway.kernel.text.stopwords import content_words, words
from passageway.kernel.text.windows import flat, window_plan

log = logging.getLogger("passageway.recall")

MAX_RELATED = 3

BOOST = 0.1
"""The factor by which a boost word raises an item's weight (1.1 × its weight)."""


# ---------------------------------------------------------------------------------------------
# Candidates
# ---------------------------------------------------------------------------------------------


def keyword_query(question: str) -> str:
    """What the keyword search is given: the question's content words, space-separated.

    An empty string (a question of stopwords only) means no keyword search at all.
    """
    return " ".join(content_words(question))


def merge_candidates(
    lists: Iterable[Sequence[Candidate]], by: str, limit: int = CANDIDATES
) -> list[Candidate]:
    """One list from per-source lists: best first by ``by`` (``"similarity"`` or
    ``"keyword_score"``, higher is better), cut to ``limit``, ranks renumbered from 0."""
    pooled = [candidate for one in lists for candidate in one]
    pooled.sort(key=lambda candidate: (-getattr(candidate, by), candidate.source, candidate.passage_key))
    return [candidate.at_rank(rank) for rank, candidate in enumerate(pooled[:limit])]


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


SEARCH_THREADS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="recall-search")
"""Where the stores' searches run: all stores one after the other in one thread, one hand-over a
question (``bench/recall.py --compare-gather`` times it against the former two hand-overs per
store; numbers in docs/performance.md). SQLite queries of one process barely run in parallel here
anyway, so a large store after a small one costs hardly more than the two side by side. Four
threads let concurrent questions go on without queueing behind one another."""


def _search_all(stores: Sequence[Store], query: str, vector: np.ndarray
                ) -> list[tuple[list[Candidate], list[Candidate]] | Exception]:
    """Every store's keyword and vector candidates, or the exception it raised (in a thread)."""
    results: list[tuple[list[Candidate], list[Candidate]] | Exception] = []
    for store in stores:
        try:
            keyword, by_vector = store.search(query, vector, CANDIDATES)
            results.append((list(keyword), list(by_vector)))
        except Exception as error:  # one store's failure leaves the others' answers
            results.append(error)
    return results


def _without_question(message: str, question: str) -> str:
    """``message``, unless it quotes a word of the question (a search error may echo its query)."""
    folded = set(words(message))
    if any(len(word) > 2 and word in folded for word in content_words(question)):
        return "(the message is withheld because it quotes the question)"
    return message


async def gather_candidates(
    question: str, vector: np.ndarray, stores: Sequence[Store]
) -> tuple[list[Candidate], list[Candidate], list[str]]:
    """Ask every store at once; the merged keyword and vector lists and the sources that failed.

    :raises StoreError: every store failed (with at least one store configured).
    """
    query = keyword_query(question)
    loop = asyncio.get_running_loop()
    results = await loop.run_in_executor(SEARCH_THREADS, _search_all, stores, query, vector)
    keyword_lists, vector_lists, failed = [], [], []
    for store, result in zip(stores, results, strict=True):
        if isinstance(result, Exception):
            failed.append(store.source)
            # V2: the source and the error, never the question.
            log.warning(
                "recall: source %r skipped: %s: %s",
                store.source, type(result).__name__, _without_question(str(result), question),
            )
            continue
        keyword_lists.append(result[0])
        vector_lists.append(result[1])
    if stores and len(failed) == len(stores):
        raise StoreError(
            f"every index failed to answer ({', '.join(failed)}); see the log and /health for the cause"
        )
    return (
        merge_candidates(keyword_lists, "keyword_score"),
        merge_candidates(vector_lists, "similarity"),
        failed,
    )


# ---------------------------------------------------------------------------------------------
# The query path
# ---------------------------------------------------------------------------------------------


async def recall(
    prompt: str | Asked,
    stores: Sequence[Store],
    embedder: Embedder,
    ranker: Ranker,
    *,
    min_similarity: float | None = None,
    boost_words: Iterable[str] = (),
    exclude_items: Iterable[tuple[str, str]] = (),
    vector_cache: VectorLookup | None = None,
) -> Answer:
    """At most three passages for ``prompt`` from ``stores``, or a silent :class:`Answer`.

    :param prompt: a prompt, reduced here to what it asks; or what a caller reduced it to
        already (the hook endpoint decides on the reduced text whether to search at all), so a
        prompt is reduced once.
    :param embedder: an :class:`passageway.kernel.embedder.Embedder`; its ``min_similarity`` and
        ``cross_language_offset`` are the :class:`Gate`, except that ``min_similarity``, when
        given, replaces its ``min_similarity`` (``passageway eval --threshold``). The offset is
        always the embedder's.
    :param boost_words: words (the hook's last two folder names) that raise an item's weight
        when its title, path or labels contain one.
    :param exclude_items: ``(source, item_id)`` pairs that must not be returned (already shown).
    :param vector_cache: the embedder's digest vector cache, for the passages' and their windows'
        vectors: duplicates are then told by cosine (:mod:`passageway.kernel.query.duplicates`) and
        excerpts chosen by meaning (:mod:`passageway.kernel.query.excerpts`); without it, by digest and
        by the question's words.
    :raises EmbedderError: the question could not be embedded, or the embedder's
        ``cross_language_offset`` is invalid.
    :raises StoreError: every store failed.
    """
    gate = Gate.of(embedder, min_similarity)
    reduced = question_for(prompt, embedder)
    question = reduced.text
    if not question:
        return Answer()
    vector = await _embedded(question, embedder, reduced.why == "questions")
    if not stores:
        return Answer()

    # The names of a paste around the question join the keyword search; those a candidate shows
    # as code are embedded with the question for a second search (kernel/query/prompt_names.py).
    # The ranker and the gate still read the question alone.
    rule = prompt_names.KEYWORD_NAMES
    searched = " ".join((question, *reduced.terms)) if rule == "all" else question
    keyword, by_vector, _failed = await gather_candidates(searched, vector, stores)
    names = known_names(reduced.terms, [*keyword, *by_vector])
    first: tuple[np.ndarray, list[Candidate], list[Candidate]] | None = None
    if names:
        first = (vector, keyword, by_vector) if prompt_names.BARE_FIRST else None
        vector = await _embedded(with_names(question, names), embedder, True)
        searched = " ".join((question, *names)) if rule == "known" else searched
        keyword, by_vector, _failed = await gather_candidates(searched, vector, stores)

    excluded = {(source, item_id) for source, item_id in exclude_items}
    boost = frozenset(word for text in boost_words for word in words(text) if len(word) > 2)
    keyword, by_vector = _session_rules(keyword, excluded, boost), _session_rules(by_vector, excluded, boost)

    # The ranker is asked once (twice for a paste whose first search stays first); the duplicate
    # rule filters its list (kernel/query/duplicates.py).
    ordered = list(ranker.rank(question, vector, keyword, by_vector, gate))[:DEPTH]
    judged = (vector, keyword, by_vector)  # what the answer as a whole is judged by
    if first is not None:
        lists = [_session_rules(part, excluded, boost) for part in first[1:]]
        leading = ranker.rank(question, first[0], lists[0], lists[1], gate)
        ordered = alternated(leading, ordered)[:DEPTH]
        judged = (first[0], lists[0], lists[1]) if leading else judged
    candidates = [*by_vector, *keyword]
    lookup = await prefetch(vector_cache, [entry.candidate for entry in ordered[:MAX_HITS]], candidates)
    ranked, copies = await distinct(ordered, question, lookup, pool=Pool(candidates, vector_cache))
    if not ranked:
        return Answer()
    # The answer as a whole: a ranker that judges answers may still choose silence.
    if isinstance(ranker, AnswerCheck):
        hit_candidates = [entry.candidate for entry in ranked]
        sentences = await sentence_cosines(hit_candidates, judged[0], lookup)
        if not ranker.answerable(question, hit_candidates, judged[1], judged[2], sentences, gate):
            return Answer()
    related = await _related(ranked, stores)
    hits = tuple(
        attrs.evolve(_hit(entry), also_in=copies.get((entry.candidate.source, entry.candidate.item_id), ()))
        for entry in ranked
    )
    # Each hit shows its passage and its item's next most similar one (kernel/query/excerpts.py).
    parts = [with_neighbour(entry.candidate, [*by_vector, *keyword]) for entry in ranked]
    hits = tuple(attrs.evolve(hit, text=joined(part)) for hit, part in zip(hits, parts, strict=True))
    starts = await anchors(parts, vector, lookup)
    return fit_budget(Answer(hits=hits, related=tuple(related)), question, anchors=starts)


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


def question_for(prompt: str | Asked, embedder: Embedder) -> Asked:
    """What recall embeds and searches for ``prompt``: its question sentences
    (:func:`passageway.kernel.query.prompt.asked`, unless the caller reduced it already and hands
    over the :class:`Asked`) within ``embedder``'s input limit in its own tokens (``""``: none)."""
    reduced = prompt if isinstance(prompt, Asked) else asked(prompt)
    if not reduced.text:
        return reduced
    model = with_defaults(embedder)
    limit = model.max_tokens if model.max_tokens > 0 else MAX_TOKENS
    return attrs.evolve(reduced, text=fit_to_tokens(reduced.text, model.count_tokens, limit))


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


async def _related(ranked: Sequence[Ranked], stores: Sequence[Store]) -> list[Related]:
    """Up to three indexed items the hits link to, in the hits' order, without the hits."""
    shown = {entry.candidate.item_id for entry in ranked}
    wanted: list[str] = []
    for entry in ranked:
        for link in entry.candidate.links:
            if link not in shown and link not in wanted:
                wanted.append(link)
    if not wanted:
        return []
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
    return [found[item_id] for item_id in wanted if item_id in found][:MAX_RELATED]

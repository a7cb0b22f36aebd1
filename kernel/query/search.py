"""Step 4 of the query path: every store's candidates for one question, merged per signal.

Every store is asked for its :data:`~passageway.kernel.ranking.CANDIDATES` best passages by
keywords and by vector (``Store.search``), all stores one after the other in one worker thread.
The keyword search gets the question's content words only. A store that fails is left out and
logged without the question; only when every store fails is it an error
(:mod:`passageway.kernel.query.recall` describes the whole path).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from passageway.kernel.errors import StoreError
from passageway.kernel.ranking import CANDIDATES
from passageway.kernel.store import Candidate, Store
from passageway.kernel.text.stopwords import content_words, words

log = logging.getLogger("passageway.recall")


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



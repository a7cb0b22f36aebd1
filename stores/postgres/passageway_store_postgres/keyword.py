"""Keyword search in PostgreSQL the way the sqlite store searches with FTS5: the same words, and
the same BM25 score.

**Words.** The sqlite store's FTS5 tokenizer (``unicode61``) splits text at every character that
is not a letter or a digit. PostgreSQL's parser instead keeps some runs whole (``scale-out`` is
also one word, ``docs/scale-out.md`` a file name, ``example.com`` a host), which a question's
words then do not find. So the text is split here, into letters and digits, before PostgreSQL
sees it (:func:`words_text`); the parser then finds exactly those words, and ``unaccent`` and
the ``simple`` dictionary fold them as FTS5 does.

**Score.** FTS5's ``bm25()`` with the sqlite store's column weights (title 2, path 1, heading 1.5,
text 1): for each of the question's terms, its inverse document frequency
``ln((N - n + 0.5) / (n + 0.5))`` (at least 1e-6) times
``f · (k1 + 1) / (f + k1 · (1 - b + b · length / average length))`` with ``k1 = 1.2``,
``b = 0.75``; the terms' parts add up. ``f`` is the term's weighted count in the passage:
``ts_rank_cd`` of a one-term query without normalisation is exactly the sum of its occurrences'
weights (each occurrence is a cover of one word). Its weights must be at most 1, so they are
halved here and the count doubled. ``length`` is the passage's number of words (a stored column,
see :mod:`.schema`); ``n`` is counted among the term's matches; ``N`` and the average length come
with the word statistics (:mod:`.budget`): counted on a small index, estimated on a large one.

The ranking reads only the narrow words table (:mod:`.schema`); only the best passages by score are
then joined with their passages and items, so a term that matches thousands of passages costs its
ranking, not thousands of joins.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np
from psycopg import sql

from passageway import BM25_WEIGHTS, CJK_CHARACTER, Candidate, ItemUpdate, index_text

COLUMN_WEIGHTS = dict(zip(("title", "path", "heading", "text"), BM25_WEIGHTS, strict=True))
"""BM25 weight of a word in each part of a passage: ``passageway.BM25_WEIGHTS``, as the sqlite store
weighs them."""
RANK_WEIGHTS = "{%s}" % ", ".join(  # noqa: UP031 (an array literal's braces)
    str(COLUMN_WEIGHTS[part] / 2) for part in ("text", "path", "heading", "title"))
"""``ts_rank_cd``'s weights of D (text), C (path), B (heading) and A (title): half of
:data:`COLUMN_WEIGHTS`, since ``ts_rank_cd`` takes none above 1."""
COLUMNS = ("p.key, p.item, p.heading, p.text, i.title, i.url, i.weight, i.path, i.labels, i.links, i.updated,"
           " p.anchor")
"""What a candidate needs from a passage row and its item's row (this schema's names, the columns
the sqlite store reads too), in the order :func:`candidate` unpacks them."""
K1 = 1.2
B = 0.75

_LETTERS_AND_DIGITS = re.compile(r"[^\W_]+")


def words_text(text: str) -> str:
    """``text`` as the words the sqlite store's FTS5 index finds in it, one space apart: ``ß`` as
    ``ss``, each CJK character a word (:func:`index_text`), everything but letters and digits a
    separator."""
    return " ".join(_LETTERS_AND_DIGITS.findall(index_text(unicodedata.normalize("NFC", text))))

def vector_literal(vector: np.ndarray) -> str:
    """pgvector's text form of a vector: ``[0.1,0.2,...]``."""
    return "[" + ",".join(map(repr, np.asarray(vector, dtype=np.float32).tolist())) + "]"


def passage_rows(update: ItemUpdate, path_separator: str) -> list[tuple[Any, ...]]:
    """One row per passage of ``update`` for the store's insert: the passage's columns, its vector
    as pgvector text, then the title, heading, path and text as :func:`words_text` words (the
    keyword side reads those)."""
    item = update.item
    title = words_text(item.title)
    path = words_text(path_separator.join(item.path))
    return [(item.id, passage.ordinal, passage.heading, passage.text, passage.digest,
             vector_literal(vector), passage.anchor, title, words_text(passage.heading or ""),
             path, words_text(passage.text))
            for passage, vector in zip(update.passages, update.vectors, strict=True)]



def tsquery_text(terms: list[str]) -> str | None:
    """A question's terms (:func:`passageway.query_terms`) as a ``to_tsquery``
    expression of quoted words joined by ``|`` (OR); a CJK pair is the phrase of its two
    characters, as :func:`words_text` stores them apart.

    Terms are runs of word characters, so a question can never be tsquery syntax; None when there
    are no terms.
    """
    parts = []
    for term in terms:
        if CJK_CHARACTER.search(term):
            parts.append("(" + " <-> ".join(f"'{character}'" for character in term) + ")")
        else:
            parts.append(f"'{term}'")
    return " | ".join(parts) or None


def bm25_statement(words: sql.Composable, passages: sql.Composable, items: sql.Composable,
                   config: sql.Composable) -> sql.Composed:
    """The keyword search: the ``%(limit)s`` best passages for ``%(terms)s`` (``to_tsquery``
    texts, one per term) by BM25, best first, each with its columns (:data:`COLUMNS`), its score
    and its cosine to ``%(vector)s``; ``%(rows)s`` is ``N`` and ``%(average)s`` the average
    length.

    ``t`` is ``MATERIALIZED``: inlined, PostgreSQL would parse each term's ``to_tsquery`` (with
    ``unaccent``) again for every matching passage it ranks."""
    return sql.SQL(
        "WITH t AS MATERIALIZED (SELECT u.number, to_tsquery({config}::regconfig, u.text) AS q "  # noqa: S608
        "FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS u(text, number)), "
        "hits AS (SELECT t.number, m.key, m.length, "
        "2 * ts_rank_cd(%(weights)s, m.words, t.q, 0) AS f FROM t JOIN {words} m ON m.words @@ t.q), "
        "frequency AS (SELECT number, count(*)::float8 AS n FROM hits GROUP BY number), "
        "best AS (SELECT h.key, sum(greatest(ln((%(rows)s - f.n + 0.5) / (f.n + 0.5)), 1e-6) "
        "* h.f * (%(k1)s + 1) / (h.f + %(k1)s * (1 - %(b)s + %(b)s * h.length / %(average)s))) AS score "
        "FROM hits h JOIN frequency f USING (number) "
        "GROUP BY h.key ORDER BY score DESC, h.key LIMIT %(limit)s) "
        "SELECT " + COLUMNS + ", best.score, 1 - (p.vector <=> %(vector)s::vector) AS similarity "
        "FROM best JOIN {passages} p ON p.key = best.key JOIN {items} i ON i.id = p.item "
        "ORDER BY best.score DESC, best.key"
    ).format(words=words, passages=passages, items=items, config=config)


def bm25_parameters(terms: list[str], rows: float, average: float, vector: str, limit: int
                    ) -> dict[str, object]:
    """The parameters of :func:`bm25_statement`."""
    return {"terms": terms, "weights": RANK_WEIGHTS, "k1": K1, "b": B, "rows": float(rows),
            "average": float(average), "vector": vector, "limit": limit}


def candidate(source: str, row: Sequence[Any], rank: int, keyword_score: float, similarity: float
              ) -> Candidate:
    """The candidate of one search row (its :data:`COLUMNS`) at ``rank`` in its list."""
    key, item_id, heading, text, title, url, weight, path, labels, links, updated, anchor = row
    return Candidate(
        source, int(key), item_id, title, url, heading, text, float(similarity), rank,
        float(keyword_score), float(weight), tuple(path or ()), tuple(labels or ()),
        tuple(links or ()), updated, anchor,
    )

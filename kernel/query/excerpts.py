"""Excerpts chosen by meaning: which part of a long passage an answer shows.

An answer shows each hit's passage cut to its share of the 400-token budget (about 400
characters each when three hits share it), so a passage of 1,000 characters loses more than half
of its text, and with it, often, the answer. Where the cut falls is decided here:

* **At index time** the sync embeds the *windows* of every long passage (runs of a few sentences
  side by side) into the embedder's digest vector cache
  (:func:`passageway.kernel.index.windows.embed_windows`). The cache is the store of these
  vectors because it already belongs to the embedder, survives a rebuild (a rerun embeds
  nothing) and serves every store plugin alike, without a change to any store's schema.
* **At recall** (:func:`anchors`), the hits' passages are cut the same way
  (``kernel/index/windows.py``) and their windows' vectors fetched with one ``get_many``. The
  excerpt starts at the window most similar to the question, and starts earlier when the rest of
  the passage would leave part of the share unused (:func:`cut`). Similarity works across
  languages: a German question finds the sentence of an English passage that answers it, which
  shared words cannot do.
* **A lone hit** shows its item's next most similar candidate passage too (:func:`with_neighbour`):
  the whole budget is its own, and the excerpt is chosen from both passages' windows.
* **The fallback** is the word rule (:func:`word_start`): the sentence holding the most content
  words of the question. It applies to a passage whose window vectors are missing (an index built
  before the windows existed, a store built elsewhere, a first build still running).

``bench/excerpt_study.py`` measures the window sizes against the budget and what the windows
cost a build; the numbers are on the measurements page (docs/measurements.md, "Excerpts").
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence

import numpy as np

from passageway.kernel.index.chunking import blocks, digest_of, embedding_input
from passageway.kernel.index.windows import SHORT_PASSAGE, VectorLookup, flat, sentence_starts, window_plan
from passageway.kernel.query.stopwords import content_words, words
from passageway.kernel.store import Candidate

LEAD = 1 / 3
"""How much of an excerpt may come before the sentence it was chosen for. Measured against 0 to
1/2 by ``bench/excerpt_cut.py`` (docs/measurements.md, "Excerpts")."""


def candidate_digest(candidate: Candidate) -> str:
    """The digest of a candidate's passage, as the sync computed it (``kernel/index/chunking.py``)."""
    return digest_of(embedding_input(candidate.title, candidate.path, candidate.heading, candidate.text))


RECENT_VECTORS = 4096
"""Vectors kept in memory per cache for the next questions (about 6 MB at 384 dimensions): the
same passages come back often, and each call into the cache's thread costs a hand-over."""

_recent: weakref.WeakKeyDictionary[object, OrderedDict[str, np.ndarray]] = weakref.WeakKeyDictionary()


class Prefetched:
    """The vectors one question needs, fetched before the duplicate rule and the excerpts look
    them up: a digest that was not fetched counts as missing (compared by digest, word rule)."""

    def __init__(self, found: Mapping[str, np.ndarray]) -> None:
        self.found = dict(found)

    async def get_many(self, digests: Sequence[str]) -> Mapping[str, np.ndarray]:
        return {digest: self.found[digest] for digest in digests if digest in self.found}


async def prefetch(cache: VectorLookup | None, hits: Sequence[Candidate], candidates: Sequence[Candidate]
                   ) -> Prefetched | None:
    """In one lookup (none for vectors used recently): ``hits``' passage vectors and the windows
    of their passages and of a lone hit's neighbour (:func:`with_neighbour`). None without a cache."""
    if cache is None:
        return None
    texts = {hit.text for hit in hits}
    for hit in hits:
        texts.update(neighbour.text for neighbour in _neighbours(hit, candidates)[:1])
    wanted = [candidate_digest(hit) for hit in hits]
    wanted += [digest for text in texts for _, digest in window_plan(flat(text))]
    try:
        recent = _recent.setdefault(cache, OrderedDict())
    except TypeError:  # a lookup that cannot be weakly referenced: nothing kept
        recent = OrderedDict()
    found = {digest: recent[digest] for digest in wanted if digest in recent}
    missing = [digest for digest in dict.fromkeys(wanted) if digest not in found]
    if missing:
        fetched = await cache.get_many(missing)
        found.update(fetched)
        recent.update(fetched)
    for digest in found:
        recent.move_to_end(digest)
    while len(recent) > RECENT_VECTORS:
        recent.popitem(last=False)
    return Prefetched(found)


async def anchors(
    hits: Sequence[Sequence[str]], question_vector: np.ndarray, cache: VectorLookup | None
) -> dict[str, int]:
    """For each hit, given as its passage texts (one, or a lone hit's two, :func:`with_neighbour`),
    where its best window starts in the flat text of those passages joined: the window most
    similar to the question, the first on a tie. Each passage is cut into windows on its own, as
    :func:`embed_windows` cut it, so the windows' digests are the ones stored. A hit is left out
    (the word rule) when none of its passages is long or any long one lacks a window vector."""
    if cache is None:
        return {}
    plans: dict[str, list[tuple[int, str]]] = {}
    for parts in hits:
        text = flat(joined(parts))
        if len(text) <= SHORT_PASSAGE or text in plans:
            continue
        plan, offset = [], 0
        for part in map(flat, parts):
            plan += [(offset + start, digest) for start, digest in window_plan(part)]
            offset += len(part) + 1  # the space that joins it to the next passage
        if plan:
            plans[text] = plan
    if not plans:
        return {}
    vectors = await cache.get_many([digest for plan in plans.values() for _, digest in plan])
    query = np.asarray(question_vector, dtype=np.float32).reshape(-1)
    found: dict[str, int] = {}
    for text, plan in plans.items():
        if any(digest not in vectors for _, digest in plan):
            continue  # the windows were not made (an older index, a first build still running)
        scores = [float(np.dot(np.asarray(vectors[digest], dtype=np.float32), query)) for _, digest in plan]
        found[text] = plan[int(np.argmax(scores))][0]
    return found


def with_neighbour(hit: Candidate, candidates: Sequence[Candidate]) -> list[str]:
    """A lone hit's passage texts: its own and the most similar other candidate passage of its
    item, in the item's order (shown joined by a blank line). One hit has the whole budget (about
    1,500 characters), room for two passages, and the answer is often in the item's next-best
    passage when the question matches the article better than its paragraph (on the public set,
    most misses of a right article)."""
    neighbours = _neighbours(hit, candidates)
    if not neighbours:
        return [hit.text]
    pair = sorted((hit, neighbours[0]), key=lambda candidate: candidate.passage_key)
    return [candidate.text for candidate in pair]


def joined(parts: Sequence[str]) -> str:
    """A hit's passages as one text (a lone hit shows two, :func:`with_neighbour`): what the answer
    shows and what :func:`anchors` keys its starts by."""
    return "\n\n".join(parts)


def _neighbours(hit: Candidate, candidates: Sequence[Candidate]) -> list[Candidate]:
    """The other candidate passages of ``hit``'s item, most similar first."""
    item = (hit.source, hit.item_id)
    found = {candidate.text: candidate for candidate in candidates
             if (candidate.source, candidate.item_id) == item and candidate.text != hit.text}
    return sorted(found.values(), key=lambda candidate: -candidate.similarity)


def word_start(text: str, question: str, limit: int) -> int:
    """The word rule: the start of the sentence holding the most distinct content words of the
    question (then the excerpt of ``limit`` characters holding the most; the first on a tie)."""
    question_words = set(content_words(question))
    starts = sentence_starts(text)
    best_start, best_key = 0, (-1, -1)
    for number, start in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else len(text)
        key = (
            len(question_words & set(words(text[start:end]))),
            len(question_words & set(words(text[start : start + limit]))),
        )
        if key > best_key:
            best_start, best_key = start, key
    return best_start


def unit_starts(text: str) -> list[int]:
    """Where an excerpt of ``text`` may start or end, as offsets in its flat text: the sentences of
    its paragraphs, and every line of its code blocks, every row of its tables and every line of
    its lists (a list item, or a line under it), so that a cut never splits a line of code or a
    row in two. For prose alone these are exactly :func:`sentence_starts` of the flat text."""
    found: list[int] = []
    offset = 0
    for kind, block in blocks(text):
        block_flat = flat(block)
        if not block_flat:
            continue
        if kind == "paragraph":
            found += [offset + start for start in sentence_starts(block_flat)]
        else:
            line_offset = offset
            for line in block.split("\n"):
                line_flat = flat(line)
                if not line_flat:
                    continue
                found.append(line_offset)
                if kind == "list":
                    found += [line_offset + start for start in sentence_starts(line_flat)[1:]]
                line_offset += len(line_flat) + 1
        offset += len(block_flat) + 1
    return sorted(set(found)) or [0]


def _literal_starts(text: str) -> list[int]:
    """The flat offsets of the lines of ``text``'s code blocks, table rows and list lines."""
    found: list[int] = []
    offset = 0
    for kind, block in blocks(text):
        block_flat = flat(block)
        if not block_flat:
            continue
        if kind != "paragraph":
            line_offset = offset
            for line in block.split("\n"):
                line_flat = flat(line)
                if line_flat:
                    found.append(line_offset)
                    line_offset += len(line_flat) + 1
        offset += len(block_flat) + 1
    return found


def best_start(text: str, flat_text: str, question: str, limit: int, anchor: int | None,
               starts: Sequence[int]) -> int:
    """Where the excerpt of ``text`` (its flat form ``flat_text``) starts: at ``anchor`` (by
    meaning) or by the word rule, unless an excerpt starting at a line of a code block, a table
    row or a list item (with the usual lead, :func:`cut`) would show more distinct content words
    of the question. Documentation answers are often one such line after an introduction that
    the question matches as a whole: the window most like the question then holds the
    introduction, and the line that answers lies beyond the share."""
    start = word_start(flat_text, question, limit) if anchor is None else anchor
    question_words = set(content_words(question))
    if not question_words:
        return start

    def shown(at: int) -> int:
        first = _lead_start(starts, at, limit, LEAD)
        return len(question_words & set(words(flat_text[first : first + limit])))

    best, best_count = start, shown(start)
    for line_start in _literal_starts(text):
        line_end = next((later for later in starts if later > line_start), len(flat_text))
        if not question_words & set(words(flat_text[line_start:line_end])):
            continue  # only a line that holds a word of the question can be the anchor
        count = shown(line_start)
        if count > best_count:
            best, best_count = line_start, count
    return best


def _lead_start(starts: Sequence[int], start: int, limit: int, lead: float) -> int:
    """The earliest unit start at most ``lead`` of ``limit`` before ``start`` (else ``start``)."""
    return next((earlier for earlier in starts if start - lead * limit <= earlier <= start), start)


def cut(text: str, start: int, limit: int, lead: float = LEAD, starts: Sequence[int] | None = None) -> str:
    """At most ``limit`` characters of flat ``text`` around the unit at ``start``.

    The units are ``starts`` (:func:`unit_starts`), or the sentences of ``text`` when not given.
    The excerpt starts at the earliest unit at most ``lead`` of ``limit`` before ``start``:
    what answers is often just before what matched (a window names the subject, the sentence
    before it holds the number). When the rest of the text is shorter than ``limit`` it starts
    earlier still, so that the whole share is used. Cut at a word boundary with "…"; "…" in front
    when it does not start at the beginning."""
    starts = sentence_starts(text) if starts is None else starts
    start = _lead_start(starts, start, limit, lead)
    if len(text) - start < limit:
        for earlier in starts:
            if earlier <= start and len(text) - earlier <= limit:
                start = earlier
                break
    piece = text[start : start + limit]
    if start + limit < len(text):
        space = piece.rfind(" ")
        piece = (piece[:space] if space > limit // 2 else piece).rstrip(" ,;:") + " …"
    return ("… " if start > 0 else "") + piece

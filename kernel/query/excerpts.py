"""Excerpts chosen by meaning: which part of a long passage an answer shows.

An answer shows each hit's passage cut to its share of the 400-token budget (about 400
characters each when three hits share it), so a passage of 1,000 characters loses more than half
of its text, and with it, often, the answer. Where the cut falls is decided here:

* **At index time** the sync embeds the *windows* of every long passage (runs of a few sentences
  side by side) into the embedder's digest vector cache
  (:func:`passageway.kernel.index.window_vectors.embed_windows`). The cache is the store of these
  vectors because it already belongs to the embedder, survives a rebuild (a rerun embeds
  nothing) and serves every store plugin alike, without a change to any store's schema.
* **At recall** (:func:`anchors`), the hits' passages are cut the same way
  (``kernel/text/windows.py``) and their windows' vectors fetched with one ``get_many``.
  Similarity works across languages: a German question finds the sentence of an English passage
  that answers it, which shared words cannot do.
* **Each hit** shows its item's next most similar candidate passage too (:func:`with_neighbour`),
  and the excerpt is chosen from both passages; the hit's own passage, when short, is always in
  it (:class:`HitWindows`, :func:`cut`).
* **The anchor** (:func:`best_start`) is the unit (a sentence, a line of code, a table row, a
  line of a list, :func:`unit_starts`) whose window is most similar to the question, with a
  little added for the question's rare words it holds; the excerpt starts up to a third of its
  share before it, earlier when the rest would leave part of the share unused (:func:`cut`).
  Without window vectors (an index built before the windows existed, a store built elsewhere, a
  first build still running) the words alone choose.
* **What is shown** leaves out markup that shows nothing (:func:`tidy`): link targets, HTML tags,
  include directives, admonition fences, terminal colours, long rules, what a session prints.

``bench/excerpt_study.py`` measures the window sizes against the budget and what the windows
cost a build; the numbers are on the measurements page (docs/measurements.md, "Excerpts").
"""

from __future__ import annotations

import bisect
import math
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import overload

import attrs
import numpy as np

from passageway.kernel.index.window_vectors import VectorLookup
from passageway.kernel.query.markup import (
    line_breaks,
    nested_fence_breaks,
    noise,
    output_lines,
    quote_marks,
    with_breaks,
)
from passageway.kernel.store import Candidate
from passageway.kernel.text.chunking import blocks, digest_of, embedding_input
from passageway.kernel.text.stopwords import content_words, words
from passageway.kernel.text.windows import SHORT_PASSAGE, flat, sentence_starts, window_plan

LEAD = 1 / 3
"""How much of an excerpt may come before the sentence it was chosen for. Measured against 0 to
1/2 by ``bench/excerpt_cut.py`` (docs/measurements.md, "Excerpts")."""


def candidate_digest(candidate: Candidate) -> str:
    """The digest of a candidate's passage, as the sync computed it (``kernel/text/chunking.py``)."""
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


Windows = tuple[tuple[int, float], ...]
"""Where each window of a hit's text starts (in its flat text) and its similarity to the question."""


@attrs.frozen
class HitWindows(Sequence[tuple[int, float]]):
    """What recall hands rendering about one hit's text (:func:`anchors` makes it,
    :func:`passageway.kernel.query.rendering.excerpt` reads it): the text's ``windows`` with their
    similarity to the question (:func:`best_start` chooses from them), and ``own``, the span
    ``(start, end)`` of the hit's own passage (the one that was ranked and whose heading is shown)
    in the flat text of its passages joined, None when the text is that passage alone. The
    excerpt shows a short own passage whole (:func:`cut`, ``keep``).

    It reads as its windows (``len``, indexing, iteration), so an excerpt rule written for plain
    :data:`Windows` (a bench's) takes it as it is, and ``tuple(hit_windows)`` is the windows alone,
    without ``own``."""

    windows: Windows
    own: tuple[int, int] | None = None

    def __len__(self) -> int:
        return len(self.windows)

    @overload
    def __getitem__(self, index: int) -> tuple[int, float]: ...

    @overload
    def __getitem__(self, index: slice) -> Windows: ...

    def __getitem__(self, index: int | slice) -> tuple[int, float] | Windows:
        return self.windows[index]


async def anchors(
    hits: Sequence[tuple[Sequence[str], str]], question_vector: np.ndarray, cache: VectorLookup | None
) -> dict[str, HitWindows]:
    """For each hit, given as its passage texts (one, or two with :func:`with_neighbour`) and the
    text of its own passage among them, its windows in the flat text of those passages joined,
    each with its similarity to the question, and where its own passage lies in that text
    (:class:`HitWindows`). Each passage is cut into windows on its own, as :func:`embed_windows`
    cut it, so the windows' digests are the ones stored. A hit is left out (words alone choose)
    when none of its passages is long or any long one lacks a window vector."""
    if cache is None:
        return {}
    plans: dict[str, list[tuple[int, str]]] = {}
    owns: dict[str, tuple[int, int]] = {}
    for parts, own in hits:
        text = flat(joined(parts))
        if len(text) <= SHORT_PASSAGE or text in plans:
            continue
        plan, offset = [], 0
        for part in parts:
            part_flat = flat(part)
            plan += [(offset + start, digest) for start, digest in window_plan(part_flat)]
            if len(parts) > 1 and part == own:
                owns[text] = (offset, offset + len(part_flat))
            offset += len(part_flat) + 1  # the space that joins it to the next passage
        if plan:
            plans[text] = plan
    if not plans:
        return {}
    vectors = await cache.get_many([digest for plan in plans.values() for _, digest in plan])
    query = np.asarray(question_vector, dtype=np.float32).reshape(-1)
    found: dict[str, HitWindows] = {}
    for text, plan in plans.items():
        if any(digest not in vectors for _, digest in plan):
            continue  # the windows were not made (an older index, a first build still running)
        windows = tuple((start, float(np.dot(np.asarray(vectors[digest], dtype=np.float32), query)))
                        for start, digest in plan)
        found[text] = HitWindows(windows, owns.get(text))
    return found


def with_neighbour(hit: Candidate, candidates: Sequence[Candidate]) -> list[str]:
    """A hit's passage texts: its own and the most similar other candidate passage of its item, in
    the item's order (shown joined by a blank line), so that its excerpt is chosen from both. The
    answer is often in the item's next-best passage when the question matches the page better than
    its section (docs/ranking-and-gate.md, "Excerpts by meaning"). The two texts differ, so the
    hit's own is the one equal to ``hit.text`` (:func:`anchors`)."""
    neighbours = _neighbours(hit, candidates)
    if not neighbours:
        return [hit.text]
    return [candidate.text for candidate in sorted((hit, neighbours[0]), key=lambda c: c.passage_key)]


def joined(parts: Sequence[str]) -> str:
    """A hit's passages as one text (:func:`with_neighbour`): what the answer shows and what
    :func:`anchors` keys its windows by."""
    return "\n\n".join(parts)


def _neighbours(hit: Candidate, candidates: Sequence[Candidate]) -> list[Candidate]:
    """The other candidate passages of ``hit``'s item, most similar first."""
    item = (hit.source, hit.item_id)
    found = {candidate.text: candidate for candidate in candidates
             if (candidate.source, candidate.item_id) == item and candidate.text != hit.text}
    return sorted(found.values(), key=lambda candidate: -candidate.similarity)


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


WORD_WEIGHT = 0.02
"""How much the question's words can add to a unit's similarity (all of them, :func:`best_start`).
Measured from 0 to 1 on the tuning projects of corpus/docs and on XQuAD (docs/ranking-and-gate.md)."""


def best_start(text: str, question: str, windows: Sequence[tuple[int, float]] | None = None,
               starts: Sequence[int] | None = None) -> int:
    """Where the excerpt of ``text`` is anchored, as an offset in its flat text: the unit
    (:func:`unit_starts`: a sentence, a line of code, a table row, a line of a list) with the
    highest score. A unit's score is the similarity to the question of the window that holds it
    (the window before it for a unit between windows; nothing without ``windows``), plus
    :data:`WORD_WEIGHT` times the share of the question's words it holds, each word weighted by
    how rare it is among the units, ``log(1 + units / units holding it)``. A word in every line
    (the tool's name) locates nothing; the one line that holds ``fish`` or ``envvar`` often is the
    answer, a command or an option after an introduction that matched the question as a whole.
    The first unit wins a tie."""
    flat_text = flat(text)
    starts = unit_starts(text) if starts is None else starts
    ends = [*starts[1:], len(flat_text)]
    question_words = set(content_words(question))
    held = [question_words & set(words(flat_text[start:end]))
            for start, end in zip(starts, ends, strict=True)]
    weight = {}
    for word in question_words:
        holding = sum(1 for unit in held if word in unit)
        if holding:
            weight[word] = math.log(1 + len(starts) / holding)
    total = sum(weight.values()) or 1.0
    windows = sorted(windows or ())
    window_starts = [start for start, _ in windows]
    best, best_score = starts[0], -math.inf
    for start, unit in zip(starts, held, strict=True):
        score = sum(weight[word] for word in unit) / total * WORD_WEIGHT
        if windows:
            score += windows[max(0, bisect.bisect_right(window_starts, start) - 1)][1]
        if score > best_score:
            best, best_score = start, score
    return best


def _lead_start(starts: Sequence[int], start: int, limit: int, lead: float) -> int:
    """The earliest unit start at most ``lead`` of ``limit`` before ``start`` (else ``start``)."""
    return next((earlier for earlier in starts if start - lead * limit <= earlier <= start), start)


def _filled(text: str, start: int, limit: int, starts: Sequence[int]) -> int:
    """``start``, or the earliest unit before it from which the rest of ``text`` still fits in
    ``limit`` when the rest from ``start`` is shorter (so that the whole share is used)."""
    if len(text) - start >= limit:
        return start
    return next((earlier for earlier in starts if earlier <= start and len(text) - earlier <= limit), start)


def cut(text: str, start: int, limit: int, lead: float = LEAD, starts: Sequence[int] | None = None,
        keep: tuple[int, int] | None = None) -> str:
    """At most ``limit`` characters of flat ``text`` around the unit at ``start``.

    The units are ``starts`` (:func:`unit_starts`), or the sentences of ``text`` when not given.
    The excerpt starts at the earliest unit at most ``lead`` of ``limit`` before ``start``:
    what answers is often just before what matched (a window names the subject, the sentence
    before it holds the number). When the rest of the text is shorter than ``limit`` it starts
    earlier still, so that the whole share is used. ``keep`` is a span the excerpt shows whole
    when it fits and would be left out (a hit's own passage of at most :data:`SHORT_PASSAGE`
    characters, beside a longer neighbour): the excerpt then starts at it, or ends with it. Cut
    at a word boundary with "…"; "…" in front when it does not start at the beginning."""
    starts = sentence_starts(text) if starts is None else starts
    start = _filled(text, _lead_start(starts, start, limit, lead), limit, starts)
    room = limit - 2  # the last word may be cut off where the excerpt ends
    if keep is not None and keep[1] - keep[0] <= room and not (start <= keep[0] and keep[1] <= start + room):
        if keep[0] > start:  # it comes after: the excerpt ends with it
            keep = (next((unit for unit in starts if keep[1] - unit <= room), keep[0]), keep[1])
        start = _filled(text, keep[0], limit, starts)
    piece = text[start : start + limit]
    if start + limit < len(text):
        space = piece.rfind(" ")
        piece = (piece[:space] if space > limit // 2 else piece).rstrip(" ,;:") + " …"
    return ("… " if start > 0 else "") + piece


# ---------------------------------------------------------------------------------------------
# What an excerpt shows of its text
# ---------------------------------------------------------------------------------------------

FOLD_OUTPUT = True  # whether an excerpt leaves out what a terminal session prints


def tidy(text: str) -> tuple[str, Callable[[int], int]]:
    """The flat text of ``text`` as an excerpt shows it, with the markup that shows nothing taken
    out (:mod:`passageway.kernel.query.markup`), and the map from a place in the flat text to the
    same place in the result. Documentation markup (link targets, ``<details>``, ``{* include *}``
    lines, block-quote signs, terminal colours) can fill a third of a share and holds no answer;
    it is only taken out of what is shown, never out of the index.
    Fenced code keeps its line breaks and its lines' indentation (relative to its fence), so it
    reads as code, not as one line, and YAML or Python keeps its nesting."""
    flat_text = flat(text)
    spans: list[tuple[int, int]] = []
    breaks: list[tuple[int, str]] = []  # the spaces that stand for a code block's line breaks
    offset = 0
    for kind, block in blocks(text):
        block_flat = flat(block)
        if block_flat:
            spans += [(offset + start, offset + end) for start, end in noise(kind, block_flat)]
            spans += [(offset + start, offset + end) for start, end in quote_marks(kind, block)]
            if kind == "code" and FOLD_OUTPUT:
                spans += [(offset + start, offset + end) for start, end in output_lines(block)]
            if kind == "code":
                breaks += line_breaks(block, offset, len(flat_text))
            elif kind == "list":
                breaks += nested_fence_breaks(block, offset, len(flat_text))
            offset += len(block_flat) + 1
    if not spans:
        return with_breaks(flat_text, breaks)
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    pieces: list[str] = []
    cut_out: list[tuple[int, int, int]] = []  # (start, end, characters removed up to the end)
    last = total = 0
    for start, end in merged:
        if (start == 0 or flat_text[start - 1] == " ") and end < len(flat_text) and flat_text[end] == " ":
            end += 1  # the space the removed part stood between
        elif end == len(flat_text) and start > 0 and flat_text[start - 1] == " ":
            start -= 1
        start = max(start, last)
        pieces.append(flat_text[last:start])
        total += end - start
        cut_out.append((start, end, total))
        last = end
    pieces.append(flat_text[last:])
    starts = [start for start, _, _ in cut_out]
    ends = [end for _, end, _ in cut_out]

    def moved(place: int) -> int:
        inside = bisect.bisect_right(starts, place) - 1
        if inside >= 0 and place < ends[inside]:
            place = ends[inside]  # a place in a removed part: where the text goes on
        before = bisect.bisect_right(ends, place)
        return place - (cut_out[before - 1][2] if before else 0)

    shown, shifted = with_breaks("".join(pieces), [(moved(place), indent) for place, indent in breaks])
    return shown, lambda place: shifted(moved(place))

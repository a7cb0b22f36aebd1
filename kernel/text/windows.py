"""The windows of a long passage: where excerpts may start.

A passage longer than :data:`SHORT_PASSAGE` characters is cut into *windows* of
:data:`WINDOW_SENTENCES` consecutive sentences side by side; the sync embeds each window into the
embedder's digest vector cache (``kernel/index/window_vectors.py``), under the SHA-256 of its text,
and recall later cuts the same passage the same way (:func:`window_plan`) to find those vectors
again and start the excerpt at the window closest to the question (``kernel/query/excerpts.py``).
Both paths must cut alike, so the cutting lives on the ground floor, below both.
"""

from __future__ import annotations

import bisect
import functools
import re

from passageway.kernel.text.chunking import digest_of

WINDOW_SENTENCES = 2
"""Sentences per window. Measured against one and three by ``bench/excerpt_study.py``."""

SHORT_PASSAGE = 240
"""A passage of at most this many characters is always shown whole (two thirds of the smallest
share three hits get), so it needs no windows."""

_SENTENCE_GAP = re.compile(r"(?<=[.!?]) (?=.)")

PLANS_KEPT = 4096
"""Window plans kept for recent texts (:func:`window_plan`)."""

def flat(text: str) -> str:
    """``text`` with every run of whitespace made one space: what an excerpt is cut from."""
    return " ".join(text.split())


def sentence_starts(text: str) -> list[int]:
    """Where the sentences of flat ``text`` start: 0, and after ``". "``, ``"! "`` or ``"? "``
    when a capital or a digit follows, but not after an initial or a one- or two-digit number
    ("T. T. Tsui", "am 12. Mai") or a short dotted abbreviation ("U.S.", "z.B.")."""
    starts = [0]
    for gap in _SENTENCE_GAP.finditer(text):
        following = text[gap.end()]
        if not (following.isupper() or following.isdigit()):
            continue
        before = text[text.rfind(" ", 0, gap.start()) + 1 : gap.start()].lstrip("(\"'„“«")
        word = before.rstrip(".")
        if text[gap.start() - 1] == "." and (
            len(word) == 1 or (word.isdigit() and len(word) <= 2) or ("." in word and len(before) <= 5)
        ):
            continue
        starts.append(gap.end())
    return starts


def windows(text: str, size: int = WINDOW_SENTENCES) -> list[tuple[int, int]]:
    """``(start, end)`` of the runs of ``size`` consecutive sentences of flat ``text`` that cover
    it side by side (the last one overlapping the one before when the count does not divide; one
    window, the whole text, when it has fewer sentences). Windows starting at every sentence
    would cost twice the embedding for the same answers (docs/measurements.md, "Excerpts")."""
    starts = sentence_starts(text)
    ends = [*starts[1:], len(text)]
    count = max(1, len(starts) - size + 1)
    firsts = list(range(0, count, size))
    if firsts[-1] != count - 1:  # the last sentences, in a window that overlaps the one before
        firsts.append(count - 1)
    return [(starts[first], ends[min(first + size, len(starts)) - 1]) for first in firsts]


@functools.lru_cache(maxsize=PLANS_KEPT)
def window_plan(text: str) -> tuple[tuple[int, str], ...]:
    """Where each window of flat ``text`` starts, and the digest its vector is cached under (none
    for a short passage). Kept for recent texts: recall asks for the same hits' plans twice (to
    fetch the vectors, then to choose), and the same passages come back question after question."""
    if len(text) <= SHORT_PASSAGE:
        return ()
    return tuple((start, digest_of(text[start:end].strip())) for start, end in windows(text))


def window_texts(passage_text: str) -> list[str]:
    """The texts embedded for one passage's windows (none for a short passage)."""
    text = flat(passage_text)
    if len(text) <= SHORT_PASSAGE:
        return []
    return [text[start:end].strip() for start, end in windows(text)]


def window_spans(passage_text: str, embedding_input: str) -> list[tuple[str, int, int]]:
    """The windows of a passage as spans of its ``embedding_input`` (which ends with its text):
    ``(digest, start, end)``, the digest the window's vector is cached under (:func:`window_plan`),
    the span from the window's first word to its last; none for a short passage. The sync hands
    the spans to an embedder that can pool them from the passage's own forward pass
    (``BaseEmbedder.embed_spans``)."""
    if not embedding_input.endswith(passage_text):
        return []
    words = passage_text.split()
    text = " ".join(words)
    if len(text) <= SHORT_PASSAGE:
        return []
    offset = len(embedding_input) - len(passage_text)
    raw_starts, flat_starts, position, flat_position = [], [], 0, 0
    for word in words:
        position = passage_text.find(word, position)
        raw_starts.append(offset + position)
        flat_starts.append(flat_position)
        position += len(word)
        flat_position += len(word) + 1
    spans = []
    for start, end in windows(text):
        first = bisect.bisect_left(flat_starts, start)
        last = max(first, bisect.bisect_left(flat_starts, end) - 1)
        end_of_last = raw_starts[last] + len(words[last])
        spans.append((digest_of(text[start:end].strip()), raw_starts[first], end_of_last))
    return spans

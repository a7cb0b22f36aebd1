"""Which of an item's candidate passages becomes its hit (issue 35, target 3): rules in place of
the ranker's :func:`~passageway.builtin.ranking.best_per_item`, replayed by
``bench/shown_answers.py --variants``.

The ranker orders items by their best-scored passage and that passage is the hit. A rule here
keeps the item's place (its best score) and may hand the place to another candidate passage of
the same item whose fused score is within ``margin`` of the best (``score >= best × (1 −
margin)``) and that passes the gate too; the neighbour and the excerpt then follow recall's own
rules from that passage. What a rule reads is what recall has for the question:

* ``heading M``: the question's content words in the passage's heading path, each weighted
  ``log(1 + N / n)`` over the N candidate passages of the question (n of them hold the word in
  their title, heading or text); the passage with the largest weighted share wins if it beats
  the best's;
* ``window M``: the passage's best excerpt-window cosine (its passage cosine when higher or
  when it has no windows), read from the vector cache recall fetches windows from;
* ``item bm25 M``: BM25 of the question's content words over the item's candidate passages
  only (their heading and text; the words' rarity counted within the item);
* ``heading+window M``: the heading rule, and when it keeps the best, the window rule;
* ``words M``: the question's content words in the passage's heading and text, weighted as for
  ``heading``;
* ``window+W words M``: the best window cosine plus ``W`` times that share;
* ``words>L M``: ``words``, moving the hit only for a share at least ``L`` above the best's;
* ``keyword M``: the passage first in the keyword list; ``cosine M``: the most similar passage;
  ``cosine+keyword M``: the cosine rule, and when it keeps the best, the keyword rule.

``shown RULE M`` chooses in the same way but only for the excerpt (:func:`shown_only`): the
gate, the duplicate rule and the answerability score still read the item's best passage, as
recall does today. That is a change in ``kernel/query/recall.py``, not in the ranker.
``judged RULE M`` is what the ranker alone can do: its hit is the chosen passage (the duplicate
rule reads that one), and its answerability score maps each hit back to its item's best passage.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from common.replay import best_window_cosines
from passageway.builtin.ranking import FusionRanker, Scored, answerability, best_per_item
from passageway.kernel.ranking import DEPTH, Gate, Ranked
from passageway.kernel.text.stopwords import content_words, words
from passageway.kernel.text.windows import flat, window_plan

WINDOW: dict[str, float] = {}
"""The question being replayed: each candidate passage's best window cosine, by its text."""

Rule = Callable[[str, Scored, Sequence[Scored], Sequence[Scored]], Scored]
"""(question, the item's best entry, the item's entries within the margin, every entry) → the hit."""


async def note_question(cache: Any, vector: np.ndarray, pool: Sequence[Any]) -> None:
    """Each candidate passage's best window cosine with the question, kept in :data:`WINDOW`."""
    WINDOW.clear()
    WINDOW.update(await best_window_cosines(cache, vector, pool))


def _weights(question: str, everything: Sequence[Scored]) -> dict[str, float]:
    asked = set(content_words(question))
    held = [set(words(f"{e.candidate.title} {e.candidate.heading or ''} {e.candidate.text}"))
            for e in everything]
    return {word: math.log(1 + len(held) / n) for word in asked
            if (n := sum(1 for seen in held if word in seen))}


def by_heading(question: str, best: Scored, near: Sequence[Scored], everything: Sequence[Scored]) -> Scored:
    weight = _weights(question, everything)
    total = sum(weight.values())
    if not total:
        return best

    def share(entry: Scored) -> float:
        present = set(words(entry.candidate.heading or ""))
        return sum(w for word, w in weight.items() if word in present) / total
    chosen = max(near, key=share)  # the first of equal shares: the better score
    return chosen if share(chosen) > share(best) else best


def _share(question: str, everything: Sequence[Scored]) -> Callable[[Scored], float]:
    """An entry's IDF-weighted share of the question's content words in its heading and text."""
    weight = _weights(question, everything)
    total = sum(weight.values()) or 1.0

    def share(entry: Scored) -> float:
        present = set(words(f"{entry.candidate.heading or ''} {entry.candidate.text}"))
        return sum(w for word, w in weight.items() if word in present) / total
    return share


def by_words(question: str, best: Scored, near: Sequence[Scored], everything: Sequence[Scored]) -> Scored:
    share = _share(question, everything)
    chosen = max(near, key=share)
    return chosen if share(chosen) > share(best) else best


def words_ahead(lead: float) -> Rule:
    """``words``, but only a share at least ``lead`` above the best's moves the hit."""
    def choose(question: str, best: Scored, near: Sequence[Scored], everything: Sequence[Scored]) -> Scored:
        share = _share(question, everything)
        chosen = max(near, key=share)
        return chosen if share(chosen) >= share(best) + lead else best
    return choose


def window_and_words(weight: float) -> Rule:
    def choose(question: str, best: Scored, near: Sequence[Scored], everything: Sequence[Scored]) -> Scored:
        share = _share(question, everything)

        def value(entry: Scored) -> float:
            return WINDOW.get(entry.candidate.text, entry.candidate.similarity) + weight * share(entry)
        chosen = max(near, key=value)
        return chosen if value(chosen) > value(best) else best
    return choose


def by_window(question: str, best: Scored, near: Sequence[Scored], everything: Sequence[Scored]) -> Scored:
    def cosine(entry: Scored) -> float:
        return WINDOW.get(entry.candidate.text, entry.candidate.similarity)
    chosen = max(near, key=cosine)
    return chosen if cosine(chosen) > cosine(best) else best


def by_item_bm25(question: str, best: Scored, near: Sequence[Scored], everything: Sequence[Scored]) -> Scored:
    item = (best.candidate.source, best.candidate.item_id)
    passages = {e.candidate.text: e for e in everything if (e.candidate.source, e.candidate.item_id) == item}
    counts = {text: Counter(words(f"{e.candidate.heading or ''} {text}")) for text, e in passages.items()}
    asked = set(content_words(question))
    size = len(counts)
    average = sum(sum(c.values()) for c in counts.values()) / size
    held = {word: sum(1 for c in counts.values() if word in c) for word in asked}
    idf = {word: math.log(1 + (size - n + 0.5) / (n + 0.5)) for word, n in held.items() if n}

    def bm25(entry: Scored) -> float:
        found = counts[entry.candidate.text]
        length = sum(found.values()) or 1
        return sum(w * found[word] * 2.2 / (found[word] + 1.2 * (0.25 + 0.75 * length / average))
                   for word, w in idf.items() if found[word])
    chosen = max(near, key=bm25)
    return chosen if bm25(chosen) > bm25(best) else best


def by_keyword(question: str, best: Scored, near: Sequence[Scored], everything: Sequence[Scored]) -> Scored:
    def place(entry: Scored) -> int:
        return entry.keyword_rank if entry.keyword_rank is not None else len(everything)
    chosen = min(near, key=place)
    return chosen if place(chosen) < place(best) else best


def by_cosine(question: str, best: Scored, near: Sequence[Scored], everything: Sequence[Scored]) -> Scored:
    chosen = max(near, key=lambda entry: entry.candidate.similarity)
    return chosen if chosen.candidate.similarity > best.candidate.similarity else best


def by_cosine_then_keyword(question: str, best: Scored, near: Sequence[Scored],
                           everything: Sequence[Scored]) -> Scored:
    chosen = by_cosine(question, best, near, everything)
    return chosen if chosen is not best else by_keyword(question, best, near, everything)


def by_heading_then_window(question: str, best: Scored, near: Sequence[Scored],
                           everything: Sequence[Scored]) -> Scored:
    chosen = by_heading(question, best, near, everything)
    return chosen if chosen is not best else by_window(question, best, near, everything)


RULES: dict[str, Rule] = {"heading": by_heading, "window": by_window, "item bm25": by_item_bm25,
                          "heading+window": by_heading_then_window, "words": by_words,
                          "window+0.1 words": window_and_words(0.1),
                          "window+0.2 words": window_and_words(0.2),
                          "words>0.1": words_ahead(0.1), "words>0.2": words_ahead(0.2),
                          "words>0.3": words_ahead(0.3), "keyword": by_keyword, "cosine": by_cosine,
                          "cosine+keyword": by_cosine_then_keyword}
MARGINS = (0.02, 0.03, 0.05, 0.07, 0.1, 0.2, 0.35, 1.0)


def rule_named(name: str) -> tuple[Rule, float, str] | None:
    """``heading 0.2`` → the rule, its margin and its mode (``shown heading 0.2``: the passage
    is chosen for the excerpt only; ``judged heading 0.2``: by the ranker, the answer judged by
    the items' best passages; ``""``: by the ranker); None for a name that is not a hit rule."""
    rule, _, margin = name.rpartition(" ")
    mode, _, rest = rule.partition(" ")
    if mode in ("shown", "judged") and rest in RULES:
        return RULES[rest], float(margin), mode
    return (RULES[rule], float(margin), "") if rule in RULES else None


class HitChoice:
    """The default ranker, with ``rule`` choosing each item's hit among its passages within
    ``margin`` of its best score (the item keeps its place and the best's score)."""

    name = "hybrid"

    def __init__(self, inner: FusionRanker, rule: Rule, margin: float, mode: str = "") -> None:
        self.inner, self.rule, self.margin, self.mode = inner, rule, margin, mode
        self.moved = 0

    def answerable(self, question: str, hits: Sequence[Any], keyword: Any, vector: Any, *rest: Any) -> bool:
        if self.mode == "judged":  # each hit read as its item's best-scored passage
            best = {(e.candidate.source, e.candidate.item_id): e.candidate
                    for e in reversed(self.inner.score(question, keyword, vector)[0])}
            hits = [best.get((hit.source, hit.item_id), hit) for hit in hits]
        return self.inner.answerable(question, hits, keyword, vector, *rest)

    def rank(self, question: str, question_vector: np.ndarray, keyword: list, vector: list,
             gate: Gate) -> list[Ranked]:
        inner = self.inner
        scored, evidence = inner.score(question, keyword, vector)
        if inner.bar_margin and inner.min_answerable is not None and len(scored) >= answerability.MIN_POOL:
            gate = answerability.lowered(gate, inner.bar_margin)
        by_item: dict[tuple[str, str], list[Scored]] = {}
        for entry in scored:
            by_item.setdefault((entry.candidate.source, entry.candidate.item_id), []).append(entry)
        ranked: list[Ranked] = []
        SHOWN.clear()
        for best in best_per_item(scored):
            reason = inner.passes(best, evidence, gate)
            if reason is None:
                continue
            entry = best
            near = [e for e in by_item[(best.candidate.source, best.candidate.item_id)]
                    if e.score >= best.score * (1 - self.margin)]
            chosen = self.rule(question, best, near, scored) if len(near) > 1 else best
            if chosen is not best and (passed := inner.passes(chosen, evidence, gate)) is not None:
                self.moved += 1
                if self.mode == "shown":
                    SHOWN[(best.candidate.source, best.candidate.item_id)] = chosen.candidate
                else:
                    entry, reason = chosen, passed
            ranked.append(Ranked(entry.candidate, best.score, len(entry.matched), reason))
            if len(ranked) == DEPTH:
                break
        return ranked


SHOWN: dict[tuple[str, str], Any] = {}
"""``HitChoice(..., shown_only=True)``: each item's chosen passage, which only the excerpt uses."""


def shown_only(original: Callable, cache: Any) -> Callable:
    """``recall.excerpt_texts`` with each hit's passage replaced by the one the rule chose for its
    item (:data:`SHOWN`), the windows of the chosen passages and their neighbours fetched too: the
    gate, the duplicate rule and the answerability score judged the item's best passage."""
    from passageway.kernel.query.excerpts import _neighbours

    async def excerpt_texts(kept: Any, copies: Any, found: Any, lookup: Any) -> Any:
        kept = [type(entry)(SHOWN.get((entry.candidate.source, entry.candidate.item_id), entry.candidate),
                            entry.score, entry.matched, entry.reason) for entry in kept]
        if lookup is not None:
            pool = [*found.by_vector, *found.keyword]
            texts = {entry.candidate.text for entry in kept}
            texts |= {n.text for entry in kept for n in _neighbours(entry.candidate, pool)[:1]}
            digests = [digest for text in texts for _, digest in window_plan(flat(text))]
            lookup.found.update(await cache.get_many([d for d in digests if d not in lookup.found]))
        return await original(kept, copies, found, lookup)
    return excerpt_texts

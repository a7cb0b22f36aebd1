"""Builtin plugin: the rankers ``hybrid`` (the default), ``keyword`` and ``vector``.

All three share one pipeline and one gate; they differ only in the signals that order the
candidates, so that ``passageway eval --ranker`` shows what fusion adds.

**Order.** Every candidate (the union of the keyword and the vector list) gets

* a *vector rank*: its place by cosine among all candidates (keyword-only candidates have a
  cosine too, so they get one);
* a *keyword rank*: its place in the keyword list, if it is there;
* its *coverage*: the share of the question's content words (stopwords of English and German
  left out) that occur in its title, heading or text.

``hybrid`` scores ``1/(k + vector rank) + coverage · 1/(k + keyword rank)`` with ``k = 60``
(reciprocal-rank fusion), so the keyword list counts in proportion to how much of the question a
passage actually contains. A question in one language against a source in another matches
almost none of its words: its keyword list is noise, its coverage is near zero, and the fusion
falls back to the vector ranking instead of being dragged down by it. ``vector`` orders by cosine
alone, ``keyword`` by keyword rank alone (candidates only the vector search found come after, by
cosine). The score is multiplied by the item's ``weight``, and only each item's best passage
competes. The ranker returns the first :data:`~passageway.kernel.ranking.DEPTH` passages that pass
the gate (below); recall answers with the first three that are not copies of one another.

**The gate** (the same for all three). A passage passes when

* its cosine reaches the gate's ``min_similarity`` (for a passage in another language than the
  question, English and German told apart by their stopwords, ``min_similarity`` less the gate's
  ``cross_language_offset``, because a model's cosines between languages run lower); or
* it contains at least three of the question's content words (the *words rescue*).

A question that names a source (a word of its name) gets that source's passages first unless
another's is :data:`NAMED_MARGIN` closer. Both numbers of the gate come with the
:class:`~passageway.kernel.ranking.Gate` that ``recall`` builds from the embedder: they belong to
the model (its preset, or its ``[embedder]`` table), not to the ranker, which treats every model
alike. The built-in model's offset (0.06) is measured in ``docs/ranking-and-gate.md``.

**Parts that are off by default** (:class:`FusionRanker` arguments, signals in :mod:`.signals`),
measured one by one on real documentation in ``docs/gate-levels.md`` ("Ablation",
``bench/gate_transfer.py --ablation``): a *stand-out requirement* (``field_lead``: the cosine
must also lead the median of the passage's source's candidates, unless the passage holds one of
the question's identifiers, ``identifier_pass``, or is among the keyword search's first
``agree_rank``) and a words rescue that counts only *rare* words (``rare_only``). They silence
more questions a tool's documentation does not answer, but each cost more than 2 points of
hit@3 on some documentation project.

Whatever passes nothing is silence. Two further checks were measured and are off by default
(:class:`FusionRanker` parameters): a raised bar when the question holds a word no candidate
contains (``unknown_margin``), and a relative path for a passage that leads the tenth-best
candidate by a margin (``lead``). ``docs/ranking-and-gate.md`` shows the study and the sweeps
behind every constant (``bench/gate_study.py``). After the gate, :meth:`FusionRanker.answerable`
judges the answer as a whole with the answerability score (:mod:`.answerability`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence

import attrs
import numpy as np

from passageway import hookimpl
from passageway.kernel.ranking import DEPTH, Gate, Ranked
from passageway.kernel.store import Candidate
from passageway.kernel.text.stopwords import content_words, language_of, language_of_words, words

from . import answerability, signals

REFERENCE_RANK = 9
"""The lead of a passage is its cosine minus the cosine of the tenth-best candidate."""

LEAD: float | None = None
"""See :class:`FusionRanker`; measured in docs/ranking-and-gate.md."""

RRF_K = 60
"""The usual constant of reciprocal-rank fusion: rank 0 scores 1/61, rank 49 scores 1/110."""

UNKNOWN_MARGIN: float | None = None
"""Off: the unknown-word check silenced more near-topic questions but cost more answers on the
held-out half than it saved (docs/ranking-and-gate.md, section 3)."""

FIELD_LEAD = 0.03
"""The measured strength of the stand-out requirement (``FusionRanker(field_lead=FIELD_LEAD)``):
how far a passage's cosine must stand above the median of its source's candidates. Off by
default: alone or with its passes it cost every tuning project of the documentation set more than
2 points of hit@3 (docs/gate-levels.md, "Ablation")."""

SURE: float | None = None
"""Off: a passage this far above the bar would pass without standing out; on the documentation
set every margin tried (0.02 to 0.06) let more unanswered questions through than it added answers
(docs/gate-levels.md)."""

RARE_ONLY = False
"""Off: counting only rare words in the words rescue cost starship's English questions about ten
points of hit@3 (docs/gate-levels.md, "Ablation")."""

RARE_SHARE = 0.3
"""The words rescue counts a question word only when at most this share of the candidates hold it."""

AGREE_RANK = 5
"""The measured strength of the keyword pass (``FusionRanker(agree_rank=AGREE_RANK)``): a passage
among the keyword search's first this many (of every source) stands out, keyword and vector search
agree on it. Like the identifier pass, it only acts with the stand-out requirement on."""

NAMED_MARGIN = 0.02
"""A passage of another source or item outranks one of the source or item the question names
only when its cosine is higher by this much."""


@attrs.frozen
class Scored:
    """One candidate with what the ranker knows about it (also used by the gate study)."""

    candidate: Candidate
    score: float
    vector_rank: int
    keyword_rank: int | None
    """Its place in the keyword list, or None when only the vector search found it."""
    matched: frozenset[str]
    coverage: float
    language: str | None
    lead: float = 0.0
    """The cosine less the median cosine of the same source's candidates (:func:`signals.fields`)."""
    terms: int = 0
    """How many of the question's identifiers the passage holds."""
    rare: int = 0
    """How many of the question's rare words the passage holds."""
    named: bool = False
    """The passage belongs to a source or item the question names."""


@attrs.frozen
class Evidence:
    """What the gate knows about the question as a whole."""

    language: str | None
    unknown: frozenset[str]
    """Content words of the question that no candidate contains (see :func:`signals.unknown_words`);
    only worked out when the ranker's ``unknown_margin`` uses it, empty otherwise."""
    reference: float | None = None
    """The cosine of the :data:`REFERENCE_RANK`-th best candidate, or None with fewer candidates."""
    identifiers: tuple[str, ...] = ()
    """The question's distinctive terms (:func:`signals.identifiers`)."""


@attrs.define
class FusionRanker:
    """The shared pipeline; ``signals`` picks what orders the candidates.

    :param signals: ``"hybrid"``, ``"keyword"`` or ``"vector"``.
    :param min_words: distinct content words a passage must share with the question to pass the
        gate whatever its cosine (3).
    :param cross_language: lower the cosine bar by the gate's ``cross_language_offset`` (the
        model's) for a passage in another language than the question (English and German told
        apart by their stopwords); ``False`` ignores the offset, for the gate study's baselines.
    :param unknown_margin: how far above ``min_similarity`` a passage's cosine must be, with no
        rescue by shared words, when the question has a content word that no candidate contains
        and the passage is in the question's language; ``None`` turns that check off.
    :param coverage_weighted: weight the keyword rank by coverage (``True``) or plain RRF.
    :param lead: a passage whose cosine leads the tenth-best candidate's by at least this much
        passes whatever its cosine (a relative bar, which does not move with the model's cosine
        scale between languages); ``None`` turns it off.
    :param lead_across_only: apply ``lead`` only to passages in another language than the
        question.
    :param field_lead: the stand-out requirement (the gate's parts are measured one by one in
        docs/gate-levels.md, "Ablation"): a passage passes by similarity only when its cosine also
        leads the median of its source's candidates by this much, or one of the passes below
        holds; ``None`` (the default) lets the cosine alone decide, and the passes have nothing
        to do. :data:`FIELD_LEAD` is the strength that was measured.
    :param identifier_pass: holding one of the question's identifiers (a flag, an option or
        function name, anything in backticks) counts as standing out (off by default).
    :param agree_rank: being among the keyword search's first this many counts as standing out;
        ``None`` (the default) turns that pass off; :data:`AGREE_RANK` was measured.
    :param sure: a passage this far above the bar counts as standing out; ``None`` turns it off.
    :param rare_only: the words rescue counts only the question's rare words (held by at most
        ``rare_share`` of the candidates), so that words a whole topic uses cannot fire it;
        ``False`` counts every shared content word.
    :param focus: order the passages of a source the question names before the others' unless
        those are closer by ``named_margin``.
    :param focus_items: the same for an item named by a title word no other candidate item's title
        has; off, because it cost answers on the held-out project (docs/gate-levels.md).
    :param min_answerable: the answerability score (:mod:`.answerability`, weights ``weights``)
        an answer must reach, else it is silence; ``None`` turns the score off.
    :param bar_margin: how much lower than the gate's the cosine bar of :meth:`rank` is, because
        the score judges the answers after it (``answerability.BAR_MARGIN``, fitted with it; only
        when the score is on and judges the question, ``answerability.MIN_POOL``).
    """

    signals: str = "hybrid"
    min_words: int = 3
    cross_language: bool = True
    unknown_margin: float | None = UNKNOWN_MARGIN
    coverage_weighted: bool = True
    rrf_k: int = RRF_K
    lead: float | None = LEAD
    lead_across_only: bool = False
    field_lead: float | None = None
    identifier_pass: bool = False
    agree_rank: int | None = None
    sure: float | None = SURE
    rare_only: bool = RARE_ONLY
    rare_share: float = RARE_SHARE
    focus: bool = True
    focus_items: bool = False
    named_margin: float = NAMED_MARGIN
    min_answerable: float | None = answerability.MIN_SCORE
    weights: Mapping[str, float] = answerability.WEIGHTS
    bar_margin: float = answerability.BAR_MARGIN

    @property
    def name(self) -> str:
        return self.signals

    # The protocol's one method ---------------------------------------------------------------

    def rank(
        self,
        question: str,
        question_vector: np.ndarray,
        keyword: list[Candidate],
        vector: list[Candidate],
        gate: Gate,
    ) -> list[Ranked]:
        scored, evidence = self.score(question, keyword, vector)
        if self.bar_margin and self.min_answerable is not None and len(scored) >= answerability.MIN_POOL:
            gate = answerability.lowered(gate, self.bar_margin)
        ranked: list[Ranked] = []
        for entry in best_per_item(scored):
            reason = self.passes(entry, evidence, gate)
            if reason is not None:
                ranked.append(Ranked(entry.candidate, entry.score, len(entry.matched), reason))
                if len(ranked) == DEPTH:  # recall reads no further
                    break
        return ranked

    # The steps, public for the gate study -----------------------------------------------------

    def score(
        self, question: str, keyword: Sequence[Candidate], vector: Sequence[Candidate]
    ) -> tuple[list[Scored], Evidence]:
        """Every candidate scored, best first, and the question's evidence."""
        question_words = tuple(content_words(question))
        pool: dict[tuple[str, int], Candidate] = {}
        keyword_rank: dict[tuple[str, int], int] = {}
        for rank, candidate in enumerate(keyword):
            key = (candidate.source, candidate.passage_key)
            pool.setdefault(key, candidate)
            keyword_rank.setdefault(key, rank)
        for candidate in vector:
            pool.setdefault((candidate.source, candidate.passage_key), candidate)

        # A passage with no vector yet (NaN, during a build) goes after every cosine and never
        # sets the lead's reference: only its words can pass it.
        by_cosine = sorted(pool, key=lambda key: (-_cosine(pool[key]), key))
        with_vector = [key for key in by_cosine if not math.isnan(pool[key].similarity)]
        vocabulary: set[str] = set()
        read = {key: _read(pool[key].title, pool[key].heading or "", pool[key].text) for key in by_cosine}
        stand_out = self.field_lead is not None
        terms = signals.identifiers(question) if stand_out and self.identifier_pass else ()
        field = signals.fields(pool.values()) if stand_out else {}
        rare = (signals.rare_words(question_words, {key: seen for key, (seen, _) in read.items()},
                                   self.rare_share) if self.rare_only else frozenset())
        named_sources = named_items = frozenset()
        if self.focus and question_words:
            named_sources = signals.named_sources(question_words, (c.source for c in pool.values()))
            if self.focus_items:
                named_items = signals.named_items(question_words, {c.item_id: c.title for c in pool.values()})
        scored = []
        for vector_rank, key in enumerate(by_cosine):
            candidate = pool[key]
            present, language = read[key]
            if self.unknown_margin is not None:
                vocabulary |= present
            matched = frozenset(word for word in question_words if word in present)
            coverage = len(matched) / len(question_words) if question_words else 0.0
            kw_rank = keyword_rank.get(key)
            score = self._fuse(candidate, vector_rank, kw_rank, coverage) * candidate.weight
            held = 0
            if terms:
                text = signals.folded(candidate)
                held = sum(1 for term in terms if signals.contains_term(text, term))
            scored.append(Scored(
                candidate, score, vector_rank, kw_rank, matched, coverage, language,
                lead=candidate.similarity - field.get(candidate.source, field.get("", 0.0)),
                terms=held, rare=len(matched & rare),
                named=candidate.source in named_sources or candidate.item_id in named_items,
            ))
        scored.sort(key=lambda entry: (-entry.score, entry.vector_rank))
        if named_sources or named_items:
            scored = self._focused(scored)
        reference = (pool[with_vector[REFERENCE_RANK]].similarity
                     if len(with_vector) > REFERENCE_RANK else None)
        # Reading every candidate word for the unknown-word check costs about as much as the
        # rest of the scoring, so it is done only when that check is on.
        unknown = frozenset()
        if self.unknown_margin is not None:
            unknown = signals.unknown_words(question_words, vocabulary)
        evidence = Evidence(language_of(question), unknown, reference, terms)
        return scored, evidence

    def answerable(self, question: str, hits: Sequence[Candidate], keyword: Sequence[Candidate],
                   vector: Sequence[Candidate], sentences: Sequence[float | None], gate: Gate) -> bool:
        """The answerability score (:mod:`.answerability`) of the best of the answer's ``hits``
        reaches :attr:`min_answerable` (always, when that is None)."""
        if self.min_answerable is None or not hits or not answerability.judges(keyword, vector):
            return True
        found = answerability.each_hit(question, hits, keyword, vector, sentences, gate)
        return answerability.answers(found, self.weights, self.min_answerable)

    def _focused(self, scored: list[Scored]) -> list[Scored]:
        """``scored`` with every passage of a named source or item ahead of the others, except
        the others that are closer than the best named one by :attr:`named_margin`."""
        best_named = max((_cosine(entry.candidate) for entry in scored if entry.named), default=None)
        if best_named is None:
            return scored
        bar = best_named + self.named_margin
        ahead = [entry for entry in scored if entry.named or _cosine(entry.candidate) >= bar]
        behind = [entry for entry in scored if not (entry.named or _cosine(entry.candidate) >= bar)]
        return ahead + behind

    def _fuse(self, candidate: Candidate, vector_rank: int, kw_rank: int | None, coverage: float) -> float:
        k = self.rrf_k
        keyword_part = 0.0 if kw_rank is None else 1.0 / (k + 1 + kw_rank)
        if self.signals == "vector":
            return _cosine(candidate)
        if self.signals == "keyword":
            # keyword hits first, in their order; the rest after them by cosine
            return 1.0 + keyword_part if kw_rank is not None else candidate.similarity / 2.0
        if self.coverage_weighted:
            keyword_part *= coverage
        return 1.0 / (k + 1 + vector_rank) + keyword_part

    def passes(self, entry: Scored, evidence: Evidence, gate: Gate) -> str | None:
        """``"similarity"``, ``"words"`` or ``"lead"`` when ``entry`` passes the gate, else ``None``."""
        similarity = entry.candidate.similarity
        across = evidence.language is not None and entry.language not in (None, evidence.language)
        if (
            self.lead is not None
            and evidence.reference is not None
            and (across or not self.lead_across_only)
            and similarity - evidence.reference >= self.lead
        ):
            return "lead"
        bar, words_count = gate.min_similarity, True
        if across:
            if self.cross_language:
                bar -= gate.cross_language_offset
        elif self.unknown_margin is not None and evidence.unknown:
            bar, words_count = bar + self.unknown_margin, False
        if similarity >= bar and self._stands_out(entry, similarity - bar):
            return "similarity"
        shared = entry.rare if self.rare_only else len(entry.matched)
        if words_count and shared >= self.min_words:
            return "words"
        return None

    def _stands_out(self, entry: Scored, above_bar: float) -> bool:
        """Whether ``entry`` stands out of its field (always, when :attr:`field_lead` is off)."""
        if self.field_lead is None:
            return True
        return (
            entry.lead >= self.field_lead
            or (self.identifier_pass and entry.terms > 0)
            or (self.agree_rank is not None and entry.keyword_rank is not None
                and entry.keyword_rank < self.agree_rank)
            or (self.sure is not None and above_bar >= self.sure)
        )


@functools.lru_cache(maxsize=8192)
def _read(title: str, heading: str, text: str) -> tuple[frozenset[str], str | None]:
    """A passage's words and language; cached, because the same passages come back often."""
    folded = words(f"{title} {heading} {text}")  # split once for both
    return frozenset(folded), language_of_words(folded)


def _cosine(candidate: Candidate) -> float:
    """The candidate's cosine, or -2 (below every cosine) while its vector is not made yet."""
    return -2.0 if math.isnan(candidate.similarity) else candidate.similarity


def best_per_item(scored: Sequence[Scored]) -> list[Scored]:
    """The best-scoring passage of each item, in score order (``scored`` is already sorted)."""
    seen: set[tuple[str, str]] = set()
    best = []
    for entry in scored:
        key = (entry.candidate.source, entry.candidate.item_id)
        if key not in seen:
            seen.add(key)
            best.append(entry)
    return best


@hookimpl
def passageway_register_rankers(register) -> None:  # type: ignore[no-untyped-def]
    register("hybrid", lambda: FusionRanker("hybrid"))
    register("keyword", lambda: FusionRanker("keyword"))
    register("vector", lambda: FusionRanker("vector"))

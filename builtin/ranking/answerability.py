"""The answerability score: does the best of what passed the gate answer the question at all?

The gate's cosine bar asks of one passage whether it is close to the question. On a tool's
documentation every passage is close to every question about the tool, answered or not
(docs/gate-levels.md, "Documentation"), so a second, question-level judgement is made after the
gate, from what recall already has, and the answer is silence when it says no. Its inputs
(:class:`Features`) are measured against the question's own candidates and the gate's own bar,
so they mean the same on any corpus:

* ``sentence``: the best cosine of a window of one to two sentences (the excerpt windows the
  index keeps, ``kernel/text/windows.py``) of the answer's hits, less the hit's bar: an answer
  is usually said in one place, a near-topic page is close everywhere and nowhere in particular;
* ``cosine``: the hit's cosine less its bar;
* ``coverage``: the share of the question's content words that the hit holds, each word
  weighted by how rare it is among the candidates (a word no candidate holds weighs the most);
* ``absent``: the same weighted share for the words that *no* candidate holds (what the
  question asks about that the sources never mention);
* ``keyword``: how high the hit stands in the keyword search (1 at the top, 0 from the
  fiftieth place or when the keyword search did not find it);
* ``lead``: the hit's cosine less the cosine of the tenth-best candidate (the last one in a
  smaller pool): an answer stands out of the question's own candidates, while a question the
  sources do not answer finds many passages about equally close (added in ``docs-2026-12-c``);
* ``across``: 1 when the hit is in another language than the question. Its words cannot
  match, so an answer whose first hit is such is not judged at all (the built-in rankers let
  it through, and keep the gate's own cross-language bar for it); the feature stays for the fit.

The answer is read once per hit (:func:`each_hit`), each time as if that hit answered, and
judged by the best of those readings (:func:`answers`): a paste's names or a long page can put a
passage first that is close to the prompt, with the answer second. The score is a logistic
function of the features with the weights of :data:`WEIGHTS` (version
:data:`VERSION`), fitted on published data and checked on projects that were not used to fit
them (``bench/answerability.py``; figures and the curve in docs/gate-levels.md, "The
answerability score"). The weights belong to the built-in model's cosine scale as much as the
gate levels do; another model's cosines are compared with its own bar, which carries most of
the difference.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence

import attrs

from passageway.kernel.ranking import Gate
from passageway.kernel.store import Candidate
from passageway.kernel.text.stopwords import content_words, language_of_words, words

VERSION = "docs-2026-12-c"
"""The name of the weights below; docs/gate-levels.md names it with every figure."""

WEIGHTS: Mapping[str, float] = {
    "bias": -1.625,
    "sentence": 36.199,
    "cosine": 1.454,
    "coverage": 2.607,
    "absent": -2.365,
    "keyword": 2.077,
    "across": 0.705,
    "lead": 78.659,
}
"""The logistic weights of :data:`VERSION` (``bias`` is the intercept), for the features of
:class:`Features` as they are (not standardised): fitted by ``bench/answerability.py`` on the
starship and typer questions of ``corpus/docs`` (answered against near-topic and answered
anyway) with the ranker's cosine bar :data:`BAR_MARGIN` under the built-in model's 0.87."""

MIN_SCORE = 0.75
"""The answer is silence when the score is below this. ``bench/answerability.py`` chose it with
the weights: the most near-topic silence on the tuning projects at a cost of at most 2 points of
their hit@3 (pooled), and of at most 2 points of any rate on XQuAD's tuning half and published
questions (``corpus/questions.toml``, ``near-topic.toml``); ``passageway eval`` on the published
XQuAD blocks confirmed it (docs/gate-levels.md, "The answerability score"). The answer is
judged by its best hit (:func:`answers`); ``docs-2026-12-b`` judged its first, with a bar of 0.5."""

MIN_POOL = 10
"""The score judges only a question with at least this many distinct candidate passages: how
rare a word is among the candidates means nothing in a pool of a few notes, so a small source
keeps the plain gate (and its bar)."""

BAR_MARGIN = 0.02
"""How much lower the ranker's cosine bar is than the gate level's while the score judges the
answers (fitted with the weights): the score then does part of the cosine bar's work. The
features still measure cosines against the level's own bar, so a level keeps its place."""

KEYWORD_DEPTH = 50
"""A first hit at this keyword rank or lower counts as not found by the keyword search."""

LEAD_RANK = 9
"""The ``lead`` feature measures the first hit against the candidate at this place by cosine."""


@attrs.frozen
class Features:
    """What the score reads of one question and its answer (see the module's docstring)."""

    sentence: float
    cosine: float
    coverage: float
    absent: float
    keyword: float
    across: float
    lead: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return attrs.asdict(self)


def lowered(gate: Gate, margin: float) -> Gate:
    """``gate`` with its bar ``margin`` lower for passages in the question's language only: the
    score does not judge an answer across languages (its words cannot match), so a passage in
    another language keeps the gate's own cross-language bar."""
    return Gate(gate.min_similarity - margin, max(0.0, gate.cross_language_offset - margin))


def judges(keyword: Sequence[Candidate], vector: Sequence[Candidate]) -> bool:
    """Whether the question's candidates are enough for the score (:data:`MIN_POOL`)."""
    return len({(c.source, c.passage_key) for c in (*keyword, *vector)}) >= MIN_POOL


def bar_of(candidate: Candidate, question_language: str | None, gate: Gate) -> tuple[float, bool]:
    """The cosine bar ``candidate`` had to reach and whether it is in another language."""
    language = _read(candidate.title, candidate.heading or "", candidate.text)[1]
    across = question_language is not None and language not in (None, question_language)
    return gate.min_similarity - (gate.cross_language_offset if across else 0.0), across


def features(
    question: str,
    hits: Sequence[Candidate],
    keyword: Sequence[Candidate],
    vector: Sequence[Candidate],
    sentences: Sequence[float | None],
    gate: Gate,
) -> Features:
    """The features of ``question`` answered by ``hits`` (best first, at least one).

    ``sentences`` holds, for each hit, the best cosine of its windows with the question, or None
    when it has none (a short passage, or no window vectors): the hit's own cosine stands in.
    ``keyword`` and ``vector`` are the candidate lists the ranker received.
    """
    return each_hit(question, hits, keyword, vector, sentences, gate)[0]


def each_hit(
    question: str,
    hits: Sequence[Candidate],
    keyword: Sequence[Candidate],
    vector: Sequence[Candidate],
    sentences: Sequence[float | None],
    gate: Gate,
) -> list[Features]:
    """The features of the answer read with each of its hits in turn as the one that answers (as
    :func:`features` reads the first): the answer-wide ``sentence`` and ``absent`` are shared."""
    question_words = list(dict.fromkeys(content_words(question)))
    question_language = language_of_words(words(question))
    best_sentence = -math.inf
    for hit, sentence in zip(hits, sentences, strict=False):
        hit_bar, _ = bar_of(hit, question_language, gate)
        cosine = hit.similarity if sentence is None else max(sentence, hit.similarity)
        if not math.isnan(cosine):
            best_sentence = max(best_sentence, cosine - hit_bar)
    pool: dict[tuple[str, int], Candidate] = {}
    for candidate in (*keyword, *vector):
        pool.setdefault((candidate.source, candidate.passage_key), candidate)
    present = [_read(c.title, c.heading or "", c.text)[0] for c in pool.values()]
    counts = {word: sum(1 for seen in present if word in seen) for word in question_words}
    weight = {word: math.log((len(present) + 1) / (count + 0.5)) for word, count in counts.items()}
    total = sum(weight.values()) or 1.0
    absent = sum(weight[word] for word in question_words if counts[word] == 0) / total
    places = {(c.source, c.passage_key): place for place, c in reversed(list(enumerate(keyword)))}
    cosines = sorted((c.similarity for c in pool.values() if not math.isnan(c.similarity)), reverse=True)
    found = []
    for hit in hits:
        bar, across = bar_of(hit, question_language, gate)
        cosine = 0.0 if math.isnan(hit.similarity) else hit.similarity - bar
        held = _read(hit.title, hit.heading or "", hit.text)[0]
        coverage = sum(weight[word] for word in question_words if word in held) / total
        rank = places.get((hit.source, hit.passage_key))
        rank_part = 0.0 if rank is None else max(0.0, 1.0 - math.log1p(rank) / math.log1p(KEYWORD_DEPTH))
        sentence = cosine if best_sentence == -math.inf else best_sentence
        found.append(Features(sentence, cosine, coverage, absent, rank_part, 1.0 if across else 0.0,
                              lead_of(hit, cosines)))
    return found


def answers(found: Sequence[Features], weights: Mapping[str, float] = WEIGHTS,
            bar: float = MIN_SCORE) -> bool:
    """Whether the answer read as :func:`each_hit` reads it reaches ``bar``: by the best of its
    hits in the question's language (since ``docs-2026-12-c``; by its first hit before), or
    always when its first hit is in another language (words cannot judge across languages; the
    gate's own cross-language bar did)."""
    if found[0].across:
        return True
    return max((score(one, weights) for one in found if not one.across), default=0.0) >= bar


def lead_of(first: Candidate, cosines: Sequence[float]) -> float:
    """``first``'s cosine less the :data:`LEAD_RANK`-th of the pool's ``cosines`` (best first; its
    last with fewer), 0 when either has no vector yet."""
    if not cosines or math.isnan(first.similarity):
        return 0.0
    return first.similarity - cosines[min(LEAD_RANK, len(cosines) - 1)]


def score(found: Features, weights: Mapping[str, float] = WEIGHTS) -> float:
    """The probability-like score (0 to 1) that the answer answers; higher is more likely."""
    total = weights.get("bias", 0.0) + sum(
        weights.get(name, 0.0) * value for name, value in found.as_dict().items()
    )
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, total))))


@functools.lru_cache(maxsize=8192)
def _read(title: str, heading: str, text: str) -> tuple[frozenset[str], str | None]:
    """A passage's words and language; cached, because the same passages come back often."""
    folded = words(f"{title} {heading} {text}")
    return frozenset(folded), language_of_words(folded)

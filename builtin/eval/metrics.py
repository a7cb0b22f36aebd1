"""Scoring: what one question's answer was worth, and the rates over many questions.

Rates carry a 95 % Wilson interval. A rate with no question behind it is ``None`` (shown as
``n/a``), never 0 or 1: with no unanswerable question, silence is unknown.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from passageway.builtin.eval.cases import Case, accepts, contains_answer
from passageway.kernel.records import Hit

Z_95 = 1.959963984540054

RATE_METRICS = ("hit_at_1", "hit_at_3", "silence", "false_silence", "answer_at_1", "answer_at_3")


@attrs.frozen
class Outcome:
    """One question asked once: what came back and how long it took."""

    case: Case
    hits: tuple[Hit, ...]
    """The passages recall returned, best first."""
    seconds: float
    embed_seconds: float

    @property
    def silent(self) -> bool:
        return not self.hits

    @property
    def rank(self) -> int | None:
        """1-based rank of the first accepted hit, or None."""
        for rank, hit in enumerate(self.hits, 1):
            if accepts(self.case, item_id=hit.item_id, title=hit.title, heading=hit.heading, url=hit.url):
                return rank
        return None

    @property
    def answer_rank(self) -> int | None:
        """1-based rank of the first accepted hit that shows an answer text (in its passage's text
        or its heading), or None."""
        for rank, hit in enumerate(self.hits, 1):
            if accepts(
                self.case, item_id=hit.item_id, title=hit.title, heading=hit.heading, url=hit.url
            ) and contains_answer(self.case, hit.text, hit.heading):
                return rank
        return None


@attrs.frozen
class Rate:
    """``count`` of ``total`` questions, with its 95 % interval; ``value`` is None without questions."""

    count: int
    total: int

    @property
    def value(self) -> float | None:
        return self.count / self.total if self.total else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.count, self.total)


def wilson(count: int, total: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of ``count`` successes in ``total`` trials (None for 0 trials)."""
    if total <= 0:
        return None
    p = count / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    # Exact bounds at the edges, which floating point would otherwise miss by an ulp.
    low = 0.0 if count == 0 else max(0.0, centre - half)
    high = 1.0 if count == total else min(1.0, centre + half)
    return low, high


def percentile(values: Sequence[float], share: float) -> float | None:
    """Linear-interpolated percentile (``share`` from 0 to 1); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * share
    low = math.floor(position)
    high = math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@attrs.frozen
class Metrics:
    """Every number a run reports for one set of outcomes."""

    questions: int
    answerable: int
    unanswerable: int
    with_answer_text: int
    rates: dict[str, Rate]
    mrr: float | None
    p50_ms: float | None
    p95_ms: float | None
    embedding_p50_ms: float | None
    embedding_share: float | None

    def value(self, name: str) -> float | None:
        if name == "mrr":
            return self.mrr
        if name == "p95_ms":
            return self.p95_ms
        return self.rates[name].value


def score(outcomes: Sequence[Outcome]) -> Metrics:
    """The metrics of a set of outcomes (a whole run, or one group)."""
    answerable = [outcome for outcome in outcomes if outcome.case.answerable]
    unanswerable = [outcome for outcome in outcomes if not outcome.case.answerable]
    with_text = [outcome for outcome in answerable if outcome.case.expect_text]
    ranks = [outcome.rank for outcome in answerable]
    answer_ranks = [outcome.answer_rank for outcome in with_text]
    rates = {
        "hit_at_1": Rate(sum(1 for rank in ranks if rank == 1), len(answerable)),
        "hit_at_3": Rate(sum(1 for rank in ranks if rank is not None and rank <= 3), len(answerable)),
        "silence": Rate(sum(1 for outcome in unanswerable if outcome.silent), len(unanswerable)),
        "false_silence": Rate(sum(1 for outcome in answerable if outcome.silent), len(answerable)),
        "answer_at_1": Rate(sum(1 for rank in answer_ranks if rank == 1), len(with_text)),
        "answer_at_3": Rate(
            sum(1 for rank in answer_ranks if rank is not None and rank <= 3), len(with_text)
        ),
    }
    mrr = sum(1 / rank for rank in ranks if rank) / len(ranks) if ranks else None
    milliseconds = [outcome.seconds * 1000 for outcome in outcomes]
    embedding = [outcome.embed_seconds * 1000 for outcome in outcomes]
    total_time = sum(milliseconds)
    return Metrics(
        questions=len(outcomes),
        answerable=len(answerable),
        unanswerable=len(unanswerable),
        with_answer_text=len(with_text),
        rates=rates,
        mrr=mrr,
        p50_ms=percentile(milliseconds, 0.5),
        p95_ms=percentile(milliseconds, 0.95),
        embedding_p50_ms=percentile(embedding, 0.5),
        embedding_share=sum(embedding) / total_time if total_time > 0 else None,
    )


def shown(name: str, value: float | None) -> float | None:
    """A value rounded as the report shows it, which is what a target is compared with."""
    if value is None:
        return None
    if name == "p95_ms":
        return round(value, 1)
    return round(value, 3)


def check_targets(metrics: Metrics, targets: dict[str, float]) -> dict[str, dict[str, object]]:
    """Each target with the value shown and whether it is met; a metric shown as n/a fails it."""
    from passageway.builtin.eval.cases import TARGETS

    results: dict[str, dict[str, object]] = {}
    for name in TARGETS:
        if name not in targets:
            continue
        target = targets[name]
        value = shown(name, metrics.value(name))
        if value is None:
            met = False
        elif TARGETS[name]:
            met = value >= target
        else:
            met = value <= target
        results[name] = {"target": target, "value": value, "met": met, "at_least": TARGETS[name]}
    return results

"""Reports: a run (or a comparison) and its records, as JSON for machines (markdown for people is
:mod:`passageway.builtin.eval.markdown`).

By default a report holds no question, title or address from the sources: only counts, rates,
times, the source names and group labels from the user's own configuration, and a machine line
without a host name. ``include_cases`` adds every question with what was found.
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import attrs

from passageway.builtin.eval.metrics import RATE_METRICS, Metrics, Outcome, check_targets, score

REPORT_FORMAT = 1


@attrs.frozen
class SourceCount:
    """One source of the throwaway index: its name from ``passageway.toml`` and its size."""

    name: str
    items: int
    passages: int
    error: str | None = None


@attrs.frozen
class IndexInfo:
    """How the index was built."""

    sources: tuple[SourceCount, ...]
    build_seconds: float
    load_seconds: float | None = None
    embedded: int | None = None
    """Passages embedded while building (None when the sync does not say)."""
    reused: bool = False
    """True when ``--data-dir`` reused an existing index."""

    @property
    def failed(self) -> list[SourceCount]:
        return [source for source in self.sources if source.error]


@attrs.frozen
class RunResult:
    """One embedder and one ranker over the cases, at the main threshold and across the sweep."""

    date: str
    time: str
    version: str
    embedder_name: str
    embedder_dim: int
    ranker: str
    threshold: float
    index: IndexInfo
    machine: str
    outcomes: tuple[Outcome, ...]
    sweep: tuple[tuple[float, tuple[Outcome, ...]], ...] = ()
    targets: dict[str, float] = attrs.field(factory=dict)
    label: str | None = None
    """The candidate's name in a comparison (``default``, ``[embedders.NAME]``, or the ranker)."""

    @property
    def metrics(self) -> Metrics:
        return score(self.outcomes)

    def sweep_rows(self) -> list[tuple[float, Metrics]]:
        """Every swept threshold and the main one, in order, each once."""
        rows = {round(threshold, 6): outcomes for threshold, outcomes in self.sweep}
        if self.sweep:
            rows.setdefault(round(self.threshold, 6), self.outcomes)
        return [(threshold, score(rows[threshold])) for threshold in sorted(rows)]

    @property
    def groups(self) -> list[str]:
        """Group labels in the order they first appear."""
        seen: dict[str, None] = {}
        for outcome in self.outcomes:
            seen.setdefault(outcome.case.group_label, None)
        return list(seen)

    def group_metrics(self) -> list[tuple[str, Metrics]]:
        return [
            (group, score([outcome for outcome in self.outcomes if outcome.case.group_label == group]))
            for group in self.groups
        ]


def machine_line() -> str:
    """Operating system, processor architecture and Python version; never the host name."""
    return f"{platform.system()} {platform.machine()}, Python {platform.python_version()}"


def choose_threshold(rows: Sequence[tuple[float, Metrics]]) -> float | None:
    """The rule for a model's gate: the highest hit@3 + silence, the lower threshold on a tie.

    Compared exactly (as fractions of question counts), so rounding never decides a tie. None
    when either rate has no question behind it.
    """
    best: tuple[Fraction, float] | None = None
    for threshold, metrics in rows:
        hit, silence = metrics.rates["hit_at_3"], metrics.rates["silence"]
        if not hit.total or not silence.total:
            return None
        value = Fraction(hit.count, hit.total) + Fraction(silence.count, silence.total)
        if best is None or value > best[0] or (value == best[0] and threshold < best[1]):
            best = (value, threshold)
    return best[1] if best else None


# ---------------------------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------------------------


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def metrics_json(metrics: Metrics) -> dict[str, Any]:
    values: dict[str, Any] = {name: _round(metrics.rates[name].value, 4) for name in RATE_METRICS}
    values.update(
        mrr=_round(metrics.mrr, 4),
        p50_ms=_round(metrics.p50_ms, 2),
        p95_ms=_round(metrics.p95_ms, 2),
        embedding_p50_ms=_round(metrics.embedding_p50_ms, 2),
        embedding_share=_round(metrics.embedding_share, 4),
    )
    return {
        "questions": {
            "total": metrics.questions,
            "answerable": metrics.answerable,
            "unanswerable": metrics.unanswerable,
            "with_answer_text": metrics.with_answer_text,
        },
        "metrics": values,
        "counts": {name: [metrics.rates[name].count, metrics.rates[name].total] for name in RATE_METRICS},
        "intervals": {
            name: (
                None
                if metrics.rates[name].interval is None
                else [round(bound, 4) for bound in metrics.rates[name].interval]  # type: ignore[union-attr]
            )
            for name in RATE_METRICS
        },
    }


def _case_json(outcome: Outcome) -> dict[str, Any]:
    case = outcome.case
    return {
        "query": case.query,
        "group": case.group,
        "expect": list(case.expect),
        "expect_id": list(case.expect_id),
        "expect_text": list(case.expect_text),
        "rank": outcome.rank,
        "answer_rank": outcome.answer_rank,
        "ms": round(outcome.seconds * 1000, 2),
        "found": [
            {
                "rank": rank,
                "source": hit.source,
                "item_id": hit.item_id,
                "title": hit.title,
                "heading": hit.heading,
                "url": hit.url,
                "similarity": round(hit.similarity, 4),
            }
            for rank, hit in enumerate(outcome.hits, 1)
        ],
    }


def run_json(run: RunResult, *, include_cases: bool = False) -> dict[str, Any]:
    """The ``report.json`` of one run (``"kind": "run"``)."""
    metrics = run.metrics
    rows = run.sweep_rows()
    document: dict[str, Any] = {
        "kind": "run",
        "format": REPORT_FORMAT,
        "date": run.date,
        "time": run.time,
        "passageway": run.version,
        "embedder": {"name": run.embedder_name, "dim": run.embedder_dim},
        "ranker": run.ranker,
        "threshold": run.threshold,
        "machine": run.machine,
        "index": {
            "build_seconds": round(run.index.build_seconds, 2),
            "load_seconds": _round(run.index.load_seconds, 2),
            "embedded": run.index.embedded,
            "reused": run.index.reused,
            "sources": [
                {
                    "name": source.name,
                    "items": source.items,
                    "passages": source.passages,
                    "error": source.error,
                }
                for source in run.index.sources
            ],
        },
        **metrics_json(metrics),
        "groups": [
            {"group": group, **metrics_json(group_metrics)} for group, group_metrics in run.group_metrics()
        ],
        "sweep": [{"threshold": threshold, **metrics_json(row)} for threshold, row in rows],
        "sweep_choice": choose_threshold(rows) if rows else None,
        "targets": check_targets(metrics, run.targets),
    }
    if run.label is not None:
        document["label"] = run.label
    if include_cases:
        document["cases"] = [_case_json(outcome) for outcome in run.outcomes]
    return document


def compare_json(runs: Sequence[RunResult], axis: str, *, include_cases: bool = False) -> dict[str, Any]:
    """The ``report.json`` of a comparison (``"kind": "compare"``), one entry per candidate."""
    first = runs[0]
    return {
        "kind": "compare",
        "format": REPORT_FORMAT,
        "axis": axis,
        "date": first.date,
        "time": first.time,
        "passageway": first.version,
        "machine": first.machine,
        "entries": [run_json(run, include_cases=include_cases) for run in runs],
    }

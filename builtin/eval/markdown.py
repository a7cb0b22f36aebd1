"""Reports as markdown for people: a run, a comparison, their tables and cells.

The same rule as for the JSON reports (:mod:`passageway.builtin.eval.report`): no question, title
or address from the sources unless the cases are asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from passageway.builtin.eval.metrics import Metrics, check_targets
from passageway.builtin.eval.report import IndexInfo, RunResult, choose_threshold

INTERVAL_NOTE = (
    "In brackets: the 95% Wilson interval of a rate, the range the true rate could lie in given this "
    "many questions. Overlapping intervals warn against over-reading a difference; they do not test "
    "for one. The sweep and history tables show point values only."
)

RULE_NOTE = (
    "The rule for a model's gate: the threshold with the highest hit@3 + silence, the lower one on a tie."
)


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def rate_cell(metrics: Metrics, name: str) -> str:
    rate = metrics.rates[name]
    if rate.value is None or rate.interval is None:
        return "n/a"
    low, high = rate.interval
    return f"{rate.value * 100:.1f}% ({low * 100:.0f}–{high * 100:.0f}%)"


def number(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def milliseconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} ms"


def threshold_text(value: float) -> str:
    return format(value, "g")


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A markdown table with padded columns, so that the source reads as well as the page."""
    widths = [len(header) for header in headers]
    for row in rows:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], len(cell))
    lines = [
        "| " + " | ".join(header.ljust(widths[index]) for index, header in enumerate(headers)) + " |",
        "| " + " | ".join("-" * width for width in widths) + " |",
    ]
    lines.extend(
        "| " + " | ".join(cell.ljust(widths[index]) for index, cell in enumerate(row)) + " |" for row in rows
    )
    return "\n".join(lines)


def questions_text(metrics: Metrics) -> str:
    return f"{metrics.questions} ({metrics.answerable} answerable, {metrics.unanswerable} unanswerable)"


def questions_header(metrics: Metrics) -> str:
    counts = f"{metrics.answerable} answerable, {metrics.unanswerable} unanswerable"
    return f"{metrics.questions} questions ({counts})"


def sources_text(index: IndexInfo) -> str:
    parts = []
    for source in index.sources:
        text = f"{source.name}: {source.items} items, {source.passages} passages"
        if source.error:
            text += " (failed to sync)"
        parts.append(text)
    return ", ".join(parts) or "no sources"


def index_text(index: IndexInfo) -> str:
    if index.reused:
        how = "index reused from --data-dir"
    else:
        how = f"index built in {index.build_seconds:.1f} s"
        if index.embedded is not None:
            how += f", {index.embedded} passages embedded"
    return f"{how} ({sources_text(index)})"


def index_cell(index: IndexInfo) -> str:
    """The build time, and how many passages were really embedded (the rest came from the cache)."""
    if index.reused:
        return "reused"
    if index.embedded is None:
        return f"{index.build_seconds:.1f} s"
    return f"{index.build_seconds:.1f} s ({index.embedded} embedded)"


def metric_rows(metrics: Metrics) -> list[list[str]]:
    embedding = "n/a"
    if metrics.embedding_p50_ms is not None:
        embedding = f"{metrics.embedding_p50_ms:.1f} ms ({percent(metrics.embedding_share)} of the latency)"
    return [
        ["Questions", questions_text(metrics)],
        ["Hit@1", rate_cell(metrics, "hit_at_1")],
        ["Hit@3", rate_cell(metrics, "hit_at_3")],
        ["MRR", number(metrics.mrr)],
        ["Silence on unanswerable questions", rate_cell(metrics, "silence")],
        ["False silence on answerable questions", rate_cell(metrics, "false_silence")],
        [
            f"Answer in the first passage ({metrics.with_answer_text} with answer texts)",
            rate_cell(metrics, "answer_at_1"),
        ],
        ["Answer in one of the passages", rate_cell(metrics, "answer_at_3")],
        ["Latency p50 / p95", f"{milliseconds(metrics.p50_ms)} / {milliseconds(metrics.p95_ms)}"],
        ["Embedding the question (p50)", embedding],
    ]


def sweep_table(rows: Sequence[tuple[float, Metrics]]) -> str:
    return table(
        ["Threshold", "Hit@1", "Hit@3", "MRR", "Silence", "False silence", "Answer@3", "p95"],
        [
            [
                threshold_text(threshold),
                percent(metrics.rates["hit_at_1"].value),
                percent(metrics.rates["hit_at_3"].value),
                number(metrics.mrr),
                percent(metrics.rates["silence"].value),
                percent(metrics.rates["false_silence"].value),
                percent(metrics.rates["answer_at_3"].value),
                milliseconds(metrics.p95_ms),
            ]
            for threshold, metrics in rows
        ],
    )


def groups_table(run: RunResult) -> str:
    return table(
        ["Group", "Questions", "Hit@1", "Hit@3", "Answer@3", "Silence"],
        [
            [
                group,
                str(metrics.questions),
                rate_cell(metrics, "hit_at_1"),
                rate_cell(metrics, "hit_at_3"),
                rate_cell(metrics, "answer_at_3"),
                rate_cell(metrics, "silence"),
            ]
            for group, metrics in run.group_metrics()
        ],
    )


TARGET_NAMES = {
    "hit_at_1": "Hit@1",
    "hit_at_3": "Hit@3",
    "mrr": "MRR",
    "silence": "Silence",
    "false_silence": "False silence",
    "answer_at_1": "Answer@1",
    "answer_at_3": "Answer@3",
    "p95_ms": "Latency p95",
}


def targets_table(results: dict[str, dict[str, Any]]) -> str:
    rows = []
    for name, result in results.items():
        value = result["value"]
        if name == "p95_ms":
            goal = f"at most {result['target']:g} ms"
            shown = milliseconds(value)
        elif name == "mrr":
            goal = f"at least {result['target']:g}"
            shown = number(value)
        else:
            goal = ("at least " if result["at_least"] else "at most ") + percent(result["target"])
            shown = percent(value)
        rows.append([TARGET_NAMES[name], goal, shown, "met" if result["met"] else "NOT MET"])
    return table(["Target", "Goal", "Value", "Result"], rows)


def _sweep_section(run: RunResult, heading: str) -> list[str]:
    rows = run.sweep_rows()
    if not rows:
        return []
    chosen = choose_threshold(rows)
    lines = [heading, "", sweep_table(rows), ""]
    if chosen is not None:
        lines += [f"{RULE_NOTE} On this sweep it gives {threshold_text(chosen)}.", ""]
    return lines


def run_markdown(run: RunResult, *, heading_level: int = 2, history: str | None = None) -> str:
    """The markdown of one run: the header, the metrics, the sweep, the groups, the targets."""
    metrics = run.metrics
    sub = "#" * (heading_level + 1)
    lines = [
        f"{run.date} · passageway {run.version} · {run.embedder_name} ({run.embedder_dim} dimensions) · "
        f"ranker {run.ranker} · relevance threshold {threshold_text(run.threshold)}",
        "",
        f"{run.machine} · {index_text(run.index)}",
        "",
        table(["Metric", "Value"], metric_rows(metrics)),
        "",
        INTERVAL_NOTE,
        "",
    ]
    lines += _sweep_section(run, f"{sub} Relevance threshold")
    if len(run.groups) > 1 or run.groups != ["(no group)"]:
        lines += [f"{sub} Groups", "", groups_table(run), ""]
    results = check_targets(metrics, run.targets)
    if results:
        lines += [f"{sub} Targets", "", targets_table(results), ""]
    if history:
        lines += [f"{sub} History", "", history, ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _candidate(run: RunResult, axis: str) -> str:
    if axis == "ranker":
        return run.ranker
    return f"{run.label}: {run.embedder_name}" if run.label else run.embedder_name


def compare_markdown(
    runs: Sequence[RunResult], axis: str, *, heading_level: int = 2, history: str | None = None
) -> str:
    """The markdown of a comparison of embedders (``axis="embedder"``) or rankers (``"ranker"``)."""
    first = runs[0]
    metrics = [run.metrics for run in runs]
    sub = "#" * (heading_level + 1)
    if axis == "ranker":
        header = (
            f"{first.date} · passageway {first.version} · {first.embedder_name} ({first.embedder_dim} "
            f"dimensions) · relevance threshold {threshold_text(first.threshold)} · "
            f"{questions_header(metrics[0])}"
        )
        lines = [
            header,
            "",
            f"{first.machine} · {index_text(first.index)}",
            "",
            "Every ranker answered from the same index.",
            "",
        ]
        headers = ["Ranker"]
        rows = [[run.ranker] for run in runs]
    else:
        header = (
            f"{first.date} · passageway {first.version} · {questions_header(metrics[0])} · {first.machine}"
        )
        lines = [
            header,
            "",
            "Each embedder ran with its own fresh index and its own relevance threshold, because "
            "similarity scales differ between models. Load is the time to start the model, Index "
            "the time to build every source, with the number of passages embedded (the others came "
            "from the vector cache of an earlier run).",
            "",
        ]
        headers = ["Embedder", "Dimensions", "Threshold", "Load", "Index"]
        rows = [
            [
                _candidate(run, axis),
                str(run.embedder_dim),
                threshold_text(run.threshold),
                "n/a" if run.index.load_seconds is None else f"{run.index.load_seconds:.1f} s",
                index_cell(run.index),
            ]
            for run in runs
        ]
    headers += ["Hit@1", "Hit@3", "MRR", "Silence", "False silence", "Answer@1", "Answer@3", "p50 / p95"]
    for row, row_metrics in zip(rows, metrics, strict=True):
        row += [
            rate_cell(row_metrics, "hit_at_1"),
            rate_cell(row_metrics, "hit_at_3"),
            number(row_metrics.mrr),
            rate_cell(row_metrics, "silence"),
            rate_cell(row_metrics, "false_silence"),
            rate_cell(row_metrics, "answer_at_1"),
            rate_cell(row_metrics, "answer_at_3"),
            f"{number(row_metrics.p50_ms, 1)} / {number(row_metrics.p95_ms, 1)} ms",
        ]
    lines += [table(headers, rows), "", INTERVAL_NOTE, ""]
    for run in runs:
        name = run.ranker if axis == "ranker" else (run.label or run.embedder_name)
        lines += _sweep_section(run, f"{sub} Relevance threshold: {name}")
    for run in runs:
        if len(run.groups) > 1 or run.groups != ["(no group)"]:
            name = run.ranker if axis == "ranker" else (run.label or run.embedder_name)
            lines += [f"{sub} Groups: {name}", "", groups_table(run), ""]
    if history:
        lines += [f"{sub} History", "", history, ""]
    return "\n".join(lines).rstrip("\n") + "\n"

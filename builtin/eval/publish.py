"""Where an eval's results go: the terminal, ``--out``'s report files, and with ``--write`` the
history file and the block of a documentation page (``docs/measurements.md``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any


def history_entry(result: Any, block: str | None) -> dict[str, Any]:
    """One row of the history file (``docs/measurements.history.json``) for a run."""
    metrics = result.metrics
    from passageway.builtin.eval.report import metrics_json

    values = metrics_json(metrics)["metrics"]
    return {
        "date": result.date,
        "time": result.time,
        "passageway": result.version,
        "embedder": result.embedder_name,
        "dim": result.embedder_dim,
        "ranker": result.ranker,
        "threshold": result.threshold,
        "block": block,
        "label": result.label,
        "questions": metrics.questions,
        **{
            name: values[name]
            for name in ("hit_at_1", "hit_at_3", "mrr", "silence", "false_silence", "answer_at_3", "p95_ms")
        },
    }


def render(results: Sequence[Any], axis: str | None, history: str | None) -> str:
    """The markdown of one run (``axis`` None) or a comparison along ``axis``."""
    from passageway.builtin.eval.markdown import compare_markdown, run_markdown

    if axis is None:
        return run_markdown(results[0], history=history)
    return compare_markdown(results, axis, history=history)


def publish(args: argparse.Namespace, results: Sequence[Any], axis: str | None) -> None:
    """Print the report (``--json``: the JSON), write ``--out``'s files, and with ``--write`` add
    the runs to the history and replace the page's block."""
    from passageway.builtin.eval.page import (
        add_history,
        history_path,
        history_table,
        load_history,
        save_history,
    )
    from passageway.builtin.eval.page import write_page as replace_page
    from passageway.builtin.eval.report import compare_json, run_json

    include = bool(args.include_cases)
    markdown = render(results, axis, None)
    if include:
        markdown += "\n" + cases_markdown(results)
    document = (
        run_json(results[0], include_cases=include)
        if axis is None
        else compare_json(results, axis, include_cases=include)
    )
    if getattr(args, "json", False):
        print(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        print(markdown, end="")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "report.json").write_text(
            json.dumps(document, indent=2, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8"
        )
        (args.out / "report.md").write_text(markdown, encoding="utf-8")
    if args.write:
        path = history_path(args.write)
        runs = load_history(path)
        for result in results:
            runs = add_history(runs, history_entry(result, args.block))
        save_history(path, runs)
        block = render(results, axis, history_table(runs, args.block))
        replace_page(args.write, block, args.block)
        print(f"passageway: eval: wrote {args.write} and {path}", file=sys.stderr)


def cases_markdown(results: Sequence[Any]) -> str:
    """Every question with what was found, for ``--include-cases``."""
    from passageway.builtin.eval.markdown import table

    parts = []
    for result in results:
        title = f"### Cases: {result.label or result.ranker} at {result.threshold:g}"
        rows = []
        for outcome in result.outcomes:
            found = "; ".join(f"{hit.title} ({hit.item_id})" for hit in outcome.hits) or "(silent)"
            rows.append(
                [
                    outcome.case.query.replace("|", "\\|"),
                    outcome.case.group_label,
                    str(outcome.rank or "-")
                    if outcome.case.answerable
                    else ("silent" if outcome.silent else "NOT silent"),
                    found.replace("|", "\\|"),
                ]
            )
        parts.append(title + "\n\n" + table(["Question", "Group", "Rank", "Found"], rows) + "\n")
    return "\n".join(parts)

"""Rendering: the JSON and markdown of runs and comparisons, from synthetic outcomes."""

from __future__ import annotations

import re

import attrs

from passageway.builtin.eval.cases import Case
from passageway.builtin.eval.markdown import compare_markdown, run_markdown, table
from passageway.builtin.eval.metrics import Outcome
from passageway.builtin.eval.report import IndexInfo, RunResult, SourceCount, compare_json, run_json
from passageway.kernel.records import Hit

ANSWERABLE = Case("where is the needle", expect=("haystack",), expect_text=("needle",), group="g")
SILENT = Case("what about the moon", group="off")


def result(
    ranker: str = "hybrid", *, found: bool = True, quiet: bool = True, label: str | None = None
) -> RunResult:
    hit = Hit("notes", "haystack", "The Haystack", "https://private.example/h", None, "a needle", 0.9, 0.9)
    outcomes = (
        Outcome(ANSWERABLE, (hit,) if found else (), 0.02, 0.01),
        Outcome(SILENT, () if quiet else (hit,), 0.03, 0.01),
    )
    return RunResult(
        date="2026-11-30",
        time="12:00:00Z",
        version="0.1.0",
        embedder_name="toy",
        embedder_dim=64,
        ranker=ranker,
        threshold=0.8,
        index=IndexInfo((SourceCount("notes", 1, 2),), 1.25, 0.1, 2),
        machine="Linux x86_64, Python 3.11",
        outcomes=outcomes,
        sweep=((0.7, outcomes), (0.9, outcomes)),
        label=label,
    )


def test_run_json_holds_counts_intervals_and_no_private_text():
    document = run_json(result())
    assert document["counts"]["hit_at_1"] == [1, 1]
    assert document["counts"]["answer_at_3"] == [1, 1]
    assert document["intervals"]["silence"] == [0.2065, 1.0]
    assert [row["threshold"] for row in document["sweep"]] == [0.7, 0.8, 0.9]
    assert document["sweep_choice"] == 0.7
    assert "private.example" not in str(document) and "needle" not in str(document)
    assert "moon" not in run_markdown(result())
    assert (
        run_json(result(), include_cases=True)["cases"][0]["found"][0]["url"] == "https://private.example/h"
    )


def test_run_markdown_shows_na_for_a_metric_without_questions():
    only_answerable = attrs.evolve(result(), outcomes=result().outcomes[:1], sweep=())
    text = run_markdown(only_answerable)
    assert re.search(r"\| Silence on unanswerable questions +\| n/a +\|", text)
    assert "### Relevance threshold" not in text
    assert "index built in 1.2 s, 2 passages embedded (notes: 1 items, 2 passages)" in text


def test_compare_of_rankers_and_embedders():
    rankers = [result("hybrid"), result("vector", found=False, quiet=False)]
    text = compare_markdown(rankers, "ranker")
    assert "Every ranker answered from the same index." in text
    assert "### Relevance threshold: vector" in text and "### Groups: hybrid" in text
    embedders = [result(label="default"), result(label="other")]
    text = compare_markdown(embedders, "embedder")
    assert "default: toy" in text and "1.2 s (2 embedded)" in text
    document = compare_json(embedders, "embedder")
    assert document["kind"] == "compare" and [entry["label"] for entry in document["entries"]] == [
        "default",
        "other",
    ]


def test_table_pads_columns():
    assert table(["A", "Bee"], [["long cell", "x"]]).splitlines() == [
        "| A         | Bee |",
        "| --------- | --- |",
        "| long cell | x   |",
    ]

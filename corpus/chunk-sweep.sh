#!/bin/sh
# Sweep the chunker's size cap on the sample corpus and write the result into docs/measurements.md.
#
#   corpus/chunk-sweep.sh            # caps 600, 1000, 1500, 2000 (CAPS overrides them)
#
# For each cap, `passageway eval` builds a fresh index of corpus/en and corpus/de with passages of
# at most that many characters and asks every question of questions.toml and near-topic.toml with
# the hybrid ranker, at the built-in model's gate and over the threshold sweep. The table between
# the chunk-cap markers of docs/measurements.md is replaced; the rest of the page is untouched.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SCRIPT=chunk-sweep.sh
. "$ROOT/corpus/common.sh"
CAPS=${CAPS:-600 1000 1500 2000}
SWEEP=${SWEEP:-0.80,0.82,0.84,0.85,0.86,0.87,0.88}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/passageway-chunks.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

{ corpus_source en; corpus_source de; } > "$WORK/both.toml"

for cap in $CAPS; do
    echo "chunk-sweep.sh: cap $cap" >&2
    "$ROOT/.venv/bin/passageway" eval corpus/questions.toml corpus/near-topic.toml --config "$WORK/both.toml" \
        --ranker hybrid --chunk-cap "$cap" --sweep "$SWEEP" --out "$WORK/cap-$cap" > /dev/null
done

"$PYTHON" - "$WORK" "$CAPS" docs/measurements.md <<'PY'
import json
import sys
from pathlib import Path

work, caps, page = Path(sys.argv[1]), sys.argv[2].split(), Path(sys.argv[3])
START, END = "<!-- passageway:chunk-cap:start -->", "<!-- passageway:chunk-cap:end -->"

def percent(value):
    return "n/a" if value is None else f"{value * 100:.1f}%"

rows, sweep_rows, thresholds = [], [], None
for cap in caps:
    report = json.loads((work / f"cap-{cap}" / "report.json").read_text(encoding="utf-8"))
    metrics = report["metrics"]
    passages = sum(source["passages"] for source in report["index"]["sources"])
    score = metrics["hit_at_3"] + metrics["silence"]
    rows.append(
        f"| {cap} | {passages} | {percent(metrics['hit_at_1'])} | {percent(metrics['hit_at_3'])} "
        f"| {percent(metrics['answer_at_3'])} | {percent(metrics['silence'])} "
        f"| {percent(metrics['false_silence'])} | {score * 100:.1f} |"
    )
    sweep = report.get("sweep") or []
    thresholds = [row["threshold"] for row in sweep]
    best = max(sweep, key=lambda row: (row["metrics"]["hit_at_3"] + row["metrics"]["silence"], -row["threshold"]))
    cells = " | ".join(
        f"{percent(row['metrics']['hit_at_3'])} / {percent(row['metrics']['silence'])}" for row in sweep
    )
    sweep_rows.append(f"| {cap} | {cells} | {best['threshold']:g} |")
threshold = report["threshold"]
block = [
    START,
    "",
    f"`corpus/chunk-sweep.sh` · {report['date']} · passageway {report['passageway']} · "
    f"{report['embedder']['name']} · hybrid · relevance threshold {threshold:g} · "
    f"{report['questions']['total']} questions",
    "",
    "| Cap (characters) | Passages | Hit@1 | Hit@3 | Answer@3 | Silence | False silence | Hit@3 + silence |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
    *rows,
    "",
    "Hit@3 / silence at each threshold of the sweep, and the threshold the gate rule picks for that cap:",
    "",
    "| Cap | " + " | ".join(f"{value:g}" for value in thresholds) + " | Rule picks |",
    "| --- | " + " | ".join("---" for _ in thresholds) + " | --- |",
    *sweep_rows,
    "",
    END,
]
text = page.read_text(encoding="utf-8")
if START not in text or END not in text:
    sys.exit(f"chunk-sweep.sh: {page} has no {START} ... {END} block")
head, rest = text.split(START, 1)
_, tail = rest.split(END, 1)
page.write_text(head + "\n".join(block) + tail, encoding="utf-8")
print(f"chunk-sweep.sh: wrote the chunk-cap block of {page}", file=sys.stderr)
PY

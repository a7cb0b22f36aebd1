"""Two ``corpus/measure.sh --out`` folders compared count by count: the issue-28 rule for a kernel.

    uv run python bench/e5_onnx_measure_diff.py BASE CANDIDATE [--all]

A kernel that moves the built-in model's vectors further than a cosine of 0.9999 is taken only
if every ``corpus/measure.sh`` rate stays within one question. Run ``corpus/measure.sh --no-write
--include-cases --out DIR`` once per engine (the candidate with ``HOME`` set to a fresh folder,
so its vectors are its own), then this: for every block, ranker, group and threshold of the sweep
it compares the counts behind each rate (hit@1, hit@3, silence, false silence, answer@1,
answer@3), prints the moves, the largest per block, and whether the gate rule picks another
threshold. ``--all`` lists every move, not only those of more than one question.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

BLOCKS = ("both", "cross-language", "long-prompts", "all-questions", "docs", "docs-pastes", "docs-users",
          "docs-held-out")


def rows(entry: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The main table, each group and each sweep row of one ranker's report."""
    found = [("at the gate", entry)]
    found += [(f"group {group['group']}", group) for group in entry.get("groups", [])]
    found += [(f"sweep {row['threshold']}", row) for row in entry.get("sweep", [])]
    return found


def compare(base: dict[str, Any], candidate: dict[str, Any]) -> tuple[int, int, list[tuple[int, str]]]:
    """(counts compared, largest move, [(move, description)]) between two reports of one block."""
    compared, moves = 0, []
    for old, new in zip(base["entries"], candidate["entries"], strict=True):
        label = old.get("label") or old.get("ranker")
        for (where, old_row), (_, new_row) in zip(rows(old), rows(new), strict=True):
            for metric, (old_count, total) in old_row["counts"].items():
                new_count, new_total = new_row["counts"][metric]
                if total != new_total:
                    raise SystemExit(f"{label} {where} {metric}: {total} questions against {new_total}")
                compared += 1
                if old_count != new_count:
                    moves.append((abs(old_count - new_count),
                                  f"{label} {where} {metric}: {old_count}/{total} -> {new_count}/{total}"))
        if old.get("sweep_choice") != new.get("sweep_choice"):
            choices = f"{old.get('sweep_choice')} -> {new.get('sweep_choice')}"
            moves.append((0, f"{label}: the gate rule picks {choices}"))
    return compared, max((move for move, _ in moves), default=0), moves


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", type=Path, help="measure.sh --out folder of the current engine")
    parser.add_argument("candidate", type=Path, help="measure.sh --out folder of the candidate")
    parser.add_argument("--all", action="store_true", help="list moves of one question too")
    args = parser.parse_args()
    largest = 0
    for block in BLOCKS:
        paths = [folder / block / "report.json" for folder in (args.base, args.candidate)]
        if not all(path.is_file() for path in paths):
            print(f"{block}: no report in {' and '.join(str(path) for path in paths if not path.is_file())}")
            continue
        compared, worst, moves = compare(*(json.loads(path.read_text(encoding="utf-8")) for path in paths))
        largest = max(largest, worst)
        print(f"{block}: {compared} counts, {sum(1 for move, _ in moves if move)} moved, "
              f"largest move {worst} question(s)")
        for move, text in moves:
            if args.all or move != 1:
                print(f"    {text}")
    print(f"largest move over the blocks: {largest} question(s); "
          f"the rule holds: {'yes' if largest <= 1 else 'no'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What the prompt reducer makes of every question and prompt under corpus/, saved or compared.

Recall searches only what :func:`passageway.kernel.query.prompt.asked` keeps of a prompt (its
question, the paste's names, the sentence before it). When a change to the reducer leaves that
unchanged for every case of every question file, no measured rate of ``corpus/measure.sh`` can move
through it; when it does not, the cases that changed are the ones to look at::

    uv run python bench/reduced_prompts.py --save /tmp/reduced-before.json     # on the old commit
    uv run python bench/reduced_prompts.py --against /tmp/reduced-before.json  # on the new one
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

from common import ROOT

from passageway.kernel.query.prompt import asked


def reductions() -> dict[str, list[object]]:
    """``file:number`` -> the reduced question, its terms, its context and why it was kept."""
    found: dict[str, list[object]] = {}
    for path in sorted((ROOT / "corpus").rglob("*.toml")):
        cases = tomllib.loads(path.read_text(encoding="utf-8")).get("case", [])
        for number, case in enumerate(cases):
            if isinstance(case, dict) and "query" in case:
                reduced = asked(case["query"])
                name = f"{path.relative_to(ROOT)}:{number}"
                found[name] = [reduced.text, list(reduced.terms), reduced.context, reduced.why]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--save", type=Path, help="write the reductions to this JSON file")
    where.add_argument("--against", type=Path, help="compare with a file --save wrote")
    args = parser.parse_args()
    now = reductions()
    if args.save:
        args.save.write_text(json.dumps(now, ensure_ascii=False, indent=1), encoding="utf-8")
        print(f"{len(now)} cases reduced, written to {args.save}")
        return 0
    before = json.loads(args.against.read_text(encoding="utf-8"))
    changed = sorted(name for name in now.keys() | before.keys() if now.get(name) != before.get(name))
    for name in changed:
        print(f"{name}\n  before: {before.get(name)}\n  now:    {now.get(name)}")
    print(f"{len(now)} cases, {len(changed)} reduced differently")
    return 0


if __name__ == "__main__":
    sys.exit(main())

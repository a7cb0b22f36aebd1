"""Pastes that help (issue 35): which names of a paste should join the search, per project.

A question asked inside a paste (a traceback, a config, a log) should find the right page at
least as often as the same question asked bare. The paste's names can join the keyword search
and be embedded with the question (``kernel/query/prompt_names.py``), and the sentence before a
question that reads alone can be part of it or context searched second
(``kernel/query/prompt_sentences.py``); each rule below is run
with the real ``recall`` (default gate and ranker, the answerability score as configured) on

* ``corpus/docs/pastes.toml`` (starship and typer choose the rule; starlette is held out) with
  each paste's bare twin from ``corpus/docs/questions.toml``, and
* the held-out project's ``corpus/docs/mkdocs-pastes.toml`` with its twins from
  ``mkdocs-questions.toml`` (never used to choose).

The indexes are the ones ``bench/answerability.py`` records (DIR/docs, DIR/mkdocs; built
without the excerpt windows' vectors, which these rates do not read). Run::

    uv run python bench/paste_rules.py --data-dir /tmp/pw-answer
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common.corpus import paste_twins as twins
from common.transfer_recording import _no_windows, config_text

from passageway.builtin.eval.cases import Case, accepts, load_cases
from passageway.builtin.eval.engine import KernelEngine
from passageway.kernel.config import load_settings
from passageway.kernel.query import prompt_names, prompt_sentences
from passageway.testing.recall import recall_over as recall

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "corpus" / "docs"
TUNING = ("starship", "typer")
RULES = (("all", 3, False, False), ("known", 3, False, False), ("none", 3, False, False),
         ("all", 0, False, False), ("none", 0, False, False), ("none", 3, True, False),
         ("all", 3, True, False), ("known", 3, True, False),
         ("none", 3, True, True), ("all", 3, True, True), ("known", 3, True, True),
         ("none", 0, True, True))
"""(which names join the keyword search, how many known names are embedded with the question,
whether the first search's ranking leads, ``prompt_names.BARE_FIRST``, and whether the sentence
before a question that can be read alone is context searched second,
``prompt_sentences.CONTEXT_BESIDE_PASTE``)."""
Rule = tuple[str, int, bool, bool]


def hit(case: Case, answer: Any) -> bool:
    return any(accepts(case, item_id=h.item_id, title=h.title, heading=h.heading, url=h.url or "")
               for h in answer.hits[:3])


async def run(kind: str, pairs: Sequence[tuple[Case, Case]], data_dir: Path
              ) -> dict[Rule, list[tuple[str, bool, bool, str]]]:
    """Per rule: each pair's project, whether the paste hit, whether its bare twin hit, and the
    bare question."""
    import passageway.kernel.index.item_updates as updates_module

    updates_module.embed_windows = _no_windows  # type: ignore[assignment]
    folder = Path(tempfile.mkdtemp(prefix=f"passageway-paste-rules-{kind}-"))
    config = folder / "passageway.toml"
    config.write_text(config_text(kind), encoding="utf-8")
    results: dict[Rule, list[tuple[str, bool, bool, str]]] = {}
    async with KernelEngine.open(load_settings(config_path=config), data_dir=data_dir / kind,
                                 progress=lambda line: print(line, file=sys.stderr)) as engine:
        await engine.build()
        stores = [source.store for source in engine.kernel.sources.values() if source.store is not None]
        ranker = engine.ranker("hybrid")
        threshold = engine.default_threshold
        bare = {}
        for _, twin in pairs:
            answer = await recall(twin.query, stores, engine.embedder, ranker, min_similarity=threshold)
            bare[twin.query] = hit(twin, answer)
        for rule in RULES:
            (prompt_names.KEYWORD_NAMES, prompt_names.MAX_EVIDENCE, prompt_names.BARE_FIRST,
             prompt_sentences.CONTEXT_BESIDE_PASTE) = rule
            rows = []
            for case, twin in pairs:
                answer = await recall(case.query, stores, engine.embedder, ranker, min_similarity=threshold)
                rows.append((case.group.split("-")[0], hit(case, answer), bare[twin.query], twin.query))
            results[rule] = rows
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/pw-answer"))
    args = parser.parse_args()
    saved = (prompt_names.KEYWORD_NAMES, prompt_names.MAX_EVIDENCE, prompt_names.BARE_FIRST,
             prompt_sentences.CONTEXT_BESIDE_PASTE)
    docs = twins(load_cases([DOCS / "pastes.toml"]).cases, load_cases([DOCS / "questions.toml"]).cases)
    mkdocs = twins(load_cases([DOCS / "mkdocs-pastes.toml"]).cases,
                   load_cases([DOCS / "mkdocs-questions.toml"]).cases)
    results = asyncio.run(run("docs", docs, args.data_dir))
    for rule, rows in asyncio.run(run("mkdocs", mkdocs, args.data_dir)).items():
        results[rule] += rows
    projects = ("starship", "typer", "starlette", "mkdocs")
    print(f"Today's rule: keyword names {saved[0]!r}, {saved[1]} known names embedded, first search "
          f"leading {saved[2]}, the sentence before as context {saved[3]}. "
          "Each cell: pasted / bare hit@3 (of the pairs).\n")
    print("| Keyword names, embedded, first leads, context | " + " | ".join(projects)
          + " | tuning: pasted − bare |")
    print("| --- |" + " ---: |" * (len(projects) + 1))
    for rule, rows in results.items():
        cells = []
        for name in projects:
            mine = [row for row in rows if row[0] == name]
            cells.append(f"{sum(row[1] for row in mine)} / {sum(row[2] for row in mine)} of {len(mine)}")
        gain = sum(row[1] - row[2] for row in rows if row[0] in TUNING)
        label = f"{rule[0]}, {rule[1]}, {'yes' if rule[2] else 'no'}, {'yes' if rule[3] else 'no'}"
        print(f"| {label} | " + " | ".join(cells) + f" | {gain:+d} |")
    print("\nToday's rule, the pairs where the paste and its bare twin differ (bare question):\n")
    for name, pasted, bare, question in results.get(saved, []):
        if pasted != bare:
            print(f"- {name}: {'pasted only' if pasted else 'bare only'}: {question}")


if __name__ == "__main__":
    main()

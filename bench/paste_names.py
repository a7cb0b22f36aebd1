"""Questions inside pastes: what the paste's names add, and what they must not.

    uv run python bench/paste_names.py                  # a Markdown table; about two minutes
    uv run python bench/paste_names.py --data-dir /tmp/paste-names   # keep both indexes for the next run

Three ways to use the names a question's paste holds (kernel/query/prompt_names.py), each run with
full ``recall`` at the default gate and the hybrid ranker:

* **keyword only**: the names join the keyword search, nothing else (the first version of rule 5);
* **every name embedded**: the question is embedded with all the paste's names, known or not;
* **names shown as code** (what recall does): the question is embedded again with those names
  that a candidate passage shows as code.

On two sets: the public documentation set's ``corpus/docs/pastes.toml`` (30 questions inside
pastes, by project: starship and typer tune, starlette is held out; 10 pastes alone that must stay
silent) with the bare twin of each question (the case of ``corpus/docs/questions.toml`` with the
same ``expect``, ``expect_text`` and language); and the XQuAD long prompts
(``corpus/long-prompts.toml``: this repository's code, logs and traces around questions about
Wikipedia articles, which no source shows as code), hit@3, answer@3 and silence.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from common.corpus import paste_twins

from passageway.builtin.eval.cases import Case, accepts, contains_answer, load_cases
from passageway.builtin.eval.engine import KernelEngine
from passageway.kernel.config import load_settings
from passageway.kernel.query import prompt_names
from passageway.kernel.query.prompt import asked
from passageway.testing.recall import recall_over as recall

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "corpus" / "docs"
DOCS_SOURCES = (("starship-en", "starship/en"), ("starship-de", "starship/de"), ("typer", "typer"),
                ("starlette", "starlette"))
HELD_OUT = "starlette"


def config_text(kind: str) -> str:
    if kind == "xquad":
        pairs = [(f"corpus-{language}", ROOT / "corpus" / language) for language in ("en", "de")]
    else:
        pairs = [(name, DOCS / folder) for name, folder in DOCS_SOURCES]
    return "".join(
        f'[[connector]]\nname = "{name}"\n'
        f'command = ["{sys.executable}", "-m", "passageway_connector_markdown"]\n'
        f'env = {{ FOLDER = "{folder}" }}\n\n'
        for name, folder in pairs
    )


def docs_cases() -> list[Case]:
    """The pastes, their bare twins (group ``<project>-bare``) and the pastes alone."""
    pastes = list(load_cases([DOCS / "pastes.toml"]).cases)
    bare = list(load_cases([DOCS / "questions.toml"]).cases)
    twins = [Case(twin.query, twin.expect, twin.expect_id, twin.expect_text,
                  case.group_label.replace("-paste", "-bare"))
             for case, twin in paste_twins(pastes, bare)]
    return pastes + twins


def xquad_cases() -> list[Case]:
    return list(load_cases([ROOT / "corpus" / "long-prompts.toml"]).cases)


class Variant:
    """How the paste's names are used: ``evidence`` names kept by :func:`known_names` (0: none),
    ``embed_all``: every name embedded with the question, through the embedder."""

    def __init__(self, name: str, evidence: int, embed_all: bool) -> None:
        self.name, self.evidence, self.embed_all = name, evidence, embed_all


VARIANTS = (Variant("keyword only", 0, False), Variant("every name embedded", 0, True),
            Variant("names shown as code (recall)", prompt_names.MAX_EVIDENCE, False))


Results = dict[str, dict[str, list[tuple[Case, Any]]]]
"""Per variant, per group: each case with its answer."""


async def run(kind: str, cases: Sequence[Case], data_dir: Path) -> Results:
    folder = Path(tempfile.mkdtemp(prefix=f"passageway-paste-names-{kind}-"))
    config = folder / "passageway.toml"
    config.write_text(config_text(kind), encoding="utf-8")
    index = data_dir / kind
    index.mkdir(parents=True, exist_ok=True)
    results: Results = {}
    async with KernelEngine.open(load_settings(config_path=config), data_dir=index,
                                 progress=lambda line: print(line, file=sys.stderr)) as engine:
        await engine.build()
        stores = [source.store for source in engine.kernel.sources.values() if source.store is not None]
        ranker = engine.ranker("hybrid")
        inner = engine.embedder.embed
        widened: dict[str, str] = {}

        async def embed(texts: Sequence[str], kind: str) -> Any:
            return await inner([widened.get(text, text) for text in texts], kind)

        engine.embedder.embed = embed  # type: ignore[method-assign]
        for variant in VARIANTS:
            prompt_names.MAX_EVIDENCE = variant.evidence
            widened.clear()
            groups: dict[str, list[tuple[Case, Any]]] = {}
            for case in cases:
                reduced = asked(case.query)
                if variant.embed_all and reduced.terms:
                    widened[reduced.text] = prompt_names.with_names(reduced.text, reduced.terms)
                answer = await recall(case.query, stores, engine.embedder, ranker,
                                      min_similarity=engine.default_threshold)
                groups.setdefault(case.group_label, []).append((case, answer))
            results[variant.name] = groups
    return results


def hit(case: Case, answer: Any) -> bool:
    return any(accepts(case, item_id=h.item_id, title=h.title, heading=h.heading, url=h.url or "")
               for h in answer.hits[:3])


def answered(case: Case, answer: Any) -> bool:
    return any(accepts(case, item_id=h.item_id, title=h.title, heading=h.heading, url=h.url or "")
               and contains_answer(case, h.text) for h in answer.hits[:3])


def count(rows: Sequence[tuple[Case, Any]], test: Callable[[Case, Any], bool]) -> str:
    found = sum(1 for case, answer in rows if test(case, answer))
    return f"{found}/{len(rows)} ({100 * found / len(rows):.1f} %)" if rows else "–"


def table(docs: Results, xquad: Results) -> str:
    lines = ["| Names of the paste | pastes, tuning (starship, typer) | pastes, held out (starlette) | "
             "asked bare (all 30) | pastes alone silent | XQuAD long hit@3 | answer@3 | silence |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for variant in VARIANTS:
        groups = docs[variant.name]
        pasted = [row for group, rows in groups.items() if group.endswith(("-paste", "-paste-de"))
                  for row in rows]
        tuning = [row for row in pasted if not row[0].group_label.startswith(HELD_OUT)]
        held = [row for row in pasted if row[0].group_label.startswith(HELD_OUT)]
        bare = [row for group, rows in groups.items() if "-bare" in group for row in rows]
        alone = groups.get("paste-only", [])
        long = [row for group, rows in xquad[variant.name].items() for row in rows]
        answerable = [row for row in long if row[0].answerable]
        silent = [row for row in long if not row[0].answerable]
        lines.append(
            f"| {variant.name} | {count(tuning, hit)} | {count(held, hit)} | {count(bare, hit)} | "
            f"{count(alone, lambda case, answer: answer.silent)} | {count(answerable, hit)} | "
            f"{count(answerable, answered)} | {count(silent, lambda case, answer: answer.silent)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, help="keep the two indexes here and reuse them")
    args = parser.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="passageway-paste-names-"))
    docs = asyncio.run(run("docs", docs_cases(), data_dir))
    xquad = asyncio.run(run("xquad", xquad_cases(), data_dir))
    print(f"`uv run python bench/paste_names.py`: {len(docs_cases())} documentation cases, "
          f"{len(xquad_cases())} XQuAD long prompts; default gate, hybrid ranker.\n")
    print(table(docs, xquad))


if __name__ == "__main__":
    main()

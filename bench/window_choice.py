"""Where excerpts start with each window vector store: windows embedded apart against windows
pooled from the passage's own forward pass (issue 37), compared passage by passage.

For every answerable question of a set (once, though two question files hold it), every long
passage of an expected page in the question's language (``--pair other``: in the other language,
for the sample corpus's articles and starship's translated pages) that holds one of the question's
answer texts is cut as recall cuts it (``kernel/query/rendering.py``): the unit the
excerpt is anchored at (:func:`~passageway.kernel.query.excerpts.best_start`, window similarity
plus the question's rare words) and the excerpt of ``--limit`` characters around it. The windows'
vectors come from two vector caches, one filled by each kind of build (for example the shared data
folders of two ``corpus/measure.sh`` runs, ``HOME`` set apart); the questions are embedded once,
on the converted built-in model in ``--model``. Printed per set and group: passages compared, how
many start at the same unit, how many excerpts show the answer with each cache and with the
question's words alone, and how many show it with one cache only.

    uv run python bench/window_choice.py --before HOME_A/.local/share/passageway/vectors/X.db \\
        --after HOME_B/.local/share/passageway/vectors/X.db --model MODEL_FOLDER [--set corpus|docs] \\
        [--pair own|other] [--limit 400]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from passageway.builtin.eval.cases import Case, contains_answer, load_cases
from passageway.kernel.query.excerpts import best_start, cut, unit_starts
from passageway.kernel.records import Passage, item_from_json
from passageway.kernel.text.chunking import passages_for
from passageway.kernel.text.windows import SHORT_PASSAGE, flat, window_plan

ROOT = Path(__file__).resolve().parents[1]
SETS = {
    "corpus": (ROOT / "corpus", ["en", "de"], ["questions-all.toml", "questions.toml"]),
    "docs": (ROOT / "corpus" / "docs", ["starship/en", "starship/de", "typer", "starlette"],
             ["questions.toml"]),
}


def pages(root: Path, folders: list[str]) -> dict[str, list[Passage]]:
    """Each page's passages, keyed by its folder and item id (``en/black-death.md``), read by the
    markdown connector: the sample corpus's two folders hold the same file names."""
    from passageway_connector_markdown import MarkdownConnector

    found: dict[str, list[Passage]] = {}
    for folder in folders:
        connector = MarkdownConnector({"FOLDER": str(root / folder)})
        for value in connector.fetch(list(connector.versions())):
            item = item_from_json(value)
            found[f"{folder}/{item.id}"] = passages_for(item)
    return found


def page_language(key: str) -> str:
    """``de`` for a page in a ``de`` folder (``de/x.md``, ``starship/de/x.md``), else ``en``."""
    return "de" if "de" in key.split("/")[:-1] else "en"


def question_language(case: Case) -> str:
    """``de`` for a German question (group ``de``, ``starship-de``, ``typer-de-en-only``), else ``en``."""
    return "de" if "de" in case.group_label.split("-") else "en"


def expected_pages(case: Case, keys: Iterable[str], pair: str) -> list[str]:
    """The pages ``case`` expects (an ``expect`` entry is part of the key, as ``passageway eval``
    matches it against the address), those in the question's language (``pair = "own"``) or
    in the other one (``"other"``); a question whose page exists in one language only keeps it
    with ``own``."""
    named = [key for key in keys if any(entry.casefold() in key.casefold() for entry in case.expect)]
    same = [key for key in named if page_language(key) == question_language(case)]
    if pair == "own":
        return same or named
    return [key for key in named if key not in same]


def answer_pairs(cases: Iterable[Case], texts: dict[str, list[Passage]], pair: str = "own",
                 ) -> list[tuple[Case, Passage]]:
    """Each answerable question with an answer text (once, though two question files hold it),
    with every long passage of its expected pages (:func:`expected_pages`) that holds one."""
    unique = dict.fromkeys(case for case in cases if case.answerable and case.expect_text)
    return [(case, passage) for case in unique for page in expected_pages(case, texts, pair)
            for passage in texts[page]
            if len(flat(passage.text)) > SHORT_PASSAGE and contains_answer(case, passage.text)]


def vectors(path: Path, digests: list[str]) -> dict[str, np.ndarray]:
    found: dict[str, np.ndarray] = {}
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        for start in range(0, len(digests), 500):
            chunk = digests[start : start + 500]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT digest, vector FROM vectors WHERE digest IN ({marks})"
            for digest, blob in db.execute(query, chunk):
                found[digest] = np.frombuffer(blob, dtype="<f4")
    return found


def _sharpened(window: np.ndarray, passage: np.ndarray, share: float) -> np.ndarray:
    if not share:
        return window
    moved = window - share * passage
    return moved / max(float(np.linalg.norm(moved)), 1e-12)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the cache of windows embedded apart")
    parser.add_argument("--after", type=Path, required=True, help="the vector cache of pooled windows")
    parser.add_argument("--model", type=Path, required=True, help="a converted built-in model folder")
    parser.add_argument("--set", choices=sorted(SETS), default="corpus")
    parser.add_argument("--limit", type=int, default=400, help="the excerpt's characters (three hits' share)")
    parser.add_argument("--pair", choices=("own", "other"), default="own",
                        help="pair each question with its page in its own language or the other one")
    parser.add_argument("--sharpen", type=float, default=0.0,
                        help="pooled windows: compare normalise(window - SHARPEN * passage vector)")
    args = parser.parse_args()
    from passageway.builtin.embedders.e5_onnx.engine import ConvertedEngine

    root, folders, files = SETS[args.set]
    texts = pages(root, folders)
    pairs = answer_pairs(load_cases([root / name for name in files]).cases, texts, args.pair)
    digests = sorted({digest for _, passage in pairs for _, digest in window_plan(flat(passage.text))})
    digests += sorted({passage.digest for _, passage in pairs})
    before, after = vectors(args.before, digests), vectors(args.after, digests)
    engine = ConvertedEngine(args.model, threads=None, verify=False)
    questions = sorted({case.query for case, _ in pairs})
    asked = dict(zip(questions, engine.embed(questions, "query"), strict=True))
    counts: dict[str, Counter[str]] = {}
    for case, passage in pairs:
        text = passage.text
        plan = window_plan(flat(text))
        if passage.digest not in after or any(d not in before or d not in after for _, d in plan):
            counts.setdefault(case.group_label, Counter())["missing"] += 1
            continue
        row = counts.setdefault(case.group_label, Counter())
        row["passages"] += 1
        starts = unit_starts(text)
        chosen, shows = [], []
        for cache in (before, after):
            windows = tuple((start, float(_sharpened(cache[digest], after[passage.digest],
                                                     args.sharpen if cache is after else 0.0)
                                          @ asked[case.query])) for start, digest in plan)
            start = best_start(text, case.query, windows, starts)
            chosen.append(start)
            shown = contains_answer(case, cut(flat(text), start, args.limit, starts=starts))
            row["answer before" if cache is before else "answer after"] += shown
            shows.append(shown)
        row["same start"] += chosen[0] == chosen[1]
        row["apart only"] += shows[0] and not shows[1]
        row["pooled only"] += shows[1] and not shows[0]
        words = cut(flat(text), best_start(text, case.query, None, starts), args.limit, starts=starts)
        row["answer words"] += contains_answer(case, words)
    total: Counter[str] = Counter()
    print(f"| {args.set} ({args.pair} language): group | Passages | Same start | Answer shown, apart | "
          "pooled | words alone | Apart only / pooled only | Left out (no vectors) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for group, row in [*sorted(counts.items()), ("all", total)]:
        if group != "all":
            total.update(row)
        print(f"| {group} | {row['passages']} | {row['same start']} | {row['answer before']} | "
              f"{row['answer after']} | {row['answer words']} | {row['apart only']} / {row['pooled only']} | "
              f"{row['missing']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

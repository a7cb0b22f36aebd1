"""The gate's words rescue on long prompts: on the whole prompt, and on what recall now keeps of it.

    uv run python bench/long_prompt_gate.py            # prints a Markdown table (seconds, no model)

The gate lets a passage through when it shares at least three distinct content words with the
question, whatever its cosine (docs/ranking-and-gate.md). That rule was measured on one-line
questions. On a pasted file or log it fires by chance: a paste has hundreds of content words, and
some passage of any corpus shares three of them. This script shows how often, without a model:
for every case of ``corpus/long-prompts.toml`` it searches the sample corpus by keywords (SQLite
FTS5 with BM25, as the store does, 50 candidates) with the content words of

* the **whole prompt**, as recall searched before prompts were reduced, and
* **what recall keeps** of it (:func:`passageway.kernel.query.prompt.asked`; nothing for a paste alone),

and counts the prompts for which some candidate passes by the words rescue alone, and of those,
how many are prompts that must stay silent (``paste-only``, ``long-absent-*``,
``long-near-topic-*``) or whose rescued passage is from a wrong article.
"""

from __future__ import annotations

import argparse
import sqlite3
import tomllib
from collections import Counter
from pathlib import Path

from common.corpus import read_item  # a corpus file as the markdown connector's item

from passageway.kernel.query.prompt import asked
from passageway.kernel.text.chunking import passages_for
from passageway.kernel.text.stopwords import content_words, words

ROOT = Path(__file__).resolve().parent.parent
RESCUE_WORDS = 3
CANDIDATES = 50


def corpus() -> tuple[sqlite3.Connection, list[tuple[str, set[str]]]]:
    """An FTS5 index of both corpus folders and, per passage, its item file name and words."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE fts USING fts5(title, heading, text, "
               "tokenize='unicode61 remove_diacritics 2')")
    rows: list[tuple[str, set[str]]] = []
    for language in ("en", "de"):
        for path in sorted((ROOT / "corpus" / language).glob("*.md")):
            item = read_item(path)
            for passage in passages_for(item):
                db.execute("INSERT INTO fts(rowid, title, heading, text) VALUES (?, ?, ?, ?)",
                           (len(rows), item.title, passage.heading or "", passage.text))
                rows.append((path.name, set(words(f"{item.title} {passage.heading or ''} {passage.text}"))))
    return db, rows


def rescued(db: sqlite3.Connection, rows: list[tuple[str, set[str]]], text: str) -> str | None:
    """The file of the best keyword candidate that the words rescue lets through, if any."""
    question = content_words(text)
    if not question:
        return None
    match = " OR ".join('"' + word.replace('"', '""') + '"' for word in question)
    found = db.execute("SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?",
                       (match, CANDIDATES)).fetchall()
    for (key,) in found:
        name, present = rows[key]
        if len(set(question) & present) >= RESCUE_WORDS:
            return name
    return None


def main() -> int:
    argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0]).parse_args()  # --help only
    db, rows = corpus()
    cases = tomllib.loads((ROOT / "corpus" / "long-prompts.toml").read_text("utf-8"))["case"]
    counts: dict[str, Counter[str]] = {"whole prompt": Counter(), "what recall keeps": Counter()}
    for case in cases:
        silent = "expect" not in case
        for way, text in (("whole prompt", case["query"]), ("what recall keeps", asked(case["query"]).text)):
            name = rescued(db, rows, text)
            tally = counts[way]
            tally["cases"] += 1
            if name is None:
                continue
            tally["rescued"] += 1
            if silent:
                tally["must be silent"] += 1
                if case["group"] == "paste-only":
                    tally["paste-only"] += 1
            elif name not in case["expect"]:
                tally["wrong article"] += 1
    print(f"`uv run python bench/long_prompt_gate.py`: {len(cases)} cases of corpus/long-prompts.toml, "
          f"{sum(case['group'] == 'paste-only' for case in cases)} of them paste-only.\n")
    print("| Text the gate's words see | prompts rescued | of them must be silent | of them paste-only "
          "| answerable, rescued with a wrong article |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for way, tally in counts.items():
        print(f"| {way} | {tally['rescued']} | {tally['must be silent']} | {tally['paste-only']} "
              f"| {tally['wrong article']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

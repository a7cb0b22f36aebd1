"""The answerability score against a tuning set of the second near-topic kind (issue 35).

``corpus/docs/near-topic-users.toml`` (the second near-topic set: questions restated from real
issue threads and questions in the pages' own words) is never tuned on. This script asks whether
a tuning set of the same kind, for starship and typer only (``corpus/docs/near-topic-tuning.toml``,
other threads), lets the score silence more of the second set while the other targets hold. It
replays the recorded candidates as ``bench/answerability.py`` does (``common.answer_rows``; same DIR)
and prints, per part (the tuning projects' questions, the tuning set, the second set, starlette
and mkdocs held out):

* the gate alone and the score with the constants of ``builtin/ranking/answerability.py``;
* a fit on the tuning projects' questions only, and a fit that adds the tuning set to the
  unanswerable side, each with the bar chosen by ``bench/answerability.py``'s rule on the tuning
  projects (hit@3 at most 2 points under the gate alone, the most silence; with the tuning set,
  silence pooled over the tuning projects' near-topic questions and the tuning set);
* the curve of the second fit, and the ROC AUC of two properties of how the questions are
  written (their length in content words and whether they ask "can / does / is there"), which
  separate the tuning set from the answerable questions by the way the sets were written, not
  by what the pages say, and so are not features of the score.

``--stem`` reads every word of the question and the passages without a common English or German
ending (``themes`` / ``theme``, ``Siedlern`` / ``Siedler``) before the score's features count
them, the variant of the features tried for the second set. Run::

    uv run python bench/gate_tuning.py --data-dir /tmp/pw-second [--stem]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common import answer_rows as bench

from passageway.builtin.ranking import answerability
from passageway.kernel.text import stopwords
from passageway.kernel.text.stopwords import content_words

PARTS = ("docs tuning (starship, typer)", "tuning set", "second near-topic set", "starlette", "mkdocs")
ENDINGS = ("ungen", "ing", "ies", "ied", "en", "er", "es", "ed", "e", "s", "n")
"""Word endings ``--stem`` takes off, longest first, when at least four letters stay."""
ASKS = re.compile(r"^\s*(can|could|does|do|is there|are there|is it possible)\b", re.IGNORECASE)


def stem(word: str) -> str:
    for ending in ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 4:
            return word[: -len(ending)]
    return word


def read_stemmed() -> None:
    """Make the score's features count stemmed words (the question's and the passages'); the
    languages are still told from the words as written."""

    @functools.lru_cache(maxsize=65536)
    def read(title: str, heading: str, text: str) -> tuple[frozenset[str], str | None]:
        folded = stopwords.words(f"{title} {heading} {text}")
        return frozenset(stem(word) for word in folded), stopwords.language_of_words(folded)

    answerability.content_words = lambda text: [stem(word) for word in content_words(text)]  # type: ignore[attr-defined]
    answerability._read = read  # type: ignore[assignment]


def named_parts(rows: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    docs = bench.parts("docs", rows["docs"])
    return dict(zip(PARTS, (docs["docs tuning (starship, typer)"], rows["tuning"], rows["users"],
                            docs["docs held out: starlette"], rows["mkdocs"]), strict=True))


def line(label: str, parts: dict[str, list[dict[str, Any]]], weights: dict[str, float] | None,
         bar: float) -> str:
    cells = []
    for name in PARTS:
        hit, _, quiet, yes, _ = bench.outcome(parts[name], weights, bar)
        cells.append(f"{hit:.1f} / {quiet:.1f}" if yes else f"{quiet:.1f}")
    return f"| {label} | " + " | ".join(cells) + " |"


def chosen_bar(parts: dict[str, list[dict[str, Any]]], today: dict[str, list[dict[str, Any]]],
               weights: dict[str, float], with_tuning: bool) -> float:
    """The bar with the most silence (pooled with the tuning set when ``with_tuning``) whose
    tuning projects' hit@3 stays within ``bench.MAX_LOSS`` of the gate alone."""
    tune = parts[PARTS[0]]
    silenced = [*tune, *parts[PARTS[1]]] if with_tuning else tune
    allowed = [bar for bar in (0.0, *bench.BARS) if bench.keeps(tune, today[PARTS[0]], weights, bar, False)]
    return max(allowed, key=lambda bar: (bench.outcome(silenced, weights, bar)[2], -bar))


def written(parts: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The ROC AUC of the questions' length and ask form, answered against each part's
    near-topic questions (below 0.5: the near-topic questions are longer, or ask more often)."""
    answered = [row for row in parts[PARTS[0]] if row["answerable"] and row["ok"]]
    out = []
    for name in PARTS:
        unanswered = [row for row in parts[name] if not row["answerable"]]
        cells = []
        for measure in (lambda row: len(content_words(row["query"])),
                        lambda row: 1.0 if ASKS.match(row["query"]) else 0.0):
            good = [measure(row) for row in answered]
            bad = [measure(row) for row in unanswered]
            wins = sum((g > b) + 0.5 * (g == b) for g in good for b in bad)
            cells.append(f"{wins / (len(good) * len(bad)):.2f}")
        out.append(f"| {name} | {cells[0]} | {cells[1]} |")
    return out


async def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/pw-second"))
    parser.add_argument("--stem", action="store_true", help="count words without their endings")
    args = parser.parse_args(argv)
    if args.stem:
        read_stemmed()
    args.rerecord, args.no_windows = False, True
    kinds = ("docs", "tuning", "users", "mkdocs")
    margin = answerability.BAR_MARGIN
    today = named_parts({kind: await bench.rows_for(kind, args, bench.THRESHOLD, 0.0) for kind in kinds})
    parts = named_parts({kind: await bench.rows_for(kind, args, bench.THRESHOLD, margin) for kind in kinds})
    print(f"At {bench.THRESHOLD}, cosine margin {margin}; hit@3 / silence (%), silence only where "
          "every question is near-topic\n")
    print("| Score | " + " | ".join(PARTS) + " |")
    print("| --- |" + " --- |" * len(PARTS))
    print(line("gate alone", today, None, 0.0))
    constants = dict(answerability.WEIGHTS)
    print(line(f"{answerability.VERSION}, bar {answerability.MIN_SCORE}", parts, constants,
               answerability.MIN_SCORE))
    fitted = {}
    for with_tuning in (False, True):
        rows = [*parts[PARTS[0]], *(parts[PARTS[1]] if with_tuning else [])]
        weights = bench.fit(rows)
        bar = chosen_bar(parts, today, weights, with_tuning)
        label = "refit with the tuning set" if with_tuning else "refit, tuning projects only"
        print(line(f"{label}, bar {bar}", parts, weights, bar))
        fitted[with_tuning] = weights
    print(f"\nweights fitted with the tuning set: {fitted[True]}\n\nTheir curve:\n")
    print("| Bar | " + " | ".join(PARTS) + " |")
    print("| --- |" + " --- |" * len(PARTS))
    for bar in bench.BARS[7:]:
        print(line(str(bar), parts, fitted[True], bar))
    print("\nHow the questions are written, ROC AUC against the tuning projects' answered questions:\n")
    print("| Part | length | asks can / does / is there |\n| --- | ---: | ---: |")
    print("\n".join(written(parts)))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

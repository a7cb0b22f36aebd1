"""Excerpt windows embedded by the built-in model's first layers only (issue 37): do excerpts start
where the full model starts them, and how much cheaper is the windows' pass?

Windows only rank against each other, inside one passage, for one question
(``kernel/query/excerpts.py``, ``best_start``), so a shallower model may rank them as well as the
full one. For every answerable question of a set and every long passage of an expected page that
holds an answer text (as ``window_choice.py`` chooses them), the passage's windows are embedded
as the sync embeds them (``passage: `` prefix, each window alone) and the excerpt is anchored and
cut as recall does (``best_start``, then ``cut`` to ``--limit`` characters), with:

* ``full``: windows on ``passages.onnx`` (the build's graph), the question on ``model.onnx`` (recall's);
* ``N layers``: windows and the question both on an fp32 graph of the first N of the 12 layers;
* ``N, full question``: windows on N layers, the question's full vector (the one recall already has);
* ``words``: no window vectors, the question's rare words alone.

Printed per set: passages compared, how many start at the same unit as ``full``, and how many
excerpts show an answer text (``contains_answer``). ``--speed`` also embeds every window of the
set's long passages with the full graph and each shallow one, taking turns, ``--rounds`` times:
wall seconds and process CPU seconds (all threads) per pass, at the machine's load of the moment.

    uv run python bench/window_depth.py --set corpus --set docs [--layers 2 3 4 6] [--speed]
    uv run python bench/window_depth.py --set corpus --speed-only [--speed-windows 200] [--rounds 2]
    uv run python bench/window_depth.py --check   # the cut graph at 12 layers is passages.onnx

``--model`` is a converted built-in model folder (default: the user's, ``passageway model
convert``); the shallow graphs are written to ``--graphs`` once and reused.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
from common.shallow import SETS, answer_pairs, set_pages, shallow_engine

from passageway.builtin.eval.cases import contains_answer
from passageway.kernel.query.excerpts import best_start, cut, unit_starts
from passageway.kernel.text.windows import flat, window_texts, windows

DEFAULT_MODEL = Path.home() / ".local/share/passageway/models/multilingual-e5-small-q4"


def _window_vectors(engine: object, texts: list[str]) -> dict[str, np.ndarray]:
    unique = sorted(set(texts))
    rows = engine.embed(unique, "passage") if unique else np.zeros((0, 384))  # type: ignore[attr-defined]
    return dict(zip(unique, rows, strict=True))


def compare(name: str, engine: object, shallow: dict[int, object], limit: int) -> dict[str, Counter[str]]:
    """The counts of one set, per question group and ``all``."""
    pairs = answer_pairs(name, set_pages(name))
    window_of = {}
    for _, passage in pairs:
        text = flat(passage.text)
        window_of[passage.digest] = [(start, text[start:end].strip()) for start, end in windows(text)]
    texts = [window for plan in window_of.values() for _, window in plan]
    questions = sorted({case.query for case, _ in pairs})
    models = {"full": engine, **{f"{layers}": model for layers, model in shallow.items()}}
    window_rows = {key: _window_vectors(model, texts) for key, model in models.items()}
    question_rows = {key: dict(zip(questions, model.embed(questions, "query"), strict=True))  # type: ignore[attr-defined]
                     for key, model in models.items()}
    variants = [("full", "full", "full")]
    for layers in shallow:
        variants += [(f"{layers} layers", f"{layers}", f"{layers}"),
                     (f"{layers}, full question", f"{layers}", "full")]
    counts: dict[str, Counter[str]] = {}
    for case, passage in pairs:
        text = flat(passage.text)
        starts = unit_starts(passage.text)
        chosen: dict[str, int] = {}
        for label, window_key, question_key in variants:
            asked = question_rows[question_key][case.query]
            scored = tuple((start, float(window_rows[window_key][window] @ asked))
                           for start, window in window_of[passage.digest])
            chosen[label] = best_start(passage.text, case.query, scored, starts)
        chosen["words"] = best_start(passage.text, case.query, None, starts)
        for row in (counts.setdefault(case.group_label, Counter()), counts.setdefault("all", Counter())):
            row["passages"] += 1
            for label, start in chosen.items():
                row[f"same {label}"] += start == chosen["full"]
                row[f"shown {label}"] += contains_answer(case, cut(text, start, limit, starts=starts))
    return counts


def speed(name: str, engine: object, shallow: dict[int, object], rounds: int, count: int | None = None
          ) -> dict[str, list[tuple[float, float]]]:
    """Wall and CPU seconds of one pass over every window of the set's long passages (every k-th
    of them in text order when ``count`` is given), per model."""
    texts = sorted({window for passages in set_pages(name).values() for passage in passages
                    for window in window_texts(passage.text)})
    if count and count < len(texts):
        texts = texts[:: -(-len(texts) // count)]
    models = {"full": engine, **{f"{layers} layers": model for layers, model in shallow.items()}}
    for model in models.values():  # warm each session once, off the clock
        model.embed(texts[:16], "passage")  # type: ignore[attr-defined]
    timings: dict[str, list[tuple[float, float]]] = {label: [] for label in models}
    for _ in range(rounds):
        for label, model in models.items():
            wall, cpu = time.perf_counter(), time.process_time()
            model.embed(texts, "passage")  # type: ignore[attr-defined]
            timings[label].append((time.perf_counter() - wall, time.process_time() - cpu))
    print(f"\n{name}: {len(texts)} windows, {rounds} rounds taking turns, load {os.getloadavg()[0]:.1f}")
    print("| Windows' graph | Wall s (each round) | CPU s (each round) | Median wall / full | "
          "Median CPU / full |")
    print("| --- | --- | --- | --- | --- |")
    full_wall = float(np.median([wall for wall, _ in timings["full"]]))
    full_cpu = float(np.median([cpu for _, cpu in timings["full"]]))
    for label, rows in timings.items():
        walls = " / ".join(f"{wall:.1f}" for wall, _ in rows)
        cpus = " / ".join(f"{cpu:.1f}" for _, cpu in rows)
        print(f"| {label} | {walls} | {cpus} | {np.median([w for w, _ in rows]) / full_wall:.2f} | "
              f"{np.median([c for _, c in rows]) / full_cpu:.2f} |")
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", choices=sorted(SETS), help="corpus, docs (repeatable)")
    parser.add_argument("--layers", type=int, nargs="+", default=[2, 3, 4, 6], help="shallow depths compared")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="a converted built-in model folder")
    parser.add_argument("--graphs", type=Path, default=Path("/tmp/passageway-window-depth"),
                        help="where the shallow graphs are written (reused)")
    parser.add_argument("--limit", type=int, default=400, help="the excerpt's characters (three hits' share)")
    parser.add_argument("--speed", action="store_true", help="time the windows' pass on each graph too")
    parser.add_argument("--speed-only", action="store_true", help="only time the windows' pass")
    parser.add_argument("--check", action="store_true",
                        help="only check the cut graph: 12 of 12 layers against passages.onnx")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--speed-windows", type=int, default=None, help="time only about this many windows")
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime threads (default: all cores)")
    args = parser.parse_args()
    from passageway.builtin.embedders.e5_onnx.engine import ConvertedEngine

    engine = ConvertedEngine(args.model, threads=args.threads)
    if args.check:
        from passageway.builtin.embedders.e5_onnx.convert import CHECK_TEXTS

        whole = shallow_engine(engine, 12, args.graphs, args.threads)
        both = engine.embed(CHECK_TEXTS, "passage") * whole.embed(CHECK_TEXTS, "passage")
        lowest = float(np.min(np.sum(both, axis=1)))
        print(f"12 of 12 layers against passages.onnx: lowest cosine {lowest:.6f} "
              f"over {len(CHECK_TEXTS)} texts")
        return 0
    shallow = {layers: shallow_engine(engine, layers, args.graphs, args.threads) for layers in args.layers}
    for name in args.set or ["corpus"]:
        if not args.speed_only:
            counts = compare(name, engine, shallow, args.limit)
            tails = (" layers", ", full question")
            labels = ["full", *[f"{n}{tail}" for n in args.layers for tail in tails], "words"]
            print(f"\n{name}: excerpts of {args.limit} characters")
            heads = " | ".join(f"{label}: same start / answer shown" for label in labels)
            print(f"| Group | Passages | {heads} |")
            print("| --- " * (len(labels) + 2) + "|")
            for group, row in sorted(counts.items(), key=lambda pair: (pair[0] == "all", pair[0])):
                cells = " | ".join(f"{row[f'same {label}']} / {row[f'shown {label}']}" for label in labels)
                print(f"| {group} | {row['passages']} | {cells} |")
        if args.speed or args.speed_only:
            speed(name, engine, shallow, args.rounds, args.speed_windows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

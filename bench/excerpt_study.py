"""What excerpts by meaning cost a first build, and how their windows fit the answer's budget
(kernel/query/excerpts.py; numbers on docs/measurements.md, "Excerpts").

* **Cost**: the sample corpus (both folders) is cut by the real chunker; its passages' embedding
  inputs and their windows (:func:`passageway.kernel.text.windows.window_texts`) are embedded with the
  configured built-in model, in calls of the sync's batch size, windows shortest first as the
  sync sends them. Passages and windows take turns round by round, so both see the same load. A
  first build's embedding rate is passages / time, before (passages only) and after (passages
  and their windows).
* **Sizes**: the windows' lengths against the share of the 400-token budget each hit gets when
  one, two or three hits answer (``fit_budget`` on the corpus's titles and links).

Run::

    uv run python bench/excerpt_study.py [--rounds 2] [--window-sizes 1,2,3] [--sizes-only]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common.corpus import CORPUS, read_item

from passageway.builtin.eval.engine import KernelEngine
from passageway.kernel.config import load_settings
from passageway.kernel.index.item_updates import EMBED_BATCH
from passageway.kernel.query.rendering import approx_tokens, fit_budget, render_answer
from passageway.kernel.records import Answer, Hit
from passageway.kernel.text.chunking import passages_for
from passageway.kernel.text.windows import SHORT_PASSAGE, WINDOW_SENTENCES, flat, windows


def window_texts_of(texts: list[str], size: int) -> list[str]:
    found = []
    for passage_text in texts:
        text = flat(passage_text)
        if len(text) > SHORT_PASSAGE:
            found.extend(text[start:end].strip() for start, end in windows(text, size))
    return sorted(set(found), key=len)


async def timed(embedder, texts: list[str]) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    for start in range(0, len(texts), EMBED_BATCH):
        await embedder.embed(texts[start : start + EMBED_BATCH], "passage")
    return time.perf_counter() - started


def shares(items) -> dict[int, int]:  # type: ignore[no-untyped-def]
    """Characters of excerpt each hit gets with 1, 2 and 3 hits (the corpus's median header)."""
    found = {}
    long_text = "word " * 2000
    for count in (1, 2, 3):
        hits = tuple(
            Hit("corpus-en", item.id, item.title, item.url, None, long_text, 1.0, 0.9)
            for item in items[:count]
        )
        answer = fit_budget(Answer(hits))
        found[count] = int(np.median([len(hit.text) for hit in answer.hits]))
        assert approx_tokens(render_answer(answer)) <= 400 + 30
    return found


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--window-sizes", default=f"{WINDOW_SENTENCES}")
    parser.add_argument("--sizes-only", action="store_true", help="the sizes table, no embedding")
    args = parser.parse_args()
    paths = [path for language in ("en", "de") for path in sorted((CORPUS / language).glob("*.md"))]
    items = [read_item(path) for path in paths]
    passages = [passage for item in items for passage in passages_for(item)]
    inputs = sorted((passage.embedding_input for passage in passages), key=len)
    texts = [passage.text for passage in passages]
    folder = Path(tempfile.mkdtemp(prefix="passageway-excerpt-study-"))
    config = folder / "passageway.toml"
    config.write_text("", encoding="utf-8")
    settings = load_settings(config_path=config)
    sizes = [int(size) for size in args.window_sizes.split(",")]
    print(f"{len(passages)} passages of corpus/en and corpus/de, {EMBED_BATCH} texts per embedder call\n")

    print("## Window sizes against the budget\n")
    share = shares(items)
    print("Excerpt share per hit (characters): "
          + ", ".join(f"{count} hit{'s' * (count > 1)}: {share[count]}" for count in share))
    print("\n| Sentences a window | Windows | Median characters | 95 % | Longest "
          "| Longer than the 3-hit share |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for size in sizes:
        lengths = np.asarray([len(text) for text in window_texts_of(texts, size)])
        over = int((lengths > share[3]).sum())
        print(f"| {size} | {len(lengths)} | {int(np.median(lengths))} | {int(np.percentile(lengths, 95))} | "
              f"{int(lengths.max())} | {over} ({100 * over / len(lengths):.0f} %) |")

    if args.sizes_only:
        return 0
    async with KernelEngine.open(settings, data_dir=folder / "data", progress=lambda line: None) as engine:
        embedder = engine.embedder.inner
        print(f"\n## Cost of a first build ({embedder.name}, {args.rounds} rounds, taking turns)\n")
        print("| Sentences a window | Windows | Passages alone | Passages + windows | "
              "Build rate before | after | Time × |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        await timed(embedder, inputs[:EMBED_BATCH])  # warm up
        for size in sizes:
            extra = window_texts_of(texts, size)
            alone = with_windows = 0.0
            for _ in range(args.rounds):
                alone += await timed(embedder, inputs)
                with_windows += await timed(embedder, extra)
            alone /= args.rounds
            with_windows = alone + with_windows / args.rounds
            print(f"| {size} | {len(extra)} | {alone:.1f} s | {with_windows:.1f} s | "
                  f"{len(passages) / alone:.1f} passages/s | {len(passages) / with_windows:.1f} passages/s | "
                  f"{with_windows / alone:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

"""How fast the sync builds and reconciles an index, and how much of a build is not embedding.

    uv run python bench/sync.py                      # 1k, 10k and 100k items
    uv run python bench/sync.py --sizes 1000,10000   # quicker

Synthetic items come from an in-process runner (no connector processes, so the numbers are the
kernel's own: chunking, the vector cache, SQLite and usearch). For each size it prints the
first build's rate with the toy embedder and the time of a reconcile in which nothing changed
(which must neither fetch nor embed). Then it builds ``--realistic`` items with an embedder that
costs 0.1 s per 16 passages, like the built-in model on this kind of CPU, and prints the share
of the build spent outside the embedder.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np

from passageway.builtin.storage import SqliteStore
from passageway.builtin.storage.vector_cache import SqliteVectorCache
from passageway.kernel.config import ConnectorSettings
from passageway.kernel.index.sync import SourceSync
from passageway.kernel.records import CheckReply, Item, ListEntry, Section
from passageway.testing.toy_embedder import ToyEmbedder

WORDS = [
    "river", "mountain", "engine", "harbour", "library", "telescope", "garden", "volcano", "orchestra",
    "glacier", "bridge", "forest", "market", "lantern", "compass", "canyon", "island", "meadow", "tower",
    "castle", "desert", "valley", "signal", "archive", "protocol", "ledger", "kernel", "socket", "thread",
    "vector", "index", "passage", "source",
]


def synthetic_item(number: int, sections: int) -> Item:
    words = [WORDS[(number * (part + 3) + offset) % len(WORDS)]
             for part in range(sections) for offset in range(9)]
    return Item(
        id=f"doc-{number}",
        title=f"Document {number}",
        url=f"https://example.test/doc/{number}",
        version="1",
        sections=tuple(
            Section(
                text=f"Note {number}, part {part}: " + " ".join(words[part * 9 : part * 9 + 9]) * 4 + ".",
                heading=f"Part {part}",
            )
            for part in range(sections)
        ),
        path=("Bench", f"Shelf {number % 50}"),
    )


class SyntheticRunner:
    """``N`` generated items served from memory; counts fetched ids."""

    def __init__(self, count: int, sections: int) -> None:
        self.count = count
        self.sections = sections
        self.fetched = 0
        self.left_out: list[str] = []  # the sync reads it after each list call (none left out here)

    async def check(self) -> CheckReply:
        return CheckReply(ok=True, count=self.count)

    async def list(self) -> list[ListEntry]:
        return [ListEntry(f"doc-{number}", "1") for number in range(self.count)]

    async def fetch(self, ids: Sequence[str]) -> list[Item]:
        self.fetched += len(ids)
        return [synthetic_item(int(item_id.split("-")[1]), self.sections) for item_id in ids]

    async def changed(self, since: datetime) -> list[Item]:
        return []


class FastToyEmbedder(ToyEmbedder):
    """The toy embedder's contract, with vectors from a seeded generator: the bench measures the
    sync, not the toy's hashing."""

    async def embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        self.calls += 1
        self.texts_embedded += len(texts)
        generator = np.random.default_rng(len(texts) + self.calls)
        matrix = generator.standard_normal((len(texts), self.dim)).astype(np.float32)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


class CostlyEmbedder(FastToyEmbedder):
    """0.1 s per 16 passages, spent asleep (as a model in another thread or process would be)."""

    async def embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        await asyncio.sleep(0.1 * len(texts) / 16)
        return await super().embed(texts, kind)


async def one_source(
    folder: Path, runner: SyntheticRunner, embedder: ToyEmbedder
) -> tuple[SourceSync, float]:
    store = SqliteStore(folder / "bench.db", "bench")
    await store.open()
    cache = SqliteVectorCache.for_embedder(folder, embedder.name, embedder.dim)
    await cache.open()
    sync = SourceSync(ConnectorSettings(name="bench", command=("unused",)), store, embedder, runner, cache,
                      progress_seconds=3600)
    began = time.perf_counter()
    await sync.sync_once()
    return sync, time.perf_counter() - began


async def close(sync: SourceSync) -> None:
    await sync.store.close()
    await sync.vector_cache.close()


async def sizes_table(sizes: list[int], sections: int, dim: int) -> None:
    print(f"{'items':>8} {'passages':>9} {'first build':>12} {'items/s':>9} "
          f"{'reconcile, nothing changed':>27}")
    for size in sizes:
        with tempfile.TemporaryDirectory() as folder:
            runner = SyntheticRunner(size, sections)
            embedder = FastToyEmbedder(dim=dim)
            sync, build_seconds = await one_source(Path(folder), runner, embedder)
            health = sync.health()
            assert health.state == "ok" and health.items == size, health
            fetched, embedded = runner.fetched, embedder.texts_embedded
            began = time.perf_counter()
            await sync.reconcile()
            reconcile_seconds = time.perf_counter() - began
            assert runner.fetched == fetched and embedder.texts_embedded == embedded, "reconcile did work"
            await close(sync)
            print(f"{size:>8} {health.passages:>9} {build_seconds:>11.1f}s {size / build_seconds:>9.0f} "
                  f"{reconcile_seconds:>26.3f}s")


async def realistic(count: int, sections: int, dim: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        runner = SyntheticRunner(count, sections)
        embedder = CostlyEmbedder(dim=dim)
        sync, seconds = await one_source(Path(folder), runner, embedder)
        passages = sync.health().passages
        outside = seconds - sync.embed_seconds
        print(f"\nfirst build of {count} items ({passages} passages) with an embedder costing 0.1 s per 16 "
              f"passages: {seconds:.1f} s, of which {sync.embed_seconds:.1f} s in the embedder; "
              f"outside it: {outside:.2f} s = {outside / seconds:.1%}")
        await close(sync)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated item counts")
    parser.add_argument("--sections", type=int, default=1, help="sections (passages) per item")
    parser.add_argument("--dim", type=int, default=384, help="vector dimension (384: the built-in model)")
    parser.add_argument("--realistic", type=int, default=500, help="items for the embedder-cost run")
    args = parser.parse_args()
    print(f"bench/sync.py on {date.today().isoformat()}, {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, {datetime.now(UTC):%H:%M} UTC")
    print(f"{args.sections} section(s) per item, vectors of dimension {args.dim}, fetch batches of 50, "
          "embedding batches of 32\n")
    await sizes_table([int(size) for size in args.sizes.split(",") if size], args.sections, args.dim)
    if args.realistic:
        await realistic(args.realistic, args.sections, args.dim)


if __name__ == "__main__":
    asyncio.run(main())

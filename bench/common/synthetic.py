"""The synthetic index (bench/recall.py --scale, bench/postgres.py): made-up words and vectors for
up to a million passages, built through a store with given vectors, and questions that hit it."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from common.measure import log


class GivenVectorEmbedder:
    """Returns the vector set for the next question, so that recall's time excludes embedding."""

    name = "random-unit"
    min_similarity = 0.85

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.next: np.ndarray | None = None

    async def start(self) -> None:
        return None

    async def embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        assert self.next is not None
        return self.next.reshape(1, -1)

    async def close(self) -> None:
        return None


def synthetic_vocabulary(rng: random.Random) -> list[str]:
    """The synthetic indexes' 20,000 made-up words (Zipf-weighted by their sorted position)."""
    return sorted({"".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 10)))
                   for _ in range(20000)})


def unit_rows(rng: np.random.Generator, count: int, dim: int) -> np.ndarray:
    matrix = rng.standard_normal((count, dim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def synthetic_batches(
    size: int, dim: int, vocabulary: list[str], seed: int, samples: list[np.ndarray]
) -> Iterator[list[Any]]:
    """The synthetic index's items (``ItemUpdate``s) in batches of 2,000 items of five passages;
    a sample of the vectors is appended to ``samples`` on the way (the same data for one seed)."""
    from passageway.kernel.records import Item, Section
    from passageway.kernel.store import ItemUpdate
    from passageway.kernel.text.chunking import passages_for

    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, len(vocabulary) + 1)  # Zipf-like word frequencies
    weights /= weights.sum()
    per_item = 5
    batch_items = 2000
    made = 0
    while made < size:
        updates = []
        for _ in range(batch_items):
            if made >= size:
                break
            count = min(per_item, size - made)
            words = rng.choice(len(vocabulary), size=(count, 40), p=weights)
            item = Item(
                id=f"item-{made}", title=f"Synthetic item {made}", url=f"https://example.test/{made}",
                version="1",
                sections=tuple(Section(text=" ".join(map(vocabulary.__getitem__, row)) + ".",
                                       heading=f"Part {n}") for n, row in enumerate(words.tolist())),
            )
            passages = passages_for(item)
            vectors = unit_rows(rng, len(passages), dim)
            if len(samples) < 1000 and made % 97 == 0:
                samples.append(vectors[0])
            updates.append(ItemUpdate(item=item, passages=passages, vectors=vectors))
            made += len(passages)
        yield updates


async def build_scale_index(
    path: Path, size: int, dim: int, vocabulary: list[str], seed: int, store: Any = None
) -> tuple[Any, float, np.ndarray]:
    """The index (in ``store``, by default a sqlite store at ``path``), its build time, and a
    sample of the vectors stored in it."""
    from passageway.builtin.storage import SqliteStore

    store = SqliteStore(path, "scale") if store is None else store
    await store.open()
    await store.reset("random-unit", dim)
    started = time.perf_counter()
    made = 0
    samples: list[np.ndarray] = []
    for updates in synthetic_batches(size, dim, vocabulary, seed, samples):
        await store.apply(updates, [])
        made += sum(len(update.passages) for update in updates)
        if made % 100_000 < 10_000:
            log(f"  {made} passages ({time.perf_counter() - started:.0f} s)")
    return store, time.perf_counter() - started, np.stack(samples)


def _complete_index_samples(folder: Path, size: int) -> np.ndarray | None:
    """The samples of a complete kept index of ``size`` passages, or None after removing any
    incomplete one."""
    if (folder / f"scale-{size}.db").exists() and (folder / f"scale-{size}.samples.npy").exists():
        return np.load(folder / f"scale-{size}.samples.npy")
    for stale in folder.glob(f"scale-{size}.*"):
        stale.unlink()
    return None


async def scale_index(
    folder: Path, size: int, dim: int, vocabulary: list[str]
) -> tuple[Any, float | None, np.ndarray]:
    """The synthetic index of ``size`` passages in ``folder``: reused when a complete one is
    there (``--keep``; its build time is then unknown, None), else built."""
    from passageway.builtin.storage import SqliteStore

    path = folder / f"scale-{size}.db"
    done = folder / f"scale-{size}.samples.npy"
    samples = _complete_index_samples(folder, size)
    if samples is not None:
        log(f"reusing the synthetic index {path}")
        store = SqliteStore(path, "scale")
        await store.open()
        await store.wait_ready()
        return store, None, samples
    log(f"building a synthetic index of {size} passages ...")
    store, seconds, samples = await build_scale_index(path, size, dim, vocabulary, size)
    np.save(done, samples)  # written last: its presence marks a complete index
    return store, seconds, samples


def scale_questions(
    rng: random.Random, vocabulary: list[str], samples: np.ndarray, count: int, dim: int
) -> list[tuple[str, np.ndarray]]:
    """Six common words each; every other vector near a stored passage (an answer), the rest
    random (near nothing stored: silence)."""
    np_rng = np.random.default_rng(5)
    asked = []
    for number in range(count):
        question = " ".join(rng.choice(vocabulary[:3000]) for _ in range(6))
        if number % 2:
            vector = unit_rows(np_rng, 1, dim)[0]
        else:
            near = samples[number % len(samples)] + unit_rows(np_rng, 1, dim)[0] * 0.2
            vector = (near / np.linalg.norm(near)).astype(np.float32)
        asked.append((question, vector))
    return asked

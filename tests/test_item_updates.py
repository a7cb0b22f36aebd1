"""A fetched batch turned into store updates: vectors reused from the cache by digest, the rest
embedded, and a store that takes vectors later handed what the cache lacks without them."""

from __future__ import annotations

import numpy as np

from passageway.kernel.index.chunking import DEFAULT_CAP, passages_for
from passageway.kernel.index.item_updates import UpdateMaker
from passageway.testing import MemoryVectorCache
from passageway.testing.toy_embedder import ToyEmbedder
from tests.sync_helpers import item


class CountingEmbedder(ToyEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts = 0

    async def embed(self, texts, kind):  # type: ignore[no-untyped-def]
        self.texts += len(texts)
        return await super().embed(texts, kind)


async def test_cached_vectors_are_reused_and_only_the_rest_embedded():
    embedder, cache = CountingEmbedder(), MemoryVectorCache()
    maker = UpdateMaker(embedder, cache, cap=DEFAULT_CAP, embed_batch=2, later=False)
    items = [item(1), item(2)]
    passages = sum(len(passages_for(one, DEFAULT_CAP)) for one in items)
    updates, embedded = await maker.prepare(items, None)
    assert embedded == passages and [update.item.id for update in updates] == ["item-1", "item-2"]
    assert all(update.vectors.shape == (len(update.passages), embedder.dim) for update in updates)
    calls = embedder.texts
    again, embedded_again = await maker.prepare(items, None)
    assert embedded_again == 0 and embedder.texts == calls  # windows and passages all cached
    for first, second in zip(updates, again, strict=True):
        assert np.array_equal(first.vectors, second.vectors)
    assert maker.embed_seconds > 0


async def test_a_store_that_takes_vectors_later_gets_the_uncached_items_without_them():
    embedder, cache = CountingEmbedder(), MemoryVectorCache()
    await UpdateMaker(embedder, cache, cap=DEFAULT_CAP, embed_batch=8, later=False).prepare([item(1)], None)
    later = UpdateMaker(embedder, cache, cap=DEFAULT_CAP, embed_batch=8, later=True)
    calls = embedder.texts
    updates, embedded = await later.prepare([item(1), item(2)], None)
    assert embedded == 0 and embedder.texts == calls  # nothing embedded now: the passes do it
    assert updates[0].vectors is not None and updates[1].vectors is None

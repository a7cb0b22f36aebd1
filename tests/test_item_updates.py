"""A fetched batch turned into store updates: vectors reused from the cache by digest, the rest
embedded in batches at unit length, and a store that takes vectors later handed what the cache
lacks without them."""

from __future__ import annotations

import numpy as np
import pytest

from passageway.kernel.errors import PassagewayError
from passageway.kernel.index.item_updates import UpdateMaker
from passageway.kernel.records import Item, Section
from passageway.kernel.text.chunking import DEFAULT_CAP, passages_for
from passageway.kernel.text.windows import window_texts
from passageway.testing import MemoryVectorCache
from passageway.testing.toy_embedder import ToyEmbedder, toy_vectors
from tests.sync_helpers import FakeRunner, Setup, item, keyword_list, vector_list


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


async def test_the_vector_cache_means_a_second_build_embeds_nothing(tmp_path):
    runner = FakeRunner("notes", [item(n) for n in range(60)])
    embedder = ToyEmbedder()
    async with Setup(tmp_path, runner, embedder=embedder) as sync:
        await sync.sync_once()
        assert embedder.texts_embedded == 120
        await sync.build()
        assert embedder.texts_embedded == 120
        assert sync.health().passages == 120
    (tmp_path / "notes.db").unlink()
    (tmp_path / "notes.usearch").unlink()
    async with Setup(tmp_path, runner, embedder=embedder) as sync:
        await sync.sync_once()
        assert embedder.texts_embedded == 120  # a rebuilt source reuses every vector
        assert sync.health().items == 60
        assert len(await vector_list(sync.store, toy_vectors(["river"])[0], 200)) == 120


async def test_embedding_is_batched(tmp_path):
    runner = FakeRunner("notes", [item(n, sections=5) for n in range(20)])
    embedder = ToyEmbedder()
    async with Setup(tmp_path, runner, embedder=embedder, embed_batch=32) as sync:
        await sync.sync_once()
    assert embedder.texts_embedded == 100
    assert embedder.calls == 4  # 100 texts in 32 + 32 + 32 + 4


async def test_vectors_are_stored_at_unit_length_and_a_wrong_shape_fails_the_sync(tmp_path):
    class Loud(ToyEmbedder):
        async def embed(self, texts, kind):
            return 3.0 * await super().embed(texts, kind)

    runner = FakeRunner("notes", [item(n) for n in range(3)])
    async with Setup(tmp_path, runner, embedder=Loud()) as sync:
        await sync.sync_once()
        # keyword candidates take the dot product of stored vectors: it is a cosine only at unit length
        hits = await keyword_list(sync.store, "note", toy_vectors(["note"])[0], 10)
        assert hits and all(-1.0001 <= hit.similarity <= 1.0001 for hit in hits)

    class Short(ToyEmbedder):
        async def embed(self, texts, kind):
            return (await super().embed(texts, kind))[:-1]

    runner = FakeRunner("other", [item(n) for n in range(3)])
    async with Setup(tmp_path, runner, "other", embedder=Short(name="short")) as sync:
        with pytest.raises(PassagewayError, match="shape"):
            await sync.sync_once()
        assert len(await sync.store.pending(10)) == 6  # stored for keywords, no vector stored


async def test_windows_are_embedded_fewest_tokens_first_by_the_embedders_count():
    class Counting(ToyEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.sent: list[str] = []

        def count_tokens(self, text: str) -> int:
            return -len(text)  # the reverse of characters, to tell the two apart

        async def embed(self, texts, kind):  # type: ignore[no-untyped-def]
            self.sent += texts
            return await super().embed(texts, kind)

    embedder = Counting()
    maker = UpdateMaker(embedder, MemoryVectorCache(), cap=DEFAULT_CAP, embed_batch=3, later=False)
    sections = [Section(" ".join(f"Sentence {n} of part {part} says {'more ' * n}here." for n in range(6)),
                        f"Part {part}") for part in range(3)]
    one = Item(id="long", title="Long", url="https://example.test/long", version="1",
               sections=tuple(sections))
    await maker.prepare([one], None)
    windows = {text for section in sections for text in window_texts(section.text)}
    sent = [text for text in embedder.sent if text in windows]
    assert len(sent) == len(windows) > 3
    assert [len(text) for text in sent] == sorted((len(text) for text in sent), reverse=True)

"""The optional ``embed_spans`` of the embedder contract (kernel/embedder.py): its default, and
how the one wrapper passes it on for a base-class embedder and for a protocol-only one."""

from __future__ import annotations

import numpy as np

from passageway.kernel.embedder import ForwardingEmbedder, with_defaults
from passageway.testing.toy_embedder import ToyEmbedder


class ProtocolOnly:
    """An embedder written before the base class: the protocol's members and ``embed_spans``."""

    name, dim, min_similarity = "plain", 2, 0.5

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def embed(self, texts, kind):  # type: ignore[no-untyped-def]
        return np.ones((len(texts), 2), dtype=np.float32) / np.sqrt(2)

    async def embed_spans(self, texts, spans):  # type: ignore[no-untyped-def]
        return await self.embed(texts, "passage"), [np.ones((len(each), 2), np.float32) for each in spans]


async def test_an_embedder_cannot_pool_spans_by_default():
    assert await ToyEmbedder().embed_spans(["one two three"], [[(0, 3)]]) is None
    assert await ForwardingEmbedder(ToyEmbedder()).embed_spans(["one two"], [[(0, 3)]]) is None


async def test_the_wrapper_passes_spans_on_to_a_protocol_only_embedder():
    wrapped = with_defaults(ProtocolOnly())  # type: ignore[arg-type]
    made = await wrapped.embed_spans(["one two", "three"], [[(0, 3), (4, 7)], []])
    assert made is not None
    vectors, spans = made
    assert vectors.shape == (2, 2) and [len(each) for each in spans] == [2, 0]


async def test_a_protocol_only_embedder_without_it_declines():
    class Older(ProtocolOnly):
        embed_spans = None  # type: ignore[assignment]

    assert await with_defaults(Older()).embed_spans(["one"], [[(0, 3)]]) is None  # type: ignore[arg-type]

"""The storage stage's contract: one index per source, rebuilt from its connector at will.

A store keeps a source's items, their passages, the passages' vectors and a keyword index. The
kernel builds one per source through the factory registered under ``PASSAGEWAY_STORE``
(``passageway_register_stores``, builtin ``sqlite``). The protocol holds what the kernel calls:
every method is ``async`` but :meth:`Store.search`, which recall calls from a worker thread;
implementations run their I/O in threads so the event loop never blocks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs
import numpy as np

from passageway.kernel.errors import StoreError
from passageway.kernel.records import Item, Passage


@attrs.frozen
class Candidate:
    """A passage found by keyword or vector search, with everything ranking and the answer need.

    ``similarity`` is the cosine between the question's vector and the passage's vector, filled
    for keyword candidates too, so that every ranker can apply the same gate; it is NaN for a
    keyword candidate whose vector is not made yet (during a build, see :class:`LaterVectors`):
    the gate then judges it by its words alone. ``rank`` is the position (0-based) in the list
    that found it. ``anchor`` is the passage's section anchor as the connector sent it
    (:attr:`~passageway.kernel.records.Section.anchor`), ``None`` when it sent none.
    """

    source: str
    passage_key: int
    item_id: str
    title: str
    url: str
    heading: str | None
    text: str
    similarity: float
    rank: int
    keyword_score: float = 0.0
    weight: float = 1.0
    path: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    updated: str | None = None
    anchor: str | None = None

    def at_rank(self, rank: int) -> Candidate:
        """This candidate with another ``rank`` (a plain constructor call: ``attrs.evolve``
        costs several times as much, and recall renumbers up to a hundred candidates a question)."""
        if rank == self.rank:
            return self
        return Candidate(
            self.source, self.passage_key, self.item_id, self.title, self.url, self.heading,
            self.text, self.similarity, rank, self.keyword_score, self.weight, self.path,
            self.labels, self.links, self.updated, self.anchor,
        )


@attrs.frozen
class StoredItem:
    """What the answer shows of an item that a hit links to."""

    item_id: str
    title: str
    url: str


@attrs.frozen
class ItemUpdate:
    """One fetched item ready to store: its passages and one unit vector per passage, or
    ``vectors=None`` (only for a store that is :class:`LaterVectors`): the passages are stored
    searchable by keywords, and their vectors follow through :meth:`LaterVectors.set_vectors`."""

    item: Item
    passages: Sequence[Passage]
    vectors: np.ndarray | None


@runtime_checkable
class Store(Protocol):
    """One source's index."""

    source: str

    async def open(self) -> None:
        """Create or migrate the index; raises ``StoreError`` if it cannot be used."""
        ...

    async def close(self) -> None: ...

    async def embedder(self) -> tuple[str, int] | None:
        """The embedder name and dimension that built this index, or None for a new index."""
        ...

    async def reset(self, embedder_name: str, dim: int) -> None:
        """Empty the index and record the embedder that will build it."""
        ...

    async def versions(self) -> dict[str, str]:
        """Every stored item id with its version."""
        ...

    async def apply(self, updates: Sequence[ItemUpdate], deletions: Sequence[str]) -> None:
        """Store updated items and delete items, all in one transaction."""
        ...

    def search(self, question: str, vector: np.ndarray, limit: int
               ) -> tuple[list[Candidate], list[Candidate]]:
        """Both searches at once, blocking: the ``limit`` best passages by keywords and by vector
        (an empty ``question`` means no keyword search: the first list is then empty).

        Recall calls this for every store, one after the other, from a single worker thread, so
        that a question costs one thread hand-over rather than two per store. So it must be safe
        to call from any thread, also while the store is written to, and must not touch the
        event loop. After ``close`` it raises ``StoreError``.
        """
        ...

    async def items(self, item_ids: Sequence[str]) -> list[StoredItem]:
        """The stored items among ``item_ids`` (for related links); unknown ids are left out."""
        ...

    async def counts(self) -> tuple[int, int]:
        """How many items and passages the index holds."""
        ...

    async def passages_of(self, item_id: str) -> list[tuple[int, str | None, str, str]]:
        """``(ordinal, heading, text, digest)`` of one item's passages in order (empty for an
        unknown item): what the ``read`` tool shows of the item an excerpt was cut from."""
        ...

    async def get_state(self, key: str) -> str | None:
        """A small value the sync keeps with the index (for example the last poll time)."""
        ...

    async def set_state(self, key: str, value: str) -> None: ...


@runtime_checkable
class LaterVectors(Protocol):
    """What a store offers, besides :class:`Store`, to take passages before their vectors.

    The sync of such a store writes each fetched batch at once with ``vectors=None`` (its passages
    are found by keywords within seconds of the fetch), then embeds the passages waiting for a
    vector and hands the vectors over as each embedder call ends; vector search covers the
    passages that have one. After a kill the waiting passages are still in the store and the next
    start embeds them. The builtin ``sqlite`` store is one; a store without these methods gets
    its vectors with the passages, as before.
    """

    async def set_vectors(self, vectors: Sequence[tuple[str, int, np.ndarray]]) -> None:
        """Give stored passages without a vector theirs, by ``(item id, ordinal, unit vector)``,
        in one transaction; a passage that has one already, or no longer exists, is left alone."""
        ...

    async def pending(self, limit: int) -> list[Passage]:
        """Up to ``limit`` stored passages without a vector, in the order they were stored."""
        ...

    async def passage_texts(self, after: int, limit: int) -> list[tuple[int, str]]:
        """``(cursor, text)`` of up to ``limit`` stored passages after ``cursor`` ``after`` (0 to
        begin), in a stable order: the windows' second pass reads every passage with it."""
        ...


@runtime_checkable
class SharedStore(Protocol):
    """What a store offers, besides :class:`Store`, to be opened by several servers at once (the
    ``postgres`` plugin's): exactly one server syncs each source and the others answer from the same
    tables (``kernel/index/replicas.py`` runs it; ``docs/scale-out.md``)."""

    async def lead(self, replica: str) -> bool:
        """Whether this server is, or has now become, the one that syncs the source."""
        ...

    async def leader(self) -> str | None:
        """The ``replica`` name of the server that syncs the source now, or None."""
        ...

    async def get_state(self, key: str) -> str | None: ...

    async def set_state(self, key: str, value: str) -> None: ...

    async def counts(self) -> tuple[int, int]: ...


@runtime_checkable
class VectorCache(Protocol):
    """Passage vectors by digest for one embedder (name and dimension), so that no passage is
    embedded twice: a passage's digest is the SHA-256 of its embedding input
    (:mod:`passageway.kernel.text.chunking`), so a vector kept under it by the same embedder is the one
    the passage would get again. It outlives every index (a rebuilt source, another source with
    the same text, ``passageway eval``'s throwaway indexes). The kernel gets one through the
    ``passageway_vector_cache`` hook and closes it when the stores close.
    """

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def get_many(self, digests: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors among ``digests``; a digest with no vector is left out."""
        ...

    async def put_many(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Remember vectors by digest."""
        ...


@attrs.frozen
class StoreContext:
    """What a store factory gets besides the index path and the source name.

    ``settings`` is the ``[store]`` table of ``passageway.toml`` as written (empty when there is
    none): its keys belong to the store named by ``PASSAGEWAY_STORE``, which checks them and
    raises ``ConfigError`` naming a key it does not know. ``environ`` resolves ``env:NAME``
    references among them (:func:`passageway.kernel.config.resolve_secrets`).
    """

    settings: Mapping[str, Any] = attrs.field(factory=dict)
    environ: Mapping[str, str] = attrs.field(factory=dict)


def check_updates(updates: Sequence[ItemUpdate], dim: int | None, source: str) -> None:
    """Refuse updates whose vectors do not fit their passages or the index's dimension (an update
    without vectors, for a :class:`LaterVectors` store, has none to check)."""
    for update in updates:
        if update.vectors is None:
            continue
        if len(update.passages) != len(update.vectors):
            raise StoreError(
                f"item {update.item.id!r}: {len(update.passages)} passages but {len(update.vectors)} vectors"
            )
        if len(update.passages) and (dim is None or update.vectors.shape[1] != dim):
            raise StoreError(
                f"item {update.item.id!r}: vectors of dimension {update.vectors.shape[1]}, but the index "
                f"of {source!r} was set up for {dim}; the sync must reset it first"
            )

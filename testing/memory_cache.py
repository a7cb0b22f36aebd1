"""A vector cache held in a dict, for tests that need one without a file (``MemoryVectorCache``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


class MemoryVectorCache:
    """Vectors by digest in :attr:`vectors`; remembers whether it was opened and closed, so a test
    can check that whoever asked for it also ended it."""

    def __init__(self) -> None:
        self.vectors: dict[str, np.ndarray] = {}
        self.opened = self.closed = False

    async def open(self) -> None:
        self.opened = True

    async def close(self) -> None:
        self.closed = True

    async def get_many(self, digests: Sequence[str]) -> dict[str, np.ndarray]:
        return {digest: self.vectors[digest] for digest in digests if digest in self.vectors}

    async def put_many(self, vectors: Mapping[str, np.ndarray]) -> None:
        self.vectors.update(vectors)

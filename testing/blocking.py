"""Drive an async embedder from plain, synchronous code: :class:`BlockingEmbedder`.

An embedder's ``start``, ``embed`` and ``close`` are coroutines (the kernel awaits them). A plain
test or script wraps the embedder so that each call runs to completion on one private event loop,
the loop a program such as :class:`~passageway.builtin.embedders.embed_command.CommandEmbedder`
was started on::

    with BlockingEmbedder(CommandEmbedder("mine", [sys.executable, "my_embedder.py"])) as embedder:
        check_embedder(embedder)
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from passageway.kernel.embedder import Embedder, with_defaults
from passageway.kernel.records import EmbedKind


class BlockingEmbedder:
    """``embedder`` with blocking ``start``, ``embed`` and ``close``, and the members the kernel
    reads (with :class:`~passageway.kernel.embedder.BaseEmbedder`'s defaults for a protocol-only
    one); anything else of the wrapped embedder is ``self.embedder``'s.

    The loop is made on the first call and closed by :meth:`close` (or at the end of a ``with``
    block), after the embedder was closed on it; a later call makes a new one.
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._model = with_defaults(embedder)
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def name(self) -> str:
        return self.embedder.name

    @property
    def dim(self) -> int:
        return self.embedder.dim

    @property
    def min_similarity(self) -> float:
        return self.embedder.min_similarity

    @property
    def max_tokens(self) -> int:
        return self._model.max_tokens

    @property
    def cross_language_offset(self) -> float:
        return self._model.cross_language_offset

    @property
    def gate_levels(self) -> Mapping[str, float]:
        return self._model.gate_levels

    def count_tokens(self, text: str) -> int:
        return self._model.count_tokens(text)

    def _run(self, awaitable: Any) -> Any:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(awaitable)

    def start(self) -> None:
        self._run(self.embedder.start())

    def embed(self, texts: Sequence[str], kind: EmbedKind) -> Any:
        return self._run(self.embedder.embed(texts, kind))

    def close(self) -> None:
        try:
            self._run(self.embedder.close())
        finally:
            if self._loop is not None:
                self._loop.close()
                self._loop = None

    def __enter__(self) -> BlockingEmbedder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

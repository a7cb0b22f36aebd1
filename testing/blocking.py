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
from collections.abc import Sequence
from typing import Any


class BlockingEmbedder:
    """``embedder`` with blocking ``start``, ``embed`` and ``close``; other attributes pass through.

    The loop is made on the first call and closed by :meth:`close` (or at the end of a ``with``
    block), after the embedder was closed on it; a later call makes a new one.
    """

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self._loop: asyncio.AbstractEventLoop | None = None

    def _run(self, awaitable: Any) -> Any:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(awaitable)

    def start(self) -> None:
        self._run(self.embedder.start())

    def embed(self, texts: Sequence[str], kind: str) -> Any:
        return self._run(self.embedder.embed(texts, kind))

    def close(self) -> None:
        try:
            self._run(self.embedder.close())
        finally:
            if self._loop is not None:
                self._loop.close()
                self._loop = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.embedder, name)

    def __enter__(self) -> BlockingEmbedder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

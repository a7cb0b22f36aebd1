"""The embedding stage's contract: what every embedder, built-in or external, provides.

An embedder turns texts into unit vectors of one dimension. The kernel builds one from the
``[embedder]`` table through the factory registered for its ``kind``
(``passageway_register_embedders``), calls ``await start()`` once, and then ``await embed(...)``
from the sync and the query path. Implementations keep model work off the event loop (a thread or
a process) so that the server stays responsive.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import attrs
import numpy as np

from passageway.kernel.records import EmbedKind


@runtime_checkable
class Embedder(Protocol):
    """What the kernel needs of an embedder."""

    @property
    def name(self) -> str:
        """The model's name as the index records it; valid after :meth:`start`."""
        ...

    @property
    def dim(self) -> int:
        """The vector length; valid after :meth:`start`."""
        ...

    @property
    def min_similarity(self) -> float:
        """The relevance gate for this model (cosine, 0 to 1)."""
        ...

    async def start(self) -> None:
        """Load the model or start the program; raises ``EmbedderError`` or ``ModelError``."""
        ...

    async def embed(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        """A ``(len(texts), dim)`` float32 array of unit rows, in order; raises ``EmbedderError``."""
        ...

    async def close(self) -> None:
        """Free the model or stop the program."""
        ...


@attrs.frozen
class EmbedderContext:
    """What a factory may need besides its settings."""

    data_dir: Path
    shared_data_dir: Path
    model_dir: Path | None
    model_hub: str
    environ: Mapping[str, str]
    log: Callable[[str], None] = print

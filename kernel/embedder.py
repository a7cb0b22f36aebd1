"""The embedding stage's contract: what every embedder, built-in or external, provides.

An embedder turns texts into unit vectors of one dimension. The kernel builds one from the
``[embedder]`` table through the factory registered for its ``kind``
(``passageway_register_embedders``), calls ``await start()`` once, and then ``await embed(...)``
from the sync and the query path. Implementations keep model work off the event loop (a thread or
a process) so that the server stays responsive.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import attrs
import numpy as np

from passageway.kernel.errors import EmbedderError
from passageway.kernel.records import EmbedKind


@runtime_checkable
class Embedder(Protocol):
    """What the kernel needs of an embedder.

    Besides the members below, an embedder may have a ``cross_language_offset`` attribute (a
    number from 0 to 1): how much lower the relevance gate is for a passage in another language
    than the question, because this model's cosines between languages run lower. It belongs to the
    model like ``min_similarity`` does. It is optional, so that embedders written before it still
    work: without it the offset is 0 (no lower bar). The kernel reads it only through
    :func:`cross_language_offset_of`, which rejects anything but a finite number from 0 to 1.
    """

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


def cross_language_offset_of(embedder: object) -> float:
    """``embedder``'s ``cross_language_offset``, or 0.0 when it has none (the attribute is optional).

    :raises EmbedderError: the attribute is not a finite number from 0 to 1 (the message names the
        embedder and the value).
    """
    try:
        value = getattr(embedder, "cross_language_offset", 0.0)
    except Exception as error:  # a plugin's property that fails must not read as "no offset"
        raise EmbedderError(
            f"the embedder {_label(embedder)} failed to report its cross_language_offset: "
            f"{type(error).__name__}: {error}"
        ) from error
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or not 0.0 <= value <= 1.0
    ):
        raise EmbedderError(
            f"the embedder {_label(embedder)} has cross_language_offset = {value!r}; it must be a "
            "number from 0 to 1 (or absent, which means 0). Fix the embedder plugin, or set "
            "cross_language_offset in its [embedder] table if the plugin reads it from there"
        )
    return float(value)


def _label(embedder: object) -> str:
    """The embedder's name and class for a message, without failing on an unstarted one."""
    kind = type(embedder).__name__
    try:
        name = embedder.name  # type: ignore[attr-defined]
    except Exception:  # a name that fails (not started yet) is just not shown
        return kind
    return f"{name!r} ({kind})" if isinstance(name, str) and name else kind


@attrs.frozen
class EmbedderContext:
    """What a factory may need besides its settings."""

    data_dir: Path
    shared_data_dir: Path
    model_dir: Path | None
    model_hub: str
    environ: Mapping[str, str]
    log: Callable[[str], None] = print

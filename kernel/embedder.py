"""The embedding stage's contract: what every embedder, built-in or external, provides.

An embedder turns texts into unit vectors of one dimension. The kernel builds one from the
``[embedder]`` table through the factory registered for its ``kind``
(``passageway_register_embedders``), calls ``await start()`` once, and then ``await embed(...)``
from the sync and the query path. :class:`Embedder` is the protocol, :class:`BaseEmbedder` a base
class with the optional members' defaults, :class:`ForwardingEmbedder` the one wrapper.
Implementations keep model work off the event loop (a thread or a process) so that the server
stays responsive.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs
import numpy as np

from passageway.kernel.errors import EmbedderError
from passageway.kernel.records import EmbedKind

if TYPE_CHECKING:
    from passageway.kernel.config import Settings

MAX_TOKENS = 512
"""The input limit assumed for an embedder that does not state its own (e5 models: 512)."""


def approx_model_tokens(text: str) -> int:
    """A conservative guess at a model's token count, for an embedder that cannot count (or has
    not loaded its tokenizer yet): three UTF-8 bytes a token, plus two special tokens. It cuts a
    question early rather than late."""
    return -(-len(text.encode("utf-8")) // 3) + 2


SpanVectors = tuple[np.ndarray, list[np.ndarray]]
"""What :meth:`BaseEmbedder.embed_spans` returns: the texts' vectors and each text's span vectors."""


@runtime_checkable
class Embedder(Protocol):
    """What the kernel needs of an embedder: the members below. :class:`BaseEmbedder` adds the
    optional ones with their defaults; an object with only these members is still accepted (the
    kernel gives it the defaults through :class:`ForwardingEmbedder`)."""

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


class BaseEmbedder:
    """A base class for embedders: the optional members with their defaults.

    A subclass provides the :class:`Embedder` members and overrides what its model knows better:

    - ``max_tokens``: the model's input limit in its tokens; recall cuts a question to it;
    - ``count_tokens(text)``: how many tokens the model reads for ``text`` as a question (default
      :func:`approx_model_tokens`, a conservative guess);
    - ``cross_language_offset``: a number from 0 to 1, how much lower the relevance gate is for a
      passage in another language than the question, because this model's cosines between
      languages run lower (default 0, no lower bar); it belongs to the model like
      ``min_similarity`` does;
    - ``gate_levels``: the measured thresholds of the gate's named levels ``answers`` and
      ``silence`` (``passageway.kernel.gate_levels``; default none, only ``balanced``);
    - ``embed_spans(texts, spans)``: passage vectors and, from the same forward pass, a vector for
      each character span of each text (:meth:`embed_spans`; default ``None``, cannot).
    """

    max_tokens: int = MAX_TOKENS
    cross_language_offset: float = 0.0
    gate_levels: Mapping[str, float] = MappingProxyType({})

    def count_tokens(self, text: str) -> int:
        return approx_model_tokens(text)

    async def embed_spans(self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
                          ) -> SpanVectors | None:
        """Passage vectors of ``texts`` and, from the same forward pass, one vector for each
        ``(start, end)`` character span of each text: an optional capability, ``None`` when the
        embedder has not got it (the default, and any embedder that cannot see token states).

        Returns ``(vectors, span_vectors)``: ``vectors`` exactly as ``embed(texts, "passage")``
        gives them; ``span_vectors[i]`` a ``(len(spans[i]), dim)`` float32 array of unit rows, the
        span's tokens pooled in the context of the whole text (late chunking). Spans start and end
        at a word. The sync uses it for the excerpt windows of each passage
        (:func:`passageway.kernel.text.windows.window_spans`) and embeds them as texts of their
        own when it returns ``None``. It may return ``None`` on one call and not on another (an
        engine chosen at start); raises ``EmbedderError`` like :meth:`Embedder.embed`.
        """
        return None


class ForwardingEmbedder(BaseEmbedder):
    """Another embedder, ``inner``, with every member forwarded: the one wrapper the project has.

    A wrapper that changes one thing (eval's metering, the question queue) subclasses it and
    overrides that one thing, so the model's token count, input limit and gate numbers always
    reach recall unchanged. Wrapping an object that only follows the :class:`Embedder` protocol
    gives it :class:`BaseEmbedder`'s defaults, keeping the optional members it has of its own
    (an embedder written before the base class existed); :func:`with_defaults` does that once, when
    the kernel builds the embedder.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self._extras: BaseEmbedder = inner if isinstance(inner, BaseEmbedder) else _Adopted(inner)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def min_similarity(self) -> float:
        return self.inner.min_similarity

    @property
    def max_tokens(self) -> int:  # type: ignore[override]
        return self._extras.max_tokens

    @property
    def cross_language_offset(self) -> float:  # type: ignore[override]
        return self._extras.cross_language_offset

    @property
    def gate_levels(self) -> Mapping[str, float]:  # type: ignore[override]
        return self._extras.gate_levels

    def count_tokens(self, text: str) -> int:
        return self._extras.count_tokens(text)

    async def embed_spans(self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
                          ) -> SpanVectors | None:
        """The inner embedder's; a wrapper that overrides :meth:`embed` to count or meter passages
        overrides this too, since the sync sends the passages of long texts here when it can."""
        return await self._extras.embed_spans(texts, spans)

    async def start(self) -> None:
        await self.inner.start()

    async def embed(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        return await self.inner.embed(texts, kind)

    async def close(self) -> None:
        await self.inner.close()


class _Adopted(BaseEmbedder):
    """The optional members of a protocol-only embedder: its own where it has them (the one place
    they are looked up by name), the defaults otherwise."""

    def __init__(self, embedder: object) -> None:
        self._embedder = embedder

    @property
    def max_tokens(self) -> int:  # type: ignore[override]
        return getattr(self._embedder, "max_tokens", MAX_TOKENS)  # type: ignore[no-any-return]

    @property
    def cross_language_offset(self) -> float:  # type: ignore[override]
        return getattr(self._embedder, "cross_language_offset", 0.0)  # type: ignore[no-any-return]

    @property
    def gate_levels(self) -> Mapping[str, float]:  # type: ignore[override]
        return getattr(self._embedder, "gate_levels", None) or MappingProxyType({})

    def count_tokens(self, text: str) -> int:
        count = getattr(self._embedder, "count_tokens", None)
        return approx_model_tokens(text) if count is None else int(count(text))

    async def embed_spans(self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
                          ) -> SpanVectors | None:
        method = getattr(self._embedder, "embed_spans", None)
        return None if method is None else await method(texts, spans)  # type: ignore[no-any-return]


def with_defaults(embedder: Embedder) -> BaseEmbedder:
    """``embedder`` itself when it is a :class:`BaseEmbedder`, else wrapped to become one."""
    return embedder if isinstance(embedder, BaseEmbedder) else ForwardingEmbedder(embedder)


def cross_language_offset_of(embedder: Embedder) -> float:
    """``embedder``'s ``cross_language_offset``, checked.

    :raises EmbedderError: it is not a finite number from 0 to 1, or reading it failed (the message
        names the embedder and the value).
    """
    try:
        value = with_defaults(embedder).cross_language_offset
    except Exception as error:  # a plugin's property that fails must not read as "no offset"
        raise EmbedderError(
            f"the embedder {label(embedder)} failed to report its cross_language_offset: "
            f"{type(error).__name__}: {error}"
        ) from error
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or not 0.0 <= value <= 1.0
    ):
        raise EmbedderError(
            f"the embedder {label(embedder)} has cross_language_offset = {value!r}; it must be a "
            "number from 0 to 1 (or absent, which means 0). Fix the embedder plugin, or set "
            "cross_language_offset in its [embedder] table if the plugin reads it from there"
        )
    return float(value)


def label(embedder: object) -> str:
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

    @classmethod
    def of(cls, settings: Settings, environ: Mapping[str, str], log: Callable[[str], None]
           ) -> EmbedderContext:
        """The context of the embedder of ``settings`` (the kernel's folders and model hub)."""
        return cls(settings.data_dir, settings.shared_data_dir, settings.model_dir, settings.model_hub,
                   environ, log)

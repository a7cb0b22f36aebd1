"""A deterministic toy embedder: words and word pieces hashed into a few buckets.

It needs no model and answers in microseconds, so most tests use it instead of the real model.
Texts that share words get similar vectors, which is enough to test ranking, the gate and the
sync; it knows nothing of meaning or languages. ``ToyEmbedder`` satisfies
:class:`passageway.kernel.embedder.Embedder`; :data:`plugin` registers it as the embedder kind
``toy`` for tests that build a plugin manager with ``extra=(("toy", plugin),)``.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from passageway import hookimpl
from passageway.kernel.embedder import BaseEmbedder
from passageway.kernel.errors import EmbedderError

WORD = re.compile(r"\w+", re.UNICODE)


def _bucket(token: str, dim: int) -> int:
    return int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=4).digest(), "big") % dim


def toy_vectors(texts: Sequence[str], dim: int = 64) -> np.ndarray:
    """One unit vector per text: each word and each of its 4-letter pieces adds to a bucket."""
    matrix = np.zeros((len(texts), dim), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in WORD.findall(text.lower()):
            matrix[row, _bucket(word, dim)] += 1.0
            for start in range(max(len(word) - 3, 0)):
                matrix[row, _bucket(word[start : start + 4], dim)] += 0.25
        norm = float(np.linalg.norm(matrix[row]))
        if norm == 0.0:
            matrix[row, 0] = 1.0  # an empty text still gets a valid unit vector
        else:
            matrix[row] /= norm
    return matrix


class ToyEmbedder(BaseEmbedder):
    """In-process embedder for tests. ``fail`` makes every call raise, to test error paths.

    ``cross_language_offset`` is 0 by default: the toy knows no languages, so its cosines do not
    run lower between them.
    """

    def __init__(
        self,
        dim: int = 64,
        name: str | None = None,
        min_similarity: float = 0.5,
        cross_language_offset: float = 0.0,
    ) -> None:
        self._dim = dim
        self._name = name or f"toy-hash-{dim}"
        self.min_similarity = min_similarity
        self.cross_language_offset = cross_language_offset
        self.fail = False
        self.calls = 0
        self.texts_embedded = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    async def start(self) -> None:
        return None

    async def embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        if self.fail:
            raise EmbedderError("toy embedder told to fail")
        self.calls += 1
        self.texts_embedded += len(texts)
        await asyncio.sleep(0)
        return toy_vectors(texts, self._dim)

    async def close(self) -> None:
        return None


class _ToyPlugin:
    @hookimpl
    def passageway_register_embedders(self, register):  # type: ignore[no-untyped-def]
        def factory(settings, context):  # type: ignore[no-untyped-def]
            threshold = settings.min_similarity if settings.min_similarity is not None else 0.5
            offset = settings.cross_language_offset if settings.cross_language_offset is not None else 0.0
            return ToyEmbedder(min_similarity=threshold, cross_language_offset=offset)

        register("toy", factory)


plugin = _ToyPlugin()


ENVIRONMENT_SETTINGS = (
    "PASSAGEWAY_CONFIG", "PASSAGEWAY_DATA_DIR", "PASSAGEWAY_INSTANCE", "PASSAGEWAY_RANKER")
"""The environment variables that would point an in-process command at another configuration."""


def toy_cli(monkeypatch: Any, home: Path) -> None:
    """Prepare this process to run ``passageway`` commands in-process (``cli.main``) with
    ``[embedder] kind = "toy"``: every plugin manager it builds has the toy embedder and no
    installed entry points, the settings of :data:`ENVIRONMENT_SETTINGS` are cleared and ``HOME``
    is ``home``. ``monkeypatch`` is pytest's fixture, which undoes all of it after the test."""
    from passageway.kernel import plugins as plugin_module

    original = plugin_module.build_plugin_manager
    monkeypatch.setattr(
        plugin_module, "build_plugin_manager",
        lambda env=None, **kwargs: original(env, extra=(("toy", plugin),), load_entry_points=False),
    )
    for name in ENVIRONMENT_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))

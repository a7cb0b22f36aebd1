"""``--embed``: a unit vector per passage, written as ``ai/embeddings.json`` and ``ai/embeddings.bin``.

A passage's vector is taken from the digest-keyed
:class:`~passageway.kernel.store.VectorCache` of the embedder, else from the previous
``ai/embeddings.*`` of the site (when they were made in the same embedding space and dimension;
such vectors are added to the cache), else from the embedder. Only
the last counts as ``embedded``; the others are ``reused``. A digest is the SHA-256 of the
passage's embedding input, so a vector found under it belongs to exactly that input.

``embeddings.json`` names the provider, the model and the embedding space, never the address of
the service or a key: for the bundled OpenAI-compatible program, whose embedder name is
``provider:model@host#prefixes``, the host is left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from passageway import Embedder, VectorCache
from passageway_passage_index.site import PassageIndexError

EMBEDDINGS_SCHEMA_VERSION = 1
BATCH = 64
"""Passages per call to the embedder: small enough that a failure loses little, large enough that
a remote service sees few requests."""

_HOSTED_NAME = re.compile(r"^(?P<provider>[a-z][a-z0-9_-]*):(?P<model>[^@#]+)@[^#]*(?P<prefixes>#.*)?$")
_ADDRESS = re.compile(r"://|@")


@attrs.frozen
class Space:
    """What ``embeddings.json`` records of the embedder; vectors are reused only within one."""

    provider: str
    model: str
    embedding_space: str
    dimension: int


def space_of(embedder: Embedder, kind: str) -> Space:
    """The provider, model and embedding space of a started embedder, without any address.

    :raises PassageIndexError: the embedder's name holds an address that cannot be left out.
    """
    name = embedder.name
    hosted = _HOSTED_NAME.match(name)
    if hosted:
        provider, model = hosted["provider"], hosted["model"]
        space = f"{provider}:{model}{hosted['prefixes'] or ''}"
    else:
        provider = "builtin" if kind == "onnx" else kind
        model = space = name
    if _ADDRESS.search(space):
        raise PassageIndexError(
            f"the embedder's name {name!r} holds an address, which must not reach a published site; "
            "give the embedder a NAME without one"
        )
    return Space(provider, model, space, int(embedder.dim))


def previous_vectors(ai_dir: Path, space: Space) -> dict[str, np.ndarray]:
    """Vectors by digest from the site's last ``--embed`` in the same space; empty otherwise."""
    try:
        meta = json.loads((ai_dir / "embeddings.json").read_text(encoding="utf-8"))
        matrix = np.fromfile(ai_dir / "embeddings.bin", dtype="<f4")
        same = (
            meta.get("schemaVersion") == EMBEDDINGS_SCHEMA_VERSION
            and [meta.get("provider"), meta.get("model"), meta.get("embeddingSpace"), meta.get("dimension")]
            == [space.provider, space.model, space.embedding_space, space.dimension]
        )
        rows = meta.get("passages", [])
        if not same or matrix.size != len(rows) * space.dimension:
            return {}
        matrix = matrix.reshape(len(rows), space.dimension)
        return {row["digest"]: matrix[index] for index, row in enumerate(rows)}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}  # no usable earlier run: everything comes from the cache or the embedder


async def vectors_for(
    passages: Sequence[tuple[str, str]],
    embedder: Embedder,
    cache: VectorCache,
    previous: dict[str, np.ndarray],
) -> tuple[np.ndarray, int]:
    """Unit rows for ``(digest, embedding input)`` pairs, in their order, and how many were embedded."""
    dim = int(embedder.dim)
    wanted = list(dict.fromkeys(digest for digest, _ in passages))
    found = await cache.get_many(wanted)
    # Vectors only the previous files hold go into the cache too, so a later fresh build finds them.
    from_files = {
        digest: previous[digest]
        for digest in wanted
        if digest not in found and digest in previous and previous[digest].shape == (dim,)
    }
    await cache.put_many(from_files)
    found.update(from_files)
    inputs = {digest: text for digest, text in passages if digest not in found}
    digests = list(inputs)
    for start in range(0, len(digests), BATCH):
        batch = digests[start : start + BATCH]
        matrix = await embedder.embed([inputs[digest] for digest in batch], "passage")
        fresh = dict(zip(batch, _unit_rows(matrix, len(batch), dim), strict=True))
        await cache.put_many(fresh)
        found.update(fresh)
    matrix = np.zeros((len(passages), dim), dtype="<f4")
    for row, (digest, _) in enumerate(passages):
        matrix[row] = found[digest]
    return _unit_rows(matrix, len(passages), dim), len(digests)


def _unit_rows(matrix: Any, count: int, dim: int) -> np.ndarray:
    rows = np.asarray(matrix, dtype=np.float32)
    if rows.shape != (count, dim) or not np.isfinite(rows).all():
        raise PassageIndexError(
            f"the embedder returned {rows.shape} for {count} passages of dimension {dim}, or a "
            "number that is not finite; check the embedder with `passageway eval` or its own tests"
        )
    norms = np.linalg.norm(rows, axis=1)
    if (norms == 0).any():
        raise PassageIndexError("the embedder returned a vector of zero length; check the embedder")
    return (rows / norms[:, None]).astype("<f4")


def embeddings_document(space: Space, source_digest: str, chunks: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The content of ``embeddings.json``: the space, and each row's passage in order."""
    return {
        "schemaVersion": EMBEDDINGS_SCHEMA_VERSION,
        "provider": space.provider,
        "model": space.model,
        "embeddingSpace": space.embedding_space,
        "dimension": space.dimension,
        "sourceDigest": source_digest,
        "passages": [
            {"id": chunk["id"], "variant": chunk["variant"], "digest": chunk["digest"]} for chunk in chunks
        ],
    }

"""``passageway index SITE_DIR``: read the build output, write ``ai/chunks.json``, embed on request.

:func:`build_index` is the whole command without its argument parsing. Without ``embed`` it
reads files and writes one; it opens no connection and builds no embedder. With ``embed`` the
embedder comes from passageway's own configuration (the ``[embedder]`` table), built through the
plugin registries like the server's, so the built-in model, a preset, a command embedder and a
plugin's kind all work. Files are written to a temporary name and renamed, so an interrupted run
leaves the previous files whole.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from passageway.builtin.passage_index.chunker import embedding_input, page_passages
from passageway.builtin.passage_index.site import Page, PassageIndexError, read_site

CHUNKS_SCHEMA_VERSION = 1
OUTPUT_FOLDER = "ai"


def source_digest(pages: list[Page]) -> str:
    """SHA-256 over every page's publication, ID and digest: it changes when any page's does."""
    lines = sorted(f"{page.variant}\t{page.id}\t{page.digest}" for page in pages)
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def chunks_document(site_dir: Path) -> tuple[list[Page], dict[str, Any]]:
    """The pages of the site and the content of ``chunks.json``."""
    pages, headings = read_site(site_dir)
    chunks: list[dict[str, Any]] = []
    for page in pages:
        chunks.extend(page_passages(page, None if headings is None else headings.get(page.url, [])))
    document = {
        "schemaVersion": CHUNKS_SCHEMA_VERSION,
        "sourceDigest": source_digest(pages),
        "chunks": chunks,
    }
    return pages, document


def build_index(
    site_dir: Path,
    *,
    embed: bool = False,
    load_embedder: Callable[[], tuple[Any, str, Path]] | None = None,
) -> dict[str, Any]:
    """Index the site in ``site_dir`` and return the summary the command prints.

    ``load_embedder`` (needed with ``embed``) returns an embedder that is not started, its
    ``kind`` and the folder of the vector cache.

    :raises PassageIndexError: an input file or field is wrong (named in the message).
    :raises PassagewayError: the embedder cannot be built, started or used.
    """
    pages, document = chunks_document(site_dir)
    ai_dir = site_dir / OUTPUT_FOLDER
    if ai_dir.exists() and not ai_dir.is_dir():
        raise PassageIndexError(f"{ai_dir} is a file; remove it, the index writes a folder there")
    summary: dict[str, Any] = {
        "status": "ok",
        "documents": len(pages),
        "chunks": len(document["chunks"]),
        "output": str((ai_dir / "chunks.json").resolve()),
    }
    writes: dict[str, bytes] = {"chunks.json": _json_bytes(document)}
    if embed:
        if load_embedder is None:
            raise PassageIndexError("--embed needs an embedder; none was configured")
        embedder, kind, cache_dir = load_embedder()
        meta, rows, counts = asyncio.run(_embed(document, embedder, kind, cache_dir, ai_dir))
        writes["embeddings.json"] = _json_bytes(meta)
        writes["embeddings.bin"] = rows
        summary["embeddings"] = {**counts, "bytes": len(rows)}
    ai_dir.mkdir(parents=True, exist_ok=True)
    for name, content in writes.items():
        _write_atomically(ai_dir / name, content)
    return summary


async def _embed(
    document: dict[str, Any], embedder: Any, kind: str, cache_dir: Path, ai_dir: Path
) -> tuple[dict[str, Any], bytes, dict[str, Any]]:
    from passageway.builtin.passage_index.vectors import (
        embeddings_document,
        previous_vectors,
        space_of,
        vectors_for,
    )
    from passageway.builtin.storage.vector_cache import SqliteVectorCache

    chunks = document["chunks"]
    passages = [
        (chunk["digest"], embedding_input(chunk["title"], chunk["headingPath"], chunk["text"]))
        for chunk in chunks
    ]
    try:
        await embedder.start()
        space = space_of(embedder, kind)
        previous = await asyncio.to_thread(previous_vectors, ai_dir, space)
        cache = SqliteVectorCache.for_embedder(cache_dir, embedder.name, int(embedder.dim))
        try:
            matrix, embedded = await vectors_for(passages, embedder, cache, previous)
        finally:
            await cache.close()
    finally:
        await embedder.close()
    counts = {
        "passages": len(chunks),
        "embedded": embedded,
        "reused": len(chunks) - embedded,
        "model": space.model,
        "dimension": space.dimension,
    }
    return embeddings_document(space, document["sourceDigest"], chunks), matrix.tobytes(), counts


def _json_bytes(value: Mapping[str, Any]) -> bytes:
    return (json.dumps(value, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def _write_atomically(path: Path, content: bytes) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_bytes(content)
    os.replace(temporary, path)

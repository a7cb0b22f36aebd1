"""``passageway index SITE_DIR``: read the build output, write ``ai/chunks.json``, embed on request.

:func:`build_index` is the whole command without its argument parsing. Without ``embed`` it
reads files and writes one; it opens no connection and builds no embedder. With ``embed`` the
embedder comes from passageway's own configuration (the ``[embedder]`` table), built through the
plugin registries like the server's, so the built-in model, a preset, a command embedder and a
plugin's kind all work, and its vector cache comes from the ``passageway_vector_cache`` hook.
Files are written to a fresh temporary name and renamed (:mod:`.files`), so an interrupted run
leaves the previous files whole and nothing is written outside ``SITE_DIR/ai``.

The site is read from the build contract (``documents.json``) when the build wrote one, else from
its HTML (:mod:`.html_site`). A page that cannot be read is skipped with a warning (the summary
counts it under ``skipped``), or stops the run with ``strict``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from passageway_passage_index.chunker import embedding_input, page_passages
from passageway_passage_index.files import (
    PassageIndexError,
    UnreadablePage,
    output_folder,
    write_atomically,
)
from passageway_passage_index.html_site import read_html_site
from passageway_passage_index.site import Heading, Page, has_build_contract, read_contract

CHUNKS_SCHEMA_VERSION = 1
OUTPUT_FOLDER = "ai"


def source_digest(pages: list[Page]) -> str:
    """SHA-256 over every page's publication, ID and digest: it changes when any page's does."""
    lines = sorted(f"{page.variant}\t{page.id}\t{page.digest}" for page in pages)
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


@attrs.define
class SiteReading:
    """What was read of a site: its pages, the search index's headings, and what was skipped."""

    pages: list[Page]
    headings: dict[str, list[Heading]] | None
    generator: str
    """``contract`` for the build contract, else the generator :mod:`.html_site` recognised."""
    skipped: list[str] = attrs.field(factory=list)
    """One line per page left out, naming it and why."""


def read_site(site_dir: Path, *, strict: bool = False,
              warn: Callable[[str], None] | None = None) -> SiteReading:
    """Read the build contract if the build wrote it, else the HTML pages.

    :raises PassageIndexError: the site cannot be read, or (with ``strict``) one page cannot.
    """
    if not site_dir.is_dir():
        raise PassageIndexError(f"{site_dir} is not a folder; give the build output folder of the site")
    skipped: list[str] = []

    def skip(problem: UnreadablePage) -> None:
        if strict:
            raise PassageIndexError(f"{problem}; fix the page, or leave out --strict to skip it")
        skipped.append(str(problem))
        if warn is not None:
            warn(f"passageway index: skipped {problem}")

    if has_build_contract(site_dir):
        pages, headings = read_contract(site_dir, skip)
        return SiteReading(pages, headings, "contract", skipped)
    pages, generator = read_html_site(site_dir, skip)
    if not pages:
        raise PassageIndexError(
            f"{site_dir} holds no documents.json and no HTML page with text; it reads a build contract "
            "(documents.json) or the HTML output of Sphinx (_build/html), MkDocs (site/), VitePress "
            "(.vitepress/dist) or Docusaurus (build/): build the site first, then run `passageway index` "
            "on that output folder (docs/reference/passage-index.md)"
        )
    return SiteReading(pages, None, generator, skipped)


def chunks_document(site_dir: Path, *, strict: bool = False,
                    warn: Callable[[str], None] | None = None) -> tuple[SiteReading, dict[str, Any]]:
    """What was read of the site and the content of ``chunks.json``."""
    reading = read_site(site_dir, strict=strict, warn=warn)
    pages, headings = reading.pages, reading.headings
    chunks: list[dict[str, Any]] = []
    for page in pages:
        chunks.extend(page_passages(page, None if headings is None else headings.get(page.url, [])))
    document = {
        "schemaVersion": CHUNKS_SCHEMA_VERSION,
        "sourceDigest": source_digest(pages),
        "chunks": chunks,
    }
    return reading, document


def build_index(
    site_dir: Path,
    *,
    embed: bool = False,
    load_embedder: Callable[[], tuple[Any, str, Callable[[Any], Any]]] | None = None,
    strict: bool = False,
    warn: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Index the site in ``site_dir`` and return the summary the command prints.

    ``load_embedder`` (needed with ``embed``) returns an embedder that is not started, its
    ``kind``, and a function that makes its unopened vector cache once it has started (from the
    ``passageway_vector_cache`` hook). ``warn`` is told about each page skipped.

    :raises PassageIndexError: an input file or field is wrong (named in the message).
    :raises PassagewayError: the embedder cannot be built, started or used.
    """
    reading, document = chunks_document(site_dir, strict=strict, warn=warn)
    ai_dir = site_dir / OUTPUT_FOLDER
    if ai_dir.is_symlink() or (ai_dir.exists() and not ai_dir.is_dir()):
        output_folder(site_dir, OUTPUT_FOLDER)  # refuses it, naming why
    summary: dict[str, Any] = {
        "status": "ok",
        "documents": len(reading.pages),
        "chunks": len(document["chunks"]),
        "output": str((ai_dir / "chunks.json").resolve()),
    }
    if reading.generator != "contract":
        summary["read"] = reading.generator
    if reading.skipped:
        summary["skipped"] = len(reading.skipped)
    writes: dict[str, bytes] = {"chunks.json": _json_bytes(document)}
    if embed:
        if load_embedder is None:
            raise PassageIndexError("--embed needs an embedder; none was configured")
        embedder, kind, make_cache = load_embedder()
        meta, rows, counts = asyncio.run(_embed(document, embedder, kind, make_cache, ai_dir))
        writes["embeddings.json"] = _json_bytes(meta)
        writes["embeddings.bin"] = rows
        summary["embeddings"] = {**counts, "bytes": len(rows)}
    folder = output_folder(site_dir, OUTPUT_FOLDER)
    for name, content in writes.items():
        write_atomically(folder, name, content)
    return summary


async def _embed(
    document: dict[str, Any], embedder: Any, kind: str, make_cache: Callable[[Any], Any], ai_dir: Path
) -> tuple[dict[str, Any], bytes, dict[str, Any]]:
    from passageway_passage_index.vectors import (
        embeddings_document,
        previous_vectors,
        space_of,
        vectors_for,
    )

    chunks = document["chunks"]
    passages = [
        (chunk["digest"], embedding_input(chunk["title"], chunk["headingPath"], chunk["text"]))
        for chunk in chunks
    ]
    try:
        await embedder.start()
        space = space_of(embedder, kind)
        previous = await asyncio.to_thread(previous_vectors, ai_dir, space)
        cache = make_cache(embedder)
        await cache.open()
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

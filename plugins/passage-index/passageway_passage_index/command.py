"""``passageway index SITE_DIR``: the passage index of a built documentation site.

Reads the build output (the HTML pages of a Sphinx, MkDocs, VitePress, Docusaurus or other static
site, or the build contract: ``documents.json``, the pages' Markdown twins, ``search-index.json``)
and writes ``ai/chunks.json`` next to them; with ``--embed`` also ``ai/embeddings.json``
and ``ai/embeddings.bin``, embedded by the ``[embedder]`` of passageway.toml (``--config``
chooses the file). A page that cannot be read is skipped with a warning on stderr; ``--strict``
stops instead. Prints a JSON summary. The work is in :mod:`passageway_passage_index`;
``docs/reference/passage-index.md`` describes the files.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

NAME = "index"
HELP = "write the passage index (ai/chunks.json) of a built documentation site; --embed adds vectors"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("site_dir", type=Path, metavar="SITE_DIR", help="the site's build output folder")
    parser.add_argument(
        "--embed", action="store_true",
        help="also embed every passage with the configured [embedder] (a remote one is sent the text)",
    )
    parser.add_argument(
        "--strict", action="store_true",
        help="stop with exit status 2 at a page that cannot be read, instead of skipping it",
    )
    parser.add_argument(
        "--config", type=Path, metavar="FILE",
        help="the passageway.toml whose [embedder] --embed uses (default: the instance's)",
    )


def run(args: argparse.Namespace) -> int:
    from passageway_passage_index import build_index

    summary = build_index(
        args.site_dir,
        embed=args.embed,
        load_embedder=(lambda: _load_embedder(args)) if args.embed else None,
        strict=args.strict,
        warn=lambda line: print(line, file=sys.stderr),
    )
    print(json.dumps(summary, indent=2))
    return 0


def _load_embedder(args: argparse.Namespace) -> tuple[Any, str, Callable[[Any], Any]]:
    """The configured embedder (not started), its kind, and the maker of its vector cache: the
    ``passageway_vector_cache`` hook, with its file in the shared data folder (as ``eval``)."""
    from passageway import ConfigError, EmbedderContext
    from passageway.kernel.config import load_settings
    from passageway.kernel.plugins import build_plugin_manager, collect_registries

    environ = os.environ
    if args.config is not None and not args.config.is_file():
        raise ConfigError(f"--config {args.config} is not a file; give the passageway.toml to read")
    settings = load_settings(environ, instance=args.instance, config_path=args.config, require_file=False)
    context = EmbedderContext(
        data_dir=settings.data_dir,
        shared_data_dir=settings.shared_data_dir,
        model_dir=settings.model_dir,
        model_hub=settings.model_hub,
        environ=environ,
        log=lambda message: print(message, file=sys.stderr),
    )
    manager = build_plugin_manager(environ)
    registries = collect_registries(manager)
    embedder = registries.embedders.get(settings.embedder.kind)(settings.embedder, context)

    def make_cache(started: Any) -> Any:
        return manager.hook.passageway_vector_cache(
            store=settings.store, folder=settings.shared_data_dir,
            embedder_name=started.name, dim=int(started.dim))

    return embedder, settings.embedder.kind, make_cache

"""``passageway index SITE_DIR``: the passage index of a built documentation site.

Reads ``documents.json``, the pages' Markdown twins and ``search-index.json`` from the build
output and writes ``ai/chunks.json`` next to them; with ``--embed`` also ``ai/embeddings.json``
and ``ai/embeddings.bin``, embedded by the ``[embedder]`` of passageway.toml (``--config``
chooses the file). Prints a JSON summary. The work is in :mod:`passageway.builtin.passage_index`;
``docs/reference/passage-index.md`` describes the files.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
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
        "--config", type=Path, metavar="FILE",
        help="the passageway.toml whose [embedder] --embed uses (default: the instance's)",
    )


def run(args: argparse.Namespace) -> int:
    from passageway.builtin.passage_index import build_index

    summary = build_index(
        args.site_dir,
        embed=args.embed,
        load_embedder=(lambda: _load_embedder(args)) if args.embed else None,
    )
    print(json.dumps(summary, indent=2))
    return 0


def _load_embedder(args: argparse.Namespace) -> tuple[Any, str, Path]:
    """The configured embedder (not started), its kind, and where its vector cache lives."""
    from passageway.kernel.config import load_settings
    from passageway.kernel.embedder import EmbedderContext
    from passageway.kernel.errors import ConfigError
    from passageway.kernel.plugins import build_plugin_manager, collect_registries

    environ = os.environ
    if args.config is not None and not args.config.is_file():
        raise ConfigError(f"--config {args.config} is not a file; give the passageway.toml to read")
    settings = load_settings(environ, instance=args.instance, config_path=args.config, require_file=False)
    registries = collect_registries(build_plugin_manager(environ))
    context = EmbedderContext(
        data_dir=settings.data_dir,
        shared_data_dir=settings.shared_data_dir,
        model_dir=settings.model_dir,
        model_hub=settings.model_hub,
        environ=environ,
        log=lambda message: print(message, file=sys.stderr),
    )
    embedder = registries.embedders.get(settings.embedder.kind)(settings.embedder, context)
    return embedder, settings.embedder.kind, settings.shared_data_dir

"""Every hook passageway calls, grouped by stage. This module is the reference for plugin authors.

A plugin is a module or object with functions marked by ``passageway.hookimpl`` whose names match
the specs below. passageway loads its builtins (the tuple ``BUILTIN_PLUGINS`` in ``kernel/plugins.py``)
and then every entry point of the group ``passageway``::

    [project.entry-points.passageway]
    my-ranker = "my_package.plugin"

Two rules hold for every hook:

* **Hooks are synchronous.** pluggy has no async calls. A hook returns a factory or a plain
  decision; the objects the factories build (stores, embedders) expose ``async`` methods and only
  the kernel awaits them.
* **Registration hooks hand factories to a registry.** ``register(name, factory)`` adds one
  entry; a name that another plugin already registered is a startup error naming both plugins.
  The kernel calls each plugin's implementation with its own ``register``, so it always knows
  which plugin registered what.

A misspelt hook name fails at startup (``check_pending``) with the plugin's name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

from passageway import PROJECT

if TYPE_CHECKING:
    from aiohttp import web

    from passageway.kernel.app import Kernel
    from passageway.kernel.store import VectorCache

hookspec = pluggy.HookspecMarker(PROJECT)

Register = Callable[[str, Any], None]
"""``register(name, factory)``: adds ``factory`` to a registry under ``name``."""


# ---------------------------------------------------------------------------------------------
# Storage: where a source's items, passages and vectors live
# ---------------------------------------------------------------------------------------------


@hookspec
def passageway_register_stores(register: Register) -> None:
    """Register index backends.

    Called once when the plugin manager is built, for every plugin that implements it.

    :param register: ``register(name, factory)``. ``factory(path, source, context)`` returns an
        object satisfying :class:`passageway.Store` for the index file ``path`` (one
        per source, ``<data dir>/<source>.db`` for the builtin ``sqlite`` backend; a store on a
        database server may ignore it) of the source named ``source``. ``context`` is a
        :class:`passageway.StoreContext`: the ``[store]`` table, which the factory
        checks (``ConfigError`` naming an unknown key), and the environment for its ``env:NAME``
        references. The store records which embedder built it (``embedder()`` / ``reset()``).
        Its ``search`` is blocking and called from recall's worker threads; everything else is
        awaited on the event loop.
    :returns: nothing; every implementation is called (no result is collected).

    The kernel uses the store named ``sqlite`` unless a plugin registers another one and
    ``PASSAGEWAY_STORE`` names it.
    """


@hookspec(firstresult=True)
def passageway_vector_cache(store: str, folder: Path, embedder_name: str, dim: int) -> VectorCache | None:
    """Make the cache of passage vectors by digest for one embedder.

    Called when the kernel first needs the cache (before a source's first sync, and by
    ``passageway eval``), for the plugins that implement it, the last registered first, until one
    returns a cache (first non-None result wins).

    :param store: the store the server uses (``PASSAGEWAY_STORE``): a store plugin may keep the
        cache with its indexes and answer for its own store only.
    :param folder: the folder the cache may keep a file in (the data folder; for ``eval``, the
        shared data folder, so that the next run embeds nothing but the questions).
    :param embedder_name: the embedder's name; with ``dim`` it names the cache, whose vectors
        belong to that embedder alone.
    :param dim: the embedder's vector dimension.
    :returns: an unopened :class:`passageway.VectorCache`, or None to leave it to
        another plugin. The builtin ``storage`` plugin, called last, always answers: a SQLite
        file ``<folder>/vectors/<embedder name>-<dim>.db``, whatever the store.
    """


# ---------------------------------------------------------------------------------------------
# Embedding: text to unit vectors
# ---------------------------------------------------------------------------------------------


@hookspec
def passageway_register_embedders(register: Register) -> None:
    """Register embedder kinds, the values ``kind`` may take in an ``[embedder]`` table.

    Called once when the plugin manager is built, for every plugin that implements it.

    :param register: ``register(kind, factory)``. ``factory(settings, context)`` receives the
        table's :class:`passageway.EmbedderSettings` and an
        :class:`passageway.EmbedderContext` (data folder, secrets resolver) and
        returns an object satisfying :class:`passageway.Embedder`. It must not
        load a model yet: the kernel calls ``await embedder.start()`` off the event loop.
    :returns: nothing; every implementation is called.

    The builtins register ``onnx`` (the built-in presets) and ``command`` (the embedder protocol).
    """


# ---------------------------------------------------------------------------------------------
# Ranking: candidates to hits, and the relevance gate
# ---------------------------------------------------------------------------------------------


@hookspec
def passageway_register_rankers(register: Register) -> None:
    """Register rankers, which fuse the candidates of every source and apply the relevance gate.

    Called once when the plugin manager is built, for every plugin that implements it.

    :param register: ``register(name, factory)``. ``factory()`` returns an object satisfying
        :class:`passageway.Ranker`.
    :returns: nothing; every implementation is called.

    The builtins register ``hybrid`` (the default), ``keyword`` and ``vector``;
    ``passageway eval --ranker NAME`` picks one, the server always uses ``PASSAGEWAY_RANKER``
    (default ``hybrid``).
    """


# ---------------------------------------------------------------------------------------------
# Transport: how questions reach the kernel
# ---------------------------------------------------------------------------------------------


@hookspec
def passageway_add_routes(app: web.Application, kernel: Kernel) -> None:
    """Mount routes and lifecycle handlers on the server's aiohttp application.

    Called once while the server is built, before it starts listening, for every plugin that
    implements it.

    :param app: the ``aiohttp.web.Application``; add routes with ``app.router`` and resources
        with ``app.cleanup_ctx``. The kernel has mounted ``/health`` already. A route that answers
        from the index must check the bearer password with ``kernel.authorize(request)``.
    :param kernel: the running :class:`passageway.Kernel`: ``await kernel.recall(...)``,
        ``kernel.health(...)`` and the settings.
    :returns: nothing; every implementation is called.

    The builtin transport plugin mounts ``/mcp``, ``/recall``, the status page ``/`` and, with
    ``PASSAGEWAY_BASE_URL`` set, the OAuth routes.
    """


# ---------------------------------------------------------------------------------------------
# Commands: subcommands of the `passageway` command line
# ---------------------------------------------------------------------------------------------


@hookspec
def passageway_register_commands(register: Register) -> None:
    """Register subcommands of ``passageway`` that belong to a plugin (``passageway model``).

    Called once when the command line needs them: for ``--help``, ``completion`` and a first word
    that is not one of the kernel's own commands (``COMMANDS`` in ``kernel/cli.py``), for every
    plugin that implements it.

    :param register: ``register(name, command)``. ``command`` is a module or object with ``HELP``
        (one line), ``add_arguments(parser)`` (an ``argparse`` parser of its own) and
        ``run(args) -> int`` (the exit code; ``args.instance`` is ``--instance``). Import what the
        command needs inside ``run``, so that ``passageway --help`` stays fast. A name the kernel
        or another plugin already uses is a startup error naming both.
    :returns: nothing; every implementation is called.

    The builtins register ``model`` (embedders), ``mcp`` (transport) and ``index`` (the passage
    index of a documentation site).
    """

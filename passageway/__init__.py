"""passageway: retrieval for Claude over MCP.

This module is the door for plugin authors, as ``pytest`` is for pytest's: everything a store, an
embedder kind, a ranker, a transport or a command implements or receives is imported from here::

    from passageway import Candidate, Gate, Ranked, hookimpl

    class ShortestFirst:
        def rank(self, question, question_vector, keyword, vector, gate: Gate) -> list[Ranked]:
            ...

    @hookimpl
    def passageway_register_rankers(register):
        register("shortest-first", ShortestFirst)

The names are looked up on first use (:data:`PUBLIC`), so ``import passageway`` stays cheap for a
connector run. The tests of a plugin import from :mod:`passageway.testing`. Besides this module the
package holds links to the real folders (docs/adr/0009): ``passageway.kernel`` (contracts and the
loop), ``passageway.builtin`` (the default stages), ``passageway.testing`` and
``passageway.schemas`` (the protocol JSON Schemas).
"""

from __future__ import annotations

from typing import Any

import pluggy

PROJECT = "passageway"

hookimpl = pluggy.HookimplMarker(PROJECT)
"""The marker for hook implementations; see ``passageway.kernel.hookspecs`` for the hooks."""

PUBLIC: dict[str, str] = {
    # storage: the contract, what it stores and returns, and the text rules every store shares
    "Store": "passageway.kernel.store",
    "StoreContext": "passageway.kernel.store",
    "Candidate": "passageway.kernel.store",
    "StoredItem": "passageway.kernel.store",
    "ItemUpdate": "passageway.kernel.store",
    "VectorCache": "passageway.kernel.store",
    "check_updates": "passageway.kernel.store",
    "index_text": "passageway.kernel.text.keyword_text",
    "query_terms": "passageway.kernel.text.keyword_text",
    "CJK_CHARACTER": "passageway.kernel.text.keyword_text",
    "BM25_WEIGHTS": "passageway.kernel.text.keyword_text",
    "Item": "passageway.kernel.records",
    "Section": "passageway.kernel.records",
    "Passage": "passageway.kernel.records",
    "EmbedKind": "passageway.kernel.records",
    # embedding
    "Embedder": "passageway.kernel.embedder",
    "BaseEmbedder": "passageway.kernel.embedder",
    "ForwardingEmbedder": "passageway.kernel.embedder",
    "SpanVectors": "passageway.kernel.embedder",
    "EmbedderContext": "passageway.kernel.embedder",
    "EmbedderSettings": "passageway.kernel.config_file",
    # ranking
    "Ranker": "passageway.kernel.ranking",
    "Gate": "passageway.kernel.ranking",
    "Ranked": "passageway.kernel.ranking",
    "AnswerCheck": "passageway.kernel.ranking",
    "DEPTH": "passageway.kernel.ranking",
    # transport: the running kernel a route is handed, what it answers and how that is shown
    "Kernel": "passageway.kernel.app",
    "Question": "passageway.kernel.records",
    "Answer": "passageway.kernel.records",
    "Hit": "passageway.kernel.records",
    "render_answer": "passageway.kernel.query.rendering",
    # the settings a plugin reads: env:NAME references and the checks of a table's keys
    "resolve_secrets": "passageway.kernel.config",
    "SECRET_REFERENCE": "passageway.kernel.tables",
    "reject_unknown": "passageway.kernel.tables",
    # errors
    "PassagewayError": "passageway.kernel.errors",
    "ConfigError": "passageway.kernel.errors",
    "PluginError": "passageway.kernel.errors",
    "ConnectorError": "passageway.kernel.errors",
    "EmbedderError": "passageway.kernel.errors",
    "ModelError": "passageway.kernel.errors",
    "StoreError": "passageway.kernel.errors",
}
"""Each public name and the kernel module that defines it (the one place it is written). A class or
function looked up here reports ``passageway`` as its module (``repr(passageway.Store)`` is
``<class 'passageway.Store'>``), as httpx's names do: the module behind it is not an address to
import from."""

__all__ = ["PROJECT", "__version__", "hookimpl", *PUBLIC]


def __getattr__(name: str) -> Any:
    if name in PUBLIC:
        import importlib

        value = getattr(importlib.import_module(PUBLIC[name]), name)
        _name_the_door(value)
        globals()[name] = value  # looked up once
        return value
    # The version is looked up on first use: importing importlib.metadata costs every connector
    # run through `python -m passageway.testing...` tens of milliseconds it does not need.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("passageway")
        except PackageNotFoundError:  # a source tree that was never installed
            return "0.0.0"
    raise AttributeError(f"module 'passageway' has no attribute {name!r}")


def _name_the_door(value: Any) -> None:
    """Make a class or function report ``passageway`` as its module. An attrs class's annotations
    are resolved first, in the module that wrote them: they are strings (``from __future__ import
    annotations``), and once ``__module__`` names the door they would be looked up there."""
    import inspect

    if inspect.isclass(value):
        import contextlib

        import attrs

        if attrs.has(value):
            with contextlib.suppress(NameError):  # a name imported only for type checkers stays a string
                attrs.resolve_types(value)
    elif not inspect.isfunction(value):
        return  # a constant: it has no module of its own
    value.__module__ = PROJECT


def __dir__() -> list[str]:
    return sorted(__all__)

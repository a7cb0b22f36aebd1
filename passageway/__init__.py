"""passageway: retrieval for Claude over MCP.

Plugins import :data:`hookimpl` from here to mark their hook implementations::

    from passageway import hookimpl

    @hookimpl
    def passageway_register_rankers(register):
        register("mine", MyRanker)

This package is a facade (docs/adr/0009): besides this module it holds links to the real
folders, ``passageway.kernel`` (contracts and the loop), ``passageway.builtin`` (the default
stages, one subpackage each), ``passageway.testing`` (helpers for the tests of plugins, connectors
and embedders) and ``passageway.schemas`` (the protocol JSON Schemas).
"""

from __future__ import annotations

import pluggy

PROJECT = "passageway"

hookimpl = pluggy.HookimplMarker(PROJECT)
"""The marker for hook implementations; see ``passageway.kernel.hookspecs`` for the hooks."""

__all__ = ["PROJECT", "__version__", "hookimpl"]


def __getattr__(name: str) -> str:
    # The version is looked up on first use: importing importlib.metadata costs every connector
    # run through `python -m passageway.testing...` tens of milliseconds it does not need.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("passageway")
        except PackageNotFoundError:  # a source tree that was never installed
            return "0.0.0"
    raise AttributeError(f"module 'passageway' has no attribute {name!r}")

"""passageway: retrieval for Claude over MCP.

Plugins import :data:`hookimpl` from here to mark their hook implementations::

    from passageway import hookimpl

    @hookimpl
    def passageway_register_rankers(register):
        register("mine", MyRanker)

The kernel lives in ``passageway.kernel``, the default stages in ``passageway.builtin``.
"""

from importlib.metadata import PackageNotFoundError, version

import pluggy

try:
    __version__ = version("passageway")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0.0.0"

PROJECT = "passageway"

hookimpl = pluggy.HookimplMarker(PROJECT)
"""The marker for hook implementations; see ``passageway.kernel.hookspecs`` for the hooks."""

__all__ = ["PROJECT", "__version__", "hookimpl"]

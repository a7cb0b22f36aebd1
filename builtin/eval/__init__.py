"""Builtin plugin: ``passageway eval``, the evaluation harness, registered as a command the way
``model``, ``mcp`` and ``index`` are.

* :mod:`.command` is the command line (``eval`` and ``eval compare``), :mod:`.progress` its bar.
* :mod:`.cases` reads cases files strictly and matches a hit against a case.
* :mod:`.metrics` scores outcomes: hit@1, hit@3, MRR, silence, false silence, answer in passage,
  latency, each rate with its 95 % Wilson interval.
* :mod:`.runner` is the seam to the kernel (:class:`~.runner.Engine`) and the loop over cases.
* :mod:`.engine` is the real engine: an in-process kernel on a throwaway index, opened with the
  kernel's own arguments (a metered embedder, the vector cache in the shared data folder).
* :mod:`.report` and :mod:`.markdown` render a run or a comparison as JSON and markdown.
* :mod:`.page` writes the marked block of a page and keeps its history; :mod:`.publish` says where.

Nothing here imports the kernel's heavy parts at module level except :mod:`.engine`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from passageway import hookimpl


@hookimpl
def passageway_register_commands(register: Callable[[str, Any], None]) -> None:
    """``passageway eval`` (and ``eval compare``)."""
    from passageway.builtin.eval import command

    register(command.NAME, command)

"""How to run ``passageway`` again from the user's shell, for the commands that hints name.

The README's way runs it as ``uv run passageway`` from a clone, where ``passageway`` alone is not
on the shell's ``PATH`` (``uv run`` adds the virtual environment for its own child only). A hint
that says "run `passageway init`" must name what works there. :func:`command` decides it from how
this process was started:

- under ``uv run`` (which sets ``UV_RUN_RECURSION_DEPTH``): ``uv run passageway``;
- a ``passageway`` on the ``PATH`` that is this very program: ``passageway``;
- a program started by its path (``.venv/bin/passageway``): that path, as given;
- anything else (``python -m passageway.kernel.cli``): ``passageway``.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path


def command(environ: Mapping[str, str] | None = None, argv: Sequence[str] | None = None) -> str:
    """The words that run passageway from the user's shell (see the module's rules)."""
    environ = os.environ if environ is None else environ
    argv = sys.argv if argv is None else argv
    if environ.get("UV_RUN_RECURSION_DEPTH"):
        return "uv run passageway"
    program = argv[0] if argv else ""
    if Path(program).name != "passageway":
        return "passageway"
    found = shutil.which("passageway", path=environ.get("PATH") or os.defpath)
    if found is not None and Path(found).resolve() == Path(program).resolve():
        return "passageway"
    if os.sep in program:
        return program if " " not in program else f"'{program}'"
    return "passageway"


def hint(arguments: str = "", environ: Mapping[str, str] | None = None) -> str:
    """``command()`` followed by ``arguments``, for a message: ``uv run passageway init``."""
    return f"{command(environ)} {arguments}".strip()

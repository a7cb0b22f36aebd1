"""The built-in model's ONNX conversion, made once per test session and shared by hard links.

A first start of the built-in model converts it into ``$HOME`` (about 7 s of processor time). A
test that starts the model in a fresh home calls :func:`link_converted_model` instead: the
conversion is made once into a folder every pytest-xdist worker sees (``passageway model
convert``, which waits on the converter's lock while another process converts) and hard-linked
into the test's home, where the start finds it checked. The conversion itself is tested in the
main suite's ``tests/test_e5_onnx_convert.py``.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from pathlib import Path

MODELS = Path(".local", "share", "passageway", "models")
"""Where a home keeps the built-in model's conversions."""


def link_converted_model(session_folder: Path, home: Path) -> None:
    """Make ``home`` hold the session's conversion: ``session_folder`` is pytest's
    ``tmp_path_factory.getbasetemp()`` (the conversion goes beside the workers' folders)."""
    from passageway.kernel.cli import main

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    shared = (session_folder.parent if worker else session_folder) / "e5-home"
    before = os.environ.get("HOME")
    os.environ["HOME"] = str(shared)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
            if main(["model", "convert"]) != 0:
                raise RuntimeError(f"`passageway model convert` failed: {err.getvalue().strip()}")
    finally:
        if before is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = before
    for folder in (home, *(home / MODELS.parents[index] for index in range(2, -1, -1)), home / MODELS):
        folder.mkdir(mode=0o700, exist_ok=True)
    for converted in (shared / MODELS).iterdir():
        if not converted.name.startswith("."):
            shutil.copytree(converted, home / MODELS / converted.name, copy_function=os.link)

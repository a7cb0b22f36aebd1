"""``first_run.py``'s model folders and its ratios between engines, kept apart for its size.

* :func:`convert_model`: the built-in model converted once per checkout, outside the timed runs,
  with the ``[embedder]`` keys of each engine that runs it (``precision = "int8"`` converts the
  int8 passages' graph into a folder of its own beside the fp32 one), so no run converts;
* :func:`variant_lines`: each ``this, KEY=VALUE`` engine's times against this checkout's own.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path


def convert_model(checkout: Path, model_dir: Path, embedder: str = "") -> None:
    """``passageway model convert`` of ``checkout`` with ``HOME`` at ``model_dir`` and
    ``embedder`` (an ``[embedder]`` table, or nothing for the defaults) as its configuration."""
    environ = {"PATH": os.environ.get("PATH", ""), "HOME": str(model_dir)}
    with tempfile.TemporaryDirectory() as work:
        if embedder:
            config = Path(work) / "passageway.toml"
            config.write_text(embedder, encoding="utf-8")
            environ["PASSAGEWAY_CONFIG"] = str(config)
        subprocess.run([str(checkout / ".venv" / "bin" / "passageway"), "model", "convert"],
                       env=environ, check=True, capture_output=True)


def variant_lines(summary: Mapping[str, Mapping[str, float]]) -> list[str]:
    """``this, X`` against ``this``: from listening to the first keyword answer, to all passages
    by vector and to ``ok`` (a ratio below 1: the variant is sooner)."""
    base = summary.get("this")
    lines: list[str] = []
    for engine, row in summary.items():
        if base is None or not engine.startswith("this, "):
            continue
        lines += ["", f"Ratios, {engine} / this: from listening to the first keyword answer "
                  f"{row['answer_span'] / base['answer_span']:.2f}, to all by vector "
                  f"{row['span'] / base['span']:.2f}, to ok {row['ok_span'] / base['ok_span']:.2f}"]
    return lines

"""``--write PAGE``: replace the marked block of a page, and keep the history of runs beside it.

The block sits between ``<!-- passageway:results:start -->`` and
``<!-- passageway:results:end -->``, each on a line of its own. Markers inside fenced code blocks
are ignored, so a page can show them; the page keeps its line endings (CRLF stays CRLF). A named
block (``--block NAME``) uses ``<!-- passageway:results:start NAME -->`` and the matching end,
so one page can hold several runs.

The history is ``<page stem>.history.json`` next to the page. A run of the same date, model,
threshold, passageway version, ranker and block replaces its line instead of adding one; the
block shows the last :data:`HISTORY_SHOWN` runs of its own block.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from passageway.kernel.errors import EvalError
from passageway.kernel.text.fences import FENCE, closes_fence

HISTORY_SHOWN = 10
HISTORY_FORMAT = 1
HISTORY_KEY = ("date", "embedder", "threshold", "passageway", "ranker", "block", "label")
BLOCK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")


def markers(block: str | None) -> tuple[str, str]:
    suffix = f" {block}" if block else ""
    return f"<!-- passageway:results:start{suffix} -->", f"<!-- passageway:results:end{suffix} -->"


def check_block_name(block: str | None) -> None:
    if block is not None and not BLOCK_NAME.match(block):
        raise EvalError(f"--block {block!r}: a block name is letters, digits, '.', '_' or '-'")


def _find_block(lines: list[str], block: str | None, page: Path) -> tuple[int, int]:
    """Indexes of the start and end marker lines, outside fenced code blocks."""
    start_marker, end_marker = markers(block)
    fence: str | None = None
    starts: list[int] = []
    ends: list[int] = []
    for index, line in enumerate(lines):
        text = line.rstrip("\r\n")
        match = FENCE.match(text)
        if fence is None and match:
            fence = match.group(1)
            continue
        if fence is not None:
            if closes_fence(fence, text):
                fence = None
            continue
        stripped = text.strip()
        if stripped == start_marker:
            starts.append(index)
        elif stripped == end_marker:
            ends.append(index)
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        found = f"found {len(starts)} start and {len(ends)} end marker(s) outside code blocks"
        raise EvalError(
            f"{page}: --write needs the line {start_marker} and, after it, the line {end_marker}, "
            f"each once and on a line of its own ({found}). Add them where the results should go."
        )
    return starts[0], ends[0]


def _read(page: Path) -> str:
    try:
        return page.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise EvalError(
            f"--write {page}: the page does not exist; create it with the two marker lines"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise EvalError(f"--write {page}: cannot read it: {error}") from None


def check_page(page: Path, block: str | None = None) -> None:
    """Fail before the run when the page cannot take the results."""
    check_block_name(block)
    text = _read(page)
    _find_block(text.splitlines(keepends=True), block, page)
    if not os.access(page, os.W_OK):
        raise EvalError(f"--write {page}: the page is not writable")
    history = history_path(page)
    if history.exists():
        load_history(history)


def replace_block(text: str, content: str, block: str | None, page: Path) -> str:
    """``text`` with the marked block replaced by ``content``, in the page's own line endings."""
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    start, end = _find_block(lines, block, page)
    body = content.strip("\n").split("\n")
    new_lines = ["", *body, ""]
    replacement = [line + newline for line in new_lines]
    return "".join(lines[: start + 1] + replacement + lines[end:])


def history_path(page: Path) -> Path:
    return page.with_name(f"{page.stem}.history.json")


def load_history(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise EvalError(f"{path} is not a readable history file ({error}); fix or remove it") from None
    runs = document.get("runs") if isinstance(document, dict) else None
    if not isinstance(runs, list) or not all(isinstance(run, dict) for run in runs):
        raise EvalError(f"{path} is not a history file (no list of runs); fix or remove it")
    return runs


def add_history(runs: list[dict[str, Any]], entry: dict[str, Any]) -> list[dict[str, Any]]:
    """``runs`` with ``entry`` added, or replacing the run with the same key in place."""
    key = tuple(entry.get(name) for name in HISTORY_KEY)
    for index, run in enumerate(runs):
        if tuple(run.get(name) for name in HISTORY_KEY) == key:
            return [*runs[:index], entry, *runs[index + 1 :]]
    return [*runs, entry]


def save_history(path: Path, runs: list[dict[str, Any]]) -> None:
    document = {"format": HISTORY_FORMAT, "runs": runs}
    path.write_text(
        json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def history_table(runs: list[dict[str, Any]], block: str | None) -> str:
    """The last runs of ``block`` as a markdown table."""
    from passageway.builtin.eval.markdown import milliseconds, percent, table, threshold_text

    own = [run for run in runs if run.get("block") == block][-HISTORY_SHOWN:]
    rows = []
    for run in own:
        embedder = run.get("embedder", "")
        if run.get("label") and run.get("label") != run.get("ranker"):
            embedder = f"{run['label']}: {embedder}"
        rows.append(
            [
                str(run.get("date", "")),
                embedder,
                str(run.get("ranker", "")),
                threshold_text(run["threshold"]) if isinstance(run.get("threshold"), int | float) else "",
                str(run.get("passageway", "")),
                str(run.get("questions", "")),
                percent(run.get("hit_at_3")),
                percent(run.get("silence")),
                milliseconds(run.get("p95_ms")),
            ]
        )
    return table(
        ["Date", "Embedder", "Ranker", "Threshold", "Version", "Questions", "Hit@3", "Silence", "p95"], rows
    )


def write_page(page: Path, content: str, block: str | None) -> None:
    text = _read(page)
    new_text = replace_block(text, content, block, page)
    # newline="" keeps the line endings exactly as they are in new_text.
    with page.open("w", encoding="utf-8", newline="") as handle:
        handle.write(new_text)

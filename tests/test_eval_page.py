"""--write: the marked block, code fences, line endings, named blocks and the history file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from passageway.builtin.eval.page import (
    HISTORY_SHOWN,
    add_history,
    check_page,
    history_path,
    history_table,
    load_history,
    replace_block,
    save_history,
    write_page,
)
from passageway.kernel.errors import EvalError

START = "<!-- passageway:results:start -->"
END = "<!-- passageway:results:end -->"

PAGE = f"""# Measurements

How to mark the block:

```
{START}
{END}
```

{START}
old results
{END}

Notes written by hand.
"""


def test_the_block_outside_the_code_fence_is_replaced(tmp_path: Path):
    page = tmp_path / "m.md"
    page.write_text(PAGE, encoding="utf-8")
    check_page(page)
    write_page(page, "new results\n", None)
    text = page.read_text(encoding="utf-8")
    assert "old results" not in text
    assert f"```\n{START}\n{END}\n```" in text  # the example in the fence is untouched
    assert f"{START}\n\nnew results\n\n{END}\n\nNotes written by hand.\n" in text


def test_crlf_pages_keep_crlf(tmp_path: Path):
    page = tmp_path / "m.md"
    page.write_bytes(PAGE.replace("\n", "\r\n").encode("utf-8"))
    write_page(page, "line one\nline two\n", None)
    raw = page.read_bytes()
    assert b"line one\r\nline two\r\n" in raw
    assert b"\n" not in raw.replace(b"\r\n", b"")


def test_tilde_fences_and_longer_fences_hide_markers_too():
    text = f"~~~~\n{START}\n```\n{END}\n~~~~\n{START}\nx\n{END}\n"
    assert replace_block(text, "y", None, Path("p")).endswith(f"{START}\n\ny\n\n{END}\n")


@pytest.mark.parametrize(
    "text",
    [
        "no markers at all\n",
        f"```\n{START}\n{END}\n```\n",  # only inside a fence
        f"{END}\n{START}\n",  # wrong order
        f"{START}\n{START}\n{END}\n",  # twice
        f"text {START}\n{END}\n",  # not on a line of its own
    ],
)
def test_a_page_without_a_usable_block_is_refused_before_the_run(tmp_path: Path, text: str):
    page = tmp_path / "m.md"
    page.write_text(text, encoding="utf-8")
    with pytest.raises(EvalError, match="passageway:results:start") as caught:
        check_page(page)
    assert caught.value.exit_code == 2


def test_a_missing_page_is_refused(tmp_path: Path):
    with pytest.raises(EvalError, match="does not exist"):
        check_page(tmp_path / "missing.md")


def test_named_blocks_are_independent(tmp_path: Path):
    page = tmp_path / "m.md"
    page.write_text(
        f"{START}\na\n{END}\n"
        "<!-- passageway:results:start cross -->\nb\n<!-- passageway:results:end cross -->\n",
        encoding="utf-8",
    )
    check_page(page, "cross")
    write_page(page, "B", "cross")
    text = page.read_text(encoding="utf-8")
    assert "\na\n" in text and "\nB\n" in text and "\nb\n" not in text
    with pytest.raises(EvalError, match="block name"):
        check_page(page, "bad name!")


def entry(**changes):
    base = {
        "date": "2026-11-30",
        "time": "10:00:00Z",
        "embedder": "toy",
        "threshold": 0.5,
        "passageway": "0.1.0",
        "ranker": "hybrid",
        "block": None,
        "label": None,
        "questions": 5,
        "hit_at_3": 0.6,
        "silence": 1.0,
        "p95_ms": 1.5,
    }
    base.update(changes)
    return base


def test_history_replaces_a_repeated_run_and_adds_a_new_one(tmp_path: Path):
    runs = add_history([], entry())
    runs = add_history(runs, entry(time="11:00:00Z", hit_at_3=0.8))
    assert len(runs) == 1 and runs[0]["hit_at_3"] == 0.8
    runs = add_history(runs, entry(threshold=0.6))
    runs = add_history(runs, entry(ranker="keyword"))
    runs = add_history(runs, entry(date="2026-12-01"))
    assert len(runs) == 4
    path = history_path(tmp_path / "measurements.md")
    assert path.name == "measurements.history.json"
    save_history(path, runs)
    assert load_history(path) == runs
    assert json.loads(path.read_text(encoding="utf-8"))["format"] == 1


def test_history_table_shows_the_last_runs_of_its_own_block():
    runs = [entry(date=f"2026-11-{day:02d}") for day in range(1, 15)] + [
        entry(block="cross", date="2026-12-31")
    ]
    text = history_table(runs, None)
    lines = [line for line in text.splitlines() if line.startswith("| 2026")]
    assert len(lines) == HISTORY_SHOWN
    assert "2026-11-14" in lines[-1] and "2026-11-05" in lines[0]
    assert "2026-12-31" not in text
    assert "2026-12-31" in history_table(runs, "cross")


def test_a_broken_history_file_is_refused(tmp_path: Path):
    page = tmp_path / "m.md"
    page.write_text(f"{START}\n{END}\n", encoding="utf-8")
    history_path(page).write_text("{not json", encoding="utf-8")
    with pytest.raises(EvalError, match="history"):
        check_page(page)

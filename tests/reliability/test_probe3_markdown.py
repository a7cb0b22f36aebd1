"""Issue 38, items 2 and 5: every markdown text rule is linear in its input.

The probe's cases: a line ``{#`` plus many word characters with no ``}`` made the markdown
connector's heading-id pattern quadratic (20,000 characters 1.7 s; a 300 KB note timed out
``check`` at every sync and its source stayed failing); a run of spaces inside a heading, or an
attribute block that never closes, made the SDK's ``split_markdown`` and the passage index's
markdown reader quadratic (80,000 characters 50-91 s). One more was found here: the SDK's
``strip_code`` (which the connector runs on every note for its links) searched forward from every
backtick for a closing run, 10 s for 20 KB of backtick runs of every length. The headings' inline
markup (links, emphasis, escapes, code spans: the SDK's ``shown_text``) is read in linear time too.

Each hostile shape is read at ``SIZE`` characters (256 KiB here, 1 MiB in the full run) by every
reader, and must take less than ten times what the same reader takes on ordinary markdown of the
same size, plus two seconds (a quadratic rule at this size takes minutes). Then the connector,
as the server runs it (a subprocess), lists and fetches a folder holding one 1 MiB note of each
shape beside an ordinary note: every note comes back, the ordinary one unchanged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from passageway_connector_markdown.connector import has_heading_id, has_heading_markup
from passageway_passage_index import markdown as index_markdown
from passageway_sdk import first_h1, heading_id, split_markdown, strip_code

from tests.reliability.conftest import scale

SIZE = scale(256 * 1024, 1024 * 1024)


def repeated(piece: str, size: int) -> str:
    return (piece * (size // len(piece) + 1))[:size]


def backtick_runs(size: int) -> str:
    """Runs of 1, 2, 3 … backticks: no run closes another (about ``size`` characters)."""
    return " a ".join("`" * count for count in range(1, int((2 * size) ** 0.5)))


SHAPES: dict[str, Callable[[int], str]] = {
    "heading id that never closes": lambda size: "# Title {#" + "a" * size,
    "attribute blocks that never close": lambda size: "# Title " + repeated("{#a ", size),
    "spaces inside a heading": lambda size: "# a" + " " * size + "b",
    "tabs inside a heading": lambda size: "# a" + "\t" * size + "b",
    "spaces in an open attribute block": lambda size: "# a {#a" + " " * size + "x",
    "spaces after a brace": lambda size: "# a {" + " " * size + "b",
    "closing hashes and spaces": lambda size: "# a" + repeated(" #", size) + " x",
    "attribute lists that never close": lambda size: repeated("{: ", size),
    "an open quoted value": lambda size: '# a {#x title="' + "a" * size,
    "lines of headings with spaces": lambda size: repeated("## " + " " * 1000 + "a {\n", size),
    "setext lines": lambda size: repeated("a\n---\n", size),
    "underlines": lambda size: repeated("=\n", size),
    "reference definitions": lambda size: repeated("[a]: ", size),
    "an open reference label": lambda size: "[" + "a" * size,
    "admonition headers": lambda size: repeated("!!! ", size),
    "an open admonition title": lambda size: '!!! note "' + "a" * size,
    "fences": lambda size: repeated("```\n", size),
    "backtick runs of every length": backtick_runs,
    "a heading of backtick runs": lambda size: "# " + backtick_runs(size),
    "a heading of links that never close": lambda size: "# " + repeated("![a](<b [c](d (e ", size),
    "a heading of emphasis that never closes": lambda size: "# " + repeated("*a _b **c ", size),
    "a heading of escapes, entities and tags": lambda size: "# " + repeated("\\` &#1 &lt; <a ", size),
}


def ordinary(size: int) -> str:
    return repeated("## Install {#install}\n\nRun the tool, then *read* the [guide](g.md).\n\n"
                    "```sh\nrun it\n```\n\n", size)


def index_reader(text: str) -> object:
    """What the passage index's chunker asks of its markdown reader, for every line."""
    lines = index_markdown.normalised(text).split("\n")
    return [index_markdown.heading_attributes(found[1]) for line in lines
            if (found := index_markdown.heading(line)) is not None]


READERS: dict[str, Callable[[str], object]] = {
    "split_markdown": split_markdown,
    "first_h1": first_h1,
    "heading_id": lambda text: heading_id(text.split("\n", 1)[0]),
    "strip_code": strip_code,
    "connector heading ids": lambda text: has_heading_id(text.encode("utf-8")),
    "connector heading markup": lambda text: has_heading_markup(text.encode("utf-8")),
    "passage index reader": index_reader,
}


def seconds(read: Callable[[str], object], text: str) -> float:
    began = time.perf_counter()
    read(text)
    return time.perf_counter() - began


@pytest.fixture(scope="module")
def quiet() -> dict[str, float]:
    """Each reader's time on ordinary markdown of SIZE characters: the yardstick."""
    text = ordinary(SIZE)
    return {name: seconds(read, text) for name, read in READERS.items()}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_markdown_reader_is_linear_on_hostile_shapes(shape, quiet, figures):
    text = SHAPES[shape](SIZE)
    slowest = 0.0
    for name, read in READERS.items():
        taken = seconds(read, text)
        # Generous for a busy machine: a quadratic reader takes minutes at this size (80,000
        # characters took 50-91 s before issue 38), a linear one a fraction of a second.
        assert taken < 20 * quiet[name] + 10, (shape, name, taken, quiet[name])
        slowest = max(slowest, taken)
    figures.add("quadratic_sdk", inputs=1)
    figures.add("quadratic_sdk", **{f"markdown, {shape}: slowest reader seconds": round(slowest, 2)})


def run_connector(folder: Path, mode: str, ids: list[str] | None = None) -> list[dict]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(folder.parent), "PASSAGEWAY_PROTOCOL": "1",
           "FOLDER": str(folder), "MAX_FILE_BYTES": str(2 * 1024 * 1024)}
    stdin = "".join(json.dumps({"id": item_id}) + "\n" for item_id in ids or [])
    completed = subprocess.run([sys.executable, "-m", "passageway_connector_markdown", mode],
                               input=stdin.encode(), capture_output=True, env=env, timeout=120)
    assert completed.returncode == 0, completed.stderr.decode()[-2000:]
    return [json.loads(line) for line in completed.stdout.decode().splitlines()]


def test_a_1_mib_note_of_any_shape_leaves_the_source_whole(tmp_path, figures):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "ordinary.md").write_text("# Ordinary\n\n## Use {#use}\n\nRun it.\n", encoding="utf-8")
    shapes = list(SHAPES) if scale(False, True) else list(SHAPES)[:6]
    for number, shape in enumerate(shapes):
        (folder / f"hostile-{number}.md").write_text(SHAPES[shape](1024 * 1024), encoding="utf-8")
    began = time.perf_counter()
    run_connector(folder, "check")
    listed = {entry["id"] for entry in run_connector(folder, "list")}
    assert listed == {"ordinary.md", *(f"hostile-{number}.md" for number in range(len(shapes)))}
    items = {item["id"]: item for item in run_connector(folder, "fetch", sorted(listed))}
    taken = time.perf_counter() - began
    assert set(items) == listed
    assert items["ordinary.md"]["sections"] == [{"heading": "Use", "text": "Run it.", "anchor": "use"}]
    label = f"markdown connector, {len(shapes)} notes of 1 MiB: seconds"
    figures.add("quadratic_sdk", **{label: round(taken, 1)})

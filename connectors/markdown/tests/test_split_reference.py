"""A real one-file reference page as one item per section (issue 35, item 5): starship's
configuration page (corpus/docs/starship/en/config/README.md, ISC licence, 300 KB, a top-level
section per prompt module), through the connector and through the core's sync."""

from __future__ import annotations

import json
import os
import shutil
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from passageway.builtin.eval.cases import Case, accepts
from passageway.builtin.storage import SqliteStore
from passageway.builtin.storage.vector_cache import SqliteVectorCache
from passageway.kernel.config import ConnectorSettings
from passageway.kernel.connector.runner import ConnectorRunner
from passageway.kernel.errors import DeletionRefused
from passageway.kernel.index.sync import SourceSync
from passageway.testing.toy_embedder import ToyEmbedder

DOCS = Path(__file__).resolve().parents[3] / "corpus" / "docs"
STARSHIP = DOCS / "starship" / "en" / "config" / "README.md"
PAGE = "config/README.md"


@pytest.fixture
def reference(notes):
    """The notes folder with starship's configuration page and two small notes beside it."""
    (notes.root / "config").mkdir()
    shutil.copy(STARSHIP, notes.root / PAGE)
    notes.write("faq.md", "# FAQ\n\nSee [the configuration](config/README.md).\n")
    notes.write("install.md", "# Install\n\nRun the installer.\n")
    return notes


def top_headings(text: str) -> list[str]:
    """The page's `## ` headings outside fenced code, in order (its modules and a few more)."""
    found, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("## "):
            found.append(line[3:].strip())
    return found


def test_the_configuration_page_is_one_item_per_module(reference):
    items = reference.fetch_all().by_id  # the default limit, 100,000 bytes: this page is over it
    parts = {item_id: item for item_id, item in items.items() if item_id.startswith(PAGE)}
    modules = top_headings(STARSHIP.read_text(encoding="utf-8"))
    assert len(modules) > 90
    assert {item["title"].removeprefix("Configuration › ") for item in parts.values()} >= set(modules)
    git = parts[PAGE + "#git-status"]
    assert git["title"] == "Configuration › Git Status"
    assert git["url"] == items[PAGE]["url"] + "#git-status" and git["url"].startswith("file://")
    assert [section["heading"] for section in git["sections"]] == [None, "Options", "Variables", "Example"]
    assert "`ignore_submodules`" in git["sections"][1]["text"]
    # The first part is the page's introduction, under its own title and id, with the page's links.
    assert items[PAGE]["title"] == "Configuration" and items[PAGE]["sections"][0]["heading"] is None
    assert "links" not in git
    # Nothing is lost or repeated: the parts hold the whole page's text, in order.
    [whole] = reference.run("fetch", ids=[PAGE], SPLIT_BYTES="0").records
    in_order = [item_id for item_id in reference.list() if item_id.startswith(PAGE)]  # the page's order
    assert sorted(in_order) == sorted(parts)
    split_text = [section["text"] for item_id in in_order for section in parts[item_id]["sections"]]
    assert split_text == [section["text"] for section in whole["sections"]]
    assert max(len(str(item["sections"])) for item in parts.values()) < len(str(whole["sections"])) / 10
    # The small notes beside it are one item each, as before.
    assert items["faq.md"]["links"] == [PAGE] and items["install.md"]["title"] == "Install"


def test_a_module_of_the_right_page_counts_as_the_right_page():
    case = Case("skip git submodules?", expect=("starship/en/config/README.md",), expect_text=("x",))
    url = STARSHIP.as_uri()
    assert accepts(case, item_id=PAGE + "#git-status", title="Configuration › Git Status", heading="Options",
                   url=url + "#git-status")
    other = STARSHIP.parents[1] / "advanced-config" / "README.md"
    assert not accepts(case, item_id="advanced-config/README.md", title="Advanced Configuration",
                       heading=None, url=other.as_uri())


class Watched:
    """The ids each ``fetch`` call of the connector returned."""

    def __init__(self) -> None:
        self.fetched: list[str] = []

    def __call__(self, trace) -> None:  # type: ignore[no-untyped-def]
        if trace.mode == "fetch":
            self.fetched += [json.loads(line)["id"] for line in trace.stdout_lines]


def sync_for(notes, tmp_path: Path, watched: Watched, max_delete_fraction: float
             ) -> tuple[SourceSync, SqliteStore]:
    command = (sys.executable, "-m", "passageway_connector_markdown")
    settings = ConnectorSettings(name="starship", command=command, env={"FOLDER": str(notes.root)},
                                 max_delete_fraction=max_delete_fraction)
    environ = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    runner = ConnectorRunner(settings, environ=environ, observer=watched)
    embedder = ToyEmbedder()
    store = SqliteStore(tmp_path / "starship.db", "starship")
    cache = SqliteVectorCache.for_embedder(tmp_path, embedder.name, embedder.dim)
    return SourceSync(settings, store, embedder, runner, cache), store


def edit(notes, old: str, new: str) -> None:
    path = notes.root / PAGE
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1
    path.write_text(text.replace(old, new), encoding="utf-8")
    later = datetime.now(UTC).timestamp() + 5  # after the last poll, whatever the clock's grain
    os.utime(path, (later, later))


async def test_an_edit_re_indexes_its_section_and_a_deleted_page_takes_all_its_items(reference, tmp_path):
    watched = Watched()
    sync, store = sync_for(reference, tmp_path / "index", watched, max_delete_fraction=0.3)
    (tmp_path / "index").mkdir()
    await store.open()
    await sync.vector_cache.open()
    try:
        await sync.sync_once()
        built = await store.versions()
        assert set(built) == set(reference.list())
        assert len(built) > 100
        # An edit to one module: the reconcile fetches that module's item, and nothing else.
        watched.fetched.clear()
        edit(reference, "| `ignore_submodules`    | `false`", "| `ignore_submodules`    | `true` ")
        await sync.reconcile()
        assert watched.fetched == [PAGE + "#git-status"]
        after = await store.versions()
        assert [item_id for item_id in after if after[item_id] != built[item_id]] == [PAGE + "#git-status"]
        # The same through a poll: `changed` sends every part of the touched page, one is stored.
        await store.set_state("last_poll", (datetime.now(UTC) - timedelta(seconds=1)).isoformat())
        edit(reference, "The `time` module shows", "The `time` module, edited, shows")
        await sync.poll()
        polled = await store.versions()
        assert [item_id for item_id in polled if polled[item_id] != after[item_id]] == [PAGE + "#time"]
        # The page removed: its parts are most of the source, and the deletion guard refuses.
        (reference.root / PAGE).unlink()
        with pytest.raises(DeletionRefused, match=r"max_delete_fraction = 0\.3"):
            await sync.reconcile()
        assert await store.versions() == polled
    finally:
        await store.close()
        await sync.vector_cache.close()


async def test_a_removed_page_removes_every_one_of_its_items(reference, tmp_path):
    (tmp_path / "index").mkdir()
    sync, store = sync_for(reference, tmp_path / "index", Watched(), max_delete_fraction=1.0)
    await store.open()
    await sync.vector_cache.open()
    try:
        await sync.sync_once()
        assert len(await store.versions()) > 100
        (reference.root / PAGE).unlink()
        await sync.reconcile()
        assert sorted(await store.versions()) == ["faq.md", "install.md"]
    finally:
        await store.close()
        await sync.vector_cache.close()

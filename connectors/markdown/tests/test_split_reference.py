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

from passageway.kernel.config import ConnectorSettings
from passageway.kernel.connector.runner import ConnectorRunner
from passageway.kernel.errors import DeletionRefused
from passageway.kernel.index.sync import SourceSync
from passageway.kernel.plugins import build_plugin_manager, collect_registries
from passageway.kernel.store import Store, StoreContext
from passageway.testing.toy_embedder import ToyEmbedder

DOCS = Path(__file__).resolve().parents[3] / "corpus" / "docs"
STARSHIP = DOCS / "starship" / "en" / "config" / "README.md"
PAGE = "config/README.md"


SPLIT = "100000"
"""The limit chosen on starship and typer (off by default: parts.DEFAULT_SPLIT_BYTES)."""


@pytest.fixture
def reference(notes):
    """The notes folder with starship's configuration page and two small notes beside it, split at
    :data:`SPLIT` bytes."""
    notes.env["SPLIT_BYTES"] = SPLIT
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
    items = reference.fetch_all().by_id  # this page is over the limit
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


class Watched:
    """The ids each ``fetch`` call of the connector returned."""

    def __init__(self) -> None:
        self.fetched: list[str] = []

    def __call__(self, trace) -> None:  # type: ignore[no-untyped-def]
        if trace.mode == "fetch":
            self.fetched += [json.loads(line)["id"] for line in trace.stdout_lines]


def sync_for(notes, tmp_path: Path, watched: Watched, max_delete_fraction: float
             ) -> tuple[SourceSync, Store]:
    """The core's sync of the notes folder, with the default store and vector cache, reached
    through the plugin registries as a third party's tests would."""
    command = (sys.executable, "-m", "passageway_connector_markdown")
    settings = ConnectorSettings(name="starship", command=command,
                                 env={"FOLDER": str(notes.root), "SPLIT_BYTES": SPLIT},
                                 max_delete_fraction=max_delete_fraction)
    environ = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    runner = ConnectorRunner(settings, environ=environ, observer=watched)
    embedder = ToyEmbedder()
    manager = build_plugin_manager({}, load_entry_points=False)
    make_store = collect_registries(manager).stores.get("sqlite")
    store = make_store(tmp_path / "starship.db", "starship", StoreContext())
    cache = manager.hook.passageway_vector_cache(store="sqlite", folder=tmp_path, embedder_name=embedder.name,
                                                 dim=embedder.dim)
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
        # The guard counts pages: two of the three pages gone is refused, whatever their parts.
        faq = (reference.root / "faq.md").read_bytes()
        (reference.root / PAGE).unlink()
        (reference.root / "faq.md").unlink()
        with pytest.raises(DeletionRefused, match=r"2 of 3 pages .*max_delete_fraction = 0\.3"):
            await sync.reconcile()
        assert await store.versions() == polled
        # One page gone is one deletion, which the guard always allows: all of its parts go.
        (reference.root / "faq.md").write_bytes(faq)
        await sync.reconcile()
        assert sorted(await store.versions()) == ["faq.md", "install.md"]
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


@pytest.fixture
def toy_eval(monkeypatch, tmp_path):
    """``passageway eval`` in-process with the toy embedder (no model), the environment cleared."""
    from passageway.testing import toy_cli

    toy_cli(monkeypatch, tmp_path / "home")


def test_eval_counts_a_module_of_the_right_page_as_the_right_page(reference, tmp_path, capsys, toy_eval):
    from passageway.kernel.cli import main

    config = tmp_path / "passageway.toml"
    config.write_text(
        '[embedder]\nkind = "toy"\nmin_similarity = 0.0\n\n[[connector]]\nname = "starship"\n'
        f'command = ["{sys.executable}", "-m", "passageway_connector_markdown"]\n'
        f'env = {{ FOLDER = "{reference.root}", SPLIT_BYTES = "{SPLIT}" }}\n', encoding="utf-8")
    cases = tmp_path / "cases.toml"
    question = "Ignore changes to submodules"  # a row of the Git Status module's options
    cases.write_text(
        f'[[case]]\nquery = "{question}"\nexpect = ["config/README.md"]\n'
        'expect_text = ["ignore_submodules"]\n\n'
        f'[[case]]\nquery = "{question}"\nexpect = ["install.md"]\n', encoding="utf-8")
    out = tmp_path / "out"
    code = main(["eval", str(cases), "--config", str(config), "--out", str(out), "--include-cases",
                 "--ranker", "keyword"])
    assert code == 0, capsys.readouterr().err
    right, other = json.loads((out / "report.json").read_text(encoding="utf-8"))["cases"]
    first = right["found"][0]
    assert first["item_id"].startswith(PAGE + "#git-") and first["url"].endswith(first["item_id"][len(PAGE):])
    assert right["rank"] == 1 and right["answer_rank"] is not None
    # The same hits for a case whose right file is another page: a section of this one is not it.
    assert [hit["item_id"] for hit in other["found"]] == [hit["item_id"] for hit in right["found"]]
    assert other["rank"] is None

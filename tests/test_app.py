"""The kernel in process: building, syncing, recall, health states and the bearer check."""

from __future__ import annotations

import logging

import pytest

from passageway import hookimpl
from passageway.kernel.app import Kernel
from passageway.kernel.config import load_settings
from passageway.kernel.errors import EmbedderError, PassagewayError
from passageway.kernel.plugins import build_plugin_manager
from passageway.kernel.records import Question
from passageway.testing.toy_embedder import ToyEmbedder
from passageway.testing.toy_embedder import plugin as toy_plugin
from tests.server_helpers import PASSWORD, make_kernel, write_instance


class _BrokenEmbedder(ToyEmbedder):
    async def start(self) -> None:
        raise EmbedderError("the model file /models/x.onnx is missing; run `passageway model download`")


class _BrokenEmbedderPlugin:
    @hookimpl
    def passageway_register_embedders(self, register):  # type: ignore[no-untyped-def]
        register("broken-toy", lambda settings, context: _BrokenEmbedder())


class _Request:
    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers


async def test_open_sync_once_and_recall(tmp_path):
    environ = write_instance(tmp_path)
    settings = load_settings(environ)
    manager = build_plugin_manager(environ, extra=(("toy", toy_plugin),), load_entry_points=False)
    async with Kernel.open(settings, manager, environ) as kernel:
        assert kernel.health(include_errors=True)["status"] == "indexing"
        assert await kernel.sync_once() == {"notes": None}
        answer = await kernel.recall("how does a refracting telescope gather starlight with a lens?")
        assert [hit.item_id for hit in answer.hits][:1] == ["telescope"]
        silent = await kernel.recall("quarterly tax declaration deadline")
        assert silent.silent
        report = kernel.health(include_errors=False)
        assert report["status"] == "ok"
        assert report["sources"]["notes"]["items"] == 4
        assert (tmp_path / "data" / "notes.db").is_file()


async def test_recall_excludes_items_already_sent(tmp_path):
    environ = write_instance(tmp_path)
    async with Kernel.open(load_settings(environ), make_kernel(environ).manager, environ) as kernel:
        await kernel.sync_once()
        question = "how does a refracting telescope gather starlight with a lens?"
        first = await kernel.recall(question)
        assert first.hits[0].item_id == "telescope"
        again = await kernel.recall(Question(question, exclude_items=[("notes", "telescope")]))
        assert "telescope" not in [hit.item_id for hit in again.hits]


async def test_failing_source_is_degraded_and_error_text_needs_authorisation(tmp_path):
    environ = write_instance(tmp_path, fail="check,list")
    async with Kernel.open(load_settings(environ), make_kernel(environ).manager, environ) as kernel:
        errors = await kernel.sync_once()
        assert errors["notes"] is not None and "check" in errors["notes"]
        public = kernel.health(include_errors=False)
        assert public["status"] == "degraded"
        assert public["sources"]["notes"]["state"] == "failing"
        assert "error" not in public["sources"]["notes"]
        assert "FAKE_FAIL" not in str(public)
        private = kernel.health(include_errors=True)
        assert "check" in private["sources"]["notes"]["error"]


async def test_embedder_failing_to_start_makes_recall_raise(tmp_path):
    environ = write_instance(tmp_path, config='[embedder]\nkind = "broken-toy"\n')
    settings = load_settings(environ)
    manager = build_plugin_manager(
        environ, extra=(("broken", _BrokenEmbedderPlugin()),), load_entry_points=False
    )
    async with Kernel.open(settings, manager, environ) as kernel:
        with pytest.raises(EmbedderError, match="missing"):
            await kernel.recall("anything at all about rivers")
        public = kernel.health(include_errors=False)
        assert public["status"] == "degraded"
        assert public["embedder"]["state"] == "failing"
        assert "error" not in public["embedder"]
        assert "passageway model download" in kernel.health(include_errors=True)["embedder"]["error"]


async def test_an_embedder_with_an_impossible_offset_fails_at_start_not_at_the_first_question(tmp_path):
    class Plugin:
        @hookimpl
        def passageway_register_embedders(self, register):  # type: ignore[no-untyped-def]
            register("bad-offset", lambda settings, context: ToyEmbedder(cross_language_offset=1.5))

    environ = write_instance(tmp_path, config='[embedder]\nkind = "bad-offset"\n')
    manager = build_plugin_manager(environ, extra=(("bad", Plugin()),), load_entry_points=False)
    kernel = Kernel.create(load_settings(environ), manager, environ)
    await kernel.start_embedder()
    try:
        assert kernel.embedder_error is not None and "cross_language_offset" in kernel.embedder_error
        assert "1.5" in kernel.embedder_error
    finally:
        await kernel.close_embedder()


async def test_embedder_failing_during_recall_raises_and_shows_in_health(tmp_path):
    environ = write_instance(tmp_path)
    async with Kernel.open(load_settings(environ), make_kernel(environ).manager, environ) as kernel:
        await kernel.sync_once()
        assert isinstance(kernel.embedder, ToyEmbedder)
        kernel.embedder.fail = True
        with pytest.raises(EmbedderError):
            await kernel.recall("how does a refracting telescope gather starlight?")
        assert kernel.health(include_errors=False)["status"] == "degraded"
        with pytest.raises(EmbedderError):  # still failing: no silent answer in between
            await kernel.recall("how does a refracting telescope gather starlight?")
        kernel.embedder.fail = False  # it recovers: recall answers and health clears
        answer = await kernel.recall("how does a refracting telescope gather starlight?")
        assert answer.hits[0].item_id == "telescope"
        assert kernel.health(include_errors=True)["status"] == "ok"


def test_broken_configuration_answers_error(tmp_path):
    kernel = Kernel.broken(
        "passageway.toml: unknown key 'nmae' in [[connector]] 1", environ={}, instance="work"
    )
    report = kernel.health(include_errors=True)
    assert report["status"] == "error"
    assert "nmae" in report["error"]
    assert report["instance"] == "work"
    assert "nmae" not in str(kernel.health(include_errors=False))


async def test_broken_configuration_recall_raises():
    kernel = Kernel.broken("bad config", environ={})
    with pytest.raises(PassagewayError, match="bad config"):
        await kernel.recall("anything")


def test_unknown_ranker_gives_an_error_kernel(tmp_path):
    environ = write_instance(tmp_path, extra_env={"PASSAGEWAY_RANKER": "nonesuch"})
    kernel = make_kernel(environ)
    assert kernel.health(include_errors=True)["status"] == "error"
    assert "nonesuch" in kernel.health(include_errors=True)["error"]


async def test_open_refuses_a_broken_setup(tmp_path):
    environ = write_instance(tmp_path, extra_env={"PASSAGEWAY_STORE": "nonesuch"})
    with pytest.raises(PassagewayError, match="nonesuch"):
        async with Kernel.open(load_settings(environ), None, environ):
            pass


def test_version_and_instance(tmp_path):
    environ = write_instance(tmp_path, extra_env={"APP_VERSION": "9.9.9-test"})
    report = make_kernel(environ).health(include_errors=False)
    assert report["version"] == "9.9.9-test"
    assert report["instance"] is None


def test_authorize_compares_the_bearer_password(tmp_path):
    kernel = make_kernel(write_instance(tmp_path))
    assert kernel.authorize(_Request({"Authorization": f"Bearer {PASSWORD}"}))
    assert kernel.authorize(_Request({"Authorization": f"bearer {PASSWORD}"}))
    assert not kernel.authorize(_Request({"Authorization": f"Bearer {PASSWORD}x"}))
    assert not kernel.authorize(_Request({"Authorization": PASSWORD}))
    assert not kernel.authorize(_Request({}))


def test_no_password_authorises_nobody(tmp_path):
    environ = write_instance(tmp_path)
    del environ["PASSAGEWAY_LOGIN_PASSWORD"]
    kernel = make_kernel(environ)
    assert not kernel.authorize(_Request({"Authorization": "Bearer "}))
    assert not kernel.authorize(_Request({"Authorization": "Bearer None"}))


async def test_background_sync_builds_and_stops(tmp_path):
    environ = write_instance(tmp_path)
    async with Kernel.open(load_settings(environ), make_kernel(environ).manager, environ) as kernel:
        kernel.start_background_sync()
        from tests.server_helpers import wait_built

        await wait_built(kernel)
        assert kernel.health(include_errors=True)["sources"]["notes"]["items"] == 4
        await kernel.stop_background_sync()
        assert not kernel.syncs.tasks


async def test_recall_logs_count_and_time_only(tmp_path, caplog):
    environ = write_instance(tmp_path)
    async with Kernel.open(load_settings(environ), make_kernel(environ).manager, environ) as kernel:
        await kernel.sync_once()
        caplog.clear()  # only the recall's own lines, whatever level an earlier test left behind
        with caplog.at_level(logging.DEBUG, logger="passageway.kernel"):
            await kernel.recall("how does a refracting telescope gather starlight?")
        lines = [record.getMessage() for record in caplog.records if record.name == "passageway.kernel"]
        assert len(lines) == 1 and lines[0].startswith("recall: 1 hits in ")
        assert "telescope" not in caplog.text


def modes_under(folder) -> dict[str, int]:  # type: ignore[no-untyped-def]
    import os
    import stat

    return {str(path.relative_to(folder)): stat.S_IMODE(os.lstat(path).st_mode)
            for path in [folder, *folder.rglob("*")]}


async def test_the_data_folder_and_every_file_in_it_are_private(tmp_path, caplog):
    # Found by the hostile probe (issue 22): under umask 022 the indexed text was readable by all.
    import os

    old_umask = os.umask(0o022)
    try:
        environ = write_instance(tmp_path)
        settings = load_settings(environ)
        manager = build_plugin_manager(environ, extra=(("toy", toy_plugin),), load_entry_points=False)
        async with Kernel.open(settings, manager, environ) as kernel:
            assert await kernel.sync_once() == {"notes": None}
            await kernel.sources["notes"].store.close()  # writes the vector file
    finally:
        os.umask(old_umask)
    modes = modes_under(tmp_path / "data")
    assert {"notes.db", "notes.usearch"} <= set(modes)
    assert {name: mode for name, mode in modes.items() if mode & 0o077} == {}
    assert not any("readable by other users" in record.getMessage() for record in caplog.records)


async def test_an_open_data_folder_is_made_private_at_start_with_one_warning(tmp_path, caplog):
    environ = write_instance(tmp_path)
    data = tmp_path / "data"
    (data / "vectors").mkdir(parents=True)
    (data / "notes.db").write_bytes(b"")
    (data / "vectors" / "old.db").write_bytes(b"")
    for path, mode in ((data, 0o755), (data / "vectors", 0o755), (data / "notes.db", 0o644),
                       (data / "vectors" / "old.db", 0o664)):
        path.chmod(mode)
    caplog.set_level(logging.WARNING)
    kernel = make_kernel(environ)
    await kernel.open_stores()
    await kernel.close_stores()
    assert {name: mode for name, mode in modes_under(data).items() if mode & 0o077} == {}
    warnings = [r.getMessage() for r in caplog.records if "readable by other users" in r.getMessage()]
    assert len(warnings) == 1 and "4 folders and files" in warnings[0]


async def test_a_removed_connectors_index_keeps_serving_until_its_file_is_deleted(tmp_path):
    # Found by the hostile probe (issue 22): it stopped serving at the next start.
    environ = write_instance(tmp_path)
    kernel = make_kernel(environ)
    await kernel.start_embedder()
    await kernel.open_stores()
    assert await kernel.sync_once() == {"notes": None}
    await kernel.close_stores()
    await kernel.close_embedder()

    config = tmp_path / "passageway.toml"
    other_items = tmp_path / "other.json"
    other_items.write_text("[]")
    config.write_text(config.read_text().replace('name = "notes"', 'name = "other"')
                      .replace(str(tmp_path / "items.json"), str(other_items)))
    kernel = make_kernel(environ)
    await kernel.start_embedder()
    await kernel.open_stores()
    try:
        assert await kernel.sync_once() == {"other": None}
        report = kernel.health(include_errors=True)
        assert report["sources"]["notes"] == {"state": "ok", "items": 4, "passages": report["sources"]
                                              ["notes"]["passages"], "removed": True}
        assert report["status"] == "ok"
        answer = await kernel.recall("how does a refracting telescope gather starlight with a lens?")
        assert [(hit.source, hit.item_id) for hit in answer.hits][:1] == [("notes", "telescope")]
    finally:
        await kernel.close_stores()
        await kernel.close_embedder()
    (tmp_path / "data" / "notes.db").unlink()
    kernel = make_kernel(environ)
    await kernel.start_embedder()
    await kernel.open_stores()
    assert set(kernel.sources) == {"other"}
    await kernel.close_stores()
    await kernel.close_embedder()


def test_an_unknown_key_in_the_embedder_table_breaks_the_kernel_at_once(tmp_path):
    """The kind checks its own keys when the kernel is made, like any other mistake in the file."""
    environ = write_instance(tmp_path, config='[embedder]\nmodle = "multilingual-e5-small-q4"\n')
    settings = load_settings(environ)
    kernel = Kernel.create(settings, environ=environ)
    assert kernel.config_error is not None and "unknown key 'modle' in [embedder]" in kernel.config_error
    assert kernel.health(include_errors=False)["status"] == "error"


async def test_what_eval_varies_is_an_argument_of_the_kernel(tmp_path):
    """``wrap_embedder`` wraps the embedder the settings build, ``vector_cache_folder`` holds the
    cache of vectors instead of the data folder, ``chunk_cap`` reaches every source's sync."""
    environ = write_instance(tmp_path)
    wrapped = []

    def wrap(embedder):  # type: ignore[no-untyped-def]
        wrapped.append(embedder)
        return embedder

    cache_folder = tmp_path / "shared-cache"
    async with Kernel.open(load_settings(environ), make_kernel(environ).manager, environ,
                           wrap_embedder=wrap, vector_cache_folder=cache_folder, chunk_cap=300) as kernel:
        assert wrapped == [kernel.embedder]
        assert await kernel.sync_once() == {"notes": None}
        assert kernel.sources["notes"].sync.cap == 300  # type: ignore[union-attr]
    assert list(cache_folder.glob("vectors/*.db"))
    assert not list((tmp_path / "data").glob("vectors/*.db"))


def test_a_private_folder_makes_its_missing_parents_private_too(tmp_path):
    """The data folder made on the way to the model folder is 700 at once: no repair, no warning."""
    import os

    from passageway.kernel.data_folder import private_folder, secure_data_folder

    old_umask = os.umask(0o022)
    try:
        private_folder(tmp_path / "share" / "passageway" / "models" / "one")
        private_folder(tmp_path / "share" / "passageway" / "models" / "one")  # exists: kept
    finally:
        os.umask(old_umask)
    assert set(modes_under(tmp_path / "share").values()) == {0o700}
    assert secure_data_folder(tmp_path / "share" / "passageway") == 0


async def test_a_store_that_knows_its_database_is_away_fails_its_source_in_health_at_once(tmp_path):
    # Issue 38.7: the syncing replica said indexing for 28-56 s of a PostgreSQL outage.
    environ = write_instance(tmp_path)
    async with Kernel.open(load_settings(environ), make_kernel(environ).manager, environ) as kernel:
        await kernel.sync_once()
        [source] = kernel.sources.values()
        source.store.unreachable = "source 'notes': no connection to PostgreSQL within 10 s"  # type: ignore[union-attr]
        report = kernel.health(include_errors=True)
        assert report["status"] == "degraded"
        [entry] = report["sources"].values()
        assert entry["state"] == "failing" and "PostgreSQL" in entry["error"]
        assert "PostgreSQL" not in str(kernel.health(include_errors=False))
        source.store.unreachable = None  # type: ignore[union-attr]
        assert kernel.health(include_errors=True)["status"] == "ok"

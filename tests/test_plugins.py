"""The plugin manager: builtins, entry points, allow/block lists, clashes and hook validation."""

from __future__ import annotations

import contextlib
import sys
import types
from importlib import metadata

import pytest

from passageway import hookimpl
from passageway.kernel import cli, hookspecs
from passageway.kernel.errors import PluginError
from passageway.kernel.plugins import (
    BUILTIN_PLUGINS,
    build_plugin_manager,
    collect_registries,
    describe_plugins,
)


def spec_names() -> set[str]:
    return {name for name in dir(hookspecs) if name.startswith("passageway_")}


class RankerPlugin:
    @hookimpl
    def passageway_register_rankers(self, register):
        register("reverse", lambda: "a ranker")


class MisspeltPlugin:
    @hookimpl
    def passageway_register_rankrs(self, register):  # the typo is the point
        register("x", object)


def test_builtins_are_registered_under_their_short_names():
    manager = build_plugin_manager(env={}, load_entry_points=False)
    names = {name for name, plugin in manager.list_name_plugin() if plugin is not None}
    assert names == {dotted.rsplit(".", 1)[1] for dotted in BUILTIN_PLUGINS}


def test_each_call_builds_a_fresh_manager():
    first = build_plugin_manager(env={}, load_entry_points=False)
    second = build_plugin_manager(env={}, load_entry_points=False, extra=(("mine", RankerPlugin()),))
    assert first.get_plugin("mine") is None
    assert second.get_plugin("mine") is not None


def test_registration_hooks_fill_the_registries_with_their_owner():
    manager = build_plugin_manager(env={}, load_entry_points=False, extra=(("mine", RankerPlugin()),))
    registries = collect_registries(manager)
    assert registries.rankers.get("reverse")() == "a ranker"
    assert registries.rankers.owners["reverse"] == "mine"


def test_a_name_registered_twice_names_both_plugins():
    manager = build_plugin_manager(
        env={}, load_entry_points=False, extra=(("first", RankerPlugin()), ("second", RankerPlugin()))
    )
    with pytest.raises(PluginError) as caught:
        collect_registries(manager)
    assert "'first'" in str(caught.value) and "'second'" in str(caught.value)
    assert "reverse" in str(caught.value)


def test_a_plugin_name_used_twice_fails_naming_both():
    with pytest.raises(PluginError) as caught:
        build_plugin_manager(env={}, load_entry_points=False, extra=(("ranking", RankerPlugin()),))
    message = str(caught.value)
    assert "passageway.builtin.ranking" in message and "plugin ranking" in message


def test_a_misspelt_hook_fails_at_startup_with_the_plugin_name():
    with pytest.raises(PluginError) as caught:
        build_plugin_manager(env={}, load_entry_points=False, extra=(("typo", MisspeltPlugin()),))
    assert "typo" in str(caught.value)
    assert "passageway_register_rankrs" in str(caught.value)


def test_an_unknown_registry_name_lists_the_known_ones():
    manager = build_plugin_manager(env={}, load_entry_points=False, extra=(("mine", RankerPlugin()),))
    registries = collect_registries(manager)
    with pytest.raises(PluginError, match=r"known: .*reverse"):
        registries.rankers.get("nope")


def test_disable_plugins_skips_a_builtin():
    manager = build_plugin_manager(env={"PASSAGEWAY_DISABLE_PLUGINS": "ranking, transport"},
                                   load_entry_points=False)
    assert manager.get_plugin("ranking") is None
    assert manager.get_plugin("transport") is None
    assert manager.get_plugin("storage") is not None


# ---------------------------------------------------------------------------------------------
# Entry points, through a fake distribution on sys.path
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def entry_point_plugins(tmp_path, monkeypatch):
    """Install two entry-point plugins (``good`` and ``broken``) for the length of one test."""
    module = types.ModuleType("pw_test_plugin")
    module.passageway_register_rankers = hookimpl(lambda register: register("from-entry-point", object))
    monkeypatch.setitem(sys.modules, "pw_test_plugin", module)
    dist_info = tmp_path / "pw_test_plugin-1.2.3.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: pw-test-plugin\nVersion: 1.2.3\n")
    (dist_info / "entry_points.txt").write_text(
        "[passageway]\ngood = pw_test_plugin\nbroken = pw_missing_module_for_tests\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    metadata.distributions.cache_clear() if hasattr(metadata.distributions, "cache_clear") else None
    return tmp_path


def test_an_entry_point_that_cannot_load_names_itself_and_the_fix(entry_point_plugins):
    with pytest.raises(PluginError) as caught:
        build_plugin_manager(env={})
    message = str(caught.value)
    assert "'broken'" in message and "PASSAGEWAY_DISABLE_PLUGINS=broken" in message


def test_load_plugins_allowlist_picks_entry_points(entry_point_plugins):
    manager = build_plugin_manager(env={"PASSAGEWAY_LOAD_PLUGINS": "good"})
    assert manager.get_plugin("good") is not None
    assert manager.get_plugin("broken") is None
    registries = collect_registries(manager)
    assert registries.rankers.owners["from-entry-point"] == "good"
    described = {plugin.name: plugin for plugin in describe_plugins(manager)}
    assert described["good"].version == "1.2.3"
    assert described["good"].origin == "pw-test-plugin"
    assert described["good"].hooks == ("passageway_register_rankers",)


def test_disable_plugins_blocks_an_entry_point(entry_point_plugins):
    manager = build_plugin_manager(env={"PASSAGEWAY_DISABLE_PLUGINS": "broken"})
    assert manager.get_plugin("good") is not None


def test_an_empty_allowlist_loads_no_entry_point(entry_point_plugins):
    manager = build_plugin_manager(env={"PASSAGEWAY_LOAD_PLUGINS": ""})
    assert manager.get_plugin("good") is None and manager.get_plugin("broken") is None


# ---------------------------------------------------------------------------------------------
# The `passageway plugins` command and the hook reference
# ---------------------------------------------------------------------------------------------


def test_plugins_command_lists_the_builtins_with_hooks(capsys, monkeypatch):
    monkeypatch.setenv("PASSAGEWAY_LOAD_PLUGINS", "")
    assert cli.main(["plugins"]) == 0
    output = capsys.readouterr().out
    for dotted in BUILTIN_PLUGINS:
        assert dotted.rsplit(".", 1)[1] in output
    assert "builtin" in output


def test_plugins_command_refuses_an_instance_that_does_not_exist(capsys, monkeypatch, tmp_path):
    # Found by the hostile probe (issue 22): `--instance wrong plugins` ran as if all were well.
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PASSAGEWAY_LOAD_PLUGINS", "")
    monkeypatch.delenv("PASSAGEWAY_INSTANCE", raising=False)
    assert cli.main(["--instance", "wrong", "plugins"]) != 0
    assert "there is no instance 'wrong'" in capsys.readouterr().err
    (tmp_path / ".config" / "passageway-work").mkdir(parents=True)
    assert cli.main(["--instance", "work", "plugins"]) == 0


def test_every_hook_spec_is_documented_in_the_reference():
    for name in spec_names():
        spec = getattr(hookspecs, name)
        doc = spec.__doc__ or ""
        assert "Called" in doc and ":param" in doc and ":returns:" in doc, name


def test_every_hook_is_implemented_by_a_builtin():
    """A new hook spec needs a default implementation (and with it, a test)."""
    manager = build_plugin_manager(env={}, load_entry_points=False)
    implemented = set()
    for dotted in BUILTIN_PLUGINS:
        plugin = manager.get_plugin(dotted.rsplit(".", 1)[1])
        implemented |= {caller.name for caller in manager.get_hookcallers(plugin) or ()}
    assert implemented == spec_names()


class _HelloCommand:
    """A plugin's subcommand: ``passageway hello NAME``."""

    HELP = "say hello"

    @staticmethod
    def add_arguments(parser):
        parser.add_argument("who")

    @staticmethod
    def run(args):
        print(f"hello {args.who} (instance {args.instance})")
        return 3


class _HelloPlugin:
    @hookimpl
    def passageway_register_commands(self, register):
        register("hello", _HelloCommand)


class _ServePlugin:
    @hookimpl
    def passageway_register_commands(self, register):
        register("serve", _HelloCommand)


def _with_plugin(monkeypatch, plugin):
    """``cli.main`` builds its managers with ``plugin`` registered as well (no entry points)."""
    from passageway.kernel import plugins as plugins_module

    real = plugins_module.build_plugin_manager

    def build(env=None, **options):
        return real({}, extra=(("hello", plugin),), load_entry_points=False)

    monkeypatch.setattr(plugins_module, "build_plugin_manager", build)


def test_a_plugin_registers_a_command_that_the_command_line_runs(monkeypatch, capsys, tmp_path):
    _with_plugin(monkeypatch, _HelloPlugin())
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cli.main(["hello", "world"]) == 3
    assert capsys.readouterr().out == "hello world (instance None)\n"
    assert "hello" in cli.build_parser()[1]
    assert "say hello" in _help(capsys)


def test_the_builtin_commands_come_from_their_plugins(monkeypatch):
    monkeypatch.setenv("PASSAGEWAY_LOAD_PLUGINS", "")
    assert {"model", "mcp"} <= cli.build_parser()[1]
    assert "index" not in cli.build_parser()[1]  # passageway-passage-index is an entry point now
    monkeypatch.setenv("PASSAGEWAY_LOAD_PLUGINS", "passage_index")
    assert "index" in cli.build_parser()[1]
    assert not {"model", "mcp", "index"} & cli.build_parser(plugin_commands=False)[1]
    monkeypatch.setenv("PASSAGEWAY_DISABLE_PLUGINS", "embedders")
    assert "model" not in cli.build_parser()[1]


def test_a_plugin_command_may_not_take_a_kernel_commands_name(monkeypatch, capsys):
    _with_plugin(monkeypatch, _ServePlugin())
    assert cli.main(["--help"]) != 0
    assert "registers the command 'serve', which is one of passageway's own" in capsys.readouterr().err


def _help(capsys) -> str:
    with contextlib.suppress(SystemExit):
        cli.main(["--help"])
    return capsys.readouterr().out

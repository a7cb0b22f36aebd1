"""Building the plugin manager and the registries the stages fill.

:func:`build_plugin_manager` returns a fresh manager every time (no global), so tests get
isolated managers. It registers :data:`BUILTIN_PLUGINS`, then the ``passageway`` entry points,
then checks that every implemented hook exists.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from importlib import metadata
from typing import Any

import attrs
import pluggy

from passageway import PROJECT, __version__
from passageway.kernel import hookspecs
from passageway.kernel.errors import PluginError

ENTRY_POINT_GROUP = "passageway"

BUILTIN_PLUGINS: tuple[str, ...] = (
    "passageway.builtin.storage",
    "passageway.builtin.embedders",
    "passageway.builtin.ranking",
    "passageway.builtin.transport",
    "passageway.builtin.eval",
)
"""What ships: each module is one plugin, registered under its last dotted name part."""


class PluginManager(pluggy.PluginManager):
    """pluggy's manager, remembering which distribution each entry-point plugin came from."""

    def __init__(self) -> None:
        super().__init__(PROJECT)
        self.distributions: dict[str, metadata.Distribution] = {}


def _names(value: str | None) -> set[str] | None:
    if value is None:
        return None
    return {name.strip() for name in value.split(",") if name.strip()}


def build_plugin_manager(
    env: Mapping[str, str] | None = None,
    *,
    builtins: tuple[str, ...] = BUILTIN_PLUGINS,
    extra: tuple[tuple[str, object], ...] = (),
    load_entry_points: bool = True,
) -> PluginManager:
    """A new plugin manager with the builtins, ``extra`` plugins and the entry-point plugins.

    ``PASSAGEWAY_LOAD_PLUGINS`` (comma-separated entry-point names) loads only those entry points;
    set to an empty string it loads none. ``PASSAGEWAY_DISABLE_PLUGINS`` (comma-separated plugin
    names) skips builtins or entry points by name, for example ``ranking`` to replace the default
    rankers with a plugin's. ``extra`` is for tests: ``(name, plugin)`` pairs registered after the
    builtins.

    :raises PluginError: a plugin cannot be imported, two plugins share a name, or a plugin
        implements a hook that does not exist.
    """
    env = os.environ if env is None else env
    allow = _names(env.get("PASSAGEWAY_LOAD_PLUGINS"))
    block = _names(env.get("PASSAGEWAY_DISABLE_PLUGINS")) or set()

    manager = PluginManager()
    manager.add_hookspecs(hookspecs)

    for dotted in builtins:
        name = dotted.rsplit(".", 1)[-1]
        if name in block:
            continue
        _register(manager, importlib.import_module(dotted), name, origin=f"builtin {dotted}")
    for name, plugin in extra:
        _register(manager, plugin, name, origin=f"plugin {name}")
    if load_entry_points:
        _load_entry_points(manager, allow, block)

    try:
        manager.check_pending()
    except pluggy.PluginValidationError as error:
        plugin_name = manager.get_name(error.plugin) or repr(error.plugin)
        unknown = sorted(
            caller.name
            for caller in vars(manager.hook).values()
            if isinstance(caller, pluggy.HookCaller) and caller.spec is None
            and any(impl.plugin is error.plugin and not impl.optionalhook for impl in caller.get_hookimpls())
        )
        raise PluginError(
            f"plugin {plugin_name!r} implements {', '.join(unknown) or 'a hook'}, which is not a "
            "passageway hook. Check the spelling against the hook reference (docs/plugins.md)."
        ) from None
    return manager


def _register(manager: pluggy.PluginManager, plugin: object, name: str, origin: str) -> None:
    existing = manager.get_plugin(name)
    if existing is not None:
        raise PluginError(
            f"two plugins are named {name!r}: {_origin_of(existing)} and {origin}. "
            f"Rename one entry point, or disable one with PASSAGEWAY_DISABLE_PLUGINS={name}."
        )
    try:
        manager.register(plugin, name=name)
    except pluggy.PluginValidationError as error:
        raise PluginError(f"{origin} is not a valid passageway plugin: {error}") from None


def _origin_of(plugin: object) -> str:
    module = getattr(plugin, "__name__", None) or type(plugin).__module__
    return f"plugin from {module}"


def _load_entry_points(manager: PluginManager, allow: set[str] | None, block: set[str]) -> None:
    for entry_point in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if entry_point.name in block or (allow is not None and entry_point.name not in allow):
            continue
        distribution = getattr(entry_point, "dist", None)
        origin = f"entry point {entry_point.name!r} ({entry_point.value}"
        origin += f", from {distribution.name})" if distribution else ")"
        try:
            plugin = entry_point.load()
        except Exception as error:  # any import failure of third-party code is the plugin's
            raise PluginError(
                f"{origin} cannot be loaded: {type(error).__name__}: {error}. "
                f"Fix or uninstall it, or set PASSAGEWAY_DISABLE_PLUGINS={entry_point.name}."
            ) from None
        _register(manager, plugin, entry_point.name, origin)
        if distribution is not None:
            manager.distributions[entry_point.name] = distribution


# ---------------------------------------------------------------------------------------------
# Registries
# ---------------------------------------------------------------------------------------------


@attrs.define
class Registry:
    """Named factories of one kind (stores, embedder kinds, rankers or commands), each with its plugin."""

    kind: str
    factories: dict[str, Any] = attrs.field(factory=dict)
    owners: dict[str, str] = attrs.field(factory=dict)

    def add(self, name: str, factory: Any, owner: str) -> None:
        if name in self.factories:
            raise PluginError(
                f"the {self.kind} {name!r} is registered twice: by plugin {self.owners[name]!r} "
                f"and by plugin {owner!r}. Disable one with PASSAGEWAY_DISABLE_PLUGINS."
            )
        self.factories[name] = factory
        self.owners[name] = owner

    def get(self, name: str) -> Any:
        try:
            return self.factories[name]
        except KeyError:
            known = ", ".join(sorted(self.factories)) or "none"
            raise PluginError(f"no {self.kind} named {name!r} is registered (known: {known})") from None

    def names(self) -> list[str]:
        return sorted(self.factories)


@attrs.frozen
class Registries:
    """What the registration hooks handed over."""

    stores: Registry
    embedders: Registry
    rankers: Registry
    commands: Registry


def collect_registries(manager: pluggy.PluginManager) -> Registries:
    """Call every registration hook, one implementation at a time, and keep who registered what."""
    registries = Registries(
        Registry("store"), Registry("embedder kind"), Registry("ranker"), Registry("command")
    )
    hooks = (
        (manager.hook.passageway_register_stores, registries.stores),
        (manager.hook.passageway_register_embedders, registries.embedders),
        (manager.hook.passageway_register_rankers, registries.rankers),
        (manager.hook.passageway_register_commands, registries.commands),
    )
    for caller, registry in hooks:
        for implementation in caller.get_hookimpls():
            owner = implementation.plugin_name

            def register(
                name: str, factory: Any, _registry: Registry = registry, _owner: str = owner
            ) -> None:
                _registry.add(name, factory, _owner)

            implementation.function(register=register)
    return registries


# ---------------------------------------------------------------------------------------------
# Describing what is loaded (`passageway plugins`)
# ---------------------------------------------------------------------------------------------


@attrs.frozen
class PluginInfo:
    name: str
    version: str
    origin: str
    hooks: tuple[str, ...]


def describe_plugins(manager: PluginManager) -> list[PluginInfo]:
    """Each loaded plugin with its version (its distribution's, or passageway's for builtins)."""
    described = []
    for name, plugin in manager.list_name_plugin():
        if plugin is None:
            continue
        dist = manager.distributions.get(name)
        if dist is not None:
            version, origin = dist.version, dist.metadata["Name"]
        else:
            module = getattr(plugin, "__name__", type(plugin).__module__)
            version = __version__
            origin = "builtin" if module.startswith("passageway.builtin") else module
        hooks = tuple(sorted(caller.name for caller in manager.get_hookcallers(plugin) or ()))
        described.append(PluginInfo(name, version, origin, hooks))
    return described

"""``passageway plugins``: what is loaded, in which version, implementing which hooks."""

from __future__ import annotations

import argparse
import json
import os

NAME = "plugins"
HELP = "list the loaded plugins with their versions and the hooks each implements"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def run(args: argparse.Namespace) -> int:
    from passageway.kernel.plugins import build_plugin_manager, collect_registries, describe_plugins

    if getattr(args, "instance", None) or os.environ.get("PASSAGEWAY_INSTANCE"):
        # The plugins do not depend on the instance, but a misspelt name must not pass unnoticed.
        from passageway.kernel.instances import resolve_instance

        resolve_instance(getattr(args, "instance", None), os.environ)
    manager = build_plugin_manager()
    registries = collect_registries(manager)
    plugins = describe_plugins(manager)
    if args.json:
        print(json.dumps({
            "plugins": [
                {"name": p.name, "version": p.version, "origin": p.origin, "hooks": list(p.hooks)}
                for p in plugins
            ],
            "stores": registries.stores.names(),
            "embedder_kinds": registries.embedders.names(),
            "rankers": registries.rankers.names(),
        }, indent=2))
        return 0
    width = max((len(p.name) for p in plugins), default=4)
    for plugin in plugins:
        hooks = ", ".join(plugin.hooks) or "(no hooks)"
        print(f"{plugin.name:<{width}}  {plugin.version:<8}  {plugin.origin:<10}  {hooks}")
    print()
    print(f"stores: {', '.join(registries.stores.names()) or 'none'}")
    print(f"embedder kinds: {', '.join(registries.embedders.names()) or 'none'}")
    print(f"rankers: {', '.join(registries.rankers.names()) or 'none'}")
    return 0

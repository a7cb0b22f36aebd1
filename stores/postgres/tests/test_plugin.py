"""The package as a plugin: its entry point, its [store] settings, `passageway plugins`, docs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from passageway_store_postgres.plugin import SETTINGS, postgres_store, store_settings
from passageway_store_postgres.store import PostgresStore

from passageway.kernel.config import parse_config_text
from passageway.kernel.errors import ConfigError
from passageway.kernel.plugins import build_plugin_manager, collect_registries, describe_plugins
from passageway.kernel.store import StoreContext

ROOT = Path(__file__).resolve().parents[3]
ENV = {"PG_DSN": "postgresql://user:secret-password@db.example/passageway"}


def test_the_entry_point_registers_the_postgres_store():
    manager = build_plugin_manager({"PASSAGEWAY_LOAD_PLUGINS": "postgres"})
    assert manager.distributions["postgres"].metadata["Name"] == "passageway-store-postgres"
    described = {plugin.name: plugin for plugin in describe_plugins(manager)}
    assert described["postgres"].origin == "passageway-store-postgres"
    assert described["postgres"].hooks == ("passageway_register_stores",)
    registries = collect_registries(manager)
    assert registries.stores.names() == ["postgres", "sqlite"]
    assert registries.stores.owners["postgres"] == "postgres"


def test_passageway_plugins_lists_the_package_with_its_hook():
    listing = subprocess.run([str(Path(sys.executable).parent / "passageway"), "plugins", "--json"],
                             capture_output=True, text=True, timeout=120, check=True,
                             env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT)})
    reported = json.loads(listing.stdout)
    (plugin,) = [entry for entry in reported["plugins"] if entry["name"] == "postgres"]
    assert plugin["origin"] == "passageway-store-postgres"
    assert plugin["hooks"] == ["passageway_register_stores"]
    assert "postgres" in reported["stores"]


def test_the_store_table_reaches_the_factory():
    settings = parse_config_text('[store]\ndsn = "env:PG_DSN"\nschema = "shared_index"\npool_size = 2\n')
    store = postgres_store(Path("unused.db"), "notes", StoreContext(settings.store, ENV))
    assert isinstance(store, PostgresStore)
    assert (store.source, store.schema_name, store._pool_size) == ("notes", "shared_index", 2)
    assert store._dsn == ENV["PG_DSN"]


def test_defaults():
    assert store_settings({"dsn": "env:PG_DSN"}, ENV) == (ENV["PG_DSN"], "passageway", 4)


@pytest.mark.parametrize(("settings", "fragment"), [
    ({"dsn": "env:PG_DSN", "pool": 3}, "unknown key 'pool'"),
    ({}, "`dsn` is required"),
    ({"dsn": "postgresql://user:secret-password@db/x"}, "env:NAME"),
    ({"dsn": "env:MISSING"}, "MISSING, which is not set"),
    ({"dsn": "env:PG_DSN", "schema": "Bad-Name"}, "`schema`"),
    ({"dsn": "env:PG_DSN", "pool_size": 0}, "`pool_size`"),
    ({"dsn": "env:PG_DSN", "pool_size": True}, "`pool_size`"),
])
def test_wrong_settings_name_the_key_and_never_the_dsn(settings, fragment):
    with pytest.raises(ConfigError, match=re.escape(fragment)) as raised:
        store_settings(settings, ENV)
    assert "secret-password" not in str(raised.value)


def test_the_sqlite_store_refuses_store_settings():
    registries = collect_registries(build_plugin_manager({}, load_entry_points=False))
    with pytest.raises(ConfigError, match="sqlite store takes no settings"):
        registries.stores.get("sqlite")(Path("x.db"), "x", StoreContext({"dsn": "env:PG_DSN"}, ENV))


def test_a_store_table_must_hold_plain_values():
    with pytest.raises(ConfigError, match=r"\[store\]: `dsn` must be"):
        parse_config_text("[store]\ndsn = [1, 2]\n")


@pytest.mark.parametrize("key", sorted(SETTINGS))
def test_every_setting_is_documented(key):
    assert f"| `{key}` |" in (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert f"`{key}`" in (ROOT / "stores" / "postgres" / "README.md").read_text(encoding="utf-8")


def test_a_source_name_too_long_for_a_table_is_a_store_error():
    from passageway.kernel.errors import StoreError

    with pytest.raises(StoreError, match="too long"):
        PostgresStore("postgresql:///x", "s" * 60)

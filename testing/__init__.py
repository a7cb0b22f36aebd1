"""Helpers for testing connectors, embedders and plugins against passageway.

The tests of a plugin, a connector or an embedder program import from here (the names are looked
up on first use, :data:`PUBLIC`, so that ``python -m passageway.testing.fake_connector`` stays
cheap)::

    from passageway.testing import CommandEmbedder, check_embedder, check_connector

- ``Connector``, ``check_connector``, ``check_connector_async``, ``run_contract``: the connector
  contract check.
- ``serve``, ``run_connector``, ``CallResult``, ``record``, ``echo_authorization``: serve an
  in-test fake of a source's HTTP API and run a connector call against it.
- ``fake_connector_command``: a connector that serves the items of ``FAKE_ITEMS``.
- ``check_embedder``: the embedder contract check; ``CommandEmbedder``: the kernel's client of the
  embedder protocol, to run an embedder program; ``BlockingEmbedder``: an async embedder driven
  from plain code; ``ToyEmbedder``, ``toy_plugin``: a fast, deterministic in-process embedder;
  ``toy_cli``: run ``passageway`` commands in-process with it (``[embedder] kind = "toy"``).
- ``passageway.testing.store_contract``: the store contract tests, for any store plugin (import
  them into a test module); ``DIM``, ``doc``, ``update_for``, ``question_vector`` build its data.
- ``link_converted_model``: the built-in model's conversion made once per test session and
  hard-linked into a test's fresh home, where a first start would convert it again.
"""

from __future__ import annotations

from typing import Any

PUBLIC: dict[str, tuple[str, str]] = {
    "Connector": ("passageway.testing.contract", "Connector"),
    "check_connector": ("passageway.testing.contract", "check_connector"),
    "run_contract": ("passageway.testing.contract", "run_contract"),
    "check_connector_async": ("passageway.testing.contract", "check_connector_async"),
    "serve": ("passageway.testing.fake_server", "serve"),
    "run_connector": ("passageway.testing.fake_server", "run_connector"),
    "CallResult": ("passageway.testing.fake_server", "CallResult"),
    "record": ("passageway.testing.fake_server", "record"),
    "echo_authorization": ("passageway.testing.fake_server", "echo_authorization"),
    "fake_connector_command": ("passageway.testing.fake_connector", "command"),
    "check_embedder": ("passageway.testing.embedder_contract", "check_embedder"),
    "CommandEmbedder": ("passageway.builtin.embedders.embed_command", "CommandEmbedder"),
    "BlockingEmbedder": ("passageway.testing.blocking", "BlockingEmbedder"),
    "ToyEmbedder": ("passageway.testing.toy_embedder", "ToyEmbedder"),
    "MemoryVectorCache": ("passageway.testing.memory_cache", "MemoryVectorCache"),
    "toy_plugin": ("passageway.testing.toy_embedder", "plugin"),
    "toy_cli": ("passageway.testing.toy_embedder", "toy_cli"),
    "DIM": ("passageway.testing.store_contract", "DIM"),
    "doc": ("passageway.testing.store_contract", "doc"),
    "update_for": ("passageway.testing.store_contract", "update_for"),
    "question_vector": ("passageway.testing.store_contract", "question_vector"),
    "link_converted_model": ("passageway.testing.converted_model", "link_converted_model"),
}
"""Each public name and where it is defined: ``(module, name there)``."""

__all__ = sorted(PUBLIC)


def __getattr__(name: str) -> Any:
    if name in PUBLIC:
        import importlib

        module, attribute = PUBLIC[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'passageway.testing' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)

"""Helpers for testing connectors, embedders and plugins against passageway.

- ``passageway.testing.contract.check_connector``: the connector contract check.
- ``passageway.testing.fake_connector``: a connector that serves the items of ``FAKE_ITEMS``.
- ``passageway.testing.fake_server``: serve an in-test fake of a source's HTTP API, run a connector call.
- ``passageway.testing.embedder_contract.check_embedder``: the embedder contract check.
- ``passageway.testing.toy_embedder``: a fast, deterministic in-process embedder for tests.
- ``passageway.testing.blocking.BlockingEmbedder``: an async embedder driven from plain code.
- ``passageway.testing.store_contract``: the store contract tests, for any store plugin.
"""

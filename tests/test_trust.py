"""Every HTTPS client checks certificates against the operating system's trust store (ADR 0006).

The list below is every module that makes outgoing HTTP requests; a new one must join it, and the
scan fails when a module starts making requests without being listed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

HTTPS_CLIENTS = (
    "builtin/embedders/model_files.py",
    "kernel/commands/instance.py",
    "connectors/wikipedia/passageway_connector_wikipedia/api.py",
    "connectors/trilium/passageway_connector_trilium/etapi.py",
    "connectors/confluence/passageway_connector_confluence/rest.py",
    "embedders/openai/passageway_embedder_openai/client.py",
)
OPENER_BUILDERS = ("sdk/passageway_sdk/http.py",)
"""Modules that build a ``urllib`` opener from their caller's handlers (TLS included) and make no
request themselves: the SDK's same-origin opener, which the Trilium and Confluence clients use."""
REQUESTS = re.compile(
    r"urlopen\(|HTTPSConnection\(|build_opener\(|ClientSession\(|httpx\.(?:get|post|Client|AsyncClient)\("
)


def shipped_python_files() -> list[Path]:
    folders = ["kernel", "builtin", "passageway", "sdk", "connectors", "embedders"]
    files = []
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT).parts
            if "tests" in parts or path.is_symlink() or ".venv" in parts:
                continue
            files.append(path)
    return files


@pytest.mark.parametrize("client", HTTPS_CLIENTS)
def test_each_client_uses_truststore(client):
    source = (ROOT / client).read_text(encoding="utf-8")
    assert "truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)" in source


@pytest.mark.parametrize("builder", OPENER_BUILDERS)
def test_an_opener_builder_makes_no_tls_context_and_no_request_of_its_own(builder):
    source = (ROOT / builder).read_text(encoding="utf-8")
    assert "SSLContext" not in source and "urlopen(" not in source and "HTTPSHandler" not in source


def test_no_unlisted_module_makes_requests():
    listed = {ROOT / client for client in (*HTTPS_CLIENTS, *OPENER_BUILDERS)}
    unlisted = [
        path.relative_to(ROOT).as_posix()
        for path in shipped_python_files()
        if path.resolve() not in {p.resolve() for p in listed} and REQUESTS.search(path.read_text("utf-8"))
    ]
    assert not unlisted, f"these modules make HTTP requests without being in HTTPS_CLIENTS: {unlisted}"

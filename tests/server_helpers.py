"""Helpers for the server, MCP, hook and auth tests: a small source served by the real fake
connector, the toy embedder, and a live server on 127.0.0.1 at a random port."""

from __future__ import annotations

import contextlib
import json
import random
import socket
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from aiohttp import web

from passageway.kernel.app import Kernel
from passageway.kernel.config import load_settings
from passageway.kernel.plugins import build_plugin_manager
from passageway.kernel.server import build_app
from passageway.testing.toy_embedder import plugin as toy_plugin

PASSWORD = "correct-horse-battery-staple-7f3a"

ITEMS: list[dict[str, Any]] = [
    {
        "id": "rhine",
        "title": "Rhine river",
        "url": "https://example.test/rhine",
        "version": "1",
        "path": ["Geography", "Rivers"],
        "labels": ["water"],
        "sections": [
            {"heading": "Course", "text": "The Rhine river rises in the Swiss Alps and flows north through "
                                          "Basel, along the border of Germany and France, to the North Sea "
                                          "near Rotterdam."},
        ],
    },
    {
        "id": "telescope",
        "title": "Refracting telescope",
        "url": "https://example.test/telescope",
        "version": "1",
        "path": ["Astronomy", "Instruments"],
        "sections": [
            {"heading": "Lenses", "text": "A refracting telescope gathers starlight with an objective lens "
                                          "and magnifies the image with an eyepiece lens."},
        ],
    },
    {
        "id": "sourdough",
        "title": "Sourdough bread",
        "url": "https://example.test/sourdough",
        "version": "1",
        "path": ["Kitchen", "Baking"],
        "labels": ["recipes"],
        "sections": [
            {"heading": "Starter", "text": "A sourdough starter of flour and water ferments with wild yeast "
                                           "and lactic acid bacteria before the bread dough rises."},
        ],
    },
    {
        "id": "rye",
        "title": "Rye bread",
        "url": "https://example.test/rye",
        "version": "1",
        "path": ["Kitchen", "Baking"],
        "labels": ["passageway-project"],
        "sections": [
            {"heading": "Dough", "text": "Rye bread dough with a sourdough starter ferments with wild yeast "
                                         "and rises slowly before baking."},
        ],
    },
]


def write_instance(tmp_path: Path, *, items: list[dict[str, Any]] | None = None,
                   extra_env: Mapping[str, str] | None = None,
                   config: str | None = None, fail: str = "", sleep: str = "") -> dict[str, str]:
    """A config, an items file and the environment for one instance under ``tmp_path``."""
    items_path = tmp_path / "items.json"
    items_path.write_text(json.dumps(ITEMS if items is None else items), encoding="utf-8")
    config_path = tmp_path / "passageway.toml"
    if config is None:
        env_table = f'FAKE_ITEMS = {json.dumps(str(items_path))}'
        if fail:
            env_table += f', FAKE_FAIL = "{fail}"'
        if sleep:
            env_table += f', FAKE_SLEEP = "{sleep}"'
        config = (
            '[embedder]\nkind = "toy"\n\n'
            '[[connector]]\nname = "notes"\n'
            f'command = [{json.dumps(sys.executable)}, "-m", "passageway.testing.fake_connector"]\n'
            f"env = {{ {env_table} }}\n"
            "timeout = 30\n"
        )
    config_path.write_text(config, encoding="utf-8")
    environ = {
        "HOME": str(tmp_path / "home"),
        "PATH": "/usr/bin:/bin",
        "PASSAGEWAY_CONFIG": str(config_path),
        "PASSAGEWAY_DATA_DIR": str(tmp_path / "data"),
        "PASSAGEWAY_LOGIN_PASSWORD": PASSWORD,
        "PASSAGEWAY_LOAD_PLUGINS": "",
        "PASSAGEWAY_POLL_SECONDS": "3600",
        "PASSAGEWAY_RECONCILE_SECONDS": "7200",
    }
    environ.update(extra_env or {})
    return environ


def make_kernel(environ: Mapping[str, str]) -> Kernel:
    """A kernel with the builtins and the toy embedder, not started."""
    settings = load_settings(environ)
    manager = build_plugin_manager(environ, extra=(("toy", toy_plugin),), load_entry_points=False)
    return Kernel.create(settings, manager, environ)


_PORTS = random.SystemRandom()  # not the global generator, which a test may seed


def free_port() -> int:
    """A port nobody listens on, from below the system's range for outgoing connections.

    The suite runs in parallel: a port the system hands out for ``bind(0)`` can meanwhile become
    the local end of another worker's outgoing connection (a reliability test opens thousands),
    and then the server that wanted it cannot listen. Ports from 20000 to 32767 are never given
    to outgoing connections (Linux starts that range at 32768); each call tries a random one.
    """
    for _ in range(50):
        port = _PORTS.randint(20_000, 32_767)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.asynccontextmanager
async def running_server(kernel: Kernel, *, start_sync: bool = True, port: int | None = None
                         ) -> AsyncIterator[str]:
    """Serve ``kernel`` on 127.0.0.1 at ``port`` or a free one; yields the base URL."""
    app = build_app(kernel, start_sync=start_sync)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = port or free_port()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def wait_built(kernel: Kernel, timeout: float = 120.0) -> None:
    """Wait until every source left the ``indexing`` state."""
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        states = {entry["state"] for entry in kernel.health(include_errors=True)["sources"].values()}
        if "indexing" not in states:
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"the sources did not finish building: {kernel.health(include_errors=True)}")

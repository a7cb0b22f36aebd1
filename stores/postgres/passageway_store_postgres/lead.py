"""Which server syncs a source: a PostgreSQL session advisory lock per schema and source.

The lock is held on a connection of its own, outside the pool: PostgreSQL releases it when that
connection ends, so a server that dies (or loses its network) gives the lead up, and the next
server to ask takes it. The holder's ``application_name`` carries its replica name, which
:func:`leader_of` reads from ``pg_locks``, so the answer is never stale.
"""

from __future__ import annotations

import hashlib
from typing import Any

import psycopg

LEAD_LOCK = 0x73796E63
"""The first key of every source's lock ("sync"); the second is :func:`lead_key`."""
APPLICATION_PREFIX = "passageway sync "


def lead_key(schema_name: str, source: str) -> int:
    """The lock's second key: a positive 31-bit number from the schema and source names."""
    digest = hashlib.blake2b(f"{schema_name}.{source}".encode(), digest_size=4).digest()
    return int.from_bytes(digest) & 0x7FFFFFFF


class Lead:
    """The lead of one source for this server: taken, kept and dropped (blocking calls)."""

    def __init__(self, dsn: str, key: int, connect_timeout: int) -> None:
        self._dsn = dsn
        self._key = key
        self._timeout = connect_timeout
        self._connection: psycopg.Connection[Any] | None = None

    def take(self, replica: str) -> bool:
        """Whether this server holds the lead, taking it when it is free."""
        connection = self._connection
        if connection is not None:
            try:
                connection.execute("SELECT 1")
                return True
            except psycopg.Error:  # the connection, and with it the lock, is gone: try anew
                self.drop()
        try:
            connection = psycopg.connect(self._dsn, autocommit=True, connect_timeout=self._timeout,
                                         application_name=f"{APPLICATION_PREFIX}{replica}"[:63])
        except psycopg.Error:
            return False
        row = connection.execute("SELECT pg_try_advisory_lock(%s, %s)", (LEAD_LOCK, self._key)).fetchone()
        if row is None or not row[0]:
            connection.close()
            return False
        self._connection = connection
        return True

    def drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


def leader_of(connection: psycopg.Connection[Any], key: int) -> str | None:
    """The replica name of the server holding the lead ``key`` now, or None."""
    row = connection.execute(
        "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s AND l.objid = %s "
        "AND l.objsubid = 2", (LEAD_LOCK, key)).fetchone()
    return None if row is None else str(row[0]).removeprefix(APPLICATION_PREFIX)

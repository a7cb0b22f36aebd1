"""Several servers on one shared index: exactly one of them syncs each source.

A store that several servers can open at once (the ``postgres`` plugin's) has two more methods
than :class:`passageway.Store` asks for, described by :class:`passageway.SharedStore`. For such a
store :func:`run_source` replaces the plain ``run_forever`` of the source's sync:

* the server that holds the store's lead (``lead(replica)``) runs the sync as a single server would,
  and publishes the source's health into the store's state every :data:`PUBLISH_SECONDS`;
* every other server answers ``recall`` from the same tables, copies the published health into
  its own (so ``/health`` of every replica shows the same state) and asks for the lead again every
  poll interval (at most :data:`PUBLISH_SECONDS`): when the server that synced dies, its lead ends
  with its database session and the next one to ask takes over.

A server that loses the lead while syncing (its connection dropped) stops that sync; each write is
one transaction, so what it stored stays, and the next leader's reconcile fetches the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import socket
from typing import Any

import attrs

from passageway.kernel.store import SharedStore

log = logging.getLogger("passageway.replicas")

PUBLISH_SECONDS = 5.0
"""How often the syncing server publishes a source's health, and the longest a follower waits
between two looks at it (and two tries for the lead)."""
HEALTH_KEY = "replica_health"
_numbers = itertools.count(1)


def replica_name() -> str:
    """This server's name among the replicas: host, process and a number (several kernels may
    run in one process, as in tests)."""
    return f"{socket.gethostname()}-{os.getpid()}-{next(_numbers)}"


@attrs.define
class Role:
    """What ``/health`` says about replicas for one source: this server's name and the syncing one's."""

    replica: str
    syncing: str | None = None

    def view(self) -> dict[str, Any]:
        return {"replica": self.replica, "syncing": self.syncing}


async def run_source(sync: Any, store: Any, poll_seconds: float, reconcile_seconds: float,
                     role: Role) -> None:
    """Run ``sync`` for ever: alone for a plain store, as leader or follower for a shared one."""
    if not isinstance(store, SharedStore):
        await sync.run_forever(poll_seconds, reconcile_seconds)
        return
    tick = min(poll_seconds, PUBLISH_SECONDS)
    while True:
        if await _asks_for_lead(store, role):
            await _lead(sync, store, poll_seconds, reconcile_seconds, role, tick)
        else:
            await _follow(sync, store, role)
            await asyncio.sleep(tick)


async def _asks_for_lead(store: SharedStore, role: Role) -> bool:
    try:
        leading = await store.lead(role.replica)
    except Exception as error:  # the database is away: follow, and ask again later
        log.warning("cannot ask for the sync lead: %s", error)
        return False
    if leading and role.syncing != role.replica:
        log.info("this server (%s) syncs the source now", role.replica)
    role.syncing = role.replica if leading else role.syncing
    return leading


async def _lead(sync: Any, store: SharedStore, poll_seconds: float, reconcile_seconds: float, role: Role,
                tick: float) -> None:
    """Sync while this server holds the lead, publishing health; stop when the lead is lost."""
    task = asyncio.ensure_future(sync.run_forever(poll_seconds, reconcile_seconds))
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=tick)
            await _publish(sync, store)
            if not task.done() and not await _asks_for_lead(store, role):
                log.warning("this server (%s) lost the sync lead; another server takes over", role.replica)
                role.syncing = None
                break
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
    if task.done() and not task.cancelled() and task.exception() is not None:
        raise task.exception()  # type: ignore[misc]


async def _publish(sync: Any, store: SharedStore) -> None:
    with contextlib.suppress(Exception):  # health is published again at the next tick
        await store.set_state(HEALTH_KEY, json.dumps(attrs.asdict(sync.health())))


async def _follow(sync: Any, store: SharedStore, role: Role) -> None:
    """Copy the syncing server's published health and the shared counts into this server's."""
    try:
        role.syncing = await store.leader()
        published = await store.get_state(HEALTH_KEY)
        health = sync.health()
        if published:
            for name, value in json.loads(published).items():
                if name != "source" and hasattr(health, name):
                    setattr(health, name, value)
        health.items, health.passages = await store.counts()
    except Exception as error:  # the database is away: say so until it answers again (issue 32)
        health = sync.health()
        health.state = "failing"
        health.last_error = f"the shared store cannot be read: {str(error).strip().splitlines()[0][:300]}"
        log.warning("cannot read the shared health of the source: %s", error)

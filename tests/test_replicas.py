"""kernel/index/replicas.py with stand-in stores: who syncs, what followers show, losing the lead.
(Two real servers on one PostgreSQL index: stores/postgres/tests/test_replicas.py.)"""

from __future__ import annotations

import asyncio
import json

import attrs

from passageway.kernel.index import replicas
from passageway.kernel.index.replicas import Role, run_source
from passageway.kernel.index.sync_health import SourceHealth
from passageway.kernel.store import SharedStore
from tests.waiting import until


class FakeSync:
    def __init__(self) -> None:
        self.runs = 0
        self.cancelled = False
        self._health = SourceHealth(source="notes")

    def health(self) -> SourceHealth:
        return self._health

    async def run_forever(self, poll_seconds: float, reconcile_seconds: float) -> None:
        self.runs += 1
        self._health.state, self._health.last_success = "ok", "2026-12-01T10:00:00Z"
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


class PlainStore:
    async def counts(self) -> tuple[int, int]:
        return (0, 0)


class FakeShared:
    """The database's view: one lead shared by the stores that point at it."""

    def __init__(self, board: dict[str, object], leading: bool) -> None:
        self.board = board
        self.leading = leading
        self.asked = 0  # calls of lead(): the leader asks again at each tick

    async def lead(self, replica: str) -> bool:
        self.asked += 1
        if self.leading:
            self.board["leader"] = replica
        return self.leading

    async def leader(self) -> str | None:
        return self.board.get("leader")  # type: ignore[return-value]

    async def get_state(self, key: str) -> str | None:
        return self.board.get(key)  # type: ignore[return-value]

    async def set_state(self, key: str, value: str) -> None:
        self.board[key] = value

    async def counts(self) -> tuple[int, int]:
        return (3, 7)


async def test_a_plain_store_just_syncs():
    sync = FakeSync()
    assert not isinstance(PlainStore(), SharedStore)
    task = asyncio.ensure_future(run_source(sync, PlainStore(), 0.05, 60, Role("a")))
    await until(lambda: sync.runs > 0, "the sync runs")
    for _ in range(10):  # ten loop turns: a store without a lead never starts the sync again
        await asyncio.sleep(0)
    assert sync.runs == 1
    task.cancel()


async def test_the_leader_syncs_and_publishes_and_a_follower_copies_its_health(monkeypatch):
    monkeypatch.setattr(replicas, "PUBLISH_SECONDS", 0.05)
    board: dict[str, object] = {}
    leading, following = FakeSync(), FakeSync()
    leader_role, follower_role = Role("server-a"), Role("server-b")
    follower_store = FakeShared(board, False)
    tasks = [asyncio.ensure_future(run_source(leading, FakeShared(board, True), 0.05, 60, leader_role)),
             asyncio.ensure_future(run_source(following, follower_store, 0.05, 60, follower_role))]
    # The follower copies what the leader published (ticks, not a time: a busy loop runs late).
    await until(lambda: following.health().last_success is not None, "the follower copies the health")
    asked = follower_store.asked
    await until(lambda: follower_store.asked >= asked + 2, "the follower asks for the lead twice more")
    assert (leading.runs, following.runs) == (1, 0)
    assert leader_role.view() == {"replica": "server-a", "syncing": "server-a"}
    assert follower_role.view() == {"replica": "server-b", "syncing": "server-a"}
    published = json.loads(board[replicas.HEALTH_KEY])  # type: ignore[arg-type]
    assert published["last_success"] == "2026-12-01T10:00:00Z"
    copied = following.health()
    assert (copied.state, copied.last_success, copied.items, copied.passages) == (
        "ok", "2026-12-01T10:00:00Z", 3, 7)
    assert attrs.asdict(copied)["source"] == "notes"
    for task in tasks:
        task.cancel()


async def test_a_leader_that_loses_the_lead_stops_its_sync(monkeypatch):
    monkeypatch.setattr(replicas, "PUBLISH_SECONDS", 0.05)
    store = FakeShared({}, True)
    sync, role = FakeSync(), Role("server-a")
    task = asyncio.ensure_future(run_source(sync, store, 0.05, 60, role))
    await until(lambda: store.asked >= 3, "the leader asks for the lead at two more ticks")
    assert sync.runs == 1 and not sync.cancelled  # kept its lead, so its sync goes on
    store.leading = False  # its database session ended, and with it the lock
    store.board.pop("leader")
    await until(lambda: sync.cancelled, "the sync is stopped")
    assert role.syncing is None
    task.cancel()

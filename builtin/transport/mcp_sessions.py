"""Who holds which MCP session, so that one client's forgotten sessions never lock out another.

The MCP SDK keeps at most ``max_sessions`` sessions and answers 503 to anyone who asks for another
until one ends, which an idle session does only after ``session_idle_timeout`` (30 minutes). A
client that opens sessions and never closes them (10,000 of them) thus locked everyone out for
half an hour. :class:`SessionBook` notes each session's client (its address, see
``kernel.client_address``) and when it was last used, and before a new session opens it ends the
least recently used idle session of the client that holds too many: the newcomer's own beyond
:data:`PER_CLIENT`, or the greediest client's when the server holds :data:`MAX_SESSIONS`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("passageway.mcp")

MAX_SESSIONS = 1_000
"""Sessions the server holds at most (the SDK's default is 10,000). Few enough that a stop ends
them all within about a second; with the per-client rule below, never a lock-out."""
PER_CLIENT = 100
IDLE_SECONDS = 30 * 60
"""An MCP session nobody has used this long ends (the SDK's idle timeout)."""


@dataclass
class Held:
    client: str
    used: float
    running: int = 0  # requests of this session being served now (an open GET stream is one)


class SessionBook:
    """The sessions of one SDK session manager, by client, with the one to end when room is needed."""

    def __init__(self, manager: Any, per_client: int | None = None, most: int | None = None) -> None:
        self.manager = manager
        self.per_client = PER_CLIENT if per_client is None else per_client
        self.most = MAX_SESSIONS if most is None else most
        self.held: dict[str, Held] = {}
        self.ended = 0

    def _live(self) -> dict[str, Any]:
        """The SDK's own table of open sessions (id to transport)."""
        return dict(getattr(self.manager, "_server_instances", {}))

    def _forget_ended(self, live: dict[str, Any]) -> None:
        for session in [session for session in self.held if session not in live]:
            del self.held[session]

    async def make_room(self, client: str) -> None:
        """Before ``client`` opens a session: end one idle session if it or the server holds too many."""
        live = self._live()
        self._forget_ended(live)
        counts: dict[str, int] = {}
        for held in self.held.values():
            counts[held.client] = counts.get(held.client, 0) + 1
        if counts.get(client, 0) >= self.per_client:
            victim_client = client
        elif len(live) >= self.most and counts:
            victim_client = max(counts, key=lambda name: counts[name])
        else:
            return
        idle = [(held.used, session) for session, held in self.held.items()
                if held.client == victim_client and not held.running]
        if not idle:
            return
        _, session = min(idle)
        transport = live.get(session)
        del self.held[session]
        self.ended += 1
        if self.ended == 1 or self.ended % 1000 == 0:
            log.info("ended an idle MCP session of a client that holds %d (%d ended so far)",
                     counts[victim_client], self.ended)
        if transport is not None:
            # The SDK drops a terminated session from its table when the session's task ends; drop it
            # now, so that the room is there for the request that asked for it.
            getattr(self.manager, "_server_instances", {}).pop(session, None)
            await transport.terminate()

    def started(self, session: str | None) -> None:
        """A request of ``session`` (None: one that opens a session) is being served."""
        if session is not None and session in self.held:
            self.held[session].running += 1

    def finished(self, session: str | None, client: str, opened: str | None) -> None:
        """The request ended; ``opened`` is the id of the session it opened, if any."""
        now = time.monotonic()
        if session is not None and session in self.held:
            held = self.held[session]
            held.running = max(0, held.running - 1)
            held.used = now
        if session is None and opened and opened in self._live():
            self.held[opened] = Held(client, now)

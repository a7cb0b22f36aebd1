"""One source's health while it syncs: its state and counts, and the progress of a long fetch.

:class:`SourceHealth` is what ``/health``, the status page and ``passageway status`` show for a
source; :class:`BuildProgress` keeps its counts current while a build (or a large reconcile)
fetches, chunks and embeds, and logs them at most every few seconds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Literal

import attrs

from passageway.kernel.durations import duration_text

State = Literal["ok", "indexing", "failing"]


@attrs.define
class SourceHealth:
    """One source's state as ``/health`` and ``status`` report it.

    ``state`` is ``indexing`` while a build or a large fetch runs, ``failing`` when the last sync
    failed in any part (``last_error`` says how; the items already indexed keep serving), and
    ``ok`` otherwise. While indexing, ``fetched`` of ``of`` items are stored, ``ready`` of
    ``expected`` passages have their vector (``expected`` is exact once every item was fetched, an
    estimate from the items so far before that), ``embedded`` of them were embedded in this run,
    at ``rate`` passages per second, with ``eta_seconds`` left; ``rate`` and ``eta_seconds`` stay
    ``None`` for the first :data:`RATE_AFTER_SECONDS` of embedding. :meth:`public` leaves the
    error text out, :meth:`full` keeps it.
    """

    source: str
    state: State = "ok"
    items: int = 0
    passages: int = 0
    fetched: int | None = None
    of: int | None = None
    ready: int = 0
    expected: int | None = None
    embedded: int = 0
    rate: float | None = None
    eta_seconds: float | None = None
    last_success: str | None = None
    last_error: str | None = None
    failed_batches: int = 0
    batches: int = 0
    building: bool = False
    """True during a first build (or a rebuild for another embedder): the index is not complete."""
    expected_exact: bool = False
    """Whether ``expected`` is a count (every item chunked) rather than an estimate."""

    def public(self) -> dict[str, Any]:
        """What anyone may see: counts and state, not the error text."""
        view: dict[str, Any] = {
            "state": self.state,
            "items": self.items,
            "passages": self.passages,
            "last_success": self.last_success,
            "failing": self.state == "failing",
        }
        if self.state == "indexing":
            view.update(fetched=self.fetched, of=self.of, ready=self.ready, expected=self.expected,
                        embedded=self.embedded, rate=self.rate, eta_seconds=self.eta_seconds)
        return view

    def building_note(self) -> str | None:
        """One line for an answer given while this source's first build runs, else ``None``:
        ``"corpus-en: 48 of 96 passages indexed"``."""
        if not self.building:
            return None
        if self.expected is None:
            return f"{self.source}: starting its first build"
        about = "" if self.expected_exact else "about "
        return f"{self.source}: {self.ready} of {about}{self.expected} passages indexed"

    def full(self) -> dict[str, Any]:
        """Everything, for a caller with the password: the public view plus the error."""
        view = self.public()
        view["last_error"] = self.last_error
        if self.batches:
            view["failed_batches"] = self.failed_batches
            view["batches"] = self.batches
        return view


RATE_AFTER_SECONDS = 2.0
"""A build's rate and estimate appear once embedding has run this long (earlier they jump)."""


class BuildProgress:
    """Counts of a running fetch, kept in ``health`` and logged at most every ``interval`` s.

    Passages are counted as their vectors arrive (each embedder call of at most
    :data:`EMBED_BATCH` texts), not per fetch batch, so a first build shows movement within
    seconds. Until every item was fetched, the expected number of passages is extrapolated from
    the items chunked so far.
    """

    def __init__(self, health: SourceHealth, total: int, interval: float, log: logging.Logger,
                 clock: Callable[[], float]) -> None:
        self.health = health
        self.total = total
        self.interval = interval
        self.log = log
        self.clock = clock
        self.last_report = clock()
        self.done = 0  # items stored (or given up in a failed batch)
        self.chunked = 0  # items chunked
        self.found = 0  # passages of the chunked items
        self.to_embed = 0  # of which had no vector yet
        self.embedding_since: float | None = None
        health.fetched, health.of = 0, total
        health.ready = health.embedded = 0
        health.expected = None
        health.rate = health.eta_seconds = None

    def chunked_items(self, items: int, passages: int, missing: int) -> None:
        """``items`` were chunked into ``passages``, ``missing`` of which need embedding."""
        self.chunked += items
        self.found += passages
        self.to_embed += missing
        self.health.ready += passages - missing
        self._estimate()

    def embedding(self) -> None:
        """An embedder call starts (the rate counts from the first one)."""
        if self.embedding_since is None:
            self.embedding_since = self.clock()

    def embedded(self, passages: int) -> None:
        self.health.embedded += passages
        self.health.ready += passages
        self._estimate()
        self._report()

    def advance(self, items: int) -> None:
        """A fetch batch of ``items`` was stored (or failed, and counts as handled)."""
        self.done += items
        self.health.fetched = self.done
        self._report()

    def _estimate(self) -> None:
        health = self.health
        unseen = max(self.total - self.chunked, 0)
        per_item = self.found / self.chunked if self.chunked else 0.0
        health.expected = self.found + round(unseen * per_item)
        health.expected_exact = unseen == 0
        if self.embedding_since is None:
            return
        elapsed = self.clock() - self.embedding_since
        if elapsed < RATE_AFTER_SECONDS or not health.embedded:
            return
        rate = health.embedded / elapsed
        missing_per_item = self.to_embed / self.chunked if self.chunked else 0.0
        left = max(self.to_embed - health.embedded, 0) + unseen * missing_per_item
        health.rate = round(rate, 2)
        health.eta_seconds = round(left / rate, 1)

    def _report(self) -> None:
        now = self.clock()
        if now - self.last_report < self.interval:
            return
        self.last_report = now
        health, eta = self.health, self.health.eta_seconds
        rate = f"{health.rate:.1f} passages/s" if health.rate is not None else "rate not known yet"
        self.log.info(
            "source %s: %d of %s passages ready, %d of %d items fetched, %s, about %s left",
            health.source, health.ready, health.expected if health.expected is not None else "?",
            self.done, self.total, rate, duration_text(eta) if eta is not None else "?",
        )

    def finish(self) -> None:
        health = self.health
        health.fetched = health.of = health.expected = None
        health.expected_exact = False
        health.rate = health.eta_seconds = None

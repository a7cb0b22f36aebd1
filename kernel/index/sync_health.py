"""One source's health while it syncs: its state and counts, and the progress of a long fetch.

:class:`SourceHealth` is what ``/health``, the status page and ``passageway status`` show for a
source; :class:`BuildProgress` keeps its counts current while a build (or a large reconcile)
fetches, chunks and embeds, and logs them at most every few seconds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import attrs

from passageway.kernel.durations import duration_text

State = Literal["ok", "indexing", "failing"]


@attrs.define
class SourceHealth:
    """One source's state as ``/health`` and ``status`` report it.

    ``state`` is ``indexing`` while a build or a large fetch runs, ``failing`` when the last sync
    failed in any part (``last_error`` says how; the items already indexed keep serving), and
    ``ok`` otherwise: a source is ``ok`` (and the log says ``ready``) once it answers in full, its
    excerpt windows embedded too. While indexing, ``stage`` is ``passages`` until every passage
    has its vector (searchable by meaning), then ``windows`` while the excerpt windows, which choose
    the excerpt each answer shows, are embedded; ``fetched`` of ``of`` items came from the connector (or
    failed), ``stored`` passages are stored (searchable by keywords), ``ready`` of ``expected``
    passages have their vector (``expected`` is exact once every item was fetched, an estimate
    from the items so far before that), ``embedded`` of them were embedded in this run, ``windows`` of about
    ``windows_expected`` excerpt windows are done, at ``rate`` passages per second (the windows'
    work counted in passages of the source's average length), with ``eta_seconds`` left for
    both; ``rate`` and ``eta_seconds`` stay ``None`` for the first :data:`RATE_AFTER_SECONDS` of
    embedding. :meth:`public` leaves the error text out, :meth:`full` keeps it.
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
    stored: int = 0
    windows: int = 0
    windows_expected: int | None = None
    rate: float | None = None
    eta_seconds: float | None = None
    last_success: str | None = None
    last_error: str | None = None
    failed_batches: int = 0
    batches: int = 0
    failed_items: int = 0
    """Items of the last fetch that failed alone (a bad record each); ``last_error`` names them."""
    building: bool = False
    """True during a first build (or a rebuild for another embedder): the index is not complete."""
    expected_exact: bool = False
    """Whether ``expected`` is a count (every item chunked) rather than an estimate."""
    failed_in: str | None = None
    """``sync`` or ``poll``: the kind of operation that failed last (None after a success)."""
    stage: Literal["windows"] | None = None
    """``windows`` while the excerpt windows are embedded after every passage got its vector."""

    def record(self, kind: str, failure: str | None, now: str) -> None:
        """The outcome of one ``kind`` of operation at ``now``: a failure turns the source
        ``failing``; a success turns it ``ok``, except that a good poll clears only a poll's
        failure (a failed fetch batch waits for the next sync)."""
        if failure is not None:
            self.state, self.last_error, self.failed_in = "failing", failure, kind
        elif kind == "sync" or self.failed_in in (None, "poll"):
            self.state, self.last_error, self.last_success, self.failed_in = "ok", None, now, None

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
            view.update(stage=self.stage or "passages", fetched=self.fetched, of=self.of,
                        stored=self.stored, ready=self.ready,
                        expected=self.expected, embedded=self.embedded, windows=self.windows,
                        windows_expected=self.windows_expected, rate=self.rate,
                        eta_seconds=self.eta_seconds)
        return view

    def building_note(self) -> str | None:
        """One line for an answer given while this source's first build runs, else ``None``:
        ``"corpus-en: 48 of 96 passages searchable by meaning so far"``."""
        if not self.building:
            return None
        if self.expected is None:
            return f"{self.source}: starting its first build"
        about = "" if self.expected_exact else "about "
        return f"{self.source}: {self.ready} of {about}{self.expected} passages searchable by meaning so far"

    def full(self) -> dict[str, Any]:
        """Everything, for a caller with the password: the public view plus the error."""
        view = self.public()
        view["last_error"] = self.last_error
        if self.batches:
            view["failed_batches"] = self.failed_batches
            view["batches"] = self.batches
            view["failed_items"] = self.failed_items
        return view


RATE_AFTER_SECONDS = 2.0
"""A build's rate and estimate appear once embedding has run this long (earlier they jump)."""
COST_PER_TEXT = 64
"""A text's embedding cost is counted as its characters plus this (the prefix, the special
tokens and the call's share): a window costs less than a passage, in proportion."""


def cost_of(text: str) -> int:
    """The work of embedding ``text``, in the units :class:`BuildProgress` measures its rate in."""
    return len(text) + COST_PER_TEXT


class BuildProgress:
    """Counts of a running fetch and its embedding, kept in ``health`` and logged at most every
    ``interval`` s.

    Items count as fetched when chunked, passages as stored when their write commits and as
    ready when their vectors arrive (each embedder call), so a build shows movement within
    seconds. The time left is the embedding work left (passages, then excerpt windows, in
    characters: :func:`cost_of`) over the work done per second since the first embedder call;
    until every item was fetched, the work of the items not seen yet is extrapolated from the
    items chunked so far.
    """

    def __init__(self, health: SourceHealth, total: int, interval: float, log: logging.Logger,
                 clock: Callable[[], float]) -> None:
        self.health = health
        self.total = total
        self.interval = interval
        self.log = log
        self.clock = clock
        self.last_report = clock()
        self.done = 0  # items fetched (or given up in a failed batch)
        self.chunked = 0  # items chunked
        self.found = 0  # passages of the chunked items
        self.passage_cost = 0  # cost of those passages
        self.to_embed = 0  # cost of the passages that had no vector yet
        self.windows_found = 0  # windows of the chunked passages
        self.window_cost = 0  # and their cost
        self.spent = 0  # cost embedded so far (passages and windows)
        self.windows_spent = 0  # of which windows, embedded or found in the cache
        self.embedding_since: float | None = None
        health.fetched, health.of = 0, total
        health.ready = health.embedded = health.stored = health.windows = 0
        health.expected = health.windows_expected = None
        health.rate = health.eta_seconds = None

    def chunked_items(self, items: int, passages: Sequence[str], missing: Sequence[str],
                      windows: Sequence[str] = ()) -> None:
        """``items`` were chunked into ``passages`` (their embedding inputs), of which ``missing``
        need embedding; ``windows`` are the excerpt windows of those passages."""
        self.chunked += items
        self.found += len(passages)
        self.passage_cost += sum(cost_of(text) for text in passages)
        self.to_embed += sum(cost_of(text) for text in missing)
        self.windows_found += len(windows)
        self.window_cost += sum(cost_of(text) for text in windows)
        self.health.ready += len(passages) - len(missing)
        self._fetched()
        self._estimate()
        self._report()

    def stored(self, items: int, passages: int) -> None:
        """A write of ``items`` with ``passages`` committed."""
        self.health.stored += passages

    def embedding(self) -> None:
        """An embedder call starts (the rate counts from the first one)."""
        if self.embedding_since is None:
            self.embedding_since = self.clock()

    def embedded(self, texts: Sequence[str], windows: bool = False) -> None:
        """An embedder call of ``texts`` (passages, or excerpt windows) returned."""
        cost = sum(cost_of(text) for text in texts)
        self.spent += cost
        if windows:
            self.windows_spent += cost
            self.health.windows += len(texts)
        else:
            self.health.embedded += len(texts)
            self.health.ready += len(texts)
        self._estimate()
        self._report()

    def windows_cached(self, texts: Sequence[str]) -> None:
        """Windows the second pass found in the vector cache: done without work."""
        self.windows_spent += sum(cost_of(text) for text in texts)
        self.health.windows += len(texts)
        self._estimate()

    def advance(self, items: int) -> None:
        """A fetch batch of ``items`` came from the connector (or failed, and counts as handled)."""
        self.done += items
        self._fetched()
        self._report()

    def _fetched(self) -> None:
        self.health.fetched = min(max(self.done, self.chunked), self.total)

    def _estimate(self) -> None:
        health = self.health
        unseen = max(self.total - self.chunked, 0)
        share = unseen / self.chunked if self.chunked else 0.0
        health.expected = self.found + round(self.found * share)
        health.windows_expected = self.windows_found + round(self.windows_found * share)
        health.expected_exact = unseen == 0
        if self.embedding_since is None:
            return
        elapsed = self.clock() - self.embedding_since
        if elapsed < RATE_AFTER_SECONDS or not self.spent:
            return
        rate = self.spent / elapsed  # cost per second
        passages_spent = self.spent - self.windows_spent
        left = (max(self.to_embed - passages_spent, 0) + max(self.window_cost - self.windows_spent, 0)
                + (self.to_embed + self.window_cost) * share)
        average = self.passage_cost / self.found if self.found else float(COST_PER_TEXT)
        health.rate = round(rate / average, 2)
        health.eta_seconds = round(left / rate, 1)

    def _report(self) -> None:
        now = self.clock()
        if now - self.last_report < self.interval:
            return
        self.last_report = now
        health, eta = self.health, self.health.eta_seconds
        rate = f"{health.rate:.1f} passages/s" if health.rate is not None else "rate not known yet"
        self.log.info(
            "source %s: %d of %s items fetched, %d passages stored, %d of %s ready, "
            "%d of %s windows, %s, about %s left",
            health.source, health.fetched or 0, self.total, health.stored, health.ready,
            health.expected if health.expected is not None else "?", health.windows,
            health.windows_expected if health.windows_expected is not None else "?", rate,
            duration_text(eta) if eta is not None else "?",
        )

    def finish(self) -> None:
        health = self.health
        health.fetched = health.of = health.expected = health.windows_expected = None
        health.expected_exact = False
        health.rate = health.eta_seconds = None


def left_out_message(notes: Iterable[str]) -> str | None:
    """Health's words for listed entries the runner had to leave out (an id that is not
    Unicode), or None: a source is not ``ok`` while a listed item is missing."""
    found = list(notes)
    if not found:
        return None
    more = f"; and {len(found) - 1} more" if len(found) > 1 else ""
    return f"{len(found)} listed entries were left out: {found[0]}{more}"


def nothing_fetched(health: SourceHealth, message: str | None, wanted: int, stored: int) -> str | None:
    """Health's words for a fetch of ``wanted`` items of which none was stored (every call failed,
    or the connector answered without them), else ``message`` as it is: such a source is failing
    with a count and a next step (``failed_items`` counts them all), never ``ready`` with 0 items."""
    if not wanted or stored:
        return message
    health.failed_items = wanted
    why = message or "the connector answered every call without the items it had listed"
    return (f"nothing could be fetched: none of the {wanted} items was stored; see the connector's "
            f"warnings above (passageway check-connector runs it alone), fix it or the service it "
            f"reads, and the next sync fetches them again: {why}")


def joined(*failures: str | None) -> str | None:
    """The failures that happened, as one message; None when there were none."""
    found = [failure for failure in failures if failure]
    return "; ".join(found) if found else None

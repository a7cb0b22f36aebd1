"""Asking the questions: the seam between the harness and the kernel, and the loop over cases.

The harness needs only an :class:`Engine`: something that builds an index and answers a question
at a given threshold with a given ranker, saying how long it took and how much of that was
embedding the question. :class:`passageway.builtin.eval.engine.KernelEngine` is the real one;
tests use small fakes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import attrs

from passageway.builtin.eval.cases import Case
from passageway.builtin.eval.metrics import Outcome
from passageway.builtin.eval.report import IndexInfo
from passageway.kernel.records import Hit

WARM_UP_QUESTION = "warm-up question that is not counted"


@attrs.frozen
class Reply:
    """One answer: the hits in order, the time it took and the part spent embedding the question."""

    hits: tuple[Hit, ...]
    seconds: float
    embed_seconds: float


class Engine(Protocol):
    """What the harness needs of an index."""

    @property
    def embedder_name(self) -> str: ...

    @property
    def embedder_dim(self) -> int: ...

    @property
    def default_threshold(self) -> float:
        """The embedder's own ``min_similarity``."""
        ...

    async def build(self) -> IndexInfo:
        """Build (or reuse) the index of every configured source."""
        ...

    async def ask(self, question: str, threshold: float, ranker: str) -> Reply: ...


async def ask_all(
    engine: Engine, cases: Sequence[Case], threshold: float, ranker: str
) -> tuple[Outcome, ...]:
    """Every case once, in order, after one warm-up question that is not counted."""
    await engine.ask(WARM_UP_QUESTION, threshold, ranker)
    outcomes = []
    for case in cases:
        reply = await engine.ask(case.query, threshold, ranker)
        outcomes.append(Outcome(case, reply.hits, reply.seconds, reply.embed_seconds))
    return tuple(outcomes)


async def ask_sweep(
    engine: Engine, cases: Sequence[Case], threshold: float, sweep: Sequence[float], ranker: str
) -> tuple[tuple[Outcome, ...], tuple[tuple[float, tuple[Outcome, ...]], ...]]:
    """The outcomes at ``threshold`` and at every sweep value (the main run is reused when listed)."""
    main = await ask_all(engine, cases, threshold, ranker)
    rows = []
    for value in sweep:
        if round(value, 6) == round(threshold, 6):
            rows.append((value, main))
        else:
            rows.append((value, await ask_all(engine, cases, value, ranker)))
    return main, tuple(rows)

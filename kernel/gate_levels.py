"""The gate's named levels: how much a user prefers an answer to silence, without a raw number.

The relevance gate trades answers against silence with one cosine threshold, and where the best
point lies depends on what a user would rather miss: a passage that answers, or the quiet when
nothing does. ``[embedder] gate`` (or ``PASSAGEWAY_GATE``) names a point on the model's measured
curve instead of a number the user must guess:

* ``balanced`` (the default): the model's own ``min_similarity``, the threshold with the highest
  hit@3 + silence on the published question set;
* ``answers``: the threshold with the highest 3 × hit@3 + silence: more answers, more passages
  shown when nothing answers;
* ``silence``: the threshold with the highest hit@3 + 3 × silence: fewer wrong passages, more
  questions left without an answer that had one.

The thresholds are a property of the model's cosine scale, measured by ``bench/gate_levels.py``
on the public question set (docs/gate-levels.md); the built-in preset carries them
(``Preset.gate_levels`` in the embedders builtin), an embedder plugin its own as the
``gate_levels`` mapping of :class:`~passageway.kernel.embedder.BaseEmbedder`. A model without
measured levels accepts only ``balanced``: its explicit ``min_similarity`` is the way to move its
gate.
"""

from __future__ import annotations

from collections.abc import Mapping

from passageway.kernel.embedder import Embedder, label, with_defaults
from passageway.kernel.errors import ConfigError

LEVELS = ("answers", "balanced", "silence")
DEFAULT_LEVEL = "balanced"


def check_level(level: object, where: str) -> str:
    """``level`` when it is one of :data:`LEVELS`; a :class:`ConfigError` naming ``where`` otherwise."""
    if level not in LEVELS:
        raise ConfigError(f"{where}: `gate` is one of {', '.join(LEVELS)}, got {level!r}")
    return str(level)


def levels_of(embedder: Embedder) -> Mapping[str, float]:
    """The measured thresholds of ``embedder`` by level (empty when it has none)."""
    own = with_defaults(embedder).gate_levels
    if not isinstance(own, Mapping):
        return {}
    return {str(level): float(value) for level, value in own.items() if level in LEVELS}


def gate_threshold(embedder: Embedder, level: str) -> float | None:
    """The ``min_similarity`` that ``level`` means for ``embedder``; None for ``balanced``, which is
    the embedder's own.

    :raises ConfigError: the embedder has no measured threshold for ``level``.
    """
    if level == DEFAULT_LEVEL:
        return None
    levels = levels_of(embedder)
    if level not in levels:
        raise ConfigError(
            f"gate = {level!r}: the embedder {label(embedder)} has no measured {level!r} level; use "
            "gate = \"balanced\" and set its min_similarity in [embedder] instead"
        )
    return levels[level]

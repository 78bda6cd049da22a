"""The package as users install it: the wheel carries migrations and fixtures, and
``python -m feedmd`` works."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import REPO


def test_python_dash_m_runs_the_cli() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "feedmd", "--help"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0
    assert "demo" in result.stdout and "run" in result.stdout


@pytest.mark.slow
def test_wheel_ships_migrations_and_fixtures(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path), str(REPO)],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("feedmd-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "feedmd/_data/migrations/0001_initial.sql" in names
    assert "feedmd/_data/fixtures/demo.toml" in names
    assert "feedmd/_data/fixtures/expected/scenarios.json" in names
    assert "feedmd/_data/migrations/0010_visibility.sql" in names
    assert {
        "feedmd/delivery/exports/templates/digest.html.j2",
        "feedmd/delivery/exports/templates/digest.md.j2",
    } <= names
    assert not any("__pycache__" in name for name in names)

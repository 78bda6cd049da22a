"""scripts/test, the README's test command: on a machine it cannot set up (no apt-get
here), it stops before anything is installed or any test runs, naming what to install."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def run_without_apt_get(tmp_path: Path, python: Path) -> subprocess.CompletedProcess[str]:
    """scripts/test on a PATH with what it needs to look around but no apt-get or sudo, and
    no Chromium where FEEDMD_TEST_CHROMIUM points."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "id", "nproc", "env", "g++"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    (bin_dir / "python3").symlink_to(python)
    return subprocess.run(
        ["bash", str(REPO / "scripts" / "test"), "--collect-only"],
        env={"PATH": str(bin_dir), "FEEDMD_TEST_CHROMIUM": str(tmp_path / "no-chromium")},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_without_apt_get_it_stops_at_once_naming_the_missing_package(tmp_path: Path) -> None:
    result = run_without_apt_get(tmp_path, Path(sys.executable))
    assert result.returncode == 2, result.stderr
    assert "missing system packages: chromium\n" in result.stderr
    assert "sudo apt-get install -y chromium" in result.stderr
    assert result.stdout == ""  # nothing installed, nothing collected


def test_a_python_without_venv_is_named_as_debian_names_it(tmp_path: Path) -> None:
    # Debian's python3 without python3-venv: `import ensurepip` fails
    python = tmp_path / "python-without-venv"
    python.write_text(
        f'#!/bin/sh\ncase "$*" in *ensurepip*) exit 1;; esac\nexec {sys.executable} "$@"\n'
    )
    python.chmod(0o755)
    result = run_without_apt_get(tmp_path, python)
    assert result.returncode == 2, result.stderr
    assert "missing system packages: python3-venv chromium\n" in result.stderr
    assert result.stdout == ""

"""Locate the data that ships with feedmd: SQL migrations and the demo fixtures.

In a wheel they live in ``feedmd/_data/``; in a source checkout (and an editable install)
they are the top-level ``migrations/`` and ``fixtures/`` folders.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the folder ``name`` ('migrations' or 'fixtures') wherever it was installed."""
    for candidate in (_PACKAGE_DIR / "_data" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"feedmd data folder {name!r} is missing from this installation")

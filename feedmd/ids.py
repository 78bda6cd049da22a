"""Ids that come from a request (``?before=``, ``/review/runs/N``, a search, a form): only
a whole number that SQLite can store is an id. Anything else (``99999999999999999999``,
``²``, ``-1``) is answered with 400 or 404 by the caller, never passed to SQLite, whose
driver raises OverflowError past 64 bits."""

from __future__ import annotations

# SQLite's largest INTEGER (and so the largest rowid): a fact of the store, not a setting.
MAX_ID = 2**63 - 1


def parse_id(text: str | int | None) -> int | None:
    """``text`` as an id (1 to MAX_ID, ASCII digits only), else None."""
    if isinstance(text, int):
        return text if 0 < text <= MAX_ID else None
    if text is None or not text.isascii() or not text.isdigit() or len(text) > 19:
        return None
    value = int(text)
    return value if 0 < value <= MAX_ID else None

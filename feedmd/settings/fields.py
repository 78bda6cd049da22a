"""How a setting is declared: a dataclass field whose metadata carries its help text and
its bounds. The TOML loader, the environment reader and the CLI flags (``config.py``,
``feedmd.cli.common``) are all generated from those fields, so a new setting is added in
one place, in the part it belongs to."""

from __future__ import annotations

from dataclasses import field
from typing import Any


def setting(
    default: Any,
    doc: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: tuple[str, ...] | None = None,
) -> Any:
    """A setting's field: its default, its help text (what it does and the measurement
    behind the default) and, when it has them, its bounds or its choices."""
    return field(
        default=default,
        metadata={
            "doc": doc,
            "minimum": minimum,
            "maximum": maximum,
            "choices": choices,
        },
    )

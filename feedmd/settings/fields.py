"""How a setting is declared: a dataclass field whose metadata carries its help text and
its bounds. The TOML loader, the environment reader and the CLI flags (``config.py``,
``feedmd.cli.common``) are all generated from those fields, so a new setting is added in
one place, in the part it belongs to."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any


def setting(
    default: Any,
    doc: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: tuple[str, ...] | None = None,
    check: Callable[[Any], str | None] | None = None,
) -> Any:
    """A setting's field: its default, its help text (what it does and the measurement
    behind the default) and, when it has them, its bounds, its choices or a ``check``
    (value -> what is wrong with it, or None) for what bounds cannot say."""
    return field(
        default=default,
        metadata={
            "doc": doc,
            "minimum": minimum,
            "maximum": maximum,
            "choices": choices,
            "check": check,
        },
    )


def time_zone_problem(name: str) -> str | None:
    """Why ``name`` is not a time zone this machine knows (empty: the local zone), or None."""
    if not name:
        return None
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return "an IANA time zone name such as Europe/Berlin (or empty: the local zone)"
    return None

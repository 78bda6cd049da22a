"""Command-line options shared by the command modules: one flag per pipeline setting."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from feedmd.settings import SETTING_FIELDS

F = Callable[..., Any]


def setting_options(command: F) -> F:
    """Add one ``--setting-name`` option per pipeline setting to a click command."""
    for name, spec in reversed(SETTING_FIELDS.items()):
        kind = type(spec.default)
        click_type: Any = {int: int, float: float, bool: bool}.get(kind, str)
        if spec.metadata["choices"]:
            click_type = click.Choice(spec.metadata["choices"])
        command = click.option(
            "--" + name.replace("_", "-"),
            name,
            type=click_type,
            default=None,
            help=f"{spec.metadata['doc']} [default: {spec.default!r}; env FEEDMD_{name.upper()}]",
        )(command)
    return command


def settings_from(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Take the setting flags out of a command's keyword arguments: {setting: value}."""
    return {name: kwargs.pop(name) for name in list(kwargs) if name in SETTING_FIELDS}

"""What every ``feedmd`` command shares: ``-h``, the config file found by default, one
``--db`` and one ``--config`` described the same way everywhere, and the settings a command
takes on its command line.

A command shows as flags only the few settings it uses (``setting_options("proxy", ...)``);
every setting stays reachable through the config file, ``FEEDMD_*`` variables and the
generic, repeatable ``--set KEY=VALUE``. The layering is unchanged: defaults ->
feedmd.toml -> FEEDMD_* -> command line.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from feedmd.errors import ConfigError
from feedmd.settings.config import SETTING_FIELDS, Config, load_config
from feedmd.settings.values import coerce_setting

F = Callable[..., Any]

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}
CONFIG_ENV = "FEEDMD_CONFIG"
DEFAULT_CONFIG = "feedmd.toml"
SET_KEY = "set_values"

config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    help=f"The feedmd.toml to read (default: ${CONFIG_ENV}, else ./{DEFAULT_CONFIG} when "
    "it exists, else built-in settings and no feeds).",
)
db_option = click.option(
    "--database",
    "--db",
    "db",
    help="The store: a SQLite file (a path or sqlite:///path) or a postgresql://user@host:"
    "port/db URL (default: 'database' in the config, else feedmd.db; env FEEDMD_DATABASE).",
)


def find_config(path: str | None) -> str | None:
    """The config file a command reads: ``--config``, else ``$FEEDMD_CONFIG``, else
    ``./feedmd.toml`` when it exists, else None (built-in settings, no feeds)."""
    if path:
        return path
    named = os.environ.get(CONFIG_ENV, "").strip()
    if named:
        return named
    return DEFAULT_CONFIG if Path(DEFAULT_CONFIG).is_file() else None


def load(config_path: str | None, settings: dict[str, Any] | None, db: str | None) -> Config:
    """The configuration of a command: the file found by ``find_config``, then FEEDMD_*,
    then the command line's settings; ``--db`` over the file's database."""
    config = load_config(find_config(config_path), overrides=settings or {})
    if db:
        config = dataclasses.replace(config, database=db)
    return config


def parse_set(values: tuple[str, ...]) -> dict[str, Any]:
    """``--set KEY=VALUE`` pairs as checked setting values (``KEY`` with _ or -)."""
    settings: dict[str, Any] = {}
    for text in values:
        key, sep, raw = text.partition("=")
        name = key.strip().replace("-", "_")
        if not sep or not name:
            raise click.BadParameter(f"expected KEY=VALUE, got {text!r}", param_hint="--set")
        try:
            settings[name] = coerce_setting(name, raw.strip(), f"--set {name}")
        except ConfigError as exc:
            raise click.BadParameter(str(exc), param_hint="--set") from None
    return settings


def setting_options(*names: str) -> Callable[[F], F]:
    """Add ``--set KEY=VALUE`` and one flag for each of ``names`` (on/off settings as
    ``--name/--no-name``) to a command; ``settings_from`` collects them."""
    for name in names:
        assert name in SETTING_FIELDS, name

    def decorate(command: F) -> F:
        for name in reversed(names):
            spec = SETTING_FIELDS[name]
            kind = type(spec.default)
            flag = "--" + name.replace("_", "-")
            doc = f"{spec.metadata['doc']} [default: {spec.default!r}; env FEEDMD_{name.upper()}]"
            if kind is bool:
                command = click.option(
                    f"{flag}/--no-{name.replace('_', '-')}", name, default=None, help=doc
                )(command)
                continue
            click_type: Any = {int: int, float: float}.get(kind, str)
            if spec.metadata["choices"]:
                click_type = click.Choice(spec.metadata["choices"])
            command = click.option(flag, name, type=click_type, default=None, help=doc)(command)
        return click.option(
            "--set",
            SET_KEY,
            multiple=True,
            metavar="KEY=VALUE",
            help="Set any setting for this command (repeatable), e.g. --set "
            "jaccard_threshold=0.7; `feedmd settings` lists them all.",
        )(command)

    return decorate


def settings_from(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Pop the settings of ``setting_options`` out of a command's keyword arguments:
    ``--set`` values, then the named flags over them."""
    settings = parse_set(kwargs.pop(SET_KEY, ()))
    for name in [name for name in kwargs if name in SETTING_FIELDS]:
        value = kwargs.pop(name)
        if value is not None:
            settings[name] = value
    return settings


# The settings each command shows as flags (every other one is reachable by --set).
RUN_SETTINGS = (
    "dedup_scope",
    "dedup_window_hours",
    "history_window_hours",
    "max_pages_per_run",
    "fetch_concurrency",
    "proxy",
    "allow_private_addresses",
    "run_lease_wait_seconds",
)
# Settings that decide duplicates: what replay and the evaluations are run to vary.
DEDUP_SETTINGS = (
    "dedup_scope",
    "dedup_window_hours",
    "jaccard_threshold",
    "containment_threshold",
    "simhash_max_bits",
    "tlsh_max_distance",
    "shingle_containment_threshold",
)
HEADLINE_SETTINGS = (
    "headline_min_tokens",
    "jaccard_threshold",
    "containment_threshold",
    "containment_min_tokens",
    "simhash_max_bits",
    "subject_gate",
)
PROSE_SETTINGS = ("prose_min_words", "prose_min_chars", "prose_max_link_share")
BODY_SETTINGS = (
    "tlsh_max_distance",
    "shingle_containment_threshold",
    "similar_tlsh_distance",
    "similar_containment",
)
PAGE_FETCH_SETTINGS = ("proxy", "allow_private_addresses")
EVENT_SETTINGS = (
    "events",
    "event_threshold",
    "event_threshold_cross_language",
    "event_thresholds_by_language",
    "event_model_path",
)

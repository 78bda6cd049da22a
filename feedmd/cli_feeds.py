"""``feedmd init``: write a commented starter feedmd.toml.

Every file written is checked by the real config loader before it replaces the old one
(atomically), so a command never leaves a feedmd.toml that ``feedmd run`` would refuse.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from feedmd.cli_common import CONFIG_ENV, DEFAULT_CONFIG
from feedmd.config import Config, load_config
from feedmd.errors import ConfigError

STARTER_CONFIG = """\
# feedmd configuration, read by every feedmd command run in this folder
# (or name it with --config FILE or FEEDMD_CONFIG=FILE).
#
# Each setting comes from the built-in default, then this file, then a FEEDMD_* variable
# (FEEDMD_JACCARD_THRESHOLD=0.7), then the command line (--set jaccard_threshold=0.7).
# `feedmd settings` shows the effective values; `feedmd settings --markdown` documents all.

# The SQLite store (relative to the folder feedmd runs in).
database = "feedmd.db"

# Compare an item with its own feed's history ("feed") or with every feed of its org ("org").
# dedup_scope = "feed"
# How far back, in hours, an item is compared with earlier ones.
# dedup_window_hours = 48.0

[output]
# `feedmd run` writes each feed's NAME.json (JSON Feed 1.1) and NAME.atom here.
directory = "public"
# Where that folder is served as it is (by any web server): the files' own links are
# built on it, so NAME.json says it lives at BASE_URL/NAME.json.
base_url = "http://localhost:8000"

# An org groups feeds: with dedup_scope = "org" its feeds are de-duplicated together, and a
# token of the org opens its private feeds on `feedmd serve` (feedmd tokens create).
[[orgs]]
name = "news"
# public = true  # its feeds need no token on `feedmd serve`

# Webhooks: each new kept item is POSTed, signed with the secret in the named variable.
# [[orgs.webhooks]]
# url = "https://example.org/hooks/feedmd"
# secret_env = "FEEDMD_WEBHOOK_SECRET"

# Each feed of the org is a [[orgs.feeds]] table like this one:
# [[orgs.feeds]]
# name = "pope-leo"  # lowercase letters, digits, - and _; names the output files
# url = "https://news.google.com/rss/search?q=pope+leo&hl=en-US&gl=US&ceid=US:en"
# poll_minutes = 15
# title = "Pope Leo"
"""


# ---- init -----------------------------------------------------------------------------------


@click.command("init")
@click.argument("path", required=False, type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def init_command(path: str | None, force: bool) -> None:
    """Write a commented starter feedmd.toml (default: $FEEDMD_CONFIG, else ./feedmd.toml).

    Then add [[orgs.feeds]] tables to it and run (feedmd run)."""
    target = Path(path or os.environ.get(CONFIG_ENV, "").strip() or DEFAULT_CONFIG)
    if target.exists() and not force:
        raise click.ClickException(f"{target} exists: not overwritten (--force replaces it)")
    _write_config(target, STARTER_CONFIG)
    click.echo(f"wrote {target}; next: add feeds ([[orgs.feeds]]) to it, then feedmd run")


# ---- writing feedmd.toml ------------------------------------------------------------------


def _write_config(target: Path, text: str) -> Config:
    """Check ``text`` with the real loader, then replace ``target`` atomically (keeping its
    mode). Returns the loaded Config."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        if target.exists():
            os.chmod(temporary, target.stat().st_mode & 0o7777)
        try:
            config = load_config(temporary, environ={})
        except ConfigError as exc:
            raise click.ClickException(
                str(exc).replace(str(temporary), str(target)) + " (file left unchanged)"
            ) from None
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    return config


COMMANDS = (init_command,)

"""The offline demo: the real pipeline on the bundled fixture news day.

A real HTTP server on 127.0.0.1 serves ``fixtures/``; the pipeline (real httpx, feedparser,
trafilatura, py-tlsh, SQLite) runs against it twice: once at the end of the fixture day,
and once two hours later, when one feed has a late original and nothing else has changed,
to show that nothing is fetched or scraped again.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from feedmd.delivery.webhooks import redact, send_all_kept
from feedmd.errors import ConfigError
from feedmd.pipeline import run
from feedmd.report import RunReport
from feedmd.resources import data_dir
from feedmd.settings.config import Config, OutputConfig, load_config
from feedmd.store import (
    POSTGRESQL,
    backend_of,
    connect_store,
    database_exists,
    display_database,
    open_store,
)
from feedmd.timeutil import parse_iso
from feedmd.tools.fixture_server import FixtureServer

DEMO_CONFIG = "demo.toml"
# Marks an --out folder as the demo's, so the demo never deletes a database it did not make.
DEMO_MARKER = ".feedmd-demo"
# The fixture day is 2026-10-12; the first run happens at its end, the second two hours on.
FIRST_RUN_AT = parse_iso("2026-10-12T20:00:00Z")
SECOND_RUN_AT = parse_iso("2026-10-12T22:00:00Z")


@dataclass(frozen=True)
class DemoResult:
    """The two run reports and where the demo wrote its files."""

    first: RunReport
    second: RunReport
    database: Path | str  # the SQLite file, or the PostgreSQL URL it was given
    outputs: tuple[Path, ...]


def demo_config(
    fixtures: Path,
    out: Path,
    proxy: str,
    overrides: Mapping[str, Any] | None = None,
    database: str | None = None,
) -> Config:
    """The demo's configuration: ``fixtures/demo.toml`` pointed at the fixture server,
    storing into ``database`` (default ``out/feedmd.db``)."""
    config = load_config(fixtures / DEMO_CONFIG, environ={}, overrides=overrides)
    # the fixture server is on loopback: the demo allows private addresses explicitly
    settings = dataclasses.replace(config.settings, proxy=proxy, allow_private_addresses=True)
    return dataclasses.replace(
        config,
        settings=settings,
        database=database or str(out / "feedmd.db"),
        output=OutputConfig(directory=str(out), base_url=config.output.base_url),
    )


def run_demo(
    out: str | os.PathLike[str],
    overrides: Mapping[str, Any] | None = None,
    fixtures: Path | None = None,
    echo: Callable[[str], None] = print,
    first_at: datetime = FIRST_RUN_AT,
    second_at: datetime = SECOND_RUN_AT,
    webhook_url: str | None = None,
    database: str | None = None,
) -> DemoResult:
    """Run the demo into ``out`` (its database is recreated) and return both reports.

    ``database`` (a ``postgresql://`` URL, or a SQLite file) stores there instead of
    ``out/feedmd.db``; it must hold no runs, as the demo never deletes data it did not
    make."""
    fixtures = fixtures or data_dir("fixtures")
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    if database:
        _check_empty(database)
    marker = folder / DEMO_MARKER
    if (folder / "feedmd.db").exists() and not marker.exists():
        raise ConfigError(
            f"{folder / 'feedmd.db'} exists and was not made by feedmd demo; "
            "the demo recreates its database: choose another --out"
        )
    marker.write_text("This folder holds feedmd demo output; the demo recreates it.\n")
    for suffix in ("", "-wal", "-shm"):
        (folder / f"feedmd.db{suffix}").unlink(missing_ok=True)
    with FixtureServer(fixtures) as server:
        config = demo_config(fixtures, folder, server.proxy_url, overrides, database)
        store = open_store(config.database)
        try:
            shown = display_database(config.database)
            echo(f"fixture server on {server.proxy_url}; database {shown}")
            first = run(store, config, now=first_at)
            echo(first.render())
            server.edition = 2
            second = run(store, config, now=second_at)
            echo(second.render())
            if webhook_url:
                sent = send_all_kept(store, webhook_url)
                echo(
                    f"webhooks to {redact(webhook_url)}: {sent.delivered} delivered, "
                    f"{sent.failed_attempts} failed attempts, {sent.gave_up} given up"
                )
        finally:
            store.close()
    outputs = tuple(sorted(p for p in folder.iterdir() if p.suffix in {".json", ".atom"}))
    stored = config.database if backend_of(config.database) == POSTGRESQL else Path(config.database)
    return DemoResult(first=first, second=second, database=stored, outputs=outputs)


def _check_empty(database: str) -> None:
    if not database_exists(database):
        return
    store = connect_store(database)
    try:
        runs = store.recent_runs(1)
    finally:
        store.close()
    if runs:
        raise ConfigError(
            f"{display_database(database)} already holds runs; the demo needs an empty database"
            " (it never deletes data it did not make)"
        )

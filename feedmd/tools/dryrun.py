"""`feedmd run --dry-run`: fetch and decide, store nothing, show what would be dropped.

Users ask for a "preview filter" before they trust a dedup rule. The dry run works on a
temporary copy of the store (SQLite's online backup), so it sees the real window and
history, runs the real pipeline without its delivery step, and the copy is thrown away:
the real store, the output files and the webhook endpoints are not touched.
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from feedmd.pipeline import run
from feedmd.report import RunReport
from feedmd.settings.config import Config, OutputConfig
from feedmd.store import copy_database, database_exists, open_store


@dataclass(frozen=True)
class DryRun:
    """The report of the run that did not happen, and every item it would not keep."""

    report: RunReport
    dropped: list[dict[str, Any]]


def dry_run(config: Config, now: datetime | None = None, force: bool = False) -> DryRun:
    """Run the pipeline on a throwaway copy of the store, with no outputs."""
    with tempfile.TemporaryDirectory(prefix="feedmd-dry-run-") as folder:
        copy = Path(folder) / "dry-run.db"
        if database_exists(config.database):
            copy_database(config.database, copy)
        quiet = dataclasses.replace(
            config,
            database=str(copy),
            output=OutputConfig(directory="", base_url=config.output.base_url),
        )
        quiet = dataclasses.replace(quiet, webhooks=())
        store = open_store(copy)
        try:
            # the copy's leases belong to runs of the real store: not ours to wait for
            store.forget_leases()
            report = run(store, quiet, now=now, force=force, deliver_outputs=False)
            dropped = store.dropped_items(report.run_id)
        finally:
            store.close()
    return DryRun(report=report, dropped=dropped)

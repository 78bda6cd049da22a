"""`feedmd run --dry-run`: fetch and decide, store nothing, show what would be dropped.

Users ask for a "preview filter" before they trust a dedup rule. The dry run works on a
temporary copy of the store (SQLite's online backup), so it sees the real window and
history, runs the real pipeline without its delivery step, and the copy is thrown away:
the real store, the output files and the webhook endpoints are not touched.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from feedmd.config import Config, OutputConfig
from feedmd.db import open_store
from feedmd.pipeline import run
from feedmd.report import RunReport
from feedmd.stages.store import Store


@dataclass(frozen=True)
class DryRun:
    """The report of the run that did not happen, and every item it would not keep."""

    report: RunReport
    dropped: list[dict[str, Any]]


def dry_run(config: Config, now: datetime | None = None, force: bool = False) -> DryRun:
    """Run the pipeline on a throwaway copy of the store, with no outputs."""
    with tempfile.TemporaryDirectory(prefix="feedmd-dry-run-") as folder:
        copy = Path(folder) / "dry-run.db"
        if Path(config.database).exists():
            _backup(Path(config.database), copy)
        quiet = dataclasses.replace(
            config,
            database=str(copy),
            output=OutputConfig(directory="", base_url=config.output.base_url),
        )
        quiet = dataclasses.replace(quiet, webhooks=())
        store = Store(open_store(copy))
        try:
            # the copy's leases belong to runs of the real store: not ours to wait for
            store.conn.execute("DELETE FROM run_leases")
            report = run(store, quiet, now=now, force=force, deliver_outputs=False)
            dropped = _dropped(store, report.run_id)
        finally:
            store.db.close()
    return DryRun(report=report, dropped=dropped)


def _backup(source: Path, target: Path) -> None:
    src = sqlite3.connect(source)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def _dropped(store: Store, run_id: int) -> list[dict[str, Any]]:
    cursor = store.conn.execute(
        "SELECT i.id, f.name, i.title_raw, i.publisher, i.url_raw, i.decision, i.stage, i.rule,"
        " i.score, i.threshold, i.error, m.title_raw, m.publisher FROM items i"
        " JOIN feeds f ON f.id = i.feed_id LEFT JOIN items m ON m.id = i.matched_item_id"
        " WHERE i.run_id = ? AND i.decision != 'kept' ORDER BY i.id",
        (run_id,),
    )
    keys = (
        "item",
        "feed",
        "title",
        "publisher",
        "url",
        "decision",
        "stage",
        "rule",
        "score",
        "threshold",
        "error",
        "matched_title",
        "matched_publisher",
    )
    return [dict(zip(keys, row, strict=True)) for row in cursor]

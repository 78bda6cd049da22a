"""The review page's reads: runs with their reports, a run's items grouped into clusters,
items by id. Plain data out, so the views and templates never see SQL.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlite_utils

# The steps of a run, in the order the report's timings are shown (pipeline.py).
STEPS = ("fetch", "stage1", "scrape", "stage2", "store", "deliver")


@dataclass(frozen=True)
class RunRow:
    """A run and its stored report (empty while the run is going or after a crash)."""

    id: int
    as_of: str
    started_at: str
    finished_at: str | None
    status: str
    report: dict[str, Any]

    def count(self, key: str) -> int:
        """A count of the report (0 when absent)."""
        value = self.report.get(key, 0)
        return int(value) if isinstance(value, int | float) else 0

    def dropped(self, stage: str) -> dict[str, int]:
        """{rule: items dropped} of ``stage`` ('stage1' or 'stage2')."""
        return dict(self.report.get(f"dropped_{stage}", {}) or {})

    @property
    def dropped_total(self) -> int:
        """Items dropped as duplicates at either stage."""
        return sum(self.dropped("stage1").values()) + sum(self.dropped("stage2").values())

    @property
    def seconds(self) -> list[tuple[str, float]]:
        """(step, seconds) in pipeline order."""
        timings = self.report.get("seconds", {}) or {}
        return [(step, float(timings[step])) for step in STEPS if step in timings]


@dataclass(frozen=True)
class ItemRow:
    """An item as the run, search and cluster views list it."""

    id: int
    run_id: int
    feed: str
    org: str
    title: str
    publisher: str
    url: str
    published_at: str
    stage: str
    decision: str
    rule: str | None
    score: float | None
    threshold: float | None
    matched_item_id: int | None


@dataclass
class Cluster:
    """A canonical item and the items merged into it (oldest first)."""

    canonical: ItemRow
    members: list[ItemRow] = field(default_factory=list)

    @property
    def rules(self) -> list[str]:
        """The rules that merged the members, each once, in order."""
        return list(dict.fromkeys(m.rule or "?" for m in self.members))


_RUN_SELECT = "SELECT id, as_of, started_at, finished_at, status, report_json FROM runs"
_ITEM_SELECT = (
    "SELECT i.id, i.run_id, f.name, o.name, i.title_raw, i.publisher, i.url_raw,"
    " i.published_at, i.stage, i.decision, i.rule, i.score, i.threshold, i.matched_item_id"
    " FROM items i JOIN feeds f ON f.id = i.feed_id JOIN orgs o ON o.id = i.org_id"
)


def _run(row: Any) -> RunRow:
    return RunRow(row[0], row[1], row[2], row[3], row[4], json.loads(row[5] or "{}"))


def recent_runs(db: sqlite_utils.Database, limit: int = 50) -> list[RunRow]:
    """The newest ``limit`` runs, newest first."""
    rows = db.conn.execute(f"{_RUN_SELECT} ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
    return [_run(row) for row in rows]


def get_run(db: sqlite_utils.Database, run_id: int) -> RunRow | None:
    """One run, or None."""
    row = db.conn.execute(f"{_RUN_SELECT} WHERE id = ?", (run_id,)).fetchone()
    return _run(row) if row else None


def run_items(db: sqlite_utils.Database, run_id: int) -> list[ItemRow]:
    """Every item stored by a run, oldest first."""
    rows = db.conn.execute(
        f"{_ITEM_SELECT} WHERE i.run_id = ? ORDER BY i.published_at, i.id", (run_id,)
    ).fetchall()
    return [ItemRow(*row) for row in rows]


def items_by_id(db: sqlite_utils.Database, item_ids: Sequence[int]) -> list[ItemRow]:
    """The items among ``item_ids`` that exist, in the given order."""
    found: dict[int, ItemRow] = {}
    ids = list(dict.fromkeys(item_ids))
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for row in db.conn.execute(f"{_ITEM_SELECT} WHERE i.id IN ({marks})", chunk):
            found[row[0]] = ItemRow(*row)
    return [found[item_id] for item_id in ids if item_id in found]


def clusters(items: Sequence[ItemRow], canonicals: Sequence[ItemRow]) -> list[Cluster]:
    """Group a run's items by the kept item they were merged into. A duplicate's canonical
    may come from an earlier run (``canonicals`` holds those); kept items of the run with
    nothing merged form clusters of one. Clusters with members come first, each group in
    the order the canonicals were published; failed items are not clustered (nothing was
    decided on them)."""
    by_id = {item.id: item for item in [*canonicals, *items]}
    groups: dict[int, Cluster] = {}
    for item in items:
        if item.decision == "kept":
            groups.setdefault(item.id, Cluster(item))
    for item in items:
        if item.decision == "duplicate" and item.matched_item_id in by_id:
            head = by_id[item.matched_item_id]
            groups.setdefault(head.id, Cluster(head)).members.append(item)
    return sorted(
        groups.values(), key=lambda c: (not c.members, c.canonical.published_at, c.canonical.id)
    )

"""The store's side of explain, the review page and reviewers' overrides: one item's full
row, searches, runs with their reports, token identities, and the override writes (each in
one transaction, with the decision it replaced recorded)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from feedmd.errors import OverrideError
from feedmd.store.event_pending import RESTORED, add_pending
from feedmd.store.keys import add_item_keys, drop_item_keys
from feedmd.store.schema import Connected, chunks, inserted_id, transaction
from feedmd.timeutil import iso, parse_iso

Kind = Literal["not_duplicate", "merge"]
# The rule an overridden item shows in its trail and in `feedmd explain`.
OVERRIDE_RULE = "override"
# The steps of a run, in the order the report's timings are shown (pipeline.py).
STEPS = ("fetch", "stage1", "scrape", "stage2", "events", "store", "deliver")


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


@dataclass(frozen=True)
class Override:
    """One recorded override: ``item_id`` restored from, or merged into, ``other_item_id``."""

    id: int
    kind: str
    item_id: int
    other_item_id: int
    previous: dict[str, Any]
    created_by: str
    created_at: datetime


@dataclass(frozen=True)
class OverridePair:
    """The two entries of a recorded override: (feed, entry id) of the item and the other."""

    kind: str
    item: tuple[str, str]
    other: tuple[str, str]


_ITEM_SQL = (
    "SELECT i.*, f.name AS feed, o.name AS org, b.digest AS digest, b.prose_chars AS"
    " prose_chars, b.no_digest_reason AS no_digest_reason, r.as_of AS run_as_of"
    " FROM items i JOIN feeds f ON f.id = i.feed_id JOIN orgs o ON o.id = i.org_id"
    " LEFT JOIN bodies b ON b.id = i.body_id LEFT JOIN runs r ON r.id = i.run_id"
)
_RUN_SELECT = "SELECT id, as_of, started_at, finished_at, status, report_json FROM runs"
_ITEM_ROW_SELECT = (
    "SELECT i.id, i.run_id, f.name, o.name, i.title_raw, i.publisher, i.url_raw,"
    " i.published_at, i.stage, i.decision, i.rule, i.score, i.threshold, i.matched_item_id"
    " FROM items i JOIN feeds f ON f.id = i.feed_id JOIN orgs o ON o.id = i.org_id"
)


def _run(row: Any) -> RunRow:
    return RunRow(row[0], row[1], row[2], row[3], row[4], json.loads(row[5] or "{}"))


_STATE_SQL = (
    "SELECT i.id, i.org_id, i.decision, i.stage, i.rule, i.score, i.threshold,"
    " i.matched_item_id, f.name FROM items i JOIN feeds f ON f.id = i.feed_id WHERE i.id = ?"
)


@dataclass(frozen=True)
class _State:
    id: int
    org_id: int
    decision: str
    stage: str
    rule: str | None
    score: float | None
    threshold: float | None
    matched_item_id: int | None
    feed: str

    def previous(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "stage": self.stage,
            "rule": self.rule,
            "score": self.score,
            "threshold": self.threshold,
            "matched_item_id": self.matched_item_id,
        }


def _state(conn: Any, item_id: int) -> _State:
    row = conn.execute(_STATE_SQL, (item_id,)).fetchone()
    if row is None:
        raise OverrideError(f"no item {item_id}")
    return _State(*row)


def _record(
    conn: Any, kind: Kind, item: _State, other_id: int, who: str, now: datetime
) -> Override:
    previous = item.previous()
    override_id = inserted_id(
        conn,
        "INSERT INTO overrides (kind, org_id, item_id, other_item_id, previous_json,"
        " created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (kind, item.org_id, item.id, other_id, json.dumps(previous), who, iso(now)),
    )
    # the override is added to the item's evidence here, not by SQL JSON functions: the
    # two backends' functions differ (json_set / jsonb_set) and this row is read anyway
    (stored,) = conn.execute("SELECT evidence_json FROM items WHERE id = ?", (item.id,)).fetchone()
    evidence = json.loads(stored or "{}")
    evidence["override"] = {"kind": kind, "other_item_id": other_id, "by": who, "at": iso(now)}
    conn.execute(
        "UPDATE items SET evidence_json = ? WHERE id = ?",
        (json.dumps(evidence, ensure_ascii=False, sort_keys=True), item.id),
    )
    return Override(override_id or 0, kind, item.id, other_id, previous, who, now)


class Audit(Connected):
    """Reads for explain and the review page; the writes of an override."""

    # ---- explain and search ------------------------------------------------------------

    def item_exists(self, item_id: int) -> bool:
        """Whether an item with this id is stored."""
        return bool(self._conn.execute("SELECT 1 FROM items WHERE id = ?", (item_id,)).fetchone())

    def items_by_url(self, url: str, hashed: str, limit: int) -> list[int]:
        """Ids of the items whose raw URL or link is ``url`` or whose URL hash is ``hashed``,
        newest first."""
        rows = self._conn.execute(
            "SELECT id FROM items WHERE url_raw = ? OR link = ? OR (url_hash = ? AND ? != '')"
            " ORDER BY published_at DESC, id DESC LIMIT ?",
            (url, url, hashed, hashed, limit),
        ).fetchall()
        return [int(r[0]) for r in rows]

    def items_by_text(self, text: str, limit: int) -> list[int]:
        """Ids of the items with ``text`` in their title or publisher, newest first."""
        pattern = f"%{text}%"
        rows = self._conn.execute(
            "SELECT id FROM items WHERE LOWER(title_raw) LIKE LOWER(?)"
            " OR LOWER(publisher) LIKE LOWER(?)"
            " ORDER BY published_at DESC, id DESC LIMIT ?",
            (pattern, pattern, limit),
        ).fetchall()
        return [int(r[0]) for r in rows]

    def item_record(self, item_id: int) -> dict[str, Any] | None:
        """Every stored column of an item with its feed, org, body digest and run time,
        evidence decoded (``evidence``); None when there is no such item."""
        cursor = self._conn.execute(_ITEM_SQL + " WHERE i.id = ?", (item_id,))
        names = [d[0] for d in cursor.description]
        row = cursor.fetchone()
        if row is None:
            return None
        record = dict(zip(names, row, strict=True))
        record["evidence"] = json.loads(record.pop("evidence_json") or "{}")
        return record

    def duplicate_ids(self, item_id: int) -> list[int]:
        """Ids of the duplicates pointing at ``item_id``, oldest first."""
        return [
            int(row[0])
            for row in self._conn.execute(
                "SELECT id FROM items WHERE matched_item_id = ? AND id != ?"
                " AND decision = 'duplicate' ORDER BY published_at, id",
                (item_id, item_id),
            )
        ]

    # ---- the review page ---------------------------------------------------------------

    def recent_runs(self, limit: int = 50) -> list[RunRow]:
        """The newest ``limit`` runs, newest first."""
        rows = self._conn.execute(f"{_RUN_SELECT} ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        return [_run(row) for row in rows]

    def get_run(self, run_id: int) -> RunRow | None:
        """One run, or None."""
        row = self._conn.execute(f"{_RUN_SELECT} WHERE id = ?", (run_id,)).fetchone()
        return _run(row) if row else None

    def run_items(self, run_id: int) -> list[ItemRow]:
        """Every item stored by a run, oldest first."""
        rows = self._conn.execute(
            f"{_ITEM_ROW_SELECT} WHERE i.run_id = ? ORDER BY i.published_at, i.id", (run_id,)
        ).fetchall()
        return [ItemRow(*row) for row in rows]

    def item_rows(self, item_ids: Sequence[int]) -> list[ItemRow]:
        """The items among ``item_ids`` that exist, in the given order."""
        found: dict[int, ItemRow] = {}
        ids = list(dict.fromkeys(item_ids))
        for chunk in chunks(ids):
            marks = ",".join("?" * len(chunk))
            for row in self._conn.execute(f"{_ITEM_ROW_SELECT} WHERE i.id IN ({marks})", chunk):
                found[row[0]] = ItemRow(*row)
        return [found[item_id] for item_id in ids if item_id in found]

    def token_identity(self, token_hash: str) -> tuple[str, str] | None:
        """(org, label) of the live token with this SHA-256, or None. A token created
        without a label is named by its id."""
        row = self._conn.execute(
            "SELECT o.name, t.label, t.id FROM org_tokens t JOIN orgs o ON o.id = t.org_id"
            " WHERE t.token_hash = ? AND t.revoked_at IS NULL",
            (token_hash,),
        ).fetchone()
        if row is None:
            return None
        return str(row[0]), str(row[1] or f"token {row[2]}")

    # ---- overrides ---------------------------------------------------------------------

    def restore_item(self, item_id: int, who: str, now: datetime) -> tuple[Override, set[str]]:
        """ "Not a duplicate": mark a duplicate kept (rule ``override``, no match, no score)
        and record the override; the item waits for its event (the next runs of its org
        with events on place it); return the override and the feeds whose files change."""
        with transaction(self._db) as conn:
            item = _state(conn, item_id)
            if item.decision != "duplicate" or item.matched_item_id is None:
                raise OverrideError(f"item {item_id} is {item.decision}, not a duplicate")
            other = _state(conn, item.matched_item_id)
            record = _record(conn, "not_duplicate", item, other.id, who, now)
            conn.execute(
                "UPDATE items SET decision = 'kept', rule = ?, score = NULL, threshold = NULL,"
                " matched_item_id = NULL WHERE id = ?",
                (OVERRIDE_RULE, item_id),
            )
            add_item_keys(conn, [item_id])
            add_pending(conn, [item_id], RESTORED, now)  # its event: the next runs
        return record, {item.feed, other.feed}

    def merge_item(
        self, item_id: int, canonical_id: int, who: str, now: datetime
    ) -> tuple[Override, set[str]]:
        """ "Merge": mark a kept item a duplicate of ``canonical_id`` (followed to its kept
        item), point its duplicates at the canonical too, cancel its webhook messages not
        yet sent; return the override and the feeds whose files change."""
        with transaction(self._db) as conn:
            item = _state(conn, item_id)
            if item.decision != "kept":
                raise OverrideError(f"item {item_id} is {item.decision}: only a kept item merges")
            canonical = _state(conn, canonical_id)
            if canonical.decision == "duplicate" and canonical.matched_item_id is not None:
                canonical = _state(conn, canonical.matched_item_id)
            if canonical.decision != "kept":
                raise OverrideError(f"item {canonical.id} is {canonical.decision}: not a canonical")
            if canonical.id == item.id:
                raise OverrideError(f"item {item_id} cannot merge into itself")
            if canonical.org_id != item.org_id:
                raise OverrideError(f"items {item_id} and {canonical.id} are in different orgs")
            record = _record(conn, "merge", item, canonical.id, who, now)
            drop_item_keys(conn, [item_id])
            conn.execute(
                "UPDATE items SET decision = 'duplicate', rule = ?, score = NULL,"
                " threshold = NULL, matched_item_id = ? WHERE id = ?",
                (OVERRIDE_RULE, canonical.id, item_id),
            )
            followers = [
                row[0]
                for row in conn.execute(
                    "SELECT DISTINCT f.name FROM items i JOIN feeds f ON f.id = i.feed_id"
                    " WHERE i.matched_item_id = ? AND i.decision = 'duplicate'",
                    (item_id,),
                )
            ]
            conn.execute(
                "UPDATE items SET matched_item_id = ? WHERE matched_item_id = ?"
                " AND decision = 'duplicate'",
                (canonical.id, item_id),
            )
            conn.execute(
                "UPDATE deliveries SET status = 'failed', next_attempt_at = NULL,"
                " last_error = ? WHERE item_id = ? AND status = 'pending'"
                " AND endpoint_id IS NOT NULL AND batch = 0",
                (f"cancelled: merged into item {canonical.id} by {who}", item_id),
            )
            # and the correction batches that carry only it (queued by a restore)
            conn.execute(
                "UPDATE deliveries SET status = 'failed', next_attempt_at = NULL,"
                " last_error = ? WHERE status = 'pending' AND batch = 1"
                " AND override_id IS NOT NULL AND id IN"
                " (SELECT delivery_id FROM webhook_batch_items WHERE item_id = ?)",
                (f"cancelled: merged into item {canonical.id} by {who}", item_id),
            )
        return record, {item.feed, canonical.feed, *followers}

    def overrides_of(self, item_id: int) -> list[Override]:
        """Every override made on ``item_id`` or naming it as the other item, oldest first."""
        rows = self._conn.execute(
            "SELECT id, kind, item_id, other_item_id, previous_json, created_by, created_at"
            " FROM overrides WHERE item_id = ?1 OR other_item_id = ?1 ORDER BY id",
            (item_id,),
        ).fetchall()
        return [
            Override(row[0], row[1], row[2], row[3], json.loads(row[4]), row[5], parse_iso(row[6]))
            for row in rows
        ]

    def override_pairs(self) -> list[OverridePair]:
        """Every recorded override as the (feed, entry id) pair it joined or parted, oldest
        first."""
        rows = self._conn.execute(
            "SELECT o.kind, fa.name, a.entry_id, fb.name, b.entry_id FROM overrides o"
            " JOIN items a ON a.id = o.item_id JOIN feeds fa ON fa.id = a.feed_id"
            " JOIN items b ON b.id = o.other_item_id JOIN feeds fb ON fb.id = b.feed_id"
            " ORDER BY o.id"
        ).fetchall()
        return [OverridePair(row[0], (row[1], row[2]), (row[3], row[4])) for row in rows]

    def body_markdown(self, item_ids: Sequence[int]) -> dict[int, str]:
        """{item id: the Markdown of its scraped body} for the items among ``item_ids`` that
        have one (the review page shows two bodies side by side)."""
        found: dict[int, str] = {}
        for chunk in chunks(list(dict.fromkeys(item_ids))):
            marks = ",".join("?" * len(chunk))
            for item_id, markdown in self._conn.execute(
                f"SELECT i.id, b.markdown FROM items i JOIN bodies b ON b.id = i.body_id"
                f" WHERE i.id IN ({marks})",
                list(chunk),
            ):
                if markdown:
                    found[item_id] = markdown
        return found

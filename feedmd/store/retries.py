"""Retries of failed pages and feeds (issue 14): which failed items are due, every attempt,
the recovered items' new decisions, and the ``feedmd retry`` / review "Retry" action.

A run's retry writes go into the same transaction as its items (``RunWrites.persist``
calls ``_write_retries``): a recovered item's decision row, its attempt and its retry
record change together, or not at all.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from feedmd.models import Candidate, Decision, DueRetry, Entry, RetryBatch
from feedmd.store.runs import _item_refs
from feedmd.store.schema import Connected, Connection, chunks, transaction
from feedmd.timeutil import iso, parse_iso

# How many attempts an item's evidence lists (explain shows them); all stay in
# item_attempts.
EVIDENCE_ATTEMPTS = 20


class Retries(Connected):
    """Failed items' retries."""

    def due_retries(
        self, feeds: Iterable[str], now: datetime, window_starts: datetime, limit: int
    ) -> list[DueRetry]:
        """Failed items of these feeds whose retry is due and that are still inside their
        dedup window, the longest waiting first, at most ``limit``."""
        names = sorted(set(feeds))
        due: list[DueRetry] = []
        for chunk in chunks(names):
            if len(due) >= limit:
                break
            marks = ",".join("?" * len(chunk))
            rows = self._conn.execute(
                f"SELECT i.id, f.name, o.name, i.entry_id, i.link, i.url_raw, i.title_raw,"
                f" i.publisher, i.published_at, i.fetched_at, i.summary, i.link_resolution,"
                f" r.attempts, r.first_failed_at"
                f" FROM item_retries r JOIN items i ON i.id = r.item_id"
                f" JOIN feeds f ON f.id = i.feed_id JOIN orgs o ON o.id = i.org_id"
                f" WHERE f.name IN ({marks}) AND i.decision = 'failed'"
                f" AND r.next_attempt_at IS NOT NULL AND r.next_attempt_at <= ?"
                f" AND i.published_at >= ? ORDER BY r.next_attempt_at, i.id LIMIT ?",
                (*chunk, iso(now), iso(window_starts), limit - len(due)),
            ).fetchall()
            due += [_due(row) for row in rows]
        return due

    def schedule_retries(self, *, item_id: int | None = None, feed: str | None = None) -> int:
        """Make failed items due at once, given-up ones too (``feedmd retry``, the review
        page's "Retry"): one item, a feed's, or all (neither given). Due since their last
        attempt, so the next run takes them whatever time it runs as. Returns how many."""
        where, params = "i.decision = 'failed'", []
        if item_id is not None:
            where += " AND i.id = ?"
            params.append(item_id)
        if feed is not None:
            where += " AND i.feed_id = (SELECT id FROM feeds WHERE name = ?)"
            params.append(feed)
        with transaction(self._db) as conn:
            cursor = conn.execute(
                "INSERT INTO item_retries (item_id, attempts, first_failed_at,"
                " last_attempt_at, last_error, next_attempt_at)"
                " SELECT i.id, 1, i.fetched_at, i.fetched_at, i.error, i.fetched_at"
                f" FROM items i WHERE {where}"
                " ON CONFLICT (item_id) DO UPDATE SET"
                " next_attempt_at = item_retries.last_attempt_at, given_up = NULL",
                tuple(params),
            )
            return cursor.rowcount

    def feed_statuses(self) -> list[dict[str, Any]]:
        """Every stored feed with its org, poll interval, last fetch and status, last
        error, error streak and retry time (``feedmd feeds``)."""
        keys = (
            "name",
            "org",
            "url",
            "poll_minutes",
            "last_fetched_at",
            "last_status",
            "last_http_status",
            "last_error",
            "error_streak",
            "next_due_at",
        )
        rows = self._conn.execute(
            "SELECT f.name, o.name, f.url, f.poll_minutes, f.last_fetched_at, f.last_status,"
            " f.last_http_status, f.last_error, f.error_streak, f.next_due_at"
            " FROM feeds f JOIN orgs o ON o.id = f.org_id ORDER BY o.name, f.name"
        ).fetchall()
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def retry_state(self, item_id: int) -> dict[str, Any] | None:
        """An item's retry record with its attempts, oldest first (None if it never
        failed)."""
        row = self._conn.execute(
            "SELECT attempts, first_failed_at, last_attempt_at, last_http_status, last_error,"
            " next_attempt_at, given_up, recovered_at FROM item_retries WHERE item_id = ?",
            (item_id,),
        ).fetchone()
        if row is None:
            return None
        keys = (
            "attempts",
            "first_failed_at",
            "last_attempt_at",
            "last_http_status",
            "last_error",
            "next_attempt_at",
            "given_up",
            "recovered_at",
        )
        state: dict[str, Any] = dict(zip(keys, row, strict=True))
        state["history"] = [
            {"at": at, "run": run, "outcome": outcome, "http_status": status, "error": error}
            for at, run, outcome, status, error in self._conn.execute(
                "SELECT attempted_at, run_id, outcome, http_status, error FROM item_attempts"
                " WHERE item_id = ? ORDER BY id",
                (item_id,),
            )
        ]
        return state

    def _write_retries(
        self,
        conn: Connection,
        run_id: int,
        batch: RetryBatch,
        decisions: Mapping[str, Decision],
        candidates: Mapping[str, Candidate],
        ids: Mapping[str, int],
        body_ids: Mapping[tuple[str, str], int],
        now: datetime,
    ) -> tuple[list[int], int]:
        """Inside ``persist``'s transaction: record every attempt, update the recovered
        items' decisions, give up the waiting retries of items that left their window.
        Returns the recovered items now kept (to deliver) and how many retries expired."""
        when = iso(now)
        kept: list[int] = []
        for attempt in batch.attempts:
            item_id = attempt.item_id if attempt.item_id is not None else ids[attempt.key]
            conn.execute(
                "INSERT INTO item_attempts (item_id, run_id, attempted_at, outcome,"
                " http_status, error) VALUES (?, ?, ?, ?, ?, ?)",
                (item_id, run_id, when, attempt.outcome, attempt.http_status, attempt.error),
            )
            if attempt.outcome == "recovered":
                decision = decisions[attempt.key]
                self._recover(
                    conn, run_id, item_id, decision, candidates[attempt.key], ids, body_ids
                )
                conn.execute(
                    "UPDATE item_retries SET last_attempt_at = ?, next_attempt_at = NULL,"
                    " given_up = NULL, recovered_at = ? WHERE item_id = ?",
                    (when, when, item_id),
                )
                if decision.decision == "kept":
                    kept.append(item_id)
            else:
                verdict = attempt.verdict
                conn.execute(
                    "INSERT INTO item_retries (item_id, attempts, first_failed_at,"
                    " last_attempt_at, last_http_status, last_error, next_attempt_at, given_up)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (item_id) DO UPDATE SET"
                    " attempts = excluded.attempts, last_attempt_at = excluded.last_attempt_at,"
                    " last_http_status = excluded.last_http_status,"
                    " last_error = excluded.last_error,"
                    " next_attempt_at = excluded.next_attempt_at, given_up = excluded.given_up",
                    (
                        item_id,
                        attempt.attempts,
                        iso(attempt.first_seen),
                        when,
                        attempt.http_status,
                        attempt.error,
                        iso(verdict.retry_at) if verdict and verdict.retry_at else None,
                        verdict.gave_up if verdict else None,
                    ),
                )
                if attempt.item_id is not None:
                    conn.execute(
                        "UPDATE items SET error = ? WHERE id = ?", (attempt.error, item_id)
                    )
            self._note_attempts(conn, item_id)
        expired = 0
        if batch.window_starts is not None and batch.feeds:
            for chunk in chunks(sorted(batch.feeds)):
                marks = ",".join("?" * len(chunk))
                expired += conn.execute(
                    f"UPDATE item_retries SET next_attempt_at = NULL,"
                    f" given_up = 'left its dedup window' WHERE next_attempt_at IS NOT NULL"
                    f" AND item_id IN (SELECT i.id FROM items i JOIN feeds f ON f.id = i.feed_id"
                    f" WHERE f.name IN ({marks}) AND i.decision = 'failed'"
                    f" AND i.published_at < ?)",
                    (*chunk, iso(batch.window_starts)),
                ).rowcount
        return kept, expired

    def _recover(
        self,
        conn: Connection,
        run_id: int,
        item_id: int,
        decision: Decision,
        candidate: Candidate,
        ids: Mapping[str, int],
        body_ids: Mapping[tuple[str, str], int],
    ) -> None:
        """A failed item's page came: its decision row becomes the new decision, stored by
        this run (so it is delivered, and batched, with this run's items)."""
        row = conn.execute("SELECT evidence_json FROM items WHERE id = ?", (item_id,)).fetchone()
        old = json.loads(row[0] or "{}")
        old.pop("http_status", None)
        evidence = _item_refs({**old, **decision.evidence}, ids)
        matched = decision.matched
        matched_id = (
            (matched.item_id if matched.item_id is not None else ids.get(matched.batch_key or ""))
            if matched is not None
            else None
        )
        body_id = body_ids.get((candidate.entry.org, candidate.page_key))
        conn.execute(
            "UPDATE items SET run_id = ?, stage = ?, decision = ?, rule = ?, score = ?,"
            " threshold = ?, matched_item_id = ?, evidence_json = ?, error = NULL, body_id = ?"
            " WHERE id = ?",
            (
                run_id,
                decision.stage,
                decision.decision,
                decision.rule,
                decision.score,
                decision.threshold,
                matched_id,
                json.dumps(evidence, ensure_ascii=False, sort_keys=True),
                body_id if decision.stage != "stage1" else None,
                item_id,
            ),
        )

    def _note_attempts(self, conn: Connection, item_id: int) -> None:
        """Copy the item's retry record into its evidence (``retries``), so ``feedmd
        explain`` and the review page show the attempts with the decision."""
        state = conn.execute(
            "SELECT attempts, next_attempt_at, given_up, recovered_at FROM item_retries"
            " WHERE item_id = ?",
            (item_id,),
        ).fetchone()
        history = [
            {"at": at, "run": run, "outcome": outcome, "error": error}
            for at, run, outcome, error in conn.execute(
                "SELECT attempted_at, run_id, outcome, error FROM item_attempts"
                " WHERE item_id = ? ORDER BY id DESC LIMIT ?",
                (item_id, EVIDENCE_ATTEMPTS),
            )
        ][::-1]
        summary = {
            "failed_attempts": state[0] if state else 0,
            "next_attempt_at": state[1] if state else None,
            "given_up": state[2] if state else None,
            "recovered_at": state[3] if state else None,
            "attempts": history,
        }
        row = conn.execute("SELECT evidence_json FROM items WHERE id = ?", (item_id,)).fetchone()
        evidence = json.loads(row[0] or "{}")
        evidence["retries"] = {k: v for k, v in summary.items() if v is not None}
        conn.execute(
            "UPDATE items SET evidence_json = ? WHERE id = ?",
            (json.dumps(evidence, ensure_ascii=False, sort_keys=True), item_id),
        )


def _due(row: Sequence[Any]) -> DueRetry:
    entry = Entry(
        feed=row[1],
        org=row[2],
        entry_id=row[3],
        link=row[4],
        url=row[5],
        title=row[6],
        publisher=row[7],
        published=parse_iso(row[8]),
        fetched=parse_iso(row[9]),
        summary=row[10] or "",
        link_resolution=row[11],
    )
    return DueRetry(
        item_id=int(row[0]), entry=entry, attempts=int(row[12]), first_failed_at=parse_iso(row[13])
    )

"""Webhook endpoints and the webhook delivery queue: what is due, claimed, delivered or
failed, and each endpoint's run of failures."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from feedmd.store.claims import claiming, skip_locked
from feedmd.store.schema import Connected, chunks, inserted_id, transaction
from feedmd.timeutil import iso, parse_iso

WEBHOOK_TARGET = "webhook:"
BATCH_TARGET = "webhook-batch:"
REMOVED_REASON = "removed from the configuration"
# A message queued because an override made its item kept again: target suffix
OVERRIDE_TARGET = "/override:"


@dataclass(frozen=True)
class EndpointSpec:
    """A configured webhook endpoint: ``scope`` 'org' or 'feed', the name of the
    environment variable holding its ``whsec_`` secret (never the secret itself), and
    ``batch``: one message per run with all its items instead of one per item."""

    url: str
    scope: str
    scope_name: str
    secret_env: str
    batch: bool = False


@dataclass(frozen=True)
class Endpoint:
    """A stored webhook endpoint with its failure state."""

    id: int
    url: str
    scope: str
    scope_name: str
    secret_env: str
    consecutive_failures: int
    paused_until: datetime | None
    disabled_at: datetime | None
    disabled_reason: str | None
    batch: bool = False


@dataclass(frozen=True)
class PendingDelivery:
    """One webhook message waiting for its next attempt (for a batch, ``item_id`` is its
    lowest item id)."""

    id: int
    item_id: int
    endpoint_id: int
    message_id: str
    payload: str
    attempts: int
    deadline: datetime


@dataclass(frozen=True)
class DeliveryRow:
    """A webhook delivery as ``feedmd deliveries`` lists it. A batch message has
    ``batch_items`` > 0, its lowest item as ``item_id`` and a title naming its run."""

    id: int
    message_id: str
    item_id: int
    title: str
    endpoint_id: int
    endpoint_url: str
    endpoint_disabled: bool
    status: str
    attempts: int
    created_at: str
    next_attempt_at: str | None
    delivered_at: str | None
    last_http_status: int | None
    last_error: str | None
    batch_items: int = 0


_ENDPOINT_SELECT = (
    "SELECT id, url, scope, scope_name, secret_env, consecutive_failures, paused_until,"
    " disabled_at, disabled_reason, batch FROM webhook_endpoints"
)


def _endpoint(row: Any) -> Endpoint:
    return Endpoint(
        id=row[0],
        url=row[1],
        scope=row[2],
        scope_name=row[3],
        secret_env=row[4],
        consecutive_failures=row[5],
        paused_until=parse_iso(row[6]) if row[6] else None,
        disabled_at=parse_iso(row[7]) if row[7] else None,
        disabled_reason=row[8],
        batch=bool(row[9]),
    )


_ITEM_ENDPOINTS = (
    "SELECT i.id, e.id, i.run_id FROM items i JOIN feeds f ON f.id = i.feed_id"
    " JOIN orgs o ON o.id = i.org_id JOIN webhook_endpoints e"
    " ON (e.scope = 'feed' AND e.scope_name = f.name)"
    " OR (e.scope = 'org' AND e.scope_name = o.name)"
)


class Queue(Connected):
    """Webhook endpoints and their messages."""

    def add_endpoint(self, spec: EndpointSpec, now: datetime) -> Endpoint:
        """Create or update an endpoint (its secret variable and batch mode may change; the
        messages already queued keep the form they were queued in); return it.

        An endpoint that was removed from the configuration and comes back is enabled again.
        """
        with transaction(self._db) as conn:
            conn.execute(
                "INSERT INTO webhook_endpoints (url, scope, scope_name, secret_env, batch,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(url, scope, scope_name)"
                " DO UPDATE SET secret_env = excluded.secret_env, batch = excluded.batch",
                (spec.url, spec.scope, spec.scope_name, spec.secret_env, int(spec.batch), iso(now)),
            )
            conn.execute(
                "UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL"
                " WHERE url = ? AND scope = ? AND scope_name = ? AND disabled_reason = ?",
                (spec.url, spec.scope, spec.scope_name, REMOVED_REASON),
            )
            row = conn.execute(
                f"{_ENDPOINT_SELECT} WHERE url = ? AND scope = ? AND scope_name = ?",
                (spec.url, spec.scope, spec.scope_name),
            ).fetchone()
        return _endpoint(row)

    def sync_endpoints(self, specs: Iterable[EndpointSpec], now: datetime) -> list[Endpoint]:
        """Make the stored endpoints match the configuration: add new ones, disable those no
        longer configured (their pending messages stay, and resume if the endpoint returns)."""
        kept = [self.add_endpoint(spec, now) for spec in specs]
        keep_ids = {endpoint.id for endpoint in kept}
        with transaction(self._db) as conn:
            for endpoint in self.list_endpoints():
                if endpoint.id not in keep_ids and endpoint.disabled_at is None:
                    conn.execute(
                        "UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ?"
                        " WHERE id = ?",
                        (iso(now), REMOVED_REASON, endpoint.id),
                    )
        return kept

    def list_endpoints(self) -> list[Endpoint]:
        """Every stored endpoint, enabled or not."""
        return [_endpoint(row) for row in self._conn.execute(f"{_ENDPOINT_SELECT} ORDER BY id")]

    def ready_endpoints(self, now: datetime) -> list[Endpoint]:
        """Enabled endpoints not paused after a failure, with a message due."""
        rows = self._conn.execute(
            f"{_ENDPOINT_SELECT} WHERE disabled_at IS NULL"
            " AND (paused_until IS NULL OR paused_until <= ?)"
            " AND id IN (SELECT endpoint_id FROM deliveries WHERE status = 'pending'"
            " AND next_attempt_at <= ?) ORDER BY id",
            (iso(now), iso(now)),
        ).fetchall()
        return [_endpoint(row) for row in rows]

    def enable_endpoint(self, endpoint_id: int, now: datetime, retry_hours: float) -> int | None:
        """Enable an endpoint again; its pending messages are due now with a fresh retry
        window. Returns how many messages are pending, or None for an unknown endpoint."""
        with transaction(self._db) as conn:
            cursor = conn.execute(
                "UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL,"
                " consecutive_failures = 0, paused_until = NULL WHERE id = ?",
                (endpoint_id,),
            )
            if cursor.rowcount == 0:
                return None
            cursor = conn.execute(
                "UPDATE deliveries SET next_attempt_at = ?, deadline_at = ?"
                " WHERE endpoint_id = ? AND status = 'pending'",
                (iso(now), iso(now + timedelta(hours=retry_hours)), endpoint_id),
            )
            return cursor.rowcount

    def record_endpoint_success(self, endpoint_id: int) -> None:
        """A delivery worked: the endpoint's run of failures ends."""
        with transaction(self._db) as conn:
            conn.execute(
                "UPDATE webhook_endpoints SET consecutive_failures = 0, paused_until = NULL"
                " WHERE id = ?",
                (endpoint_id,),
            )

    def record_endpoint_failure(
        self,
        endpoint_id: int,
        paused_until: datetime,
        disable_after: int,
        now: datetime,
    ) -> bool:
        """Count a failed attempt against the endpoint, pause it, and disable it when the run
        of failures reaches ``disable_after``. Returns True when it was disabled now."""
        with transaction(self._db) as conn:
            conn.execute(
                "UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1,"
                " paused_until = ? WHERE id = ?",
                (iso(paused_until), endpoint_id),
            )
            failures = conn.execute(
                "SELECT consecutive_failures FROM webhook_endpoints WHERE id = ?", (endpoint_id,)
            ).fetchone()[0]
            if failures < disable_after:
                return False
            conn.execute(
                "UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ? WHERE id = ?",
                (iso(now), f"{failures} consecutive failed attempts", endpoint_id),
            )
            return True

    def _item_endpoints(
        self, item_ids: Sequence[int], batch: bool
    ) -> Iterable[tuple[int, int, int]]:
        """(item id, endpoint id, item's run id) for each kept item among ``item_ids`` and each
        configured endpoint of its feed or org in the given mode."""
        for chunk in chunks(list(item_ids)):
            marks = ",".join("?" * len(chunk))
            yield from self._conn.execute(
                f"{_ITEM_ENDPOINTS} WHERE i.id IN ({marks}) AND i.decision = 'kept'"
                " AND e.batch = ? AND COALESCE(e.disabled_reason, '') != ? ORDER BY i.id, e.id",
                (*chunk, int(batch), REMOVED_REASON),
            )

    def endpoints_for_items(self, item_ids: Sequence[int]) -> dict[int, list[int]]:
        """{item id: ids of the per-item endpoints (of its feed or its org) that should
        receive it}. Batch endpoints are left to ``batches_for_items``."""
        targets: dict[int, list[int]] = {}
        for item_id, endpoint_id, _run_id in self._item_endpoints(item_ids, batch=False):
            targets.setdefault(item_id, []).append(endpoint_id)
        return targets

    def batches_for_items(self, item_ids: Sequence[int]) -> dict[tuple[int, int], list[int]]:
        """{(batch endpoint id, run id): the item ids it should carry}, ascending.

        Items are grouped by the run that *stored* them, not the run delivering them: a run
        recovering a killed run's items then finds that run's batch instead of making another.
        """
        batches: dict[tuple[int, int], list[int]] = {}
        for item_id, endpoint_id, run_id in self._item_endpoints(item_ids, batch=True):
            batches.setdefault((endpoint_id, run_id), []).append(item_id)
        return batches

    def enqueue(
        self,
        messages: Iterable[tuple[int, int, str, str]],
        now: datetime,
        retry_hours: float,
        override_id: int | None = None,
    ) -> int:
        """Queue (item id, endpoint id, message id, payload) messages, due now; an item is
        queued once per endpoint, ever, and once more per override that made it kept again
        (``override_id``). Returns how many were new."""
        suffix = f"{OVERRIDE_TARGET}{override_id}" if override_id is not None else ""
        rows = [
            (item_id, f"{WEBHOOK_TARGET}{endpoint_id}{suffix}", endpoint_id, message_id, payload)
            for item_id, endpoint_id, message_id, payload in messages
        ]
        created, deadline = iso(now), iso(now + timedelta(hours=retry_hours))
        with transaction(self._db) as conn:
            cursor = conn.executemany(
                "INSERT INTO deliveries (item_id, run_id, target, status, attempts,"
                " created_at, endpoint_id, message_id, payload, next_attempt_at, deadline_at,"
                " override_id)"
                " SELECT ?1, run_id, ?2, 'pending', 0, ?6, ?3, ?4, ?5, ?6, ?7, ?8"
                " FROM items WHERE id = ?1 ON CONFLICT DO NOTHING",
                [(*row, created, deadline, override_id) for row in rows],
            )
            return cursor.rowcount

    def enqueue_batches(
        self,
        batches: Iterable[tuple[int, int, str, str, Sequence[int]]],
        now: datetime,
        retry_hours: float,
        override_id: int | None = None,
    ) -> int:
        """Queue (endpoint id, run id, message id, payload, item ids) batch messages, due now;
        a run is queued once per endpoint, ever, and a correction batch once per endpoint
        and override (the ``deliveries_batch_run`` index: an existing batch keeps its
        message id and body). Returns how many were new."""
        created, deadline = iso(now), iso(now + timedelta(hours=retry_hours))
        suffix = f"{OVERRIDE_TARGET}{override_id}" if override_id is not None else ""
        new = 0
        with transaction(self._db) as conn:
            for endpoint_id, run_id, message_id, payload, item_ids in batches:
                delivery_id = inserted_id(
                    conn,
                    "INSERT INTO deliveries (item_id, run_id, target, status, attempts,"
                    " created_at, endpoint_id, message_id, payload, next_attempt_at, deadline_at,"
                    " batch, override_id) VALUES (?, ?, ?, 'pending', 0, ?, ?, ?, ?, ?, ?, 1, ?)"
                    " ON CONFLICT DO NOTHING",
                    (
                        min(item_ids),
                        run_id,
                        f"{BATCH_TARGET}{endpoint_id}{suffix}",
                        created,
                        endpoint_id,
                        message_id,
                        payload,
                        created,
                        deadline,
                        override_id,
                    ),
                )
                if delivery_id is None:
                    continue
                new += 1
                conn.executemany(
                    "INSERT INTO webhook_batch_items (delivery_id, item_id) VALUES (?, ?)",
                    [(delivery_id, item_id) for item_id in sorted(set(item_ids))],
                )
        return new

    def batch_items(self, delivery_id: int) -> list[int]:
        """The item ids a batch message carries, ascending (empty for a per-item message)."""
        return [
            row[0]
            for row in self._conn.execute(
                "SELECT item_id FROM webhook_batch_items WHERE delivery_id = ? ORDER BY item_id",
                (delivery_id,),
            )
        ]

    def claim_next_delivery(
        self, endpoint_id: int, now: datetime, until: datetime
    ) -> PendingDelivery | None:
        """Claim the endpoint's oldest message due at ``now`` until ``until`` and return it,
        or None when none is due. One statement: two delivery passes (two workers, a run's
        step 6 beside a worker) never take the same message, and neither waits for the
        other on PostgreSQL (``FOR UPDATE SKIP LOCKED``); a crash mid-attempt only delays
        the message to ``until``, when it is sent again with the same id."""
        with claiming(self._db) as conn:
            row = conn.execute(
                "UPDATE deliveries SET next_attempt_at = ? WHERE id IN (SELECT id FROM deliveries"
                " WHERE endpoint_id = ? AND status = 'pending' AND next_attempt_at <= ?"
                f" ORDER BY next_attempt_at, id LIMIT 1{skip_locked(conn)})"
                " RETURNING id, item_id, endpoint_id, message_id, payload, attempts, deadline_at",
                (iso(until), endpoint_id, iso(now)),
            ).fetchone()
        if row is None:
            return None
        return PendingDelivery(
            id=row[0],
            item_id=row[1],
            endpoint_id=row[2],
            message_id=row[3],
            payload=row[4],
            attempts=row[5],
            deadline=parse_iso(row[6]),
        )

    def record_delivered(self, delivery_id: int, http_status: int, now: datetime) -> None:
        """The receiver answered 2xx: the message is delivered."""
        with transaction(self._db) as conn:
            conn.execute(
                "UPDATE deliveries SET status = 'delivered', attempts = attempts + 1,"
                " delivered_at = ?, last_attempt_at = ?, last_http_status = ?, last_error = NULL,"
                " next_attempt_at = NULL WHERE id = ?",
                (iso(now), iso(now), http_status, delivery_id),
            )

    def record_failed_attempt(
        self,
        delivery_id: int,
        http_status: int | None,
        error: str,
        now: datetime,
        next_attempt: datetime | None,
    ) -> None:
        """Record a failed attempt: retried at ``next_attempt``, or given up on (None)."""
        status = "pending" if next_attempt is not None else "failed"
        with transaction(self._db) as conn:
            conn.execute(
                "UPDATE deliveries SET status = ?, attempts = attempts + 1, last_attempt_at = ?,"
                " last_http_status = ?, last_error = ?, next_attempt_at = ? WHERE id = ?",
                (
                    status,
                    iso(now),
                    http_status,
                    error[:500],
                    iso(next_attempt) if next_attempt else None,
                    delivery_id,
                ),
            )

    def pending_count(self) -> int:
        """How many webhook messages wait for an attempt."""
        row = self._conn.execute(
            "SELECT COUNT(*) FROM deliveries WHERE endpoint_id IS NOT NULL AND status = 'pending'"
        ).fetchone()
        return int(row[0])

    def list_deliveries(self, status: str | None = None, limit: int = 100) -> list[DeliveryRow]:
        """The newest webhook deliveries (of one status), with their endpoint's state; a batch
        is titled by its run and size."""
        rows = self._conn.execute(
            "SELECT d.id, d.message_id, d.item_id, i.title_raw, e.id, e.url,"
            " e.disabled_at IS NOT NULL, d.status, d.attempts, d.created_at, d.next_attempt_at,"
            " d.delivered_at, d.last_http_status, d.last_error, d.run_id,"
            " (SELECT COUNT(*) FROM webhook_batch_items b WHERE b.delivery_id = d.id)"
            " FROM deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id"
            " JOIN items i ON i.id = d.item_id"
            " WHERE (CAST(?1 AS TEXT) IS NULL OR d.status = ?1) ORDER BY d.id DESC LIMIT ?2",
            (status, limit),
        ).fetchall()
        return [
            DeliveryRow(
                id=row[0],
                message_id=row[1],
                item_id=row[2],
                title=f"batch of {row[15]} items of run {row[14]}" if row[15] else row[3],
                endpoint_id=row[4],
                endpoint_url=row[5],
                endpoint_disabled=bool(row[6]),
                status=row[7],
                attempts=row[8],
                created_at=row[9],
                next_attempt_at=row[10],
                delivered_at=row[11],
                last_http_status=row[12],
                last_error=row[13],
                batch_items=row[15],
            )
            for row in rows
        ]

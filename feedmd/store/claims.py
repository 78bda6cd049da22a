"""Worker claims: which ``feedmd worker`` works on which org, until when.

Any number of worker processes, on any number of machines, share one database. A worker
claims one org at a time (the org is the unit of decisions: two runs must never decide one
org's entries at once), runs the org's due feeds and gives the claim back. Claiming is one
statement, ``UPDATE ... WHERE org_id IN (SELECT ... LIMIT 1) RETURNING``, that picks a
claimable org and marks it taken. On PostgreSQL it runs on its own (READ COMMITTED, outside
the store's writer lock) with ``FOR UPDATE SKIP LOCKED`` in the inner SELECT: two workers
claiming at once each get a different org and neither waits for the other. On SQLite it runs
inside ``BEGIN IMMEDIATE``: one writer at a time, so the same statement is exclusive.

A held claim expires unless its worker renews it (a background thread, as run leases do):
the claim of a worker killed mid-run (SIGKILL, power loss) is taken over after the expiry,
or at once on the same host when its process is gone. Taking over a claim that was never
given back marks the org ``pending_recovery``: the next worker runs it even with no feed
due, so the run lease's recovery delivers what the dead worker stored.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from feedmd.store.dialect import POSTGRESQL, dialect_of
from feedmd.store.leases import HOST, process_exists
from feedmd.store.schema import Connected, Connection, Database, connect, transaction
from feedmd.timeutil import iso, utcnow


@dataclass(frozen=True)
class OrgClaim:
    """A claim a worker holds on one org: ``recovering`` when it took the claim over from a
    worker that never gave it back (the org is then run even with nothing due)."""

    org: str
    owner: str
    worker: str
    expires_at: datetime
    recovering: bool


@dataclass(frozen=True)
class ClaimRow:
    """One org's claim as ``org_claims`` holds it (``owner`` None: free)."""

    org: str
    owner: str | None
    worker: str | None
    host: str | None
    pid: int | None
    claimed_at: str | None
    expires_at: str | None
    not_before: str | None
    pending_recovery: bool


class Claims(Connected):
    """Claiming, renewing and giving back orgs between workers."""

    def add_claim_rows(self) -> int:
        """Give every stored org its claim row (free); return how many were new. Idempotent:
        every worker calls it at start and after the configuration added orgs."""
        with transaction(self._db) as conn:
            cursor = conn.execute(
                # WHERE: SQLite reads ON after a bare FROM as a join's constraint
                "INSERT INTO org_claims (org_id, pending_recovery) SELECT id, 0 FROM orgs"
                " WHERE id IS NOT NULL ON CONFLICT (org_id) DO NOTHING"
            )
            return max(cursor.rowcount, 0)

    def claim_org(
        self,
        orgs: Sequence[str],
        due: Sequence[str],
        worker: str,
        now: datetime,
        seconds: float,
        pid: int,
    ) -> OrgClaim | None:
        """Claim one org among ``orgs`` (the worker's configuration) for ``seconds``, or
        return None when none is claimable. Claimable: free and due (named in ``due``) or
        waiting for recovery, and not held back after a failed run; or held by a claim that
        expired. On this host, a claim whose process is gone counts as expired at once.

        Among the claimable orgs, the one waiting for recovery comes first, then the one
        claimed longest ago (never claimed first): every due org gets its turn."""
        if not orgs:
            return None
        owner = f"{worker}:{secrets.token_hex(6)}"
        expires = now + timedelta(seconds=seconds)
        stamp = iso(now)
        org_marks = ",".join("?" * len(orgs))
        due_marks = ",".join("?" * len(due)) or "NULL"
        with claiming(self._db) as conn:
            self._expire_dead_local_claims(conn, stamp)
            row = conn.execute(
                "UPDATE org_claims SET owner = ?, worker = ?, host = ?, pid = ?, claimed_at = ?,"
                " expires_at = ?, not_before = NULL,"
                " pending_recovery = CASE WHEN owner IS NULL THEN pending_recovery ELSE 1 END"
                " WHERE org_id IN (SELECT c.org_id FROM org_claims c JOIN orgs o"
                f" ON o.id = c.org_id WHERE o.name IN ({org_marks}) AND ((c.owner IS NULL"
                f" AND (c.pending_recovery = 1 OR o.name IN ({due_marks}))"
                " AND (c.not_before IS NULL OR c.not_before <= ?))"
                " OR (c.owner IS NOT NULL AND c.expires_at <= ?))"
                " ORDER BY c.pending_recovery DESC, COALESCE(c.claimed_at, ''), c.org_id"
                f" LIMIT 1{skip_locked(conn, 'c')})"
                " RETURNING org_id, pending_recovery",
                (owner, worker, HOST, pid, stamp, iso(expires), *orgs, *due, stamp, stamp),
            ).fetchone()
            if row is None:
                return None
            name = conn.execute("SELECT name FROM orgs WHERE id = ?", (row[0],)).fetchone()[0]
        return OrgClaim(
            org=str(name),
            owner=owner,
            worker=worker,
            expires_at=expires,
            recovering=bool(row[1]),
        )

    def _expire_dead_local_claims(self, conn: Connection, stamp: str) -> None:
        """Claims held on this host by a process that is gone end now, not at their expiry
        (as run leases do): a worker killed here is taken over at once."""
        rows = conn.execute(
            "SELECT owner, pid FROM org_claims WHERE owner IS NOT NULL AND host = ?"
            " AND expires_at > ?",
            (HOST, stamp),
        ).fetchall()
        for owner, pid in rows:
            if pid is not None and not process_exists(int(pid)):
                conn.execute("UPDATE org_claims SET expires_at = ? WHERE owner = ?", (stamp, owner))

    def renew_claim(self, claim: OrgClaim, until: datetime) -> bool:
        """Push a held claim's expiry to ``until``; False when it is no longer held (it
        expired and another worker took it over)."""
        with claiming(self._db) as conn:
            cursor = conn.execute(
                "UPDATE org_claims SET expires_at = ? WHERE owner = ?", (iso(until), claim.owner)
            )
            return cursor.rowcount == 1

    def release_claim(
        self, claim: OrgClaim, *, recovered: bool, not_before: datetime | None = None
    ) -> bool:
        """Give a claim back. ``recovered``: the org's run completed, so no recovery waits
        any more; ``not_before``: the org is not claimed again before then (after a failed
        run). False when the claim was no longer held (taken over after its expiry)."""
        clear = ", pending_recovery = 0" if recovered else ""
        with claiming(self._db) as conn:
            cursor = conn.execute(
                "UPDATE org_claims SET owner = NULL, worker = NULL, host = NULL, pid = NULL,"
                f" expires_at = NULL, not_before = ?{clear} WHERE owner = ?",
                (iso(not_before) if not_before else None, claim.owner),
            )
            return cursor.rowcount == 1

    def org_claim_rows(self) -> list[ClaimRow]:
        """Every org's claim, by org name (what a worker's status and the tests read)."""
        rows = self._conn.execute(
            "SELECT o.name, c.owner, c.worker, c.host, c.pid, c.claimed_at, c.expires_at,"
            " c.not_before, c.pending_recovery FROM org_claims c JOIN orgs o ON o.id = c.org_id"
            " ORDER BY o.name"
        ).fetchall()
        return [ClaimRow(*row[:8], pending_recovery=bool(row[8])) for row in rows]

    @contextmanager
    def claim_renewed(self, claim: OrgClaim, seconds: float) -> Iterator[OrgClaim]:
        """Keep ``claim`` alive while the block runs: a background thread renews it every
        third of ``seconds`` on its own connection (a run's long scrape step must not lose
        the claim); a busy store skips one beat."""
        stop = threading.Event()
        beat = threading.Thread(
            target=self._renew_claim,
            args=(claim, self.path, seconds, stop),
            name=f"feedmd-claim-{claim.org}",
            daemon=True,
        )
        beat.start()
        try:
            yield claim
        finally:
            stop.set()
            beat.join()

    @staticmethod
    def _renew_claim(claim: OrgClaim, path: str, seconds: float, stop: threading.Event) -> None:
        if not path:
            return  # an in-memory store cannot be shared with another worker anyway
        other = Claims(connect(path))
        try:
            while not stop.wait(seconds / 3):
                try:
                    other.renew_claim(claim, utcnow() + timedelta(seconds=seconds))
                except Exception:  # a busy or briefly unreachable store: next beat
                    continue
        finally:
            other.close()


@contextmanager
def claiming(db: Database) -> Iterator[Connection]:
    """Where a claim's statements run. SQLite: one ``BEGIN IMMEDIATE`` transaction (the
    single writer makes the claim exclusive). PostgreSQL: no explicit transaction, so each
    statement commits on its own at READ COMMITTED, where ``FOR UPDATE SKIP LOCKED`` and
    row locks make a claim exclusive without the store's writer lock (a worker claiming
    does not wait for another worker's run to store its items)."""
    if dialect_of(db.conn) == POSTGRESQL:
        yield db.conn
        return
    with transaction(db) as conn:
        yield conn


def skip_locked(conn: Connection, table: str = "") -> str:
    """The row-locking clause of a claim's inner SELECT: ``FOR UPDATE [OF table] SKIP
    LOCKED`` on PostgreSQL (rows another claimer has locked are passed over; their claim
    decides them), nothing on SQLite, whose ``BEGIN IMMEDIATE`` already makes the claiming
    transaction the only writer."""
    if dialect_of(conn) != POSTGRESQL:
        return ""
    return f" FOR UPDATE{' OF ' + table if table else ''} SKIP LOCKED"

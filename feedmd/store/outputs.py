"""What deliver, serve and export read: feeds and their visibility, kept items as the outputs
render them (with their duplicates), org tokens; and the record of files delivered."""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from feedmd.store.events import EventInfo, events_of
from feedmd.store.schema import Connected, Connection, chunks, transaction
from feedmd.timeutil import iso, parse_iso

TOKEN_PREFIX = "fmd_"


@dataclass(frozen=True)
class AlsoPublished:
    """A duplicate of a kept item, shown as "also published by"."""

    item_id: int
    publisher: str
    url: str
    title: str
    rule: str
    score: float | None
    stage: str


@dataclass(frozen=True)
class Related:
    """Another stored item an output item points at (a possible duplicate)."""

    item_id: int
    feed: str
    org: str
    url: str
    title: str
    publisher: str


@dataclass(frozen=True)
class Verdict:
    """Stage 2's verdict on a kept item: 'different', 'similar', 'no digest', 'host
    furniture' or 'shared block' (a body many pages print: kept, compared by headline)."""

    tier: str | None
    rule: str | None
    score: float | None
    possible_duplicate_of: Related | None


@dataclass(frozen=True)
class OutputItem:
    """A kept item with everything the JSON Feed, Atom and webhook outputs show."""

    item_id: int
    feed: str
    org: str
    feed_title: str
    feed_url: str
    entry_id: str
    url: str
    title: str
    publisher: str
    summary: str
    published: datetime
    stored: datetime
    markdown: str
    also_published_by: tuple[AlsoPublished, ...]
    verdict: Verdict
    # the event the item belongs to (None: grouped by no run, events off or model absent)
    event: EventInfo | None = None


@dataclass(frozen=True)
class FeedRow:
    """A stored feed as the server lists it."""

    name: str
    org: str
    title: str
    url: str
    public: bool


_ITEM_SELECT = (
    "SELECT i.id, f.name, o.name, f.title, f.url, i.entry_id, i.url_raw, i.title_raw,"
    " i.publisher, i.summary, i.published_at, i.fetched_at, COALESCE(b.markdown, ''),"
    " i.evidence_json, i.rule, i.score, m.id, mf.name, mo.name, m.url_raw, m.title_raw,"
    " m.publisher"
    " FROM items i JOIN feeds f ON f.id = i.feed_id JOIN orgs o ON o.id = i.org_id"
    " LEFT JOIN bodies b ON b.id = i.body_id"
    " LEFT JOIN items m ON m.id = i.matched_item_id"
    " LEFT JOIN feeds mf ON mf.id = m.feed_id LEFT JOIN orgs mo ON mo.id = m.org_id"
)


# A feed in event_mode 'one-per-event' shows an item only when no earlier kept item of the
# same feed is in its event (published_at, then id, as the outputs order them).
ONE_PER_EVENT = (
    "(f.event_mode != 'one-per-event' OR NOT EXISTS (SELECT 1 FROM item_events e"
    " JOIN item_events e2 ON e2.event_id = e.event_id JOIN items i2 ON i2.id = e2.item_id"
    " WHERE e.item_id = i.id AND i2.feed_id = i.feed_id AND i2.decision = 'kept'"
    " AND (i2.published_at, i2.id) < (i.published_at, i.id)))"
)


def _with_duplicates(conn: Connection, rows: list[Any]) -> list[OutputItem]:
    also: dict[int, list[AlsoPublished]] = {row[0]: [] for row in rows}
    for chunk in chunks(list(also)):
        marks = ",".join("?" * len(chunk))
        for dup in conn.execute(
            "SELECT matched_item_id, id, publisher, url_raw, title_raw, rule, score, stage"
            f" FROM items WHERE decision = 'duplicate' AND matched_item_id IN ({marks})"
            " ORDER BY published_at, id",
            chunk,
        ):
            also[dup[0]].append(AlsoPublished(*dup[1:]))
    events = events_of(conn, list(also))
    return [_output_item(row, tuple(also[row[0]]), events.get(row[0])) for row in rows]


def _output_item(
    row: Any, also: tuple[AlsoPublished, ...], event: EventInfo | None = None
) -> OutputItem:
    evidence = json.loads(row[13] or "{}")
    tier = evidence.get("verdict")
    similar = tier == "similar" and row[16] is not None
    related = Related(row[16], row[17], row[18], row[19], row[20], row[21]) if similar else None
    return OutputItem(
        item_id=row[0],
        feed=row[1],
        org=row[2],
        feed_title=row[3],
        feed_url=row[4],
        entry_id=row[5],
        url=row[6],
        title=row[7],
        publisher=row[8],
        summary=row[9],
        published=parse_iso(row[10]),
        stored=parse_iso(row[11]),
        markdown=row[12],
        also_published_by=also,
        verdict=Verdict(
            tier=tier,
            rule=row[14] if similar else None,
            score=row[15] if similar else None,
            possible_duplicate_of=related,
        ),
        event=event,
    )


def hash_token(token: str) -> str:
    """The stored form of a bearer token (SHA-256, hex)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Outputs(Connected):
    """Reads for the outputs, and delivery records."""

    def feeds_of_items(self, item_ids: Sequence[int]) -> list[str]:
        """Names of the feeds the given items belong to, sorted."""
        names: set[str] = set()
        for chunk in chunks([str(i) for i in item_ids]):
            marks = ",".join("?" * len(chunk))
            names.update(
                row[0]
                for row in self._conn.execute(
                    f"SELECT DISTINCT f.name FROM items i JOIN feeds f ON f.id = i.feed_id"
                    f" WHERE i.id IN ({marks})",
                    [int(i) for i in chunk],
                )
            )
        return sorted(names)

    def record_deliveries(
        self, run_id: int, item_ids: Sequence[int], target: str, now: datetime
    ) -> int:
        """Record items as delivered to ``target`` (once per item and target); return how many
        were new deliveries."""
        with transaction(self._db) as conn:
            cursor = conn.executemany(
                "INSERT INTO deliveries (item_id, run_id, target, status, attempts,"
                " created_at, delivered_at) VALUES (?, ?, ?, 'delivered', 1, ?, ?)"
                " ON CONFLICT DO NOTHING",
                [(item_id, run_id, target, iso(now), iso(now)) for item_id in item_ids],
            )
            return cursor.rowcount

    def list_feeds(self) -> list[FeedRow]:
        """Every stored feed, by name."""
        rows = self._conn.execute(
            "SELECT f.name, o.name, f.title, f.url, f.public FROM feeds f"
            " JOIN orgs o ON o.id = f.org_id ORDER BY f.name"
        ).fetchall()
        return [FeedRow(r[0], r[1], r[2], r[3], bool(r[4])) for r in rows]

    def feed_states(self) -> dict[str, dict[str, Any]]:
        """{feed name: its last fetch, status, HTTP status and error} for every stored feed
        (``feedmd feeds list``); times as stored (ISO 8601 UTC)."""
        rows = self._conn.execute(
            "SELECT name, last_fetched_at, last_status, last_http_status, last_error FROM feeds"
        ).fetchall()
        keys = ("last_fetched_at", "last_status", "last_http_status", "last_error")
        return {row[0]: dict(zip(keys, row[1:], strict=True)) for row in rows}

    def find_feed(self, name: str) -> FeedRow | None:
        """The stored feed named ``name``, or None."""
        return next((feed for feed in self.list_feeds() if feed.name == name), None)

    def list_orgs(self) -> dict[str, bool]:
        """{org name: public}; an org's own feed is public only when all its feeds are."""
        orgs: dict[str, bool] = {
            row[0]: True for row in self._conn.execute("SELECT name FROM orgs ORDER BY name")
        }
        for feed in self.list_feeds():
            orgs[feed.org] = orgs.get(feed.org, True) and feed.public
        return orgs

    def set_public(self, flags: Mapping[str, bool]) -> None:
        """Store which feeds are public (from the configuration)."""
        with transaction(self._db) as conn:
            conn.executemany(
                "UPDATE feeds SET public = ? WHERE name = ?",
                [(int(public), name) for name, public in flags.items()],
            )

    def kept_items(
        self,
        *,
        feed: str | None = None,
        org: str | None = None,
        before: int | None = None,
        limit: int = 100,
    ) -> list[OutputItem]:
        """A page of kept items of a feed or an org, newest first.

        ``before`` is the id of the last item of the previous page (keyset paging: a page
        boundary never shifts when new items arrive, so a reader never sees an item twice).
        A feed whose event_mode is 'one-per-event' lists only its first item of each event.
        """
        where = ["i.decision = 'kept'"]
        params: list[Any] = []
        if feed is not None:
            where += ["f.name = ?", ONE_PER_EVENT]
            params.append(feed)
        if org is not None:
            where.append("o.name = ?")
            params.append(org)
        if before is not None:
            where.append(
                "(i.published_at, i.id) < (SELECT published_at, id FROM items WHERE id = ?)"
            )
            params.append(before)
        rows = self._conn.execute(
            f"{_ITEM_SELECT} WHERE {' AND '.join(where)}"
            " ORDER BY i.published_at DESC, i.id DESC LIMIT ?",
            (*params, limit),
        ).fetchall()
        return _with_duplicates(self._conn, rows)

    def items_by_id(self, item_ids: Sequence[int]) -> list[OutputItem]:
        """The kept items among ``item_ids``, in the given order."""
        rows = []
        for chunk in chunks(list(item_ids)):
            marks = ",".join("?" * len(chunk))
            rows += self._conn.execute(
                f"{_ITEM_SELECT} WHERE i.decision = 'kept' AND i.id IN ({marks})", chunk
            ).fetchall()
        order = {item_id: n for n, item_id in enumerate(item_ids)}
        return sorted(_with_duplicates(self._conn, rows), key=lambda item: order[item.item_id])

    def create_token(self, org: str, label: str, now: datetime) -> str | None:
        """Create a bearer token for ``org`` and return it (the only time it is visible), or
        None when the org is not in the store."""
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        with transaction(self._db) as conn:
            row = conn.execute("SELECT id FROM orgs WHERE name = ?", (org,)).fetchone()
            if row is None:
                return None
            conn.execute(
                "INSERT INTO org_tokens (org_id, token_hash, label, created_at)"
                " VALUES (?, ?, ?, ?)",
                (row[0], hash_token(token), label, iso(now)),
            )
        return token

    def token_hashes(self, org: str) -> list[str]:
        """The hashes of the org's live (not revoked) tokens."""
        return [
            row[0]
            for row in self._conn.execute(
                "SELECT t.token_hash FROM org_tokens t JOIN orgs o ON o.id = t.org_id"
                " WHERE o.name = ? AND t.revoked_at IS NULL",
                (org,),
            )
        ]

    def list_tokens(self) -> list[tuple[int, str, str, str, str | None]]:
        """(id, org, label, created_at, revoked_at) of every token; never the token."""
        return self._conn.execute(
            "SELECT t.id, o.name, t.label, t.created_at, t.revoked_at FROM org_tokens t"
            " JOIN orgs o ON o.id = t.org_id ORDER BY t.id"
        ).fetchall()

    def revoke_token(self, token_id: int, now: datetime) -> bool:
        """Revoke a token by id; False when there is no such live token."""
        with transaction(self._db) as conn:
            cursor = conn.execute(
                "UPDATE org_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (iso(now), token_id),
            )
            return cursor.rowcount > 0

    # ---- the LLM bundle and the digest (feedmd/delivery/exports) -----------------------

    def visible_items(
        self,
        *,
        feed: str | None = None,
        org: str | None = None,
        after: int = 0,
        limit: int | None = None,
    ) -> list[tuple[int, OutputItem]]:
        """(seq, item) of the items of a feed or an org that became visible as kept (stored
        kept by a run, or restored by a reviewer) after visibility seq ``after`` and are kept
        now, oldest seq first; seq is the item's newest row of the log (migration 0010).

        Both reads run in one read transaction: the seqs and the items are one snapshot."""
        where, params = ["v.seq > ?"], [after]
        if feed is not None:
            where.append(
                "v.item_id IN (SELECT i.id FROM items i JOIN feeds f"
                " ON f.id = i.feed_id WHERE f.name = ?)"
            )
            params.append(feed)
        if org is not None:
            where.append("v.org_id = (SELECT id FROM orgs WHERE name = ?)")
            params.append(org)
        self._conn.execute("BEGIN")
        try:
            seqs = self._conn.execute(
                "SELECT v.item_id, MAX(v.seq) FROM visibility v JOIN items i ON i.id = v.item_id"
                f" WHERE i.decision = 'kept' AND {' AND '.join(where)}"
                " GROUP BY v.item_id ORDER BY MAX(v.seq)"
                # no LIMIT at all for none: SQLite's LIMIT -1 is an error on PostgreSQL
                + (" LIMIT ?" if limit is not None else ""),
                (*params, *([] if limit is None else [limit])),
            ).fetchall()
            items = self.items_by_id([row[0] for row in seqs])
        finally:
            self._conn.execute("COMMIT")
        seq_of = dict(seqs)
        return [(seq_of[item.item_id], item) for item in items]

    def digest_items(
        self,
        *,
        feed: str | None = None,
        org: str | None = None,
        run_id: int | None = None,
        published_from: datetime | None = None,
        published_to: datetime | None = None,
    ) -> list[OutputItem]:
        """The kept items of a feed or an org stored by run ``run_id`` and/or published in
        [``published_from``, ``published_to``), newest first (a digest's stories)."""
        where: list[str] = ["i.decision = 'kept'"]
        params: list[Any] = []
        for clause, value in (
            ("f.name = ?", feed),
            ("o.name = ?", org),
            ("i.run_id = ?", run_id),
            ("i.published_at >= ?", published_from and iso(published_from)),
            ("i.published_at < ?", published_to and iso(published_to)),
        ):
            if value is not None:
                where.append(clause)
                params.append(value)
        rows = self._conn.execute(
            f"{_ITEM_SELECT} WHERE {' AND '.join(where)} ORDER BY i.published_at DESC, i.id DESC",
            params,
        ).fetchall()
        return _with_duplicates(self._conn, rows)

    def visibility_head(
        self, *, feed: str | None = None, org: str | None = None
    ) -> tuple[int, datetime | None]:
        """(the newest visibility seq of the store, the newest published time of the kept
        items of the feed or org): where a digest's cursor starts, and its default day."""
        (seq,) = self._conn.execute("SELECT COALESCE(MAX(seq), 0) FROM visibility").fetchone()
        where, params = ["i.decision = 'kept'"], []
        if feed is not None:
            where.append("i.feed_id = (SELECT id FROM feeds WHERE name = ?)")
            params.append(feed)
        if org is not None:
            where.append("i.org_id = (SELECT id FROM orgs WHERE name = ?)")
            params.append(org)
        (newest,) = self._conn.execute(
            f"SELECT MAX(i.published_at) FROM items i WHERE {' AND '.join(where)}", params
        ).fetchone()
        return int(seq), parse_iso(newest) if newest else None

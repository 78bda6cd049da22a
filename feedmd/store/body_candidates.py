"""The window's bodies as stage 2 needs them, read through the body keys (``keys.py``):
only the kept bodies a survivor's page can meet (issue 13; ``candidates.py`` explains
why the restricted snapshot decides exactly as the whole window would).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

from feedmd.fingerprints.shingles import sample_keys
from feedmd.fingerprints.tlsh_scan import scan
from feedmd.fingerprints.urls import publisher_host
from feedmd.models import Candidate, Page, StoredBody, WindowAggregates, WindowSnapshot
from feedmd.settings import Settings
from feedmd.store import digest_packs
from feedmd.store.candidates import _feed_ids, _marks, _org_ids
from feedmd.store.schema import Connection, chunks
from feedmd.timeutil import iso, parse_iso


def body_candidates(
    conn: Connection,
    survivors: Sequence[Candidate],
    pages: Mapping[tuple[str, str], Page],
    settings: Settings,
    now: datetime,
) -> WindowSnapshot:
    """The kept window bodies stage 2 can meet for these survivors' pages: within the
    similar-tier TLSH radius of a digest, or sharing a sampled shingle hash."""
    cutoff = iso(now - timedelta(hours=settings.dedup_window_hours))
    queries: dict[str, list[tuple[Page, str]]] = {}
    for candidate in survivors:
        page = pages.get((candidate.entry.org, candidate.page_key))
        if page is not None and page.status != "failed" and page.digest is not None:
            queries.setdefault(candidate.entry.org, []).append((page, candidate.entry.feed))
    org_ids = _org_ids(conn, queries)
    feed_ids = _feed_ids(conn, {feed for pairs in queries.values() for _, feed in pairs})
    wanted: set[int] = set()
    for org, org_id in org_ids.items():
        scoped = [
            (str(page.digest), feed_ids.get(feed, -1) if settings.dedup_scope == "feed" else None)
            for page, feed in queries[org]
        ]
        wanted |= _near_digests(conn, org_id, cutoff, scoped, settings)
        shingle_keys: set[int] = set()
        for page, _ in queries[org]:
            if page.shingles:
                shingle_keys.update(sample_keys(np.frombuffer(page.shingles, dtype=np.uint32)))
        for chunk in chunks(sorted(shingle_keys)):
            wanted.update(
                row[0]
                for row in conn.execute(
                    f"SELECT item_id FROM body_keys WHERE org_id = ? AND key IN ({_marks(chunk)})"
                    f" AND published_at >= ?",
                    (org_id, *chunk, cutoff),
                )
            )
    return WindowSnapshot(
        bodies=tuple(_bodies(conn, wanted, cutoff)), aggregates=WindowAggregates()
    )


def _near_digests(
    conn: Connection,
    org_id: int,
    cutoff: str,
    queries: Sequence[tuple[str, int | None]],
    settings: Settings,
) -> set[int]:
    """For each ``(digest, feed id or None for the org scope)``, the two window bodies of
    its scope that stage 2's TLSH side can name: the earliest within
    ``tlsh_max_distance`` (a reprint) and the closest within ``similar_tlsh_distance``,
    the earliest among equals (``stage2.judge``). Window order is (published, item id);
    the others within the radius decide nothing (they are neither first nor closest, and
    the run's own bodies all come after them). Every window digest is compared, read in
    packs (``digest_packs``) and scored by ``tlsh_scan.scan``."""
    if not queries:
        return set()
    radius = settings.similar_tlsh_distance
    hit_limit = min(settings.tlsh_max_distance, radius)
    window = digest_packs.window_digests(conn, org_id, cutoff)
    allowed = []
    for _, feed in queries:
        mask = window.inside
        if feed is not None:
            in_feed = window.feed_ids == feed
            mask = in_feed if mask is None else mask & in_feed
        allowed.append(mask)
    answers = scan(window.columns, [digest for digest, _ in queries], radius, hit_limit, allowed)
    item_ids = window.item_ids
    named: set[int] = set()
    for answer in answers:
        named.update(int(item_ids[position]) for position, _ in answer.hits)
        named.update(int(item_ids[position]) for position in answer.nearest)
    published = digest_packs.published_of(conn, org_id, named)
    found: set[int] = set()
    for answer in answers:
        hits = [int(item_ids[position]) for position, _ in answer.hits]
        if hits:
            found.add(min(hits, key=lambda item: (published[item], item)))
        nearest = [int(item_ids[position]) for position in answer.nearest]
        if nearest:
            found.add(min(nearest, key=lambda item: (published[item], item)))
    return found


def _bodies(conn: Connection, item_ids: Iterable[int], cutoff: str) -> list[StoredBody]:
    """The kept window items among ``item_ids`` that have a body digest."""
    found: list[StoredBody] = []
    for chunk in chunks(sorted(set(item_ids))):
        rows = conn.execute(
            f"SELECT i.id, f.name, o.name, b.digest, i.published_at, b.shingles, i.url,"
            f" i.title_norm FROM items i JOIN feeds f ON f.id = i.feed_id"
            f" JOIN orgs o ON o.id = i.org_id JOIN bodies b ON b.id = i.body_id"
            f" WHERE i.id IN ({_marks(chunk)}) AND i.published_at >= ? AND i.decision = 'kept'",
            (*chunk, cutoff),
        ).fetchall()
        echoes = echo_headlines(conn, [row[0] for row in rows], cutoff)
        for item_id, feed, org, digest, published, shingles, url, norm in rows:
            if digest:
                found.append(
                    StoredBody(
                        item_id=item_id,
                        feed=feed,
                        org=org,
                        digest=digest,
                        published=parse_iso(published),
                        shingles=shingles or b"",
                        host=publisher_host(url) if url else "",
                        tokens=tuple(norm.split()),
                        echoes=tuple(echoes[item_id].headlines) if item_id in echoes else (),
                        shared_block=item_id in echoes and echoes[item_id].shared_block,
                    )
                )
    return found


# Echo headlines read per body: enough to count any sane shared_block_min_stories, and a
# bound on what a consent notice printed under thousands of items costs a window read
# (once a body is a shared block, ``shared_block`` says so whatever the count).
MAX_ECHOES = 100
# The stage-2 decisions that say "this item carries that body": a reprint (its rule the
# matcher's; a reviewer's merge is rule 'override' and says nothing of the body), the
# host's furniture, a shared block.
ECHO_RULES = ("tlsh", "shingles", "host-furniture", "shared-block")
ECHO_WHERE = f"i.stage = 'stage2' AND i.rule IN ({', '.join(repr(r) for r in ECHO_RULES)})"


@dataclass
class Echoes:
    """What the window says of one kept body: its echoes' headline tokens (at most
    ``MAX_ECHOES``) and whether one of them was kept as a shared block."""

    headlines: list[tuple[str, ...]] = field(default_factory=list)
    shared_block: bool = False


def echo_headlines(conn: Connection, item_ids: Sequence[int], cutoff: str) -> dict[int, Echoes]:
    """For each kept body among ``item_ids``: the window's items that stage 2 found
    carrying it (``StoredBody.echoes``, ``StoredBody.shared_block``)."""
    echoes: dict[int, Echoes] = {}
    for chunk in chunks(sorted(set(item_ids))):
        rows = conn.execute(
            f"SELECT i.matched_item_id, i.title_norm, i.rule FROM items i"
            f" WHERE i.matched_item_id IN ({_marks(chunk)}) AND i.published_at >= ?"
            f" AND {ECHO_WHERE} ORDER BY i.id",
            (*chunk, cutoff),
        )
        for matched, norm, rule in rows:
            add_echo(echoes.setdefault(int(matched), Echoes()), norm, rule)
    return echoes


def add_echo(echoes: Echoes, norm: str, rule: str) -> None:
    """One echo row into a body's ``Echoes`` (in id order, as both window reads go)."""
    if len(echoes.headlines) < MAX_ECHOES:
        echoes.headlines.append(tuple(norm.split()))
    echoes.shared_block = echoes.shared_block or rule == "shared-block"

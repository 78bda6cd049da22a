"""The ``identical`` check of the run benchmark (``window.py``): the runs' entries decided
by stages 1 and 2 through the candidate keys (``Store.snapshot``, ``Store.body_snapshot``)
and against the whole window, every decision compared with its evidence.

The whole-window reference is a streaming scan, never the window in memory (at 740,000
items ``Store.full_snapshot`` needed ~9 GB): the kept items are read in id order, in
chunks of ``CHUNK`` rows, and each is compared with every entry by the real rules, without
the keys, pairs, packs or samples of the indexed path:

- stage 1: entry ids and URL hashes equal to a batch entry's; headlines that
  ``match_headlines`` accepts (tried on the items sharing at least ``floor(min(t x q,
  c x containment_min_tokens))`` tokens with a ``q``-token entry, a bound looser than any
  match, counted from the item's own ``title_norm``, or within ``simhash_max_bits``), and
  the subject gate's casing sums over every window title (``casing_counts``);
- stage 2: per survivor body, ``tlsh.diff`` with every window digest, keeping the
  earliest body within ``tlsh_max_distance`` and the closest within
  ``similar_tlsh_distance`` (what ``stage2.judge`` can name), and every body sharing a
  shingle hash with it (a superset of what the shingle matcher can reach).

Stages 1 and 2 then decide on those items as they would on the whole window: the other
items are neither matched nor first, closest or sharing, and decide nothing.
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import tlsh

from feedmd.fingerprints.headlines import Headline, match_headlines
from feedmd.fingerprints.subject_gate import casing_counts
from feedmd.fingerprints.urls import publisher_host
from feedmd.models import Entry, Page, StoredBody, StoredHeadline, WindowAggregates, WindowSnapshot
from feedmd.settings import Settings
from feedmd.stages import stage1, stage2
from feedmd.stages.scrape import fingerprint
from feedmd.store import Store, open_store
from feedmd.timeutil import iso, parse_iso

CHUNK = 20_000  # window rows read at a time: bounded memory whatever the window holds
MASK64 = (1 << 64) - 1

_ROWS = (
    "SELECT i.id, f.name, o.name, i.entry_id, i.url_hash, i.title_raw, i.title_norm,"
    " i.simhash, i.published_at, i.decision, i.matched_item_id, i.url{body}"
    " FROM items i JOIN feeds f ON f.id = i.feed_id JOIN orgs o ON o.id = i.org_id{join}"
    " WHERE o.name = ? AND i.published_at >= ? AND i.decision IN ('kept', 'duplicate')"
    " AND i.id > ? ORDER BY i.id LIMIT ?"
)


def _stream(store: Store, org: str, cutoff: str, bodies: bool = False) -> Any:
    """The window rows of ``org`` in id order, ``CHUNK`` at a time (keyset pages)."""
    query = _ROWS.format(
        body=", b.digest, b.shingles" if bodies else "",
        join=" LEFT JOIN bodies b ON b.id = i.body_id" if bodies else "",
    )
    last = 0
    while True:
        rows = store._conn.execute(query, (org, cutoff, last, CHUNK)).fetchall()
        if not rows:
            return
        yield rows
        last = rows[-1][0]


def _floor_overlap(size: int, settings: Settings) -> int:
    bound = settings.jaccard_threshold * size
    if size >= settings.containment_min_tokens:
        bound = min(bound, settings.containment_threshold * settings.containment_min_tokens)
    return max(math.floor(bound) - 1, 0)  # a float's rounding never excludes a match


def stage1_reference(
    store: Store, runs: list[list[Entry]], settings: Settings, now: datetime
) -> list[WindowSnapshot]:
    """Per run, the snapshot stage 1 decides on as on the whole window (one scan)."""
    entries = [entry for run in runs for entry in run]
    orgs = {entry.org for entry in entries}
    if len(orgs) != 1 or any(stage1.prepare(e).is_cjk for e in entries):
        raise SystemExit("the streaming reference takes one org and no CJK headline")
    org = orgs.pop()
    cutoff = iso(now - timedelta(hours=settings.dedup_window_hours))
    prepared = [stage1.prepare(entry) for entry in entries]
    heads = [c.headline for c in prepared]
    needs = [_floor_overlap(len(h.tokens), settings) for h in heads]
    holders: dict[str, list[int]] = {}
    for number, headline in enumerate(heads):
        for token in headline.tokens:
            holders.setdefault(token, []).append(number)
    ids = {entry.entry_id for entry in entries}
    hashes = {c.url_hash for c in prepared if c.url_hash}
    values = np.array([h.simhash for h in heads], dtype=np.uint64)
    matched: dict[int, set[int]] = {}  # item id -> entries it matches
    kept: dict[int, StoredHeadline] = {}
    exact_ids, exact_hashes = [], []
    casing: Counter[tuple[str, bool]] = Counter()
    for rows in _stream(store, org, cutoff):
        simhashes = np.array([row[7] & MASK64 for row in rows], dtype=np.uint64)
        near = np.bitwise_count(simhashes[:, None] ^ values[None, :]) <= settings.simhash_max_bits
        for row, close in zip(rows, near, strict=True):
            item_id, feed, org_name, entry_id, hashed, title, norm, value = row[:8]
            published, decision, matched_id, url = row[8:]
            canonical = matched_id if decision == "duplicate" and matched_id else item_id
            if entry_id in ids:
                exact_ids.append((feed, org_name, entry_id, canonical))
            if hashed and hashed in hashes:
                exact_hashes.append((feed, org_name, hashed, canonical))
            if decision != "kept":
                continue
            for word, capital, count in casing_counts(title):
                casing[(word, capital)] += count
            tokens = frozenset(norm.split())
            shared: Counter[int] = Counter()
            for token in tokens:
                shared.update(holders.get(token, ()))
            tried = {n for n, count in shared.items() if count >= needs[n]}
            tried.update(int(n) for n in np.flatnonzero(close))
            stored = Headline(tokens, value & MASK64)
            hits = {n for n in tried if match_headlines(heads[n], stored, settings)}
            if hits:
                matched[item_id] = hits
                kept[item_id] = StoredHeadline(
                    item_id=item_id,
                    feed=feed,
                    org=org_name,
                    title=title,
                    tokens=tuple(norm.split()),
                    simhash=value & MASK64,
                    published=parse_iso(published),
                    host=publisher_host(url) if url else "",
                )
    sums = WindowAggregates(
        casing=tuple((word, capital, n) for (word, capital), n in sorted(casing.items()))
    )
    snapshots, start = [], 0
    for run in runs:
        numbers = set(range(start, start + len(run)))
        start += len(run)
        snapshots.append(
            WindowSnapshot(
                entry_ids=tuple(exact_ids),
                url_hashes=tuple(exact_hashes),
                headlines=tuple(kept[i] for i in sorted(kept) if matched[i] & numbers),
                aggregates=sums,
            )
        )
    return snapshots


def stage2_reference(
    store: Store, queries: list[list[Page]], settings: Settings, now: datetime, org: str
) -> list[WindowSnapshot]:
    """Per run, the window bodies stage 2 can name for its survivors' pages (one scan)."""
    cutoff = iso(now - timedelta(hours=settings.dedup_window_hours))
    pages = [page for run in queries for page in run if page.digest]
    owner = [run for run, pages_of in enumerate(queries) for page in pages_of if page.digest]
    wanted = np.unique(
        np.concatenate(
            [np.frombuffer(p.shingles or b"", dtype=np.uint32) for p in pages]
            + [np.zeros(0, np.uint32)]
        )
    )
    hit: list[tuple[str, int] | None] = [None] * len(pages)  # (published, id) earliest
    best: list[tuple[int, str, int] | None] = [None] * len(pages)  # (distance, published, id)
    sharing: set[int] = set()
    bodies: dict[int, StoredBody] = {}
    radius, reprint = settings.similar_tlsh_distance, settings.tlsh_max_distance
    for rows in _stream(store, org, cutoff, bodies=True):
        kept = [row for row in rows if row[9] == "kept" and row[12]]
        if not kept:
            continue
        digests = [row[12] for row in kept]
        ids = np.array([row[0] for row in kept], dtype=np.int64)
        published = np.array([row[8] for row in kept])
        for number, page in enumerate(pages):
            distances = np.fromiter(
                (tlsh.diff(page.digest, digest) for digest in digests), np.int64, len(digests)
            )
            within = np.flatnonzero(distances <= radius)
            if within.size:  # the closest, the earliest among equals
                k = within[np.lexsort((ids[within], published[within], distances[within]))[0]]
                found = (int(distances[k]), str(published[k]), int(ids[k]))
                best[number] = min(best[number] or found, found)
            close = np.flatnonzero(distances <= min(reprint, radius))
            if close.size:  # the earliest within the reprint distance
                k = close[np.lexsort((ids[close], published[close]))[0]]
                first = (str(published[k]), int(ids[k]))
                hit[number] = min(hit[number] or first, first)
        blobs = [row[13] or b"" for row in kept]
        shingles = np.frombuffer(b"".join(blobs), dtype=np.uint32)
        holder = np.repeat(np.arange(len(kept)), [len(blob) // 4 for blob in blobs])
        sharing.update(int(i) for i in ids[np.unique(holder[np.isin(shingles, wanted)])])
        # keep only what may still be named: the sharing ones and the current winners
        named = sharing | {h[1] for h in hit if h} | {b[2] for b in best if b}
        bodies.update((row[0], _body(row)) for row in kept if row[0] in named)
        bodies = {item_id: body for item_id, body in bodies.items() if item_id in named}
    snapshots = []
    for run in range(len(queries)):
        mine = [n for n in range(len(pages)) if owner[n] == run]
        named = set(sharing)
        named |= {hit[n][1] for n in mine if hit[n]} | {best[n][2] for n in mine if best[n]}
        snapshots.append(
            WindowSnapshot(
                bodies=tuple(bodies[i] for i in sorted(named)), aggregates=WindowAggregates()
            )
        )
    return snapshots


def _body(row: tuple[Any, ...]) -> StoredBody:
    return StoredBody(
        item_id=row[0],
        feed=row[1],
        org=row[2],
        digest=row[12],
        published=parse_iso(row[8]),
        shingles=row[13] or b"",
        host=publisher_host(row[11]) if row[11] else "",
        tokens=tuple(row[6].split()),
    )


def check(db: Path, runs: list[list[tuple[Entry, str]]], now: datetime, org: str) -> dict:
    """Decide every run's entries through the keys and through the streamed window;
    count the entries whose decisions (stage 1 and 2, with evidence) differ."""
    store = open_store(db)
    settings = Settings()
    entries = [[entry for entry, _ in run] for run in runs]
    firsts = stage1_reference(store, entries, settings, now)
    references, all_pages = [], []
    for run, reference_snapshot in zip(runs, firsts, strict=True):
        batch = [entry for entry, _ in run]
        texts = {entry.key: text for entry, text in run}
        known = store.known_entries(batch)
        reference = stage1.decide(batch, reference_snapshot, known, settings, now)
        pages = {
            (c.entry.org, c.page_key): fingerprint(
                Page(
                    url_hash=c.page_key,
                    url=c.entry.url,
                    org=org,
                    status="ok",
                    markdown=texts[c.key],
                ),
                settings,
            )
            for c in reference.survivors
        }
        references.append((batch, known, reference, pages))
        all_pages.append(list(pages.values()))
    seconds = stage2_reference(store, all_pages, settings, now, org)
    checked = differing = 0
    for (batch, known, reference, pages), window in zip(references, seconds, strict=True):
        keyed = stage1.decide(batch, store.snapshot(batch, settings, now), known, settings, now)
        second = stage2.decide(reference.survivors, pages, window, settings, now)
        bodies = store.body_snapshot(reference.survivors, pages, settings, now)
        second_keyed = stage2.decide(reference.survivors, pages, bodies, settings, now)
        for key, decision in reference.decisions.items():
            checked += 1
            final = second.get(key, decision)
            differing += (
                keyed.decisions.get(key) != decision or second_keyed.get(key, decision) != final
            )
    store.close()
    return {"checked": checked, "differing": differing}

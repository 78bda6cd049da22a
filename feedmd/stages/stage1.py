"""Stage 1: decide on feed metadata alone, before anything is scraped.

Pure: takes the run's entries and a ``WindowSnapshot`` of what the store already holds, and
returns decisions. In order (seed 003):

1. entries already stored for their feed are not new (a feed lists an entry every poll);
2. the rest are sorted oldest first, so the earliest publisher becomes canonical;
3. each entry is dropped if its entry id or URL hash repeats one earlier in this run or one
   stored inside the dedup window and scope (rules ``entry-id``, ``url``);
4. else if its headline matches a kept headline of the window or an earlier kept entry of
   this run (rules ``jaccard``, ``containment``, ``simhash``);
5. else it survives to the scrape.

A stored item is never swapped out: a late original that matches a stored copy is the
one marked duplicate. Every duplicate points at a kept item, never at another duplicate.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from feedmd.config import Settings
from feedmd.models import Decision, Entry, Match, WindowSnapshot
from feedmd.stages.headlines import Headline, match_headlines, normalize_headline
from feedmd.stages.urls import normalize_url, url_hash


@dataclass(frozen=True)
class Candidate:
    """An entry with the keys stage 1 compares: normalised URL, URL hash, headline."""

    entry: Entry
    url: str
    url_hash: str
    tokens: tuple[str, ...]
    headline: Headline

    @property
    def key(self) -> str:
        """The entry's identity inside the run."""
        return self.entry.key

    @property
    def page_key(self) -> str:
        """What the scrape and the bodies table key a page by: the URL hash, or for an
        unresolved link the hash of the link itself."""
        if self.url_hash:
            return self.url_hash
        return "link-" + hashlib.sha256(self.entry.url.encode("utf-8")).hexdigest()


def prepare(entry: Entry) -> Candidate:
    """Compute the stage-1 keys of an entry. Unresolved redirect links get no URL hash,
    so such items are deduplicated by headline only (hashing a news.google.com link
    would say nothing about the article)."""
    resolved = entry.link_resolution != "unresolved"
    normalized = normalize_url(entry.url) if resolved else ""
    tokens = normalize_headline(entry.title)
    return Candidate(
        entry=entry,
        url=normalized,
        url_hash=url_hash(normalized) if normalized else "",
        tokens=tokens,
        headline=Headline.from_tokens(tokens),
    )


@dataclass
class Stage1Result:
    """Stage 1's output: the new candidates oldest first, the entries seen before, and a
    decision for every new candidate."""

    candidates: list[Candidate]
    seen_before: list[Entry]
    decisions: dict[str, Decision] = field(default_factory=dict)

    @property
    def survivors(self) -> list[Candidate]:
        """Candidates kept by stage 1, oldest first: the only ones worth scraping."""
        return [c for c in self.candidates if self.decisions[c.key].decision == "kept"]


def scope_key(feed: str, org: str, settings: Settings) -> str:
    """The partition inside which items are compared: the feed, or the whole org."""
    return f"feed:{feed}" if settings.dedup_scope == "feed" else f"org:{org}"


def decide(
    entries: Sequence[Entry],
    snapshot: WindowSnapshot,
    known: Iterable[tuple[str, str]],
    settings: Settings,
    now: datetime,
) -> Stage1Result:
    """Decide every entry of the run on metadata alone (see the module docstring).

    ``known`` lists (feed, entry_id) pairs already in the store: those entries are not new.
    """
    known_keys = set(known)
    seen_before = [e for e in entries if (e.feed, e.entry_id) in known_keys]
    fresh = [e for e in entries if (e.feed, e.entry_id) not in known_keys]
    order = sorted(range(len(fresh)), key=lambda i: (fresh[i].published, i))
    candidates = [prepare(fresh[i]) for i in order]
    cutoff = now - timedelta(hours=settings.dedup_window_hours)

    ids: dict[tuple[str, str], Match] = {}
    hashes: dict[tuple[str, str], Match] = {}
    headlines: defaultdict[str, list[tuple[Headline, Match, str]]] = defaultdict(list)
    for feed, org, entry_id, item_id in snapshot.entry_ids:
        ids.setdefault((scope_key(feed, org, settings), entry_id), Match(item_id=item_id))
    for feed, org, hashed, item_id in snapshot.url_hashes:
        hashes.setdefault((scope_key(feed, org, settings), hashed), Match(item_id=item_id))
    for stored in sorted(snapshot.headlines, key=lambda h: (h.published, h.item_id)):
        if stored.published >= cutoff:
            headlines[scope_key(stored.feed, stored.org, settings)].append(
                (
                    Headline(frozenset(stored.tokens), stored.simhash),
                    Match(item_id=stored.item_id),
                    stored.title,
                )
            )

    result = Stage1Result(candidates=candidates, seen_before=seen_before)
    common = {"window_hours": settings.dedup_window_hours, "scope": settings.dedup_scope}
    for candidate in candidates:
        entry = candidate.entry
        scope = scope_key(entry.feed, entry.org, settings)
        decision = _exact_repeat(candidate, scope, ids, hashes, common)
        if decision is None:
            decision = _headline_repeat(candidate, headlines[scope], settings, common)
        if decision is None:
            decision = Decision(
                key=candidate.key,
                stage="stage1",
                decision="kept",
                evidence={**common, "headline_tokens": list(candidate.tokens)},
            )
            own = Match(batch_key=candidate.key)
            headlines[scope].append((candidate.headline, own, entry.title))
            ids.setdefault((scope, entry.entry_id), own)
            if candidate.url_hash:
                hashes.setdefault((scope, candidate.url_hash), own)
        result.decisions[candidate.key] = decision
    return result


def _exact_repeat(
    candidate: Candidate,
    scope: str,
    ids: dict[tuple[str, str], Match],
    hashes: dict[tuple[str, str], Match],
    common: dict[str, object],
) -> Decision | None:
    matched = ids.get((scope, candidate.entry.entry_id))
    if matched is not None:
        return Decision(
            key=candidate.key,
            stage="stage1",
            decision="duplicate",
            rule="entry-id",
            score=1.0,
            threshold=1.0,
            matched=matched,
            evidence={**common, "where": _where(matched), "entry_id": candidate.entry.entry_id},
        )
    if candidate.url_hash:
        matched = hashes.get((scope, candidate.url_hash))
        if matched is not None:
            return Decision(
                key=candidate.key,
                stage="stage1",
                decision="duplicate",
                rule="url",
                score=1.0,
                threshold=1.0,
                matched=matched,
                evidence={**common, "where": _where(matched), "normalized_url": candidate.url},
            )
    return None


def _headline_repeat(
    candidate: Candidate,
    earlier: list[tuple[Headline, Match, str]],
    settings: Settings,
    common: dict[str, object],
) -> Decision | None:
    for headline, matched, title in earlier:
        found = match_headlines(candidate.headline, headline, settings)
        if found is not None:
            return Decision(
                key=candidate.key,
                stage="stage1",
                decision="duplicate",
                rule=found.rule,
                score=round(found.score, 6),
                threshold=found.threshold,
                matched=matched,
                evidence={
                    **common,
                    "where": _where(matched),
                    "shared_tokens": list(found.shared),
                    "headline_tokens": list(candidate.tokens),
                    "matched_title": title,
                },
            )
    return None


def _where(matched: Match) -> str:
    return "window" if matched.item_id is not None else "run"

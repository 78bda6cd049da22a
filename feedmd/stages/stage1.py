"""Stage 1: decide on feed metadata alone, before anything is scraped.

Pure: takes the run's entries and a ``WindowSnapshot`` of what the store already holds, and
returns decisions. In order (seed 003):

1. entries already stored for their feed are not new (a feed lists an entry every poll);
2. the rest are sorted oldest first, so the earliest publisher becomes canonical;
3. each entry is dropped if its entry id or URL hash repeats one earlier in this run or one
   stored inside the dedup window and scope (rules ``entry-id``, ``url``);
4. else if its headline matches a kept headline of the window or an earlier kept entry of
   this run: English and other space-separated scripts by tokens (rules ``jaccard``,
   ``containment``, ``simhash``), Korean, Japanese and Chinese by character 3-grams behind
   a lead-token gate (rule ``cjk``, see ``cjk.py``);
5. else it survives to the scrape.

A recurring title (an identical headline from the same publisher under another URL: a
series title, "Morning briefing") is not dropped on the title alone: it survives, carrying
the decision the title would have made (``Candidate.recurring``), and stage 2 confirms it on
the body (``recurring_title_check``).

A stored item is never swapped out: a late original that matches a stored copy is the
one marked duplicate. Every duplicate points at a kept item, never at another duplicate.
The one exchange allowed happens inside a run for CJK groups (seed 000): an original
outlet's copy replaces a syndicating portal's copy as the group's representative.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from feedmd.fingerprints import cjk
from feedmd.fingerprints.headlines import (
    Headline,
    HeadlineMatch,
    normalize_headline,
)
from feedmd.fingerprints.subject_gate import CasingStats, subject_gate
from feedmd.fingerprints.title_index import TitleIndex
from feedmd.fingerprints.urls import normalize_url, publisher_host, url_hash
from feedmd.models import Candidate, Decision, Entry, Match, Stage1Result, WindowSnapshot
from feedmd.settings import Settings

# Matches blocked by the subject gate kept as evidence on the item that stays.
MAX_BLOCKED_EVIDENCE = 5


def prepare(entry: Entry) -> Candidate:
    """Compute the stage-1 keys of an entry. Unresolved redirect links get no URL hash,
    so such items are deduplicated by headline only (hashing a news.google.com link
    would say nothing about the article)."""
    resolved = entry.link_resolution != "unresolved"
    normalized = normalize_url(entry.url) if resolved else ""
    tokens = normalize_headline(entry.title)
    in_cjk = cjk.is_cjk(entry.title)
    return Candidate(
        entry=entry,
        url=normalized,
        url_hash=url_hash(normalized) if normalized else "",
        tokens=tokens,
        headline=Headline.from_tokens(tokens),
        is_cjk=in_cjk,
        grams=cjk.char_grams(entry.title) if in_cjk else frozenset(),
        lead=cjk.lead_token(entry.title) if in_cjk else "",
        host=publisher_host(normalized) if normalized else "",
    )


def scope_key(feed: str, org: str, settings: Settings) -> str:
    """The partition inside which items are compared: the feed, or the whole org."""
    return f"feed:{feed}" if settings.dedup_scope == "feed" else f"org:{org}"


@dataclass(kw_only=True)
class _Kept:
    """A kept headline as later entries compare against it."""

    match: Match
    title: str
    headline: Headline
    tokens: tuple[str, ...] = ()
    grams: frozenset[str] = frozenset()
    lead: str = ""
    rank: tuple[int, int, float] = (0, 0, 0.0)
    host: str = ""


@dataclass
class _Memory:
    """What later entries are compared with: the window's kept items, then this run's."""

    settings: Settings
    ids: dict[tuple[str, str], Match] = field(default_factory=dict)
    hashes: dict[tuple[str, str], Match] = field(default_factory=dict)
    headlines: dict[str, TitleIndex[_Kept]] = field(default_factory=dict)
    titles: list[str] = field(default_factory=list)
    cjk_buckets: defaultdict[tuple[str, str], list[_Kept]] = field(
        default_factory=lambda: defaultdict(list)
    )

    @classmethod
    def from_snapshot(
        cls, snapshot: WindowSnapshot, settings: Settings, cutoff: datetime
    ) -> _Memory:
        memory = cls(settings)
        for feed, org, entry_id, item_id in snapshot.entry_ids:
            memory.ids.setdefault(
                (scope_key(feed, org, settings), entry_id), Match(item_id=item_id)
            )
        for feed, org, hashed, item_id in snapshot.url_hashes:
            memory.hashes.setdefault(
                (scope_key(feed, org, settings), hashed), Match(item_id=item_id)
            )
        window: defaultdict[str, list[tuple[Headline, _Kept]]] = defaultdict(list)
        for stored in sorted(snapshot.headlines, key=lambda h: (h.published, h.item_id)):
            if stored.published < cutoff:
                continue
            scope = scope_key(stored.feed, stored.org, settings)
            match = Match(item_id=stored.item_id)
            if cjk.is_cjk(stored.title):
                lead = cjk.lead_token(stored.title)
                memory.cjk_buckets[(scope, lead)].append(
                    _Kept(
                        match=match,
                        title=stored.title,
                        headline=Headline(frozenset(), 0),
                        grams=cjk.char_grams(stored.title),
                        lead=lead,
                    )
                )
            else:
                headline = Headline(frozenset(stored.tokens), stored.simhash)
                window[scope].append(
                    (
                        headline,
                        _Kept(
                            match=match,
                            title=stored.title,
                            headline=headline,
                            tokens=stored.tokens,
                            host=stored.host,
                        ),
                    )
                )
                memory.titles.append(stored.title)
        # one exact sub-linear index per scope, loaded oldest first: its answers are those
        # of comparing with every earlier headline in order (title_index.py)
        for scope, records in window.items():
            memory.headlines[scope] = TitleIndex.from_records(settings, records)
        return memory

    def index(self, scope: str) -> TitleIndex[_Kept]:
        """The headline index of a scope (created empty when the window has none)."""
        if scope not in self.headlines:
            self.headlines[scope] = TitleIndex(self.settings)
        return self.headlines[scope]

    def remember(self, candidate: Candidate, scope: str) -> None:
        """Make a kept candidate a comparison target for the rest of the run."""
        own = Match(batch_key=candidate.key)
        entry = candidate.entry
        self.ids.setdefault((scope, entry.entry_id), own)
        if candidate.url_hash:
            self.hashes.setdefault((scope, candidate.url_hash), own)
        kept = _Kept(
            match=own,
            title=entry.title,
            headline=candidate.headline,
            tokens=candidate.tokens,
            grams=candidate.grams,
            lead=candidate.lead,
            rank=_rank(candidate),
            host=candidate.host,
        )
        if candidate.is_cjk:
            self.cjk_buckets[(scope, candidate.lead)].append(kept)
        else:
            self.index(scope).add(candidate.headline, kept)


def _rank(candidate: Candidate) -> tuple[int, int, float]:
    entry = candidate.entry
    return cjk.representative_rank(entry.url, entry.link, entry.published.timestamp())


def decide(
    entries: Sequence[Entry],
    snapshot: WindowSnapshot,
    known: Iterable[tuple[str, str]],
    settings: Settings,
    now: datetime,
    unavailable: frozenset[str] = frozenset(),
) -> Stage1Result:
    """Decide every entry of the run on metadata alone (see the module docstring).

    ``known`` lists (feed, entry_id) pairs already in the store: those entries are not new.
    ``unavailable`` lists entries (by key) whose page could not be fetched in this run: they
    still go on (to be recorded as failed) but no other entry is matched against them, so
    their copies are not lost with them (``scrape.settle``).
    """
    known_keys = set(known)
    seen_before = [e for e in entries if (e.feed, e.entry_id) in known_keys]
    fresh = [e for e in entries if (e.feed, e.entry_id) not in known_keys]
    order = sorted(range(len(fresh)), key=lambda i: (fresh[i].published, i))
    candidates = [prepare(fresh[i]) for i in order]
    cutoff = now - timedelta(hours=settings.dedup_window_hours)
    memory = _Memory.from_snapshot(snapshot, settings, cutoff)
    grams = [c.grams for c in candidates if c.is_cjk]
    titles = [c.entry.title for c in candidates if not c.is_cjk]
    if snapshot.aggregates is None:  # the snapshot holds the whole window: count it here
        grams += [kept.grams for bucket in memory.cjk_buckets.values() for kept in bucket]
        titles += memory.titles
    sums = snapshot.window_sums()
    stats = cjk.GramStats.build(
        grams, settings.cjk_idf_prior_docs, sums.cjk_documents, sums.cjk_frequency
    )
    casing = CasingStats.build(titles, sums.casing)
    result = Stage1Result(candidates=candidates, seen_before=seen_before)
    common: dict[str, Any] = {
        "window_hours": settings.dedup_window_hours,
        "scope": settings.dedup_scope,
    }
    replaced: dict[str, str] = {}
    for position, candidate in enumerate(candidates):
        scope = scope_key(candidate.entry.feed, candidate.entry.org, settings)
        blocked: list[dict[str, Any]] = []
        recurring: Decision | None = None
        decision = _exact_repeat(candidate, scope, memory, common)
        if decision is None and candidate.is_cjk:
            decision = _cjk_repeat(candidate, scope, memory, stats, common, result, replaced)
        elif decision is None:
            decision, blocked, recurring = _headline_repeat(
                candidate, memory.index(scope), settings, casing, common
            )
        if decision is None:
            evidence = {**common, "headline_tokens": list(candidate.tokens)}
            if recurring is not None:
                # confirmed on the body at stage 2
                candidate = dataclasses.replace(candidate, recurring=recurring)
                candidates[position] = candidate
                evidence["recurring_title_of"] = recurring.evidence["matched_title"]
                evidence["confirm_on_body"] = True
            if not candidate.url_hash:
                # matched by headline only: say why the URL could not take part
                evidence["url_not_compared"] = (
                    "link not resolved to a publisher URL"
                    if candidate.entry.link_resolution == "unresolved"
                    else "URL could not be normalised"
                )
            if blocked:
                evidence["subject_gate_blocked"] = blocked
            decision = Decision(
                key=candidate.key, stage="stage1", decision="kept", evidence=evidence
            )
            if candidate.key not in unavailable:
                memory.remember(candidate, scope)
        result.decisions[candidate.key] = decision
    _follow_replacements(result, replaced)
    return result


def _exact_repeat(
    candidate: Candidate, scope: str, memory: _Memory, common: dict[str, Any]
) -> Decision | None:
    matched = memory.ids.get((scope, candidate.entry.entry_id))
    if matched is not None:
        return _duplicate(
            candidate,
            "entry-id",
            1.0,
            1.0,
            matched,
            {**common, "where": _where(matched), "entry_id": candidate.entry.entry_id},
        )
    if candidate.url_hash:
        matched = memory.hashes.get((scope, candidate.url_hash))
        if matched is not None:
            return _duplicate(
                candidate,
                "url",
                1.0,
                1.0,
                matched,
                {**common, "where": _where(matched), "normalized_url": candidate.url},
            )
    return None


def _is_recurring_title(
    candidate: Candidate, kept: _Kept, found: HeadlineMatch, settings: Settings
) -> bool:
    """An identical headline (every token shared) of the same publisher under another URL:
    a series title or site boilerplate until a body says otherwise."""
    return (
        settings.recurring_title_check
        and found.rule == "jaccard"
        and found.score == 1
        and bool(kept.host)
        and kept.host == candidate.host
    )


def _headline_repeat(
    candidate: Candidate,
    index: TitleIndex[_Kept],
    settings: Settings,
    casing: CasingStats,
    common: dict[str, Any],
) -> tuple[Decision | None, list[dict[str, Any]], Decision | None]:
    """The first earlier kept headline (oldest first) that matches and that the subject gate
    lets through; the matches the gate blocked are returned as evidence (at most
    MAX_BLOCKED_EVIDENCE). The index yields exactly the headlines that match by seed 003's
    rules, in the order a scan of every earlier headline would meet them. A recurring title
    of the same publisher does not decide: the first such match is returned third, as the
    decision to make should stage 2 be unable to compare the bodies."""
    blocked: list[dict[str, Any]] = []
    recurring: Decision | None = None
    for kept, found in index.matches(candidate.headline):
        reason = (
            subject_gate(
                candidate.entry.title,
                candidate.tokens,
                kept.title,
                kept.tokens,
                casing,
                settings.subject_max_tokens,
            )
            if settings.subject_gate
            else None
        )
        if reason is not None:
            if len(blocked) < MAX_BLOCKED_EVIDENCE:
                blocked.append({"matched_title": kept.title, "reason": reason})
            continue
        decision = _duplicate(
            candidate,
            found.rule,
            round(found.score, 6),
            found.threshold,
            kept.match,
            {
                **common,
                "where": _where(kept.match),
                "shared_tokens": list(found.shared),
                "headline_tokens": list(candidate.tokens),
                "matched_title": kept.title,
                "subject_gate": "passed" if settings.subject_gate else "off",
            },
        )
        if not _is_recurring_title(candidate, kept, found, settings):
            return decision, blocked, None
        if recurring is None:
            recurring = dataclasses.replace(
                decision, evidence={**decision.evidence, "recurring_title": True}
            )
    return None, blocked, recurring


def _cjk_repeat(
    candidate: Candidate,
    scope: str,
    memory: _Memory,
    stats: cjk.GramStats,
    common: dict[str, Any],
    result: Stage1Result,
    replaced: dict[str, str],
) -> Decision | None:
    """Compare with the representatives of the candidate's lead-token bucket only (the gate
    also makes the comparison linear). A better representative of this run takes over."""
    settings = memory.settings
    bucket = memory.cjk_buckets[(scope, candidate.lead)]
    for position, kept in enumerate(bucket):
        found = cjk.match_cjk(
            candidate.grams, candidate.lead, kept.grams, kept.lead, stats, settings.cjk_threshold
        )
        if found is None:
            continue
        evidence = {
            **common,
            "where": _where(kept.match),
            "lead_token": found.lead,
            "subject_gate": "same lead token",
            "shared_grams": found.shared_grams,
            "matched_title": kept.title,
        }
        score = round(found.score, 6)
        own_rank = _rank(candidate)
        if kept.match.batch_key is None or own_rank >= kept.rank:
            return _duplicate(candidate, "cjk", score, settings.cjk_threshold, kept.match, evidence)
        # an original outlet's copy represents the group instead of a portal's copy
        demoted = kept.match.batch_key
        own = Match(batch_key=candidate.key)
        result.decisions[demoted] = _duplicate_of(
            demoted,
            "cjk",
            score,
            settings.cjk_threshold,
            own,
            {
                **evidence,
                "matched_title": candidate.entry.title,
                "replaced_by_better_representative": True,
            },
        )
        replaced[demoted] = candidate.key
        bucket[position] = _Kept(
            match=own,
            title=candidate.entry.title,
            headline=candidate.headline,
            tokens=candidate.tokens,
            grams=candidate.grams,
            lead=candidate.lead,
            rank=own_rank,
        )
        memory.ids.setdefault((scope, candidate.entry.entry_id), own)
        if candidate.url_hash:
            memory.hashes.setdefault((scope, candidate.url_hash), own)
        return Decision(
            key=candidate.key,
            stage="stage1",
            decision="kept",
            evidence={**common, "replaced_representative": demoted},
        )
    return None


def _follow_replacements(result: Stage1Result, replaced: dict[str, str]) -> None:
    """Point duplicates of a demoted representative at the one that replaced it."""
    if not replaced:
        return
    for key, decision in list(result.decisions.items()):
        target = decision.matched.batch_key if decision.matched else None
        if target in replaced and key != replaced[target]:
            while target in replaced:
                target = replaced[target]
            result.decisions[key] = Decision(
                key=decision.key,
                stage=decision.stage,
                decision=decision.decision,
                rule=decision.rule,
                score=decision.score,
                threshold=decision.threshold,
                matched=Match(batch_key=target),
                evidence=decision.evidence,
            )


def _duplicate(
    candidate: Candidate,
    rule: str,
    score: float,
    threshold: float,
    matched: Match,
    evidence: dict[str, Any],
) -> Decision:
    return _duplicate_of(candidate.key, rule, score, threshold, matched, evidence)


def _duplicate_of(
    key: str, rule: str, score: float, threshold: float, matched: Match, evidence: dict[str, Any]
) -> Decision:
    return Decision(
        key=key,
        stage="stage1",
        decision="duplicate",
        rule=rule,
        score=score,
        threshold=threshold,
        matched=matched,
        evidence=evidence,
    )


def _where(matched: Match) -> str:
    return "window" if matched.item_id is not None else "run"

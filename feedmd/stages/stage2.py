"""Stage 2: decide on article bodies, after the scrape.

Pure: takes the stage-1 survivors (oldest first), their pages and a ``WindowSnapshot``, and
returns one decision per survivor. Two matchers look at each body, and either may flag a
reprint (seed 002's combination), with both scores recorded and the deciding one named:

- TLSH distance of the prose digests <= ``tlsh_max_distance`` (seed 003), found through an
  exact vectorised index (``tlsh_index.py``);
- containment of word 5-gram shingles >= ``shingle_containment_threshold``, which catches
  reprints with a trimmed or extended tail, a dateline or a copyright line (``bodies.py``).

Verdict tiers (seed 002): ``reprint`` (dropped as a duplicate of the earliest matching
body), ``similar`` (kept, marked "possible duplicate of" the closest body, when TLSH is
within ``similar_tlsh_distance`` or containment reaches ``similar_containment``), and
``different``. A page that failed is ``failed`` at the scrape; prose with no digest is kept
and can only have been matched by its headline. Each survivor is compared with the kept
bodies of the window and scope and with the earlier kept survivors of this run.

Three checks sit on top of the matchers:

- **host furniture** (``host_furniture_check``): a reprint verdict against a body of the
  same host whose headline shares no content word with this one is that host's wall or
  template (a consent notice the wall list missed), not a reprint: the item is kept,
  marked, and its body is not compared again in the run. It needs no word list.
- **shared blocks** (``shared_block_min_stories``): a body near-identical to bodies under
  the headlines of that many unrelated stories, on any hosts, is a block many sites print
  (a consent platform's notice), not a reprint. Counted over the matched body's headline,
  those of the window's items stage 2 found carrying it (its reprints, shared blocks and
  furniture, by ``matched_item_id``) and the run's, headlines that share a content word
  being one story; once a body is a shared block it stays one. Every item of the run it
  had dropped is kept and marked. It needs no word list either.
- **recurring titles** (``recurring_title_check``): a survivor that stage 1 let through
  only because its identical title came from the same publisher (``Candidate.recurring``)
  is a duplicate if its body is a reprint, kept if the body differs, and decided by the
  title as before when there is no body to compare.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from feedmd.fingerprints.shingles import ShingleIndex, reaches, unpack
from feedmd.fingerprints.tlsh_index import TlshIndex
from feedmd.models import Candidate, Decision, Match, Page, Stage1Result, WindowSnapshot
from feedmd.settings import Settings
from feedmd.stages.stage1 import scope_key

# The rules of bodies kept as a shared block or as a host's furniture; with their matched
# body stored, later window reads count their headlines among the body's
# (store/body_candidates.py ECHO_WHERE).
SHARED_BLOCK = "shared-block"
HOST_FURNITURE = "host-furniture"


@dataclass(frozen=True)
class _Byline:
    """Who published a body and under what headline: the furniture check's inputs; for a
    stored body also the headlines of the items stage 2 found carrying it, and whether it
    is already a shared block (``StoredBody.echoes``, ``StoredBody.shared_block``)."""

    host: str
    tokens: frozenset[str]
    echoes: tuple[frozenset[str], ...] = ()
    shared_block: bool = False


@dataclass
class _Echoes:
    """One body's headlines for the shared-block check, as groups of linked tokens (one
    group a story), updated as the run meets reprints of it; and the run's items still
    decided as its reprints (a later one may show the body to be shared). Once shared it
    stays shared: more headlines can only link groups, never show the block is a story."""

    groups: list[set[str]] = field(default_factory=list)
    shared: bool = False
    undecided: list[tuple[Candidate, BodyVerdict, Page]] = field(default_factory=list)

    @classmethod
    def of(cls, byline: _Byline | None) -> _Echoes:
        """The headlines a body holds when the run first meets a reprint of it."""
        echoes = cls(shared=bool(byline and byline.shared_block))
        for tokens in [byline.tokens, *byline.echoes] if byline else []:
            echoes.add(tokens)
        return echoes

    def add(self, tokens: frozenset[str]) -> None:
        """One more headline over the body (none without tokens: it says nothing)."""
        if tokens:
            linked = [group for group in self.groups if not group.isdisjoint(tokens)]
            self.groups = [group for group in self.groups if group.isdisjoint(tokens)]
            self.groups.append(set(tokens).union(*linked))


@dataclass
class _Scope:
    """The bodies one scope compares against, in the order they became canonical."""

    digests: TlshIndex[Match] = field(default_factory=TlshIndex)
    shingles: ShingleIndex[Match] = field(default_factory=ShingleIndex)
    order: dict[Match, int] = field(default_factory=dict)

    def add(self, digest: str, shingles: bytes, match: Match) -> None:
        self.order[match] = len(self.order)
        self.digests.add(digest, match)
        if shingles:
            self.shingles.add(unpack(shingles), match)


@dataclass(frozen=True)
class BodyVerdict:
    """Both matchers' view of one body against the earlier ones."""

    tier: str  # "reprint", "similar", "different"
    rule: str | None
    matched: Match | None
    score: float | None
    threshold: float | None
    tlsh_distance: int | None
    tlsh_match: Match | None
    containment: float | None
    containment_match: Match | None


def judge(digest: str, shingles: bytes, scope: _Scope, settings: Settings) -> BodyVerdict:
    """Compare one body with a scope's earlier bodies and name the tier."""
    near = scope.digests.within(digest, settings.similar_tlsh_distance)
    tlsh_best = min(near, key=lambda item: (item[1], scope.order[item[0]])) if near else None
    tlsh_hit = next((item for item in near if item[1] <= settings.tlsh_max_distance), None)
    shingle = (
        scope.shingles.best(unpack(shingles), settings.shingle_containment_threshold)
        if shingles
        else None
    )
    contained = shingle is not None and reaches(shingle[1], settings.shingle_containment_threshold)
    distance = tlsh_hit[1] if tlsh_hit else (tlsh_best[1] if tlsh_best else None)
    tlsh_match = tlsh_hit[0] if tlsh_hit else (tlsh_best[0] if tlsh_best else None)
    score = float(shingle[1]) if shingle else None
    common = {
        "tlsh_distance": distance,
        "tlsh_match": tlsh_match,
        "containment": score,
        "containment_match": shingle[0] if shingle else None,
    }
    if tlsh_hit is not None and (
        not contained or shingle is None or scope.order[tlsh_hit[0]] <= scope.order[shingle[0]]
    ):
        return BodyVerdict(
            "reprint",
            "tlsh",
            tlsh_hit[0],
            float(tlsh_hit[1]),
            float(settings.tlsh_max_distance),
            **common,
        )
    if contained and shingle is not None:
        return BodyVerdict(
            "reprint",
            "shingles",
            shingle[0],
            float(shingle[1]),
            settings.shingle_containment_threshold,
            **common,
        )
    if shingle is not None and reaches(shingle[1], settings.similar_containment):
        return BodyVerdict(
            "similar",
            "shingles",
            shingle[0],
            float(shingle[1]),
            settings.similar_containment,
            **common,
        )
    if tlsh_best is not None:
        return BodyVerdict(
            "similar",
            "tlsh",
            tlsh_best[0],
            float(tlsh_best[1]),
            float(settings.similar_tlsh_distance),
            **common,
        )
    return BodyVerdict("different", None, None, None, None, **common)


def decide(
    survivors: Sequence[Candidate],
    pages: Mapping[tuple[str, str], Page],
    snapshot: WindowSnapshot,
    settings: Settings,
    now: datetime,
) -> dict[str, Decision]:
    """Decide every stage-1 survivor on its body (see the module docstring)."""
    cutoff = now - timedelta(hours=settings.dedup_window_hours)
    scopes: defaultdict[str, _Scope] = defaultdict(_Scope)
    bylines: dict[Match, _Byline] = {}
    for stored in sorted(snapshot.bodies, key=lambda b: (b.published, b.item_id)):
        if stored.published >= cutoff:
            match = Match(item_id=stored.item_id)
            scopes[scope_key(stored.feed, stored.org, settings)].add(
                stored.digest, stored.shingles, match
            )
            bylines[match] = _Byline(
                stored.host,
                frozenset(stored.tokens),
                tuple(map(frozenset, stored.echoes)),
                stored.shared_block,
            )
    common: dict[str, Any] = {
        "window_hours": settings.dedup_window_hours,
        "scope": settings.dedup_scope,
    }
    decisions: dict[str, Decision] = {}
    reprints_of: dict[Match, _Echoes] = {}
    for candidate in survivors:
        entry = candidate.entry
        page = pages[(entry.org, candidate.page_key)]
        if page.status == "failed":
            decisions[candidate.key] = Decision(
                key=candidate.key,
                stage="scrape",
                decision="failed",
                error=page.error,
                evidence={**common, "http_status": page.http_status},
            )
            continue
        if page.digest is None and candidate.recurring is not None:
            # no body to confirm a recurring title on: the title decides, as it would have
            decisions[candidate.key] = dataclasses.replace(
                candidate.recurring,
                evidence={**candidate.recurring.evidence, "body_not_compared": "no digest"},
            )
            continue
        if page.digest is None:
            decisions[candidate.key] = Decision(
                key=candidate.key,
                stage="stage2",
                decision="kept",
                evidence={
                    **common,
                    "verdict": "no digest",
                    "no_digest": page.no_digest_reason,
                    "prose_chars": len(page.prose),
                },
            )
            continue
        scope = scopes[scope_key(entry.feed, entry.org, settings)]
        verdict = judge(page.digest, page.shingles, scope, settings)
        own = _Byline(candidate.host, frozenset(candidate.tokens))
        matched = verdict.matched if verdict.tier == "reprint" else None
        if matched is not None and matched not in reprints_of:
            reprints_of[matched] = _Echoes.of(bylines.get(matched))
        if _host_furniture(verdict, own, bylines, settings):
            decisions[candidate.key] = _furniture(candidate, verdict, page, common)
            if matched is not None:
                reprints_of[matched].add(own.tokens)  # one more story over the body
            continue
        if matched is not None and settings.shared_block_min_stories:
            echoes = reprints_of[matched]
            echoes.add(own.tokens)
            echoes.undecided.append((candidate, verdict, page))
            echoes.shared = echoes.shared or (
                len(echoes.groups) >= settings.shared_block_min_stories
            )
            if echoes.shared:
                for echo, echo_verdict, echo_page in echoes.undecided:  # this one, earlier ones
                    decisions[echo.key] = _shared_block(
                        echo, echo_verdict, echo_page, common, len(echoes.groups)
                    )
                echoes.undecided.clear()
                continue
        decision = _decision(candidate, verdict, page, common)
        if candidate.recurring is not None:
            decision = _confirmed(decision, candidate.recurring)
        decisions[candidate.key] = decision
        if verdict.tier != "reprint":
            own_match = Match(batch_key=candidate.key)
            scope.add(page.digest, page.shingles, own_match)
            bylines[own_match] = own
    return decisions


def _host_furniture(
    verdict: BodyVerdict, own: _Byline, bylines: Mapping[Match, _Byline], settings: Settings
) -> bool:
    """A reprint of a body of the same host under a headline sharing no content word."""
    if not settings.host_furniture_check or verdict.tier != "reprint" or verdict.matched is None:
        return False
    other = bylines.get(verdict.matched)
    return (
        other is not None
        and bool(own.host)
        and own.host == other.host
        and bool(own.tokens)
        and bool(other.tokens)
        and not own.tokens & other.tokens
    )


def _furniture(
    candidate: Candidate, verdict: BodyVerdict, page: Page, common: dict[str, Any]
) -> Decision:
    """Kept: the body is the host's furniture, not this story."""
    return _kept_body(
        candidate,
        verdict,
        _decision(candidate, verdict, page, common),
        HOST_FURNITURE,
        {
            "verdict": "host furniture",
            "furniture_of": _ref(verdict.matched),
            "note": "the same body under an unrelated headline of the same host",
        },
    )


def _kept_body(
    candidate: Candidate,
    verdict: BodyVerdict,
    reprint: Decision,
    rule: str,
    evidence: dict[str, Any],
) -> Decision:
    """Kept although its body is a reprint's: the reprint's evidence and ``evidence``, the
    ``rule`` that kept it, and the body it carries as ``matched`` (stored, so later window
    reads count it among that body's echoes)."""
    return Decision(
        key=candidate.key,
        stage="stage2",
        decision="kept",
        rule=rule,
        matched=verdict.matched,
        evidence={**reprint.evidence, **evidence},
    )


def unrelated_stories(headlines: Sequence[frozenset[str]]) -> int:
    """How many unrelated stories these headlines' token sets stand for: headlines linked
    by a shared content word, directly or through others, are one story. A headline
    without tokens says nothing and is not counted."""
    echoes = _Echoes()
    for tokens in headlines:
        echoes.add(tokens)
    return len(echoes.groups)


def _shared_block(
    candidate: Candidate, verdict: BodyVerdict, page: Page, common: dict[str, Any], stories: int
) -> Decision:
    """Kept: the body is a block printed under unrelated stories, not this story's text."""
    return _kept_body(
        candidate,
        verdict,
        _decision(candidate, verdict, page, common),
        SHARED_BLOCK,
        {
            "verdict": "shared block",
            "shared_with": _ref(verdict.matched),
            "unrelated_stories": stories,
            "note": "the same body under the headlines of unrelated stories",
        },
    )


def _confirmed(decision: Decision, recurring: Decision) -> Decision:
    """A recurring title's stage-2 decision, saying what its title matched."""
    note = (
        "same title and same body"
        if decision.decision == "duplicate"
        else "same title, different body: another story"
    )
    evidence = {
        **decision.evidence,
        "recurring_title_of": _ref(recurring.matched),
        "recurring_title": note,
    }
    return dataclasses.replace(decision, evidence=evidence)


def _ref(match: Match | None) -> dict[str, Any] | None:
    if match is None:
        return None
    return {"item_id": match.item_id} if match.item_id is not None else {"run_key": match.batch_key}


def _decision(
    candidate: Candidate, verdict: BodyVerdict, page: Page, common: dict[str, Any]
) -> Decision:
    evidence = {
        **common,
        "verdict": verdict.tier,
        "digest": page.digest,
        "prose_chars": len(page.prose),
        "tlsh_distance": verdict.tlsh_distance,
        "tlsh_match": _ref(verdict.tlsh_match),
        "containment": None if verdict.containment is None else round(verdict.containment, 4),
        "containment_match": _ref(verdict.containment_match),
        "decided_by": verdict.rule,
    }
    if verdict.tier == "reprint":
        evidence["where"] = "window" if verdict.matched and verdict.matched.item_id else "run"
        return Decision(
            key=candidate.key,
            stage="stage2",
            decision="duplicate",
            rule=verdict.rule,
            score=verdict.score,
            threshold=verdict.threshold,
            matched=verdict.matched,
            evidence=evidence,
        )
    if verdict.tier == "similar":
        evidence["possible_duplicate_of"] = _ref(verdict.matched)
        return Decision(
            key=candidate.key,
            stage="stage2",
            decision="kept",
            rule=f"similar-{verdict.rule}",
            score=verdict.score,
            threshold=verdict.threshold,
            matched=verdict.matched,
            evidence=evidence,
        )
    return Decision(key=candidate.key, stage="stage2", decision="kept", evidence=evidence)


def finalize(first: Stage1Result, second: Mapping[str, Decision]) -> dict[str, Decision]:
    """Every candidate's final decision, with each duplicate pointing at a kept item: when
    stage 1 dropped Y as a copy of X from this run and stage 2 then dropped X as a reprint
    of Z, Y points at Z (and says it came through X)."""
    final = {c.key: second.get(c.key) or first.decisions[c.key] for c in first.candidates}
    for key, decision in list(final.items()):
        target = decision.matched
        via: list[str] = []
        while (
            target is not None
            and target.batch_key is not None
            and final[target.batch_key].decision == "duplicate"
            and target.batch_key not in via
        ):
            via.append(target.batch_key)
            target = final[target.batch_key].matched
        if via:
            final[key] = dataclasses.replace(
                decision, matched=target, evidence={**decision.evidence, "matched_through": via}
            )
    return final

"""Stage 2: decide on article bodies, after the scrape.

Pure: takes the stage-1 survivors (oldest first), their pages and a ``WindowSnapshot``, and
returns one decision per survivor:

- a page that could not be fetched or read: ``failed`` at the scrape, with the reason;
- prose with no digest (too short, not HTML): kept, matched by headline only, and the
  evidence says why;
- a digest within ``tlsh_max_distance`` of a kept body in the window and scope, or of an
  earlier kept survivor of this run: ``duplicate``, rule ``tlsh``, pointing at the earliest;
- otherwise kept.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

import tlsh

from feedmd.config import Settings
from feedmd.models import Decision, Match, Page, WindowSnapshot
from feedmd.stages.stage1 import Candidate, scope_key


def decide(
    survivors: Sequence[Candidate],
    pages: Mapping[tuple[str, str], Page],
    snapshot: WindowSnapshot,
    settings: Settings,
    now: datetime,
) -> dict[str, Decision]:
    """Decide every stage-1 survivor on its body (see the module docstring)."""
    cutoff = now - timedelta(hours=settings.dedup_window_hours)
    bodies: defaultdict[str, list[tuple[str, Match]]] = defaultdict(list)
    for stored in sorted(snapshot.bodies, key=lambda b: (b.published, b.item_id)):
        if stored.published >= cutoff:
            bodies[scope_key(stored.feed, stored.org, settings)].append(
                (stored.digest, Match(item_id=stored.item_id))
            )
    common = {"window_hours": settings.dedup_window_hours, "scope": settings.dedup_scope}
    decisions: dict[str, Decision] = {}
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
        if page.digest is None:
            decisions[candidate.key] = Decision(
                key=candidate.key,
                stage="stage2",
                decision="kept",
                evidence={
                    **common,
                    "no_digest": page.no_digest_reason,
                    "prose_chars": len(page.prose),
                },
            )
            continue
        scope = scope_key(entry.feed, entry.org, settings)
        decision = _body_repeat(candidate, page.digest, bodies[scope], settings, common)
        if decision is None:
            decision = Decision(
                key=candidate.key,
                stage="stage2",
                decision="kept",
                evidence={**common, "digest": page.digest, "prose_chars": len(page.prose)},
            )
            bodies[scope].append((page.digest, Match(batch_key=candidate.key)))
        decisions[candidate.key] = decision
    return decisions


def _body_repeat(
    candidate: Candidate,
    digest: str,
    earlier: list[tuple[str, Match]],
    settings: Settings,
    common: dict[str, object],
) -> Decision | None:
    for other, matched in earlier:
        distance = tlsh.diff(digest, other)
        if distance <= settings.tlsh_max_distance:
            return Decision(
                key=candidate.key,
                stage="stage2",
                decision="duplicate",
                rule="tlsh",
                score=float(distance),
                threshold=float(settings.tlsh_max_distance),
                matched=matched,
                evidence={
                    **common,
                    "where": "window" if matched.item_id else "run",
                    "tlsh_distance": distance,
                    "digest": digest,
                    "matched_digest": other,
                },
            )
    return None

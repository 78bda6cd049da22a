"""Retries as a policy: when a failed page (or feed) is fetched again, and when to stop.

Pure: given one failure (its HTTP status or error text), how many fetches failed so far,
when the entry was first seen, when its dedup window ends and the time now, ``decide``
says "retry at T" or "give up, because ...". The store keeps the attempts; the conductor
(``feedmd.pipeline``) asks this module and fetches the due pages again.

- transient: timeouts, connection errors (reset, refused, truncated bodies), 408, 425,
  429 and 5xx: retried with exponential backoff (``item_retry_base_minutes`` doubling,
  capped at ``item_retry_max_hours``) while the item is inside its dedup window;
- gone: 404 and 410, retried only within ``item_retry_gone_grace_hours`` after the entry
  was first seen (a feed lists an article before the publisher's deploy serves it), then
  permanent;
- permanent: any other 4xx, too many redirects, a refused address, an oversized body, an
  extraction error: given up at once (``feedmd retry`` can still ask for one more try).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from functools import partial

from feedmd.models import (
    Attempt,
    Candidate,
    Decision,
    DueRetry,
    Kind,
    Stage1Result,
    Verdict,
)
from feedmd.settings import Settings
from feedmd.stages.stage1 import prepare

TRANSIENT_STATUSES = frozenset({408, 425, 429})
GONE_STATUSES = frozenset({404, 410})
# FetchError texts (feedmd.sources.http) of failures that a later fetch may not meet:
# timeouts and httpx's transport errors, and bodies cut short.
_TRANSIENT_ERROR = re.compile(
    r"timed out|Timeout|ConnectError|ReadError|WriteError|RemoteProtocolError|NetworkError"
    r"|ProxyError|truncated|ended before|Connection reset|Connection refused",
)


def classify(http_status: int | None, error: str | None) -> Kind:
    """Transient, gone (404 / 410) or permanent, from the HTTP status or the error text."""
    if http_status is not None and http_status >= 400:
        if http_status in GONE_STATUSES:
            return "gone"
        if http_status in TRANSIENT_STATUSES or http_status >= 500:
            return "transient"
        return "permanent"
    if error and _TRANSIENT_ERROR.search(error):
        return "transient"
    return "permanent"


def backoff(attempts: int, base: timedelta, cap: timedelta) -> timedelta:
    """The wait after ``attempts`` failed fetches: base, 2 x base, 4 x base ... at most cap."""
    if attempts <= 0:
        return timedelta(0)
    return min(cap, base * 2 ** min(attempts - 1, 30))


def decide(
    http_status: int | None,
    error: str | None,
    attempts: int,
    first_seen: datetime,
    window_ends: datetime,
    now: datetime,
    settings: Settings,
) -> Verdict:
    """After the ``attempts``-th failed fetch of an item's page: retry when, or give up why."""
    kind = classify(http_status, error)
    what = f"HTTP {http_status}" if http_status is not None else (error or "failure")
    if kind == "permanent":
        return Verdict(kind, gave_up=f"permanent failure ({what})")
    retry_at = now + backoff(
        attempts,
        timedelta(minutes=settings.item_retry_base_minutes),
        timedelta(hours=settings.item_retry_max_hours),
    )
    if kind == "gone":
        grace_ends = first_seen + timedelta(hours=settings.item_retry_gone_grace_hours)
        if now >= grace_ends:
            return Verdict(
                kind,
                gave_up=f"{what} after the {settings.item_retry_gone_grace_hours:g} h grace period",
            )
        retry_at = min(retry_at, grace_ends)  # one last try when the grace period ends
    if retry_at >= window_ends:
        return Verdict(kind, gave_up=f"{what}; its dedup window ends before the next try")
    return Verdict(kind, retry_at=retry_at)


def feed_due_after_error(streak: int, poll_minutes: float, settings: Settings) -> timedelta:
    """How long after its ``streak``-th failed fetch in a row a feed is due again: backoff
    from ``feed_retry_base_minutes``, never later than its poll interval."""
    return backoff(
        streak, timedelta(minutes=settings.feed_retry_base_minutes), timedelta(minutes=poll_minutes)
    )


def feed_retry_after(settings: Settings) -> Callable[[int, float], timedelta]:
    """``feed_due_after_error`` under ``settings``: what the store's ``persist`` asks when
    it records a failed feed fetch (streak, poll minutes -> wait)."""
    return partial(feed_due_after_error, settings=settings)


def candidates(due: Sequence[DueRetry]) -> list[Candidate]:
    """The due items as stage-1 candidates (stage 1 kept them when they first came)."""
    return [prepare(d.entry) for d in due]


def with_retries(first: Stage1Result, due: Sequence[DueRetry]) -> Stage1Result:
    """Stage 1's result with the due items added as survivors, in publication order, so
    stage 2 decides them on their bodies against the window and this run's survivors, as
    if their pages had come the first time."""
    if not due:
        return first
    extra = candidates(due)
    merged = sorted([*first.candidates, *extra], key=lambda c: c.entry.published)
    decisions = dict(first.decisions)
    for candidate in extra:
        decisions[candidate.key] = Decision(
            key=candidate.key,
            stage="stage1",
            decision="kept",
            evidence={"retry": "fetched again after a failed page"},
        )
    return Stage1Result(candidates=merged, seen_before=first.seen_before, decisions=decisions)


def attempts_of(
    first: Stage1Result,
    due: Sequence[DueRetry],
    final: Mapping[str, Decision],
    settings: Settings,
    now: datetime,
) -> list[Attempt]:
    """Every page fetch of this run that failed, or that recovered a failed item, with the
    policy's verdict on each failure."""
    window = timedelta(hours=settings.dedup_window_hours)
    out: list[Attempt] = []
    for candidate in first.candidates:
        decision = final.get(candidate.key) or first.decisions[candidate.key]
        if decision.decision != "failed":
            continue
        status = decision.evidence.get("http_status")
        out.append(
            Attempt(
                key=candidate.key,
                outcome="failed",
                attempts=1,
                first_seen=now,
                http_status=status,
                error=decision.error,
                verdict=decide(
                    status,
                    decision.error,
                    1,
                    now,
                    candidate.entry.published + window,
                    now,
                    settings,
                ),
            )
        )
    for item in due:
        decision = final[item.key]
        if decision.decision != "failed":
            out.append(
                Attempt(
                    key=item.key,
                    outcome="recovered",
                    attempts=item.attempts,
                    first_seen=item.first_failed_at,
                    item_id=item.item_id,
                )
            )
            continue
        status = decision.evidence.get("http_status")
        tries = item.attempts + 1
        verdict = decide(
            status,
            decision.error,
            tries,
            item.first_failed_at,
            item.entry.published + window,
            now,
            settings,
        )
        out.append(
            Attempt(
                key=item.key,
                outcome="failed",
                attempts=tries,
                first_seen=item.first_failed_at,
                item_id=item.item_id,
                http_status=status,
                error=decision.error,
                verdict=verdict,
            )
        )
    return out

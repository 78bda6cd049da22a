"""The run report: what a run found, dropped (by stage and rule), scraped, kept and
delivered, and how long each step took. Printed after every run and stored with it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from feedmd.models import Decision, Delivered, FeedResult, Page, RetryBatch, Stage1Result

EXIT_OK = 0
EXIT_PARTIAL = 3
# How many feeds not due the terminal report names (the JSON report has them all).
NOT_DUE_SHOWN = 10


@dataclass(frozen=True)
class RunReport:
    """Counts of one run; ``status`` is 'ok', or 'partial' when a feed or page failed."""

    run_id: int
    as_of: str
    status: str
    feeds: int
    feeds_not_modified: int
    feeds_deferred: int
    feeds_failed: int
    found: int
    skipped_old: int
    repeated_in_feed: int
    invalid_entries: int
    over_limit: int
    seen_before: int
    new: int
    dropped_stage1: dict[str, int]
    scraped: int
    reused: int
    dropped_stage2: dict[str, int]
    kept: int
    failed: int
    no_digest: int
    delivered: int
    webhook_queued: int
    webhook_delivered: int
    webhook_failed_attempts: int
    seconds: dict[str, float]
    feed_errors: dict[str, str] = field(default_factory=dict)
    item_errors: list[str] = field(default_factory=list)
    # failed items fetched again by this run, those whose page came (now kept or
    # duplicate), and failed items whose retries stopped (permanent failure, grace period
    # or dedup window over)
    retried: int = 0
    recovered: int = 0
    given_up: int = 0
    # the configured feeds this run left alone, with when each is due (a failed feed is
    # due sooner than its poll interval)
    feeds_not_due: dict[str, str] = field(default_factory=dict)
    # kept items that joined an earlier item's event, that opened their own, and why the
    # event step could not run (the model absent: the items are kept without an event)
    events_joined: int = 0
    events_opened: int = 0
    events_error: str | None = None
    # kept items of earlier runs (or restored by a reviewer) placed in events by this run,
    # and how many still wait for one (docs/events.md "Caught up later")
    events_caught_up: int = 0
    events_waiting: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The report as plain JSON-ready data."""
        return asdict(self)

    @property
    def exit_code(self) -> int:
        """0 when everything worked, EXIT_PARTIAL when some feeds or pages failed."""
        return EXIT_OK if self.status == "ok" else EXIT_PARTIAL

    def render(self) -> str:
        """A short human-readable summary for the terminal."""

        def rules(counts: Mapping[str, int]) -> str:
            inner = ", ".join(f"{rule} {n}" for rule, n in sorted(counts.items()))
            return f"{sum(counts.values())}" + (f" ({inner})" if inner else "")

        timing = ", ".join(f"{step} {sec:.2f}s" for step, sec in self.seconds.items())
        lines = [
            f"run {self.run_id} as of {self.as_of}: {self.status}",
            f"  feeds        {self.feeds} ({self.feeds_not_modified} not modified, "
            f"{self.feeds_failed} failed, {self.feeds_deferred} left for the next run)",
            f"  found        {self.found} entries ({self.skipped_old} older than the history "
            f"window, {self.repeated_in_feed} repeated in a feed, {self.invalid_entries} without "
            f"a link, {self.seen_before} seen before)",
            f"  new          {self.new}",
            f"  stage 1      dropped {rules(self.dropped_stage1)}",
            f"  scraped      {self.scraped} pages fetched, {self.reused} reused",
            f"  stage 2      dropped {rules(self.dropped_stage2)}",
            f"  kept         {self.kept} ({self.no_digest} without a digest)",
            f"  failed       {self.failed}",
            f"  retries      {self.retried} failed pages fetched again, {self.recovered} "
            f"recovered, {self.given_up} given up",
            f"  delivered    {self.delivered} to files, {self.webhook_delivered} webhook "
            f"messages ({self.webhook_failed_attempts} failed attempts)",
            f"  events       {self.events_joined} joined an earlier item's event, "
            f"{self.events_opened} opened one; {self.events_caught_up} earlier items "
            f"caught up, {self.events_waiting} still waiting",
            f"  time         {timing}",
        ]
        if self.events_error:
            lines.append(f"  events error {self.events_error}")
        if self.feeds_not_due:
            shown = sorted(self.feeds_not_due.items(), key=lambda item: (item[1], item[0]))
            names = ", ".join(f"{name} (due {due})" for name, due in shown[:NOT_DUE_SHOWN])
            more = len(shown) - NOT_DUE_SHOWN
            lines.append(
                f"  not due      {len(shown)}: {names}" + (f" and {more} more" if more > 0 else "")
            )
        lines += [
            f"  feed error   {name}: {error}" for name, error in sorted(self.feed_errors.items())
        ]
        lines += [f"  item error   {error}" for error in self.item_errors]
        return "\n".join(lines)


def build_report(
    run_id: int,
    as_of: str,
    feeds: Sequence[FeedResult],
    stage1: Stage1Result,
    pages: Mapping[tuple[str, str], Page],
    stage2: Mapping[str, Decision],
    delivered: Delivered,
    seconds: Mapping[str, float],
) -> RunReport:
    """Count a run's outcome from the stages' results."""
    final = {c.key: stage2.get(c.key) or stage1.decisions[c.key] for c in stage1.candidates}
    dropped1 = Counter(
        d.rule or "" for d in final.values() if d.decision == "duplicate" and d.stage == "stage1"
    )
    dropped2 = Counter(
        d.rule or "" for d in final.values() if d.decision == "duplicate" and d.stage == "stage2"
    )
    failed = [d for d in final.values() if d.decision == "failed"]
    titles = {c.key: c.entry.title for c in stage1.candidates}
    kept = [d for d in final.values() if d.decision == "kept"]
    feed_errors = {r.feed: r.error or "" for r in feeds if r.status == "error"}
    status = "partial" if failed or feed_errors else "ok"
    return RunReport(
        run_id=run_id,
        as_of=as_of,
        status=status,
        feeds=len(feeds),
        feeds_not_modified=sum(r.status == "not-modified" for r in feeds),
        feeds_deferred=sum(r.status == "deferred" for r in feeds),
        feeds_failed=len(feed_errors),
        found=sum(r.found for r in feeds),
        skipped_old=sum(r.skipped_old for r in feeds),
        repeated_in_feed=sum(r.repeated_in_feed for r in feeds),
        invalid_entries=sum(r.invalid for r in feeds),
        over_limit=sum(r.over_limit for r in feeds),
        seen_before=len(stage1.seen_before),
        new=len(stage1.candidates),
        dropped_stage1=dict(dropped1),
        scraped=sum(p.status not in ("reused", "skipped") for p in pages.values()),
        reused=sum(p.status == "reused" for p in pages.values()),
        dropped_stage2=dict(dropped2),
        kept=len(kept),
        failed=len(failed),
        no_digest=sum(1 for d in kept if d.stage == "stage2" and "no_digest" in d.evidence),
        delivered=delivered.files,
        webhook_queued=delivered.webhooks.queued,
        webhook_delivered=delivered.webhooks.delivered,
        webhook_failed_attempts=delivered.webhooks.failed_attempts,
        seconds={k: round(v, 3) for k, v in seconds.items()},
        feed_errors=feed_errors,
        item_errors=[f"{titles[d.key][:80]!r}: {d.error}" for d in failed],
    )


def with_event_counts(report: RunReport, events: EventCounts) -> RunReport:
    """The report with the event step's counts; a run whose event step failed (the model
    absent) is partial, so the exit code says that its items were kept without events
    (they wait for a later run)."""
    return replace(
        report,
        events_joined=events.joined,
        events_opened=events.opened,
        events_error=events.error,
        events_caught_up=events.caught_up,
        events_waiting=events.remaining,
        status="partial" if events.error else report.status,
    )


class EventCounts(Protocol):
    """What the report reads of the event step's outcome (``feedmd.events.step``)."""

    @property
    def joined(self) -> int:
        """The run's items that joined an earlier item's event."""
        ...

    @property
    def opened(self) -> int:
        """The run's items that opened an event."""
        ...

    @property
    def error(self) -> str | None:
        """Why the step could not run."""
        ...

    @property
    def caught_up(self) -> int:
        """Waiting items placed in events by this run."""
        ...

    @property
    def remaining(self) -> int:
        """Items still waiting for an event."""
        ...


def with_retry_counts(report: RunReport, retries: RetryBatch, expired: int) -> RunReport:
    """The report with the run's retry counts: items fetched again, recovered, given up
    (after this run's attempts, or because they left their dedup window)."""
    return replace(
        report,
        retried=len(retries.due),
        recovered=sum(1 for a in retries.attempts if a.outcome == "recovered"),
        given_up=retries.given_up + expired,
    )

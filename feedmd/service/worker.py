"""``feedmd worker``: one of any number of processes, on any number of machines, sharing one
database. Each loops:

1. claim an org with a due feed (``Store.claim_org``: one short transaction; ``FOR UPDATE
   SKIP LOCKED`` on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite), its claim renewed while it
   works;
2. read the org's feeds again under the claim and pick the due ones (``fetch.next_due``, the
   rule ``feedmd serve``'s scheduler and ``feedmd run`` use: its poll interval since the last
   fetch, or its retry time after a failed fetch);
3. run the pipeline on them (the run lease serialises the org's decisions with any
   ``feedmd run`` or ``feedmd serve`` on the same database, and recovers killed runs);
4. give the claim back;
5. when no org is claimable: a webhook delivery pass (messages are claimed one at a time,
   ``Store.claim_next_delivery``), then wait ``worker_poll_seconds``.

A worker killed mid-run leaves its claim behind: another worker takes it over when it
expires (``worker_claim_seconds``; at once on the same host, whose process table shows the
worker gone) and runs the org even with nothing due, so the run lease's recovery marks the
dead run abandoned and delivers the items it stored.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from feedmd import pipeline
from feedmd.delivery import deliver, webhooks
from feedmd.errors import RunLeaseHeld
from feedmd.models import FeedSpec
from feedmd.service.scheduler import log_deliveries, log_run
from feedmd.settings.config import Config, FeedConfig
from feedmd.sources.fetch import next_due
from feedmd.store import OrgClaim, Store, open_store
from feedmd.timeutil import utcnow

log = logging.getLogger("feedmd.worker")


def default_worker_id() -> str:
    """``host:pid``: unique among live workers, and what a person looks for in ``ps``."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class WorkerOptions:
    """How one worker runs: its id, one pass or forever, and at most how many feeds."""

    worker_id: str = field(default_factory=default_worker_id)
    once: bool = False
    max_feeds: int | None = None


@dataclass
class WorkerTotals:
    """What a worker did, for its last log line and ``--json``."""

    worker: str
    runs: int = 0
    feeds: int = 0
    recoveries: int = 0
    failed_runs: int = 0
    lease_held: int = 0
    delivered: int = 0
    max_rss_mb: float = 0.0
    # the clock (epoch seconds) when the first run started and the last one ended: the
    # span benchmarks/workers.py measures throughput over (process start-up left out)
    first_run_at: float | None = None
    last_run_at: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """The totals as plain JSON values."""
        return dataclasses.asdict(self)


def due_orgs(specs: Sequence[FeedSpec], now: datetime) -> list[str]:
    """The orgs with at least one due feed, the one waiting longest first."""
    first: dict[str, datetime] = {}
    for spec in specs:
        due = next_due(spec)
        if due <= now and (spec.org not in first or due < first[spec.org]):
            first[spec.org] = due
    return sorted(first, key=lambda org: (first[org], org))


def feeds_to_run(specs: Sequence[FeedSpec], now: datetime, limit: int | None) -> list[str]:
    """The names of the due feeds among ``specs``, the one waiting longest first, at most
    ``limit`` (None: all)."""
    due = sorted((next_due(spec), spec.name) for spec in specs if next_due(spec) <= now)
    return [name for _, name in due][:limit]


class Worker:
    """Claims orgs with due feeds, runs them, delivers webhooks, until ``stop`` is set (or
    after one pass with ``once``, or once ``max_feeds`` feeds have been run)."""

    def __init__(
        self,
        config: Config,
        options: WorkerOptions,
        stop: threading.Event | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.config = config
        self.options = options
        self.stop = stop or threading.Event()
        self.clock = clock
        self.totals = WorkerTotals(worker=options.worker_id)
        self._by_org: dict[str, tuple[FeedConfig, ...]] = {}
        for feed in config.feeds:
            self._by_org[feed.org] = (*self._by_org.get(feed.org, ()), feed)
        self._policy = webhooks.policy_from(config.settings)

    def run(self) -> WorkerTotals:
        """Work until stopped; return the totals.

        The store is opened (and migrated) once. A store error outside a run (the database
        restarting, a lost connection) is logged and the store opened again after
        ``worker_poll_seconds``; with ``once`` it ends the worker instead."""
        store: Store | None = self._open()
        try:
            while not self.stop.is_set():
                try:
                    store = store or self._open()
                    if not self._quota_spent() and self.work_once(store):
                        continue
                    self._deliver(store)
                except Exception:
                    if self.options.once:
                        raise
                    log.exception("worker %s: store error; retried", self.options.worker_id)
                    if store is not None:
                        store.close()
                    store = None
                else:
                    if self.options.once or self._quota_spent():
                        break
                self.stop.wait(self.config.settings.worker_poll_seconds)
        finally:
            if store is not None:
                store.close()
            self.totals.max_rss_mb = _max_rss_mb()
        return self.totals

    def _open(self) -> Store:
        """Open the store and record the configuration: feeds, endpoints, claim rows."""
        store = open_store(self.config.database)
        try:
            store.sync_feeds(self.config)
            deliver.sync_configuration(store, self.config)
            store.add_claim_rows()
        except BaseException:
            store.close()
            raise
        return store

    def work_once(self, store: Store) -> bool:
        """Claim one org with due feeds (or waiting for recovery), run it and give it back;
        False when no org was claimable."""
        settings = self.config.settings
        now = self.clock()
        specs = store.feed_specs(feed.name for feed in self.config.feeds)
        claim = store.claim_org(
            self.config.orgs,
            due_orgs(specs, now),
            self.options.worker_id,
            now,
            settings.worker_claim_seconds,
            os.getpid(),
        )
        if claim is None:
            return False
        with store.claim_renewed(claim, settings.worker_claim_seconds):
            self._run_claimed(store, claim)
        return True

    def _run_claimed(self, store: Store, claim: OrgClaim) -> None:
        """Steps 2-4 for a claimed org. The claim is given back whatever happens (a second
        SIGINT interrupting the run included); only a completed run clears a pending
        recovery; a failed run holds the org back until its next poll interval, a run that
        found the lease held (a ``feedmd run`` beside the workers) for one poll."""
        feeds = self._by_org[claim.org]
        now = self.clock()
        chosen = feeds_to_run(store.feed_specs(f.name for f in feeds), now, self._quota_left())
        if not chosen and not claim.recovering:
            store.release_claim(claim, recovered=False)  # another worker ran it meanwhile
            return
        # with nothing due, the run only takes the lease and delivers the dead run's items
        subset = tuple(f for f in feeds if f.name in chosen) if chosen else feeds
        names = ", ".join(f.name for f in subset)
        started = time.monotonic()
        if self.totals.first_run_at is None:
            self.totals.first_run_at = time.time()
        recovered, held_back = False, None
        try:
            report = pipeline.run(store, dataclasses.replace(self.config, feeds=subset))
            recovered = True
            self.totals.runs += 1
            self.totals.recoveries += int(claim.recovering)
            self.totals.delivered += report.webhook_delivered
            log_run(claim.org, names, report, time.monotonic() - started)
        except RunLeaseHeld as held:
            # a `feedmd run` or `feedmd serve` beside the workers: look again next poll
            self.totals.lease_held += 1
            held_back = self.clock() + timedelta(seconds=self.config.settings.worker_poll_seconds)
            log.warning("org %s skipped: %s", claim.org, held)
        except Exception:
            self.totals.failed_runs += 1
            poll = min(f.poll_minutes for f in subset)
            held_back = now + timedelta(minutes=poll)
            log.exception(
                "run of org %s (feeds %s) failed after %.2f s; next at its interval",
                claim.org,
                names,
                time.monotonic() - started,
            )
        finally:
            self.totals.feeds += len(chosen)
            self.totals.last_run_at = time.time()
            if not store.release_claim(claim, recovered=recovered, not_before=held_back):
                log.warning("the claim on org %s expired before the run ended", claim.org)

    def _deliver(self, store: Store) -> None:
        """A webhook delivery pass: the due messages of every ready endpoint, each claimed
        before it is sent (another worker's pass skips it)."""
        try:
            result = webhooks.deliver_due(store, self._policy)
        except Exception:
            log.exception("webhook delivery pass failed; retried next pass")
            return
        self.totals.delivered += result.delivered
        log_deliveries(result)

    def _quota_left(self) -> int | None:
        if self.options.max_feeds is None:
            return None
        return max(self.options.max_feeds - self.totals.feeds, 0)

    def _quota_spent(self) -> bool:
        left = self._quota_left()
        return left is not None and left <= 0


def _max_rss_mb() -> float:
    """This process's peak resident memory in MB (0 where the platform does not say)."""
    try:
        import resource
    except ImportError:  # Windows
        return 0.0
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)

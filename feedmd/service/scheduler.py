"""The scheduler of ``feedmd serve``: each feed at its own poll interval, one run per org
at a time, webhook delivery passes between runs, and one log line per run.

``feedmd run`` is the one-shot form; this keeps a long-running server's runs going, each a
real ``pipeline.run`` in a worker thread.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from feedmd.report import RunReport
from feedmd.settings.config import FeedConfig
from feedmd.store import connect_store
from feedmd.timeutil import utcnow

log = logging.getLogger(__name__)
# The scheduler's own logger: one INFO line per run, WARNING/ERROR lines for what failed.
scheduler_log = logging.getLogger("feedmd.scheduler")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


@dataclass
class Scheduler:
    """Runs each feed at its own poll interval, in worker threads.

    Due feeds of one org run together in one pipeline run, and an org never has two runs
    at once: two runs of one feed would store its entries twice, and two runs of one org
    could each keep a copy the other is keeping (org-scope dedup reads the window before
    it writes). A run that raises is logged and the feed is due again at its next
    interval; the scheduler goes on. ``clock`` and ``tick`` make it testable without
    waiting: move the clock, call ``tick``.
    """

    feeds: Sequence[FeedConfig]
    run_org: Callable[[str, tuple[FeedConfig, ...]], object]
    deliver: Callable[[], object] | None = None
    clock: Callable[[], datetime] = utcnow
    first_due: Mapping[str, datetime] = field(default_factory=dict)
    workers: int = 4
    # after a run: the feeds due sooner than their interval (a failed fetch's retry time)
    retry_due: Callable[[tuple[FeedConfig, ...]], Mapping[str, datetime]] | None = None

    def __post_init__(self) -> None:
        start = self.clock()
        self.next_due = {feed.name: self.first_due.get(feed.name, start) for feed in self.feeds}
        self.running: dict[str, Future[None]] = {}
        self.failures: dict[str, str] = {}
        self.runs = 0
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="feedmd-run")
        self._lock = threading.Lock()

    def tick(self) -> list[str]:
        """Start a run for every org with due feeds and no run in flight, and a delivery
        pass if none is in flight; return the names of the feeds started."""
        now = self.clock()
        started: list[str] = []
        with self._lock:
            self.running = {k: f for k, f in self.running.items() if not f.done()}
            due: dict[str, list[FeedConfig]] = {}
            for feed in self.feeds:
                if self.next_due[feed.name] <= now and feed.org not in self.running:
                    due.setdefault(feed.org, []).append(feed)
            for org, feeds in due.items():
                for feed in feeds:
                    self.next_due[feed.name] = now + timedelta(minutes=feed.poll_minutes)
                    started.append(feed.name)
                self.running[org] = self._pool.submit(self._guarded, org, tuple(feeds))
            if self.deliver is not None and "<deliveries>" not in self.running:
                self.running["<deliveries>"] = self._pool.submit(self._deliver)
        return started

    def _guarded(self, org: str, feeds: tuple[FeedConfig, ...]) -> None:
        names = ", ".join(f.name for f in feeds)
        started = time.monotonic()
        try:
            report = self.run_org(org, feeds)
            self.failures.pop(org, None)
            log_run(org, names, report, time.monotonic() - started)
        except Exception as exc:  # a failing feed must not stop the others
            self.failures[org] = f"{type(exc).__name__}: {exc}"
            scheduler_log.exception(
                "run of org %s (feeds %s) failed after %.2f s; next at its interval",
                org,
                names,
                time.monotonic() - started,
            )
        finally:
            self.runs += 1
            self._due_sooner(feeds)

    def _due_sooner(self, feeds: tuple[FeedConfig, ...]) -> None:
        """Bring forward the feeds whose fetch failed to their retry time (issue 14)."""
        if self.retry_due is None:
            return
        try:
            sooner = self.retry_due(feeds)
        except Exception:
            log.exception("reading the feeds' retry times failed; next at their interval")
            return
        with self._lock:
            for name, due in sooner.items():
                if name in self.next_due:
                    self.next_due[name] = min(self.next_due[name], due)

    def _deliver(self) -> None:
        try:
            if self.deliver is not None:
                log_deliveries(self.deliver())
        except Exception:
            scheduler_log.exception("webhook delivery pass failed; retried next tick")

    def wait_idle(self, timeout: float = 30.0) -> None:
        """Wait for the runs in flight (tests and shutdown)."""
        with self._lock:
            pending = list(self.running.values())
        for future in pending:
            future.result(timeout=timeout)

    def run_forever(self, stop: threading.Event, tick_seconds: float) -> None:
        """Tick until ``stop`` is set."""
        while not stop.is_set():
            try:
                self.tick()
            except Exception:
                scheduler_log.exception("scheduler tick failed")
            stop.wait(tick_seconds)

    def shutdown(self) -> None:
        """Stop taking work and wait for the runs in flight."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def status(self) -> dict[str, Any]:
        """What /health shows: feeds, their next run, orgs running, recent failures."""
        with self._lock:
            running = sorted(k for k, f in self.running.items() if not f.done())
            next_due = {name: due.isoformat() for name, due in self.next_due.items()}
        return {
            "runs": self.runs,
            "running": running,
            "next_due": next_due,
            "failures": dict(self.failures),
        }


def log_run(org: str, names: str, report: object, seconds: float) -> None:
    """One INFO line for a finished scheduled run (org, feeds, the report's counts, time),
    then a WARNING per failed feed and per failed item, as ``feedmd run`` prints them. A
    ``run_org`` that returns no RunReport (tests, the --db-only scheduler) gets the line
    without counts."""
    if not isinstance(report, RunReport):
        scheduler_log.info("run of org %s (feeds %s) done in %.2f s", org, names, seconds)
        return
    dropped = sum(report.dropped_stage1.values()) + sum(report.dropped_stage2.values())
    scheduler_log.info(
        "run %d of org %s (feeds %s): %s; %d found, %d new, %d kept, %d dropped as duplicates,"
        " %d failed, %d feeds failed, %d webhook messages queued; %.2f s",
        report.run_id,
        org,
        names,
        report.status,
        report.found,
        report.new,
        report.kept,
        dropped,
        report.failed,
        report.feeds_failed,
        report.webhook_queued,
        seconds,
    )
    for feed, error in sorted(report.feed_errors.items()):
        scheduler_log.warning("run %d: feed %s failed: %s", report.run_id, feed, error)
    for error in report.item_errors:
        scheduler_log.warning("run %d: item failed: %s", report.run_id, error)


def log_deliveries(result: object) -> None:
    """One INFO line for a webhook delivery pass that sent or failed something (the
    scheduler's and ``feedmd worker``'s passes); nothing for an idle pass."""
    if getattr(result, "delivered", 0) or getattr(result, "failed_attempts", 0):
        scheduler_log.info(
            "webhooks: %d delivered, %d failed attempts, %d given up, %d endpoints disabled",
            getattr(result, "delivered", 0),
            getattr(result, "failed_attempts", 0),
            getattr(result, "gave_up", 0),
            getattr(result, "disabled", 0),
        )


def configure_logging(level: int = logging.INFO) -> logging.Handler:
    """Send the ``feedmd`` loggers (scheduler, webhooks, server) to standard error at
    ``level``, for ``feedmd serve``: uvicorn configures only its own loggers, and without a
    handler Python drops everything under WARNING. Idempotent; returns the handler."""
    logger = logging.getLogger("feedmd")
    for handler in logger.handlers:
        if getattr(handler, "_feedmd_serve", False):
            return handler
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler._feedmd_serve = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False  # one line per record, whatever the root logger has
    return handler


# ---- wiring for `feedmd serve` ----------------------------------------------------------------


def pipeline_scheduler(config: Any, clock: Callable[[], datetime] = utcnow) -> Scheduler:
    """A Scheduler running the real pipeline on ``config``'s feeds and delivery passes.

    A feed is first due at its last fetch plus its interval (from the store), so a restart
    does not poll every feed at once; a feed never fetched is due now.
    """
    from feedmd import pipeline
    from feedmd.delivery import webhooks
    from feedmd.sources.fetch import next_due
    from feedmd.store import open_store

    def run_org(_org: str, feeds: tuple[FeedConfig, ...]) -> object:
        store = open_store(config.database)
        try:
            subset = dataclasses.replace(config, feeds=feeds)
            return pipeline.run(store, subset, force=True)
        finally:
            store.close()

    policy = webhooks.policy_from(config.settings)

    def deliver_pass() -> object:
        store = connect_store(config.database)
        try:
            return webhooks.deliver_due(store, policy)
        finally:
            store.close()

    def retry_due(feeds: tuple[FeedConfig, ...]) -> dict[str, datetime]:
        store = connect_store(config.database)
        try:
            specs = store.feed_specs(feed.name for feed in feeds)
        finally:
            store.close()
        return {spec.name: spec.next_due_at for spec in specs if spec.next_due_at is not None}

    store = open_store(config.database)
    try:
        specs = store.feed_specs(feed.name for feed in config.feeds)
    finally:
        store.close()
    # at its last fetch plus its interval, or at its retry time after a failed fetch
    first_due = {spec.name: next_due(spec) for spec in specs if spec.last_fetched_at is not None}
    return Scheduler(
        feeds=config.feeds,
        run_org=run_org,
        deliver=deliver_pass,
        clock=clock,
        first_due=first_due,
        retry_due=retry_due,
    )

"""The ``feedmd worker`` command: the wiring of ``feedmd.service.worker`` to the command line and to
SIGTERM / SIGINT."""

from __future__ import annotations

import json
import signal
import threading
from typing import Any

import click

from feedmd.cli.common import config_option, db_option, load, setting_options, settings_from

# The settings ``feedmd worker`` shows as flags (every other one is reachable by --set).
WORKER_SETTINGS = (
    "worker_claim_seconds",
    "run_lease_wait_seconds",
    "fetch_concurrency",
    "proxy",
    "allow_private_addresses",
)


@click.command("worker")
@config_option
@db_option
@click.option(
    "--once",
    is_flag=True,
    help="One pass: run every org that is due now and claimable, deliver the due webhook "
    "messages, then exit.",
)
@click.option(
    "--max-feeds",
    type=click.IntRange(min=1),
    help="Exit after running this many feeds (the last org's run may be cut to fit).",
)
@click.option(
    "--poll-interval",
    "worker_poll_seconds",
    type=click.FloatRange(min=0.05, max=3600),
    help="Seconds an idle worker waits before looking for due feeds again (the setting "
    "worker_poll_seconds) [default: 15.0; env FEEDMD_WORKER_POLL_SECONDS].",
)
@click.option(
    "--worker-id",
    help="The name this worker's claims carry (default: HOST:PID).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the totals as JSON on exit.")
@setting_options(*WORKER_SETTINGS)
def worker_command(
    config_path: str | None,
    db: str | None,
    once: bool,
    max_feeds: int | None,
    worker_id: str | None,
    as_json: bool,
    **kwargs: Any,
) -> None:
    """Run feeds from a shared database, beside any number of other workers.

    Each worker claims one org with due feeds at a time (each feed at its poll_minutes),
    runs them, gives the claim back, and delivers the due webhook messages when no org is
    due. Workers on several machines share one database (PostgreSQL; SQLite for workers on
    one machine). A worker killed mid-run is taken over by another once its claim expires
    (worker_claim_seconds; at once on the same machine), which delivers what the dead run
    stored. SIGTERM or Ctrl-C: finish the current run, give its claim back and exit; a
    second one interrupts the run (its claim is still given back). Use `feedmd serve
    --http-only` beside workers to serve the feeds.
    """
    from feedmd.service.scheduler import configure_logging
    from feedmd.service.worker import Worker, WorkerOptions, default_worker_id
    from feedmd.store import display_database

    poll = kwargs.pop("worker_poll_seconds")
    settings = settings_from(kwargs)
    if poll is not None:
        settings["worker_poll_seconds"] = poll
    config = load(config_path, settings, db)
    if not config.feeds:
        raise click.ClickException(
            "no feeds configured: a worker runs the feeds of a config file (--config, "
            "FEEDMD_CONFIG or ./feedmd.toml)"
        )
    options = WorkerOptions(worker_id or default_worker_id(), once, max_feeds)
    stop = threading.Event()
    _stop_on_signals(stop)
    configure_logging()
    worker = Worker(config, options, stop)
    click.echo(f"worker {options.worker_id} on {display_database(config.database)}", err=True)
    try:
        totals = worker.run()
    except KeyboardInterrupt:
        totals = worker.totals
    click.echo(
        f"worker {totals.worker}: {totals.runs} runs, {totals.feeds} feeds, "
        f"{totals.recoveries} recoveries, {totals.failed_runs} failed, "
        f"{totals.delivered} webhook messages delivered",
        err=True,
    )
    if as_json:
        click.echo(json.dumps(totals.as_dict(), sort_keys=True))


def _stop_on_signals(stop: threading.Event) -> None:
    """SIGTERM and SIGINT: the first asks the worker to stop after its current run; the
    second interrupts the run (KeyboardInterrupt: the run is recorded failed, its lease and
    the worker's claim are given back)."""

    def handle(signum: int, _frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        click.echo(
            f"{signal.Signals(signum).name}: stopping after the current run "
            "(again to interrupt it)",
            err=True,
        )

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)


COMMANDS = (worker_command,)

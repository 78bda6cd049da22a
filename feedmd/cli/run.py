"""The commands of a run and around it: ``feedmd run``, ``demo``, ``explain`` and ``replay``.

``feedmd.cli.main`` registers them on the ``feedmd`` group.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click

from feedmd.cli.common import (
    DEDUP_SETTINGS,
    RUN_SETTINGS,
    config_option,
    db_option,
    load,
    setting_options,
    settings_from,
)
from feedmd.report import RunReport
from feedmd.settings.config import Config, settings_layer
from feedmd.store import connect_store, database_exists, display_database
from feedmd.timeutil import parse_iso


def _progress() -> Callable[[int, int], None] | None:
    """A scrape progress bar (click's) on a terminal; nothing when output is piped."""
    if not sys.stderr.isatty():
        return None
    bar: Any = None

    def show(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = click.progressbar(length=total, label="scraping", file=sys.stderr)
            bar.__enter__()
        bar.update(1)
        if done == total:
            bar.__exit__(None, None, None)
            bar = None

    return show


@click.command("run")
@config_option
@db_option
@click.option(
    "--now",
    "as_of",
    help="Measure windows from this ISO 8601 time instead of the "
    "clock (for replaying an archived day).",
)
@click.option("--force", is_flag=True, help="Fetch every feed, due or not.")
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    help="Write each feed's JSON Feed and Atom files here (overrides [output] directory).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Fetch and decide on a throwaway copy of the store: store nothing, write and send "
    "nothing, and list what would be dropped and why.",
)
@setting_options(*RUN_SETTINGS)
def run_command(
    config_path: str | None,
    db: str | None,
    as_of: str | None,
    force: bool,
    out: str | None,
    as_json: bool,
    dry_run: bool,
    **kwargs: Any,
) -> None:
    """Run every due feed once: fetch, dedup, scrape, dedup, store, deliver.

    \b
    Exit codes:
      0  everything worked
      1  a configuration or store error (nothing was run)
      2  a usage error (a bad flag or value)
      3  the run completed, but some feeds or pages failed
      4  another run of the same orgs holds the lease and did not finish in time
         (run_lease_wait_seconds); try again later
    """
    from feedmd.errors import RunLeaseHeld
    from feedmd.pipeline import run
    from feedmd.store import open_store

    config = load(config_path, settings_from(kwargs), db)
    if not config.feeds:
        hint = (
            "no config file: write one with `feedmd init`, or name it with --config or "
            "FEEDMD_CONFIG"
            if config.source == "<defaults>"
            else f"{config.source}: no feeds configured: add one with `feedmd feeds add`"
        )
        raise click.ClickException(hint)
    now = _parse_now(as_of)
    if dry_run:
        _dry_run(config, now, force, as_json)
        return
    store = open_store(config.database)
    try:
        report = run(store, config, now=now, force=force, output_dir=out, on_page=_progress())
    except RunLeaseHeld as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(exc.exit_code)
    finally:
        store.close()
    _print_report(report, as_json)
    sys.exit(report.exit_code)


def _dry_run(config: Config, now: Any, force: bool, as_json: bool) -> None:
    from feedmd.tools.dryrun import dry_run

    result = dry_run(config, now, force)
    if as_json:
        click.echo(
            json.dumps(
                {"report": result.report.as_dict(), "would_drop": result.dropped},
                indent=2,
                ensure_ascii=False,
            )
        )
    else:
        click.echo("dry run: nothing was stored, written or sent")
        click.echo(result.report.render())
        for row in result.dropped:
            why = (
                f"{row['stage']} {row['rule']} {row['score']:g} (threshold "
                f"{row['threshold']:g}) of {row['matched_publisher']!r}: "
                f"{row['matched_title']!r}"
                if row["decision"] == "duplicate"
                else f"{row['stage']}: {row['error']}"
            )
            click.echo(f"  would drop [{row['decision']}] {row['feed']}: {row['title']!r} -- {why}")
    sys.exit(result.report.exit_code)


def _parse_now(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return parse_iso(text)
    except ValueError:
        raise click.BadParameter(f"not an ISO 8601 time: {text!r}", param_hint="--now") from None


def _print_report(report: RunReport, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2, sort_keys=True))
    else:
        click.echo(report.render())


@click.command("demo")
@click.option(
    "--out",
    default="feedmd-demo",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Folder for feedmd.db and the JSON Feed / Atom files (recreated).",
)
@click.option(
    "--webhook-url",
    help="Also deliver the demo's kept items to this URL, signed with the secret in "
    "FEEDMD_WEBHOOK_SECRET (whsec_...).",
)
@click.option(
    "--database",
    "database",
    help="Store into this database instead of OUT/feedmd.db: a postgresql://user@host:port/db "
    "URL naming an empty database (or another SQLite file).",
)
@setting_options("dedup_scope", "jaccard_threshold", "tlsh_max_distance")
def demo_command(out: str, webhook_url: str | None, database: str | None, **kwargs: Any) -> None:
    """Run the real pipeline on the bundled fixture news day, offline.

    Starts a fixture HTTP server on 127.0.0.1, runs twice into OUT/feedmd.db, writes each
    feed's JSON Feed and Atom into OUT, and prints both run reports. The second run, two
    hours later, fetches and scrapes nothing new.
    """
    from feedmd.tools.demo import run_demo

    if webhook_url:
        from feedmd.delivery.webhooks import load_secret

        load_secret("FEEDMD_WEBHOOK_SECRET")  # a missing secret stops before any work
    result = run_demo(
        out,
        overrides=settings_from(kwargs),
        echo=click.echo,
        webhook_url=webhook_url,
        database=database,
    )
    written = display_database(str(result.database))
    click.echo(f"wrote {written} and {len(result.outputs)} feed files in {out}")


@click.command("explain")
@click.argument("item")
@db_option
@config_option
@click.option(
    "--json", "as_json", is_flag=True, help="Print the whole trail as JSON, evidence complete."
)
def explain_command(item: str, db: str | None, config_path: str | None, as_json: bool) -> None:
    """Show why an item was kept or dropped: each stage it passed, the rule that decided,
    the score against its threshold, the item it matched, the evidence, window and scope.

    ITEM is an item id, a URL, or a search string (titles and publishers)."""
    from feedmd.tools.explain import explain, find_items, render

    config = load(config_path, {}, db)
    if not database_exists(config.database):
        raise click.ClickException(f"{display_database(config.database)}: no such database")
    database = connect_store(config.database)
    try:
        ids = find_items(database, item)
        if not ids:
            raise click.ClickException(f"no item matches {item!r}")
        trails = [t for t in (explain(database, i) for i in ids) if t is not None]
    finally:
        database.close()
    if as_json:
        click.echo(
            json.dumps([t.as_dict() for t in trails], indent=2, ensure_ascii=False, default=str)
        )
        return
    if len(trails) > 1:
        click.echo(f"{len(trails)} items match {item!r} (newest first):\n")
    click.echo("\n\n".join(render(t) for t in trails))


@click.command("replay")
@db_option
@config_option
@click.option("--since", help="Replay the runs from this ISO 8601 time on (default: all).")
@click.option(
    "--settings",
    "settings_path",
    type=click.Path(exists=True, dir_okay=False),
    help="A TOML file of settings to replay under (feedmd.toml keys).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the differences as JSON.")
@setting_options(*DEDUP_SETTINGS)
def replay_command(
    db: str | None,
    config_path: str | None,
    since: str | None,
    settings_path: str | None,
    as_json: bool,
    **kwargs: Any,
) -> None:
    """Re-decide stored items under other settings, from the stored metadata and Markdown,
    without fetching anything, and print the items whose decision changed. The store is
    only read. Each run is replayed under the settings it recorded; --settings and the
    setting flags change them."""
    from feedmd.tools.replay import replay, summarize

    config = load(config_path, {}, db)
    if not database_exists(config.database):
        raise click.ClickException(f"{display_database(config.database)}: no such database")
    changes = settings_layer(settings_path, settings_from(kwargs))
    result = replay(config.database, changes, _parse_now(since))
    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2, ensure_ascii=False))
        return
    click.echo(
        f"replayed {result.items} items of {result.runs} runs: {len(result.changes)} "
        f"decided differently {summarize(result.changes) or ''}"
    )
    for change in result.changes:
        before, after = change.before, change.after
        click.echo(
            f"  {change.feed}/{change.entry_id} {change.title[:70]!r}: "
            f"{before['decision']} ({before['rule']}) -> {after['decision']} "
            f"({after['rule']}{', of ' + after['matched'] if after['matched'] else ''})"
        )


COMMANDS = [run_command, demo_command, explain_command, replay_command]

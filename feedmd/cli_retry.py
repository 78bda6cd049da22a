"""``feedmd retry``: make failed items due now, so the next run fetches their pages again;
``feedmd feeds``: every feed with its status, last error, error streak and next due time.

The command only marks (even items whose retries were given up); the next ``feedmd run``
does the fetching, inside its lease and its transaction, and decides the recovered items
on their bodies like any new ones. The review page's "Retry" button is the same action for
one item. ``cli.py`` registers the command on ``main``.
"""

from __future__ import annotations

import json

import click

from feedmd.cli_delivery import _config, _config_option, _db_option, _open


@click.command("retry")
@click.option("--item", "item_id", type=int, help="Retry this failed item (its id).")
@click.option("--feed", help="Retry every failed item of this feed.")
@click.option("--all", "every", is_flag=True, help="Retry every failed item.")
@_db_option
@_config_option
def retry_command(
    item_id: int | None, feed: str | None, every: bool, db: str | None, config_path: str | None
) -> None:
    """Make failed items due now: the next run fetches their pages again."""
    if sum((item_id is not None, feed is not None, every)) != 1:
        raise click.UsageError("give exactly one of --item ID, --feed NAME, --all")
    database = _open(_config(config_path, db))
    try:
        marked = database.schedule_retries(item_id=item_id, feed=feed)
    finally:
        database.close()
    if item_id is not None and not marked:
        raise click.ClickException(f"item {item_id} is not a failed item")
    click.echo(f"{marked} failed item(s) due now: the next run fetches their pages again")


@click.group("feeds", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@_db_option
@_config_option
@click.pass_context
def feeds_command(
    ctx: click.Context, as_json: bool, db: str | None, config_path: str | None
) -> None:
    """List every feed: status, last error, error streak and next due time."""
    if ctx.invoked_subcommand is not None:
        return
    from feedmd.models import FeedSpec
    from feedmd.stages.fetch import next_due
    from feedmd.timeutil import iso, parse_iso

    database = _open(_config(config_path, db))
    try:
        rows = database.feed_statuses()
    finally:
        database.close()
    for row in rows:
        spec = FeedSpec(
            name=row["name"],
            org=row["org"],
            url=row["url"],
            poll_minutes=row["poll_minutes"],
            last_fetched_at=parse_iso(row["last_fetched_at"]) if row["last_fetched_at"] else None,
            next_due_at=parse_iso(row["next_due_at"]) if row["next_due_at"] else None,
        )
        row["next_due"] = iso(next_due(spec)) if spec.last_fetched_at else "now"
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no feeds (run feedmd with a config first)")
        return
    for row in rows:
        status = row["last_status"] or "never fetched"
        if row["last_http_status"]:
            status += f" (HTTP {row['last_http_status']})"
        click.echo(
            f"{row['name']} [{row['org']}] {status}; error streak {row['error_streak']};"
            f" next due {row['next_due']}; poll {row['poll_minutes']:g} min"
        )
        if row["last_error"]:
            click.echo(f"  last error: {row['last_error']}")


COMMANDS = (retry_command, feeds_command)

"""``feedmd retry``: make failed items due now, so the next run fetches their pages again
(``feedmd feeds list`` shows every feed's status, error streak and next due time).

The command only marks (even items whose retries were given up); the next ``feedmd run``
does the fetching, inside its lease and its transaction, and decides the recovered items
on their bodies like any new ones. The review page's "Retry" button is the same action for
one item. ``cli/main.py`` registers the command on ``main``.
"""

from __future__ import annotations

import click

from feedmd.cli.delivery import _config, _config_option, _db_option, _open


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


COMMANDS = (retry_command,)

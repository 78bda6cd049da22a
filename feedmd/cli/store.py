"""``feedmd store copy SRC DST``: move a store between SQLite and PostgreSQL.

The copy itself is ``feedmd.store.copy``; this command checks it the two ways a user can
trust: the rows of every table counted on both sides, and (``--replay``) a replay of the
copy under its recorded settings that must reproduce every stored decision. ``cli/main.py``
registers the group on ``main``.
"""

from __future__ import annotations

import json

import click

from feedmd.errors import FeedmdError


@click.group("store")
def store_group() -> None:
    """Whole-store operations: copy a store between SQLite and PostgreSQL."""


@store_group.command("copy")
@click.argument("source")
@click.argument("target")
@click.option(
    "--replay",
    "check_replay",
    is_flag=True,
    help="Also replay the copy under its recorded settings: every stored decision must come "
    "out the same (slower: it re-decides every stored item).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the rows per table as JSON.")
def copy_command(source: str, target: str, check_replay: bool, as_json: bool) -> None:
    """Copy the store SOURCE into the new, empty store TARGET, ids and all.

    Each of SOURCE and TARGET is a SQLite file (a path or sqlite:///path) or a
    postgresql://user@host:port/db URL; TARGET is migrated first and must hold no rows.
    The rows of every table are counted on both sides afterwards.
    """
    from feedmd.store import copy_store, display_database, table_counts
    from feedmd.tools.replay import replay

    result = copy_store(source, target)
    counts = table_counts(target)
    wrong = {t: (n, counts.get(t)) for t, n in result.rows.items() if counts.get(t) != n}
    if wrong:
        raise FeedmdError(f"the copy's row counts differ (copied, found): {wrong}")
    source_counts = table_counts(source)
    if source_counts != counts:
        raise FeedmdError(f"row counts differ: source {source_counts}, copy {counts}")
    changed = None
    if check_replay:
        changed = len(replay(target).changes)
        if changed:
            raise FeedmdError(f"a replay of the copy decides {changed} item(s) differently")
    if as_json:
        click.echo(json.dumps({"rows": counts, "replay_changes": changed}, indent=2))
        return
    for table, count in counts.items():
        click.echo(f"{table:24} {count:>9}")
    total = sum(counts.values())
    source, target = display_database(source), display_database(target)
    click.echo(f"copied {total} rows in {len(counts)} tables from {source} to {target}")
    if changed is not None:
        click.echo("replay of the copy: 0 items decided differently")


COMMANDS = (store_group,)

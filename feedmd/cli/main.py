"""The ``feedmd`` group, ``feedmd settings`` and ``feedmd migrate``; every other command
comes from its group's module (``run``, ``feeds``, ``eval``, ``delivery``, ``retry``,
``store``, ``worker``). FeedmdError becomes a click error here, and only here.

Each command shows as flags the few settings it uses (``run --proxy URL``); every setting
is reachable from every command with ``--set KEY=VALUE``, through ``FEEDMD_*`` variables and
in ``feedmd.toml`` (found by default: ``feedmd.cli.common.find_config``).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import click

from feedmd.cli.common import (
    CONTEXT_SETTINGS,
    config_option,
    db_option,
    load,
    setting_options,
    settings_from,
)
from feedmd.errors import FeedmdError
from feedmd.settings import SETTING_FIELDS
from feedmd.store import available_migrations, connect_store, database_exists, display_database


class _FeedmdGroup(click.Group):
    """Maps FeedmdError to a clean one-line error (exit 1) for every command."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except FeedmdError as exc:
            raise click.ClickException(str(exc)) from None


@click.group(cls=_FeedmdGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(package_name="feedmd")
def main() -> None:
    """feedmd: de-duplicated, full-text news feeds from noisy RSS and Atom sources.

    Every command reads ./feedmd.toml (or the file named by $FEEDMD_CONFIG or --config)
    when there is one; `feedmd init` writes a commented one. Settings come from the
    built-in defaults, then the file, then FEEDMD_* variables, then the command line
    (a command's own flags, or --set KEY=VALUE for any setting).
    """
    # httpx logs every request URL at INFO; a webhook URL may carry a token in its query
    logging.getLogger("httpx").setLevel(logging.WARNING)


@main.command("migrate")
@db_option
@config_option
@click.option(
    "--list",
    "list_only",
    is_flag=True,
    help="Show applied and pending migrations without applying any.",
)
@click.option("--json", "as_json", is_flag=True, help="With --list: print JSON.")
def migrate_command(
    db: str | None, config_path: str | None, list_only: bool, as_json: bool
) -> None:
    """Apply pending database migrations (opening the store does it too)."""
    config = load(config_path, {}, db)
    if as_json and not list_only:
        raise click.UsageError("--json goes with --list")
    if list_only:
        done: dict[str, str] = {}
        if database_exists(config.database):
            store = connect_store(config.database)
            try:
                done = store.applied_migrations()
            finally:
                store.close()
        rows = [
            {
                "name": migration.name,
                "state": "applied" if migration.name in done else "pending",
                "applied_at": done.get(migration.name),
            }
            for migration in available_migrations()
        ]
        if as_json:
            shown = display_database(config.database)
            click.echo(json.dumps({"database": shown, "migrations": rows}, indent=2))
            return
        for row in rows:
            click.echo(f"{row['state']}  {row['name']}  {row['applied_at'] or ''}".rstrip())
        return
    database = connect_store(config.database)
    try:
        applied = database.apply_migrations()
    finally:
        database.close()
    click.echo(
        f"applied {len(applied)} migration(s)" + (": " + ", ".join(applied) if applied else "")
    )


@main.command("settings")
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.option(
    "--markdown",
    is_flag=True,
    help="Print the reference table of every setting "
    "(default and documentation) as the README shows it.",
)
@setting_options()
def settings_command(config_path: str | None, as_json: bool, markdown: bool, **kwargs: Any) -> None:
    """Show every setting's effective value (defaults, file, environment, flags)."""
    if markdown:
        click.echo("| setting | default | what it does and where the value comes from |")
        click.echo("|---|---|---|")
        for name, spec in SETTING_FIELDS.items():
            click.echo(f"| `{name}` | `{spec.default!r}` | {spec.metadata['doc']} |")
        return
    config = load(config_path, settings_from(kwargs), None)
    values = config.settings.describe()
    if as_json:
        click.echo(json.dumps(values, indent=2, sort_keys=True))
        return
    for name, value in values.items():
        click.echo(f"{name} = {value!r}")


def _register_commands() -> None:
    """The command groups of their own modules: delivery, feeds, evaluation and inspection."""
    from feedmd.cli.delivery import COMMANDS as DELIVERY
    from feedmd.cli.eval import COMMANDS as EVALUATION
    from feedmd.cli.feeds import COMMANDS as FEEDS
    from feedmd.cli.retry import COMMANDS as RETRY
    from feedmd.cli.run import COMMANDS as RUN
    from feedmd.cli.store import COMMANDS as STORE
    from feedmd.cli.worker import COMMANDS as WORKER

    for command in (*RUN, *EVALUATION, *DELIVERY, *FEEDS, *RETRY, *STORE, *WORKER):
        main.add_command(command)
    _help_everywhere(main)


def _help_everywhere(group: click.Group) -> None:
    """-h as well as --help on every command, also when a command is invoked on its own
    (click keeps a command's help option once made, so a parent's settings may come late)."""
    for command in group.commands.values():
        command.context_settings = {**CONTEXT_SETTINGS, **command.context_settings}
        if isinstance(command, click.Group):
            _help_everywhere(command)


_register_commands()


if __name__ == "__main__":  # pragma: no cover
    main()

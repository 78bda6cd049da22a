"""The delivery commands: ``export``, ``serve``, ``tokens`` and ``deliveries``.

``cli/main.py`` registers them on ``main``; its group turns FeedmdError into a one-line error.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from feedmd.cli.common import config_option as _config_option
from feedmd.cli.common import db_option as _db_option
from feedmd.cli.common import load, setting_options, settings_from
from feedmd.delivery.exports.command import FORMATS, export_new_format, export_options
from feedmd.settings.config import Config
from feedmd.timeutil import utcnow

if TYPE_CHECKING:
    from feedmd.store import Store

DEFAULT_BASE_URL = "http://localhost:8000"


def _config(config_path: str | None, db: str | None) -> Config:
    """The configuration: --config, else $FEEDMD_CONFIG, else ./feedmd.toml if any."""
    return load(config_path, None, db)


def _from_file(config: Config) -> bool:
    """Whether a config file was read (feeds, visibility and webhooks come from it)."""
    return config.source != "<defaults>"


def _open(config: Config, create: bool = False) -> Store:
    """Open (and migrate) the store; a missing file is an error unless ``create``."""
    from feedmd.store import database_exists, display_database, open_store

    if not create and not database_exists(config.database):
        raise click.ClickException(
            f"{display_database(config.database)}: no such database (run feedmd first)"
        )
    return open_store(config.database)


# ---- export ---------------------------------------------------------------------------------


@click.command("export")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "atom", *FORMATS]),
    default="json",
    show_default=True,
    help="JSON Feed 1.1 or Atom 1.0; jsonl or markdown (LLM bundle); html or "
    "digest-markdown (newsletter digest).",
)
@click.option("--feed", help="Export this feed.")
@click.option("--org", help="Export every feed of this org in one document.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write here (atomically, mode 0644 less the umask) instead of standard output. "
    "The document's own link is then BASE_URL/FILE-NAME: the file's folder is served at "
    "--base-url as it is, by any static web server.",
)
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
@click.option(
    "--base-url",
    help="Where the document is served: its feed_url and rel=self are built on it "
    "(default: [output] base_url).",
)
@export_options
@_db_option
@_config_option
@setting_options("timezone")
def export_command(
    fmt: str,
    feed: str | None,
    org: str | None,
    output: str | None,
    limit: int,
    base_url: str | None,
    db: str | None,
    config_path: str | None,
    **new: Any,
) -> None:
    """Write a feed's (or an org's) newest kept items as JSON Feed 1.1 or Atom 1.0, or its
    kept items as an LLM bundle (jsonl, markdown) or a newsletter digest (html,
    digest-markdown).

    Without --feed or --org, a store holding a single org exports that org.
    """
    from feedmd.delivery import deliver, render

    if feed and org:
        raise click.UsageError("give --feed or --org, not both")
    config = load(config_path, settings_from(new), db)
    base = base_url or (config.output.base_url if _from_file(config) else DEFAULT_BASE_URL)
    database = _open(config)
    try:
        orgs = database.list_orgs()
        if fmt in FORMATS or any(value is not None for value in new.values()):
            # the LLM bundle and the digest (feedmd/delivery/exports); their options refuse
            # json/atom
            export_new_format(
                database,
                fmt,
                feed,
                org,
                output,
                limit,
                {**new, "timezone": config.settings.timezone},
            )
            return
        if feed:
            row = database.find_feed(feed)
            if row is None:
                raise click.ClickException(f"no feed named {feed!r}")
            meta = render.feed_meta(row, base)
            items = database.kept_items(feed=feed, limit=limit)
        else:
            if org is None and len(orgs) != 1:
                raise click.UsageError(f"name --feed or --org (orgs: {', '.join(orgs) or 'none'})")
            org = org or next(iter(orgs))
            if org not in orgs:
                raise click.ClickException(f"no org named {org!r}")
            meta = render.org_meta(org, base)
            items = database.kept_items(org=org, limit=limit)
    finally:
        database.close()
    if output:
        # a static file has no next page: ?before= would serve the same file again
        self_url = f"{base.rstrip('/')}/{Path(output).name}"
        meta = dataclasses.replace(meta, json_url=self_url, atom_url=self_url)
    else:
        meta = render.page_meta(meta, items, limit)
    data = (
        render.json_bytes(render.json_feed(meta, items))
        if fmt == "json"
        else render.atom_feed(meta, items)
    )
    if output:
        deliver.write_atomically(Path(output), data)
        click.echo(f"wrote {len(items)} items to {output}", err=True)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()


# ---- serve ----------------------------------------------------------------------------------


@click.command("serve")
@_db_option
@_config_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", type=int, default=8000, show_default=True)
@click.option(
    "--base-url",
    help="Public base of the links in served feeds, e.g. https://feeds.example.org (default: "
    "the address the server answered on; the request's Host header is never used).",
)
@click.option(
    "--tick",
    type=click.FloatRange(min=0.1),
    default=15.0,
    show_default=True,
    help="Seconds between scheduler checks for due feeds and due webhooks.",
)
@click.option(
    "--http-only",
    is_flag=True,
    help="Serve HTTP only: run no feeds and deliver no webhooks (`feedmd worker` processes "
    "do both).",
)
@setting_options("timezone")
def serve_command(
    db: str | None,
    config_path: str | None,
    host: str,
    port: int,
    base_url: str | None,
    tick: float,
    http_only: bool,
    **settings: Any,
) -> None:
    """Serve the feeds over HTTP and, with a config file (./feedmd.toml, FEEDMD_CONFIG or
    --config), run each feed at its poll interval.

    Routes: / (landing page), /health, /feeds, /feeds/NAME.json|.atom, /orgs/NAME.json|.atom.
    /orgs/NAME.jsonl|.md?since=CURSOR (the LLM bundle; next cursor in X-Feedmd-Cursor) and
    /orgs/NAME/digest.html|.md?day=|run=|since= (the digest).
    Public feeds need no token; the others need 'Authorization: Bearer TOKEN' with a token
    of their org (feedmd tokens create). Pending webhooks keep being delivered, unless
    --http-only leaves runs and webhooks to `feedmd worker` processes.
    """
    import uvicorn

    from feedmd.delivery import deliver, webhooks
    from feedmd.service import scheduler as scheduling
    from feedmd.service import server
    from feedmd.store import connect, open_store

    config = load(config_path, settings_from(settings), db)
    store = open_store(config.database)
    try:
        if _from_file(config):
            store.sync_feeds(config)
            deliver.sync_configuration(store, config)
        private = [f for f in store.list_feeds() if not f.public]
        for feed in private:
            if not store.token_hashes(feed.org):
                click.echo(
                    f"note: feed {feed.name} is private and org {feed.org} has no token "
                    f"(feedmd tokens create --org {feed.org})",
                    err=True,
                )
    finally:
        store.close()
    scheduler: scheduling.Scheduler | None
    if http_only:
        scheduler = None
    elif _from_file(config):
        scheduler = scheduling.pipeline_scheduler(config)
    else:
        policy = webhooks.policy_from(config.settings)

        def deliver_pass() -> object:
            database = connect(config.database)
            try:
                return webhooks.deliver_due(database, policy)
            finally:
                database.close()

        scheduler = scheduling.Scheduler(feeds=(), run_org=lambda *_: None, deliver=deliver_pass)
    from feedmd.delivery.overrides import FileOutput

    output = (
        FileOutput(config.output.directory, config.output.base_url, config.settings.feed_page_size)
        if _from_file(config) and config.output.directory
        else None
    )
    app = server.create_app(
        config.database,
        base_url=base_url,
        scheduler=scheduler,
        tick_seconds=tick,
        output=output,
        webhook_retry_hours=config.settings.webhook_retry_hours,
        timezone=config.settings.timezone,
    )
    if not base_url:
        click.echo(
            "note: no --base-url: links in served feeds name the address each connection "
            f"reached (http://{host}:{port}); behind a reverse proxy, set --base-url to the "
            "public URL (the Host header is never used)",
            err=True,
        )
    scheduling.configure_logging()  # scheduled runs' reports and errors, beside uvicorn's lines
    uvicorn.run(app, host=host, port=port, log_level="info")


# ---- tokens ---------------------------------------------------------------------------------


@click.group("tokens")
def tokens_group() -> None:
    """Create, list and revoke the bearer tokens that open an org's private feeds."""


@tokens_group.command("create")
@click.option("--org", required=True, help="The org whose private feeds the token opens.")
@click.option("--label", default="", help="A note to recognise the token by (who uses it).")
@_db_option
@_config_option
def tokens_create(org: str, label: str, db: str | None, config_path: str | None) -> None:
    """Create a token and print it once: only its SHA-256 is stored."""
    config = _config(config_path, db)
    database = _open(config, create=_from_file(config))
    try:
        if _from_file(config):
            database.sync_feeds(config)
        token = database.create_token(org, label, utcnow())
    finally:
        database.close()
    if token is None:
        raise click.ClickException(f"no org named {org!r} in {config.database}")
    click.echo(token)


@tokens_group.command("list")
@_db_option
@_config_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def tokens_list(db: str | None, config_path: str | None, as_json: bool) -> None:
    """List tokens (id, org, label, created, revoked); the tokens themselves are not kept."""
    database = _open(_config(config_path, db))
    try:
        rows = database.list_tokens()
    finally:
        database.close()
    if as_json:
        keys = ("id", "org", "label", "created_at", "revoked_at")
        click.echo(json.dumps([dict(zip(keys, row, strict=True)) for row in rows], indent=2))
        return
    if not rows:
        click.echo("no tokens (create one with: feedmd tokens create --org ORG)")
    for token_id, org, label, created, revoked in rows:
        state = f"revoked {revoked}" if revoked else "live"
        click.echo(f"{token_id}\t{org}\t{label or '-'}\t{created}\t{state}")


@tokens_group.command("revoke")
@click.argument("token_id", type=int)
@_db_option
@_config_option
def tokens_revoke(token_id: int, db: str | None, config_path: str | None) -> None:
    """Revoke a token by its id (from `feedmd tokens list`)."""
    database = _open(_config(config_path, db))
    try:
        done = database.revoke_token(token_id, utcnow())
    finally:
        database.close()
    if not done:
        raise click.ClickException(f"no live token with id {token_id}")
    click.echo(f"revoked token {token_id}")


# ---- deliveries -----------------------------------------------------------------------------


@click.group("deliveries", invoke_without_command=True)
@click.option("--status", type=click.Choice(["pending", "delivered", "failed"]))
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_db_option
@_config_option
@click.pass_context
def deliveries_group(
    ctx: click.Context,
    status: str | None,
    limit: int,
    as_json: bool,
    db: str | None,
    config_path: str | None,
) -> None:
    """List webhook endpoints and the newest deliveries with their status, attempts, next
    attempt and last error."""
    ctx.obj = _config(config_path, db)
    if ctx.invoked_subcommand is not None:
        return
    from feedmd.delivery.webhooks import redact

    database = _open(ctx.obj)
    try:
        endpoints = database.list_endpoints()
        rows = database.list_deliveries(status, limit)
    finally:
        database.close()
    if as_json:
        click.echo(
            json.dumps(
                {
                    "endpoints": [
                        {**_plain(dataclasses.asdict(e)), "url": redact(e.url)} for e in endpoints
                    ],
                    "deliveries": [
                        {**dataclasses.asdict(r), "endpoint_url": redact(r.endpoint_url)}
                        for r in rows
                    ],
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return
    if not endpoints:
        click.echo("no webhook endpoints (add [[orgs.webhooks]] to the config)")
    if not rows:
        click.echo(
            f"no {status} deliveries" if status else "no deliveries (nothing sent to a webhook yet)"
        )
    for e in endpoints:
        state = f"disabled ({e.disabled_reason})" if e.disabled_at else "enabled"
        click.echo(
            f"endpoint {e.id} {redact(e.url)} [{e.scope} {e.scope_name}] {state}, "
            f"{e.consecutive_failures} failures in a row"
        )
    for r in rows:
        when = r.delivered_at or (f"next {r.next_attempt_at}" if r.next_attempt_at else "")
        error = f" last error: {r.last_error}" if r.last_error else ""
        click.echo(
            f"{r.id}\t{r.status}\t{r.attempts} attempts\tendpoint {r.endpoint_id}\t"
            f"{r.message_id}\t{when}\t{r.title[:60]}{error}"
        )


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in values.items()}


@deliveries_group.command("enable")
@click.argument("endpoint_id", type=int)
@click.pass_obj
def deliveries_enable(config: Config, endpoint_id: int) -> None:
    """Enable a disabled endpoint again: its waiting messages are due now, with a fresh
    retry window."""
    from feedmd.delivery.webhooks import policy_from

    database = _open(config)
    try:
        pending = database.enable_endpoint(
            endpoint_id, utcnow(), policy_from(config.settings).retry_hours
        )
    finally:
        database.close()
    if pending is None:
        raise click.ClickException(f"no endpoint with id {endpoint_id}")
    click.echo(f"endpoint {endpoint_id} enabled; {pending} messages due now")


COMMANDS = (export_command, serve_command, tokens_group, deliveries_group)

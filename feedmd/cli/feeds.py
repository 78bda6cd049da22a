"""``feedmd init`` and ``feedmd feeds``: write a starter feedmd.toml, and add, remove, list,
import and export feeds without editing TOML by hand.

The file is edited with tomlkit, which keeps the user's comments and layout; every edit is
checked by the real config loader before it replaces the file (atomically), so a command
never leaves a feedmd.toml that ``feedmd run`` would refuse. OPML (the format every feed
reader exports subscriptions in) is read with the standard library's ElementTree after
refusing any DTD: no entity can expand or reach outside the file.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import click

from feedmd.cli.common import CONFIG_ENV, DEFAULT_CONFIG, config_option, db_option, find_config
from feedmd.errors import ConfigError
from feedmd.settings.config import FEED_NAME_PATTERN, Config, load_config
from feedmd.sources.opml import read_opml, write_opml
from feedmd.timeutil import iso, parse_iso, utcnow

GOOGLE_NEWS = "https://news.google.com/rss/search"

STARTER_CONFIG = """\
# feedmd configuration, read by every feedmd command run in this folder
# (or name it with --config FILE or FEEDMD_CONFIG=FILE).
#
# Each setting comes from the built-in default, then this file, then a FEEDMD_* variable
# (FEEDMD_JACCARD_THRESHOLD=0.7), then the command line (--set jaccard_threshold=0.7).
# `feedmd settings` shows the effective values; `feedmd settings --markdown` documents all.

# The SQLite store (relative to the folder feedmd runs in).
database = "feedmd.db"

# Compare an item with its own feed's history ("feed") or with every feed of its org ("org").
# dedup_scope = "feed"
# How far back, in hours, an item is compared with earlier ones.
# dedup_window_hours = 48.0

[output]
# `feedmd run` writes each feed's NAME.json (JSON Feed 1.1) and NAME.atom here.
directory = "public"
# Where that folder is served as it is (by any web server): the files' own links are
# built on it, so NAME.json says it lives at BASE_URL/NAME.json.
base_url = "http://localhost:8000"

# An org groups feeds: with dedup_scope = "org" its feeds are de-duplicated together, and a
# token of the org opens its private feeds on `feedmd serve` (feedmd tokens create).
[[orgs]]
name = "news"
# public = true  # its feeds need no token on `feedmd serve`

# Webhooks: each new kept item is POSTed, signed with the secret in the named variable.
# [[orgs.webhooks]]
# url = "https://example.org/hooks/feedmd"
# secret_env = "FEEDMD_WEBHOOK_SECRET"

# Add feeds with `feedmd feeds add NAME URL`, `feedmd feeds add --google-news "pope leo"`
# or `feedmd feeds import subscriptions.opml`. Each looks like this:
# [[orgs.feeds]]
# name = "pope-leo"  # lowercase letters, digits, - and _; names the output files
# url = "https://news.google.com/rss/search?q=pope+leo&hl=en-US&gl=US&ceid=US:en"
# poll_minutes = 15
# title = "Pope Leo"
"""


# ---- init -----------------------------------------------------------------------------------


@click.command("init")
@click.argument("path", required=False, type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def init_command(path: str | None, force: bool) -> None:
    """Write a commented starter feedmd.toml (default: $FEEDMD_CONFIG, else ./feedmd.toml).

    Then add feeds (feedmd feeds add NAME URL) and run (feedmd run)."""
    target = Path(path or os.environ.get(CONFIG_ENV, "").strip() or DEFAULT_CONFIG)
    if target.exists() and not force:
        raise click.ClickException(f"{target} exists: not overwritten (--force replaces it)")
    _write_config(target, STARTER_CONFIG)
    click.echo(f"wrote {target}; next: feedmd feeds add NAME URL, then feedmd run")


# ---- editing feedmd.toml --------------------------------------------------------------------


def _config_file(config_path: str | None, create: bool) -> Path:
    """The config file to edit; with ``create``, a missing one is written from the starter."""
    found = find_config(config_path)
    target = Path(found or DEFAULT_CONFIG)
    if not target.exists():
        if not create:
            raise click.ClickException(
                f"{target}: no such config file (feedmd init writes a starter one)"
            )
        _write_config(target, STARTER_CONFIG)
        click.echo(f"wrote a starter {target}", err=True)
    return target


def _write_config(target: Path, text: str) -> Config:
    """Check ``text`` with the real loader, then replace ``target`` atomically (keeping its
    mode). Returns the loaded Config."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        if target.exists():
            os.chmod(temporary, target.stat().st_mode & 0o7777)
        try:
            config = load_config(temporary, environ={})
        except ConfigError as exc:
            raise click.ClickException(
                str(exc).replace(str(temporary), str(target)) + " (file left unchanged)"
            ) from None
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    return config


def _toml(text: str) -> Any:
    import tomlkit  # imported on use: every feedmd command imports this module

    return tomlkit.parse(text)


def _toml_text(document: Any) -> str:
    import tomlkit

    return tomlkit.dumps(document)


def _orgs(document: Any) -> Any:
    import tomlkit

    orgs = document.get("orgs")
    if orgs is None:
        orgs = tomlkit.aot()
        document["orgs"] = orgs
    return orgs


def _org_table(document: Any, org: str | None) -> Any:
    """The [[orgs]] table named ``org`` (created when missing); without a name, the only org."""
    import tomlkit

    orgs = _orgs(document)
    names = [str(table.get("name")) for table in orgs]
    if org is None:
        if len(names) == 1:
            return orgs[0]
        raise click.UsageError(
            f"name the org with --org (orgs: {', '.join(names)})" if names else "give --org NAME"
        )
    for table in orgs:
        if table.get("name") == org:
            return table
    table = tomlkit.table()
    table["name"] = org
    table.add(tomlkit.nl())
    orgs.append(table)
    return table


def _add_feed(
    document: Any,
    org: str | None,
    name: str,
    url: str,
    poll_minutes: float | None = None,
    title: str = "",
    public: bool = False,
) -> str:
    """Append a feed to its org; return the org's name."""
    import tomlkit

    table = _org_table(document, org)
    feeds = table.get("feeds")
    if feeds is None:
        feeds = tomlkit.aot()
        table["feeds"] = feeds
    feed = tomlkit.table()
    feed["name"] = name
    feed["url"] = url
    if poll_minutes is not None:
        feed["poll_minutes"] = int(poll_minutes) if poll_minutes.is_integer() else poll_minutes
    if title:
        feed["title"] = title
    if public:
        feed["public"] = True
    feed.add(tomlkit.nl())
    feeds.append(feed)
    return str(table["name"])


def slug(text: str) -> str:
    """A feed or org name from free text: 'Pope Leo!' -> 'pope-leo'."""
    name = re.sub(r"[^a-z0-9_-]+", "-", text.lower()).strip("-_")[:64].strip("-_")
    return name or "feed"


def google_news_url(query: str, hl: str, gl: str | None, ceid: str | None) -> str:
    """The RSS URL of a Google News search, as news.google.com builds it."""
    language, _, region = hl.partition("-")
    gl = gl or (region or language).upper()
    ceid = ceid or f"{gl}:{language}"
    query_string = urlencode({"q": query, "hl": hl, "gl": gl, "ceid": ceid}, safe=":")
    return f"{GOOGLE_NEWS}?{query_string}"


def _check_alerts_url(url: str) -> str:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if (
        parts.scheme != "https"
        or not (host == "google.com" or host.endswith(".google.com"))
        or not parts.path.startswith("/alerts/feeds/")
    ):
        raise click.BadParameter(
            "a Google Alerts feed URL looks like https://www.google.com/alerts/feeds/ID/ID "
            "(on google.com/alerts choose 'Deliver to: RSS feed')",
            param_hint="--google-alerts",
        )
    return url


# ---- feeds ----------------------------------------------------------------------------------


@click.group("feeds")
def feeds_group() -> None:
    """Add, remove, list, import (OPML) and export (OPML) the feeds of feedmd.toml.

    Edits keep the file's comments and layout, and are checked before the file is replaced.
    """


@feeds_group.command("add")
@click.argument("name", required=False)
@click.argument("url", required=False)
@click.option("--org", help="The org to add the feed to (created if new; default: the only org).")
@click.option("--poll-minutes", type=click.FloatRange(min=0, min_open=True), help="Poll interval.")
@click.option("--title", default="", help="The feed's title in the outputs.")
@click.option("--public", is_flag=True, help="Served without a token by feedmd serve.")
@click.option("--google-news", "query", help="A Google News search: the query, as typed there.")
@click.option("--hl", default="en-US", show_default=True, help="Google News language.")
@click.option("--gl", help="Google News country (default: from --hl, e.g. US).")
@click.option("--ceid", help="Google News edition (default: GL:language, e.g. US:en).")
@click.option("--google-alerts", "alerts_url", help="A Google Alerts RSS feed URL.")
@config_option
def feeds_add(
    name: str | None,
    url: str | None,
    org: str | None,
    poll_minutes: float | None,
    title: str,
    public: bool,
    query: str | None,
    hl: str,
    gl: str | None,
    ceid: str | None,
    alerts_url: str | None,
    config_path: str | None,
) -> None:
    """Add a feed: NAME URL, or a Google News search (--google-news "pope leo"; NAME
    defaults to the query), or a Google Alerts feed (NAME --google-alerts URL).

    Writes a starter feedmd.toml first when there is none."""
    if sum(x is not None for x in (url, query, alerts_url)) != 1:
        raise click.UsageError("give a URL, --google-news QUERY or --google-alerts URL (one)")
    if query is not None:
        url = google_news_url(query, hl, gl, ceid)
        name = name or slug(query)
        title = title or f"Google News: {query}"
    elif alerts_url is not None:
        url = _check_alerts_url(alerts_url)
    if not name:
        raise click.UsageError("give the feed a NAME")
    if not FEED_NAME_PATTERN.match(name):
        raise click.BadParameter(
            f"{name!r}: use lowercase letters, digits, - and _ (it names the output files), "
            f"e.g. {slug(name)!r}",
            param_hint="NAME",
        )
    target = _config_file(config_path, create=True)
    document = _toml(target.read_text(encoding="utf-8"))
    assert url is not None
    org_name = _add_feed(document, org, name, url, poll_minutes, title, public)
    _write_config(target, _toml_text(document))
    click.echo(f"added feed {name} to org {org_name} in {target}: {url}")


@feeds_group.command("remove")
@click.argument("name")
@config_option
def feeds_remove(name: str, config_path: str | None) -> None:
    """Remove a feed from feedmd.toml (its stored items stay in the database)."""
    target = _config_file(config_path, create=False)
    document = _toml(target.read_text(encoding="utf-8"))
    for table in document.get("orgs", []):
        feeds = table.get("feeds", [])
        for index, feed in enumerate(feeds):
            if feed.get("name") == name:
                del feeds[index]
                if not feeds:
                    del table["feeds"]
                _write_config(target, _toml_text(document))
                click.echo(f"removed feed {name} from {target}")
                return
    raise click.ClickException(f"no feed named {name!r} in {target}")


def _feed_rows(config: Config) -> list[dict[str, Any]]:
    """The configured feeds with their stored state (when the database exists): status,
    last error, error streak, and the next due time (a failed feed's retry time when it
    comes before its poll)."""
    from feedmd.models import FeedSpec
    from feedmd.sources.fetch import next_due
    from feedmd.store import connect_store, database_exists

    states: dict[str, dict[str, Any]] = {}
    if database_exists(config.database):
        store = connect_store(config.database)
        try:
            states = {row["name"]: row for row in store.feed_statuses()}
        finally:
            store.close()
    configured = [
        (feed.name, feed.org, feed.url, feed.title, feed.public, feed.poll_minutes)
        for feed in config.feeds
    ]
    # a stored feed the configuration no longer names is listed too (its items stay)
    known = {name for name, *_ in configured}
    stored_only = [
        (row["name"], row["org"], row["url"], "", False, row["poll_minutes"])
        for row in states.values()
        if row["name"] not in known
    ]
    rows = []
    for name, org, url, title, public, poll_minutes in configured + stored_only:
        state = states.get(name, {})
        fetched = state.get("last_fetched_at")
        retry_at = state.get("next_due_at")
        spec = FeedSpec(
            name=name,
            org=org,
            url=url,
            poll_minutes=poll_minutes,
            last_fetched_at=parse_iso(fetched) if fetched else None,
            next_due_at=parse_iso(retry_at) if retry_at else None,
        )
        rows.append(
            {
                "name": name,
                "org": org,
                "url": url,
                "title": title,
                "public": public,
                "configured": name in known,
                "poll_minutes": poll_minutes,
                "status": state.get("last_status") or "never fetched",
                "last_http_status": state.get("last_http_status"),
                "last_error": state.get("last_error"),
                "error_streak": state.get("error_streak") or 0,
                "last_fetched_at": fetched,
                "next_due": iso(next_due(spec)) if fetched else None,
            }
        )
    return rows


@feeds_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@config_option
@db_option
def feeds_list(as_json: bool, config_path: str | None, db: str | None) -> None:
    """List the configured feeds with their status, last error, error streak and next due
    time (a failed feed is due again after feed_retry_base_minutes, doubling with each
    failure in a row, never later than its poll)."""
    from feedmd.cli.common import load

    config = load(config_path, None, db)
    rows = _feed_rows(config)
    if as_json:
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    if not rows:
        where = config.source if config.source != "<defaults>" else "no config file"
        click.echo(f"no feeds ({where}); add one with: feedmd feeds add NAME URL")
        return
    now = utcnow()
    for row in rows:
        if row["next_due"] is None:
            due = "due now"
        else:
            when = parse_iso(row["next_due"])
            due = "due now" if when <= now else f"next due {row['next_due']}"
        status = row["status"]
        if row["last_http_status"]:
            status += f" (HTTP {row['last_http_status']})"
        streak = f"; error streak {row['error_streak']}" if row["error_streak"] else ""
        error = f"; last error: {row['last_error']}" if row["last_error"] else ""
        click.echo(f"{row['name']}\t{row['org']}\t{status}\t{due}\t{row['url']}{streak}{error}")


# ---- OPML -----------------------------------------------------------------------------------


@feeds_group.command("import")
@click.argument("opml", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--org",
    help="Put every feed in this org (default: the OPML folder's name, else the only org).",
)
@click.option("--poll-minutes", type=click.FloatRange(min=0, min_open=True))
@config_option
def feeds_import(
    opml: str, org: str | None, poll_minutes: float | None, config_path: str | None
) -> None:
    """Add the feeds of an OPML file (a feed reader's subscriptions export). Feeds whose
    URL is already configured are skipped; names come from the titles."""
    try:
        outlines = read_opml(Path(opml).read_bytes())
    except ConfigError as exc:
        raise click.ClickException(f"{opml}: {exc}") from None
    target = _config_file(config_path, create=True)
    document = _toml(target.read_text(encoding="utf-8"))
    current = load_config(target, environ={})
    urls = {feed.url for feed in current.feeds}
    names = {feed.name for feed in current.feeds}
    existing = [str(table.get("name")) for table in document.get("orgs", [])]
    top_org = org or (existing[0] if len(existing) == 1 else None)
    if top_org is None and any(c is None and u not in urls for c, _, u in outlines):
        raise click.UsageError(
            "feeds outside an OPML folder need an org: give --org NAME"
            + (f" (orgs: {', '.join(existing)})" if existing else "")
        )
    added = skipped = 0
    for category, title, url in outlines:
        if url in urls or not re.match(r"^https?://[^\s/]+", url):
            skipped += 1
            continue
        name = base = slug(title or urlsplit(url).netloc)
        number = 2
        while name in names:
            name = f"{base[:60]}-{number}"
            number += 1
        org_name = org or (slug(category) if category else top_org)
        _add_feed(document, org_name, name, url, poll_minutes, title)
        names.add(name)
        urls.add(url)
        added += 1
    if added:
        _write_config(target, _toml_text(document))
    click.echo(
        f"imported {added} feeds into {target}; skipped {skipped} (already there or not http)"
    )


@feeds_group.command("export")
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False), help="Write here instead of standard output."
)
@config_option
def feeds_export(output: str | None, config_path: str | None) -> None:
    """Write the configured feeds as OPML 2.0 (one folder per org), for any feed reader."""
    from feedmd.cli.common import load
    from feedmd.delivery.deliver import write_atomically

    config = load(config_path, None, None)
    data = write_opml(config)
    if output:
        write_atomically(Path(output), data)
        click.echo(f"wrote {len(config.feeds)} feeds to {output}", err=True)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()


COMMANDS = (init_command, feeds_group)

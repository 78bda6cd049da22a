"""The ``feedmd`` command line. FeedmdError becomes a click error here, and only here.

Every pipeline setting is also a flag (``--jaccard-threshold 0.7``), generated from the
``Settings`` dataclass, so flags, ``FEEDMD_*`` variables and ``feedmd.toml`` keys always
agree.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from feedmd.config import SETTING_FIELDS, Config, load_config, settings_layer
from feedmd.db import applied_migrations, apply_migrations, available_migrations, connect
from feedmd.errors import FeedmdError
from feedmd.report import RunReport
from feedmd.timeutil import parse_iso

F = Callable[..., Any]


def setting_options(command: F) -> F:
    """Add one ``--setting-name`` option per pipeline setting to a click command."""
    for name, spec in reversed(SETTING_FIELDS.items()):
        kind = type(spec.default)
        click_type: Any = {int: int, float: float, bool: bool}.get(kind, str)
        if spec.metadata["choices"]:
            click_type = click.Choice(spec.metadata["choices"])
        command = click.option(
            "--" + name.replace("_", "-"),
            name,
            type=click_type,
            default=None,
            help=f"{spec.metadata['doc']} [default: {spec.default!r}; env FEEDMD_{name.upper()}]",
        )(command)
    return command


def _settings_from(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {name: kwargs.pop(name) for name in list(kwargs) if name in SETTING_FIELDS}


class _FeedmdGroup(click.Group):
    """Maps FeedmdError to a clean one-line error (exit 1) for every command."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except FeedmdError as exc:
            raise click.ClickException(str(exc)) from None


@click.group(cls=_FeedmdGroup)
@click.version_option(package_name="feedmd")
def main() -> None:
    """feedmd: de-duplicated, full-text news feeds from noisy RSS and Atom sources."""
    # httpx logs every request URL at INFO; a webhook URL may carry a token in its query
    logging.getLogger("httpx").setLevel(logging.WARNING)


def _load(config_path: str | None, settings: dict[str, Any], db: str | None) -> Config:
    config = load_config(config_path, overrides=settings)
    if db:
        config = dataclasses.replace(config, database=db)
    return config


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


@main.command("run")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    help="feedmd.toml to read (default: built-in settings, no feeds).",
)
@click.option("--db", help="SQLite file (overrides 'database' in the config; env FEEDMD_DATABASE).")
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
@setting_options
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

    Exit code 0 when everything worked, 3 when some feeds or pages failed but the run
    completed, 1 on a configuration or store error.
    """
    from feedmd.db import open_store
    from feedmd.pipeline import run
    from feedmd.stages.store import RunLeaseHeld, Store

    config = _load(config_path, _settings_from(kwargs), db)
    if not config.feeds:
        raise click.ClickException(
            f"{config.source}: no feeds configured ([[orgs]] with [[orgs.feeds]])"
        )
    now = _parse_now(as_of)
    if dry_run:
        _dry_run(config, now, force, as_json)
        return
    store = Store(open_store(config.database))
    try:
        report = run(store, config, now=now, force=force, output_dir=out, on_page=_progress())
    except RunLeaseHeld as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(exc.exit_code)
    finally:
        store.db.close()
    _print_report(report, as_json)
    sys.exit(report.exit_code)


def _dry_run(config: Config, now: Any, force: bool, as_json: bool) -> None:
    from feedmd.dryrun import dry_run

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


@main.command("demo")
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
@setting_options
def demo_command(out: str, webhook_url: str | None, **kwargs: Any) -> None:
    """Run the real pipeline on the bundled fixture news day, offline.

    Starts a fixture HTTP server on 127.0.0.1, runs twice into OUT/feedmd.db, writes each
    feed's JSON Feed and Atom into OUT, and prints both run reports. The second run, two
    hours later, fetches and scrapes nothing new.
    """
    from feedmd.demo import run_demo

    if webhook_url:
        from feedmd.webhooks import load_secret

        load_secret("FEEDMD_WEBHOOK_SECRET")  # a missing secret stops before any work
    result = run_demo(
        out, overrides=_settings_from(kwargs), echo=click.echo, webhook_url=webhook_url
    )
    click.echo(f"wrote {result.database} and {len(result.outputs)} feed files in {out}")


@main.command("migrate")
@click.option("--db", default=None, help="SQLite file (default: from the config).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False))
@click.option(
    "--list",
    "list_only",
    is_flag=True,
    help="Show applied and pending migrations without applying any.",
)
def migrate_command(db: str | None, config_path: str | None, list_only: bool) -> None:
    """Apply pending database migrations (opening the store does it too)."""
    config = _load(config_path, {}, db)
    if list_only and not Path(config.database).exists():
        for migration in available_migrations():
            click.echo(f"pending  {migration.name}")
        return
    database = connect(config.database)
    try:
        if list_only:
            done = applied_migrations(database)
            for migration in available_migrations():
                state = (
                    f"applied  {migration.name}  {done[migration.name]}"
                    if migration.name in done
                    else f"pending  {migration.name}"
                )
                click.echo(state)
            return
        applied = apply_migrations(database)
    finally:
        database.close()
    click.echo(
        f"applied {len(applied)} migration(s)" + (": " + ", ".join(applied) if applied else "")
    )


@main.command("settings")
@click.option("--config", "config_path", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.option(
    "--markdown",
    is_flag=True,
    help="Print the reference table of every setting "
    "(default and documentation) as the README shows it.",
)
@setting_options
def settings_command(config_path: str | None, as_json: bool, markdown: bool, **kwargs: Any) -> None:
    """Show every setting's effective value (defaults, file, environment, flags)."""
    if markdown:
        click.echo("| setting | default | what it does and where the value comes from |")
        click.echo("|---|---|---|")
        for name, spec in SETTING_FIELDS.items():
            click.echo(f"| `{name}` | `{spec.default!r}` | {spec.metadata['doc']} |")
        return
    config = _load(config_path, _settings_from(kwargs), None)
    values = config.settings.describe()
    if as_json:
        click.echo(json.dumps(values, indent=2, sort_keys=True))
        return
    for name, value in values.items():
        click.echo(f"{name} = {value!r}")


@main.command("explain")
@click.argument("item")
@click.option("--db", default=None, help="SQLite file (default: from the config).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False))
@click.option(
    "--json", "as_json", is_flag=True, help="Print the whole trail as JSON, evidence complete."
)
def explain_command(item: str, db: str | None, config_path: str | None, as_json: bool) -> None:
    """Show why an item was kept or dropped: each stage it passed, the rule that decided,
    the score against its threshold, the item it matched, the evidence, window and scope.

    ITEM is an item id, a URL, or a search string (titles and publishers)."""
    from feedmd.explain import explain, find_items, render

    config = _load(config_path, {}, db)
    if not Path(config.database).exists():
        raise click.ClickException(f"{config.database}: no such database")
    database = connect(config.database)
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


@main.command("replay")
@click.option("--db", default=None, help="SQLite file (default: from the config).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False))
@click.option("--since", help="Replay the runs from this ISO 8601 time on (default: all).")
@click.option(
    "--settings",
    "settings_path",
    type=click.Path(exists=True, dir_okay=False),
    help="A TOML file of settings to replay under (feedmd.toml keys).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the differences as JSON.")
@setting_options
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
    from feedmd.replay import replay, summarize

    config = _load(config_path, {}, db)
    if not Path(config.database).exists():
        raise click.ClickException(f"{config.database}: no such database")
    changes = settings_layer(settings_path, _settings_from(kwargs))
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


@main.command("sweep")
@click.option(
    "--grid",
    "grid_specs",
    multiple=True,
    help="A setting and its values, NAME=V1,V2,... (repeat for a grid).",
)
@click.option(
    "--grid-file",
    type=click.Path(exists=True, dir_okay=False),
    help="A TOML file with a [grid] table: name = [values].",
)
@click.option(
    "--headlines",
    type=click.Path(exists=True, dir_okay=False),
    help="Labelled headlines (as for eval headlines).",
)
@click.option(
    "--pairs",
    type=click.Path(exists=True, dir_okay=False),
    help="Labelled headline pairs (as for eval pairs).",
)
@click.option(
    "--pages",
    type=click.Path(exists=True, file_okay=False),
    help="Pages with checked bodies (as for eval pages).",
)
@click.option(
    "--reprints",
    type=click.Path(exists=True, dir_okay=False),
    help="Labelled page pairs (as for eval reprints).",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False),
    help="Draw precision and recall against the first grid setting into a PNG "
    "(needs the plot extra: matplotlib).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@setting_options
def sweep_command(
    grid_specs: tuple[str, ...],
    grid_file: str | None,
    headlines: str | None,
    pairs: str | None,
    pages: str | None,
    reprints: str | None,
    plot_path: str | None,
    as_json: bool,
    **kwargs: Any,
) -> None:
    """Run the evaluations over a grid of settings and print, for each point, the figures
    and exactly which merges or pairs were added or removed against the current settings."""
    from feedmd.evaluation.sweep import Sources, parse_grid, plot, sweep

    grid = parse_grid(grid_specs)
    if grid_file:
        import tomllib

        document = tomllib.loads(Path(grid_file).read_text(encoding="utf-8"))
        table = document.get("grid", {})
        grid.update(parse_grid([f"{k}={','.join(str(v) for v in vs)}" for k, vs in table.items()]))
    if not grid:
        raise click.UsageError("give at least one --grid NAME=V1,V2,... or --grid-file")
    sources = Sources(*(Path(p) if p else None for p in (headlines, pairs, pages, reprints)))
    if not any(dataclasses.astuple(sources)):
        raise click.UsageError("give at least one of --headlines, --pairs, --pages, --reprints")
    base = load_config(None, overrides=_settings_from(kwargs)).settings
    report = sweep(sources, base, grid)
    if plot_path:
        plot(report, plot_path)
    if as_json:
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
        return
    click.echo(f"base: {report['base']}")
    for row in report["points"]:
        click.echo(f"{row['settings']}:")
        for name, data in row.items():
            if name == "settings":
                continue
            figures = {k: v for k, v in data.items() if k not in ("added", "removed")}
            click.echo(f"  {name}: {figures}; +{len(data['added'])} / -{len(data['removed'])}")
            for line in data["added"][:5]:
                click.echo(f"    + {line}")
            for line in data["removed"][:5]:
                click.echo(f"    - {line}")


@main.group("eval")
def eval_group() -> None:
    """Measure feedmd on labelled data: your own files, or the development data in the
    repository's eval/ folder (eval/README.md there describes every format)."""


def _print_eval(report: dict[str, Any], as_json: bool, summary_keys: list[str]) -> None:
    if as_json:
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
        return
    for key in summary_keys:
        click.echo(f"{key}: {report[key]}")


@eval_group.command("headlines")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--batch-minutes",
    type=float,
    default=60.0,
    show_default=True,
    help="Replay the headlines in batches of this many minutes, as a poller would.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@setting_options
def eval_headlines_command(path: str, batch_minutes: float, as_json: bool, **kwargs: Any) -> None:
    """Replay labelled headlines oldest first through the real stage 1 in a temporary store
    and report merge precision, merges by rule, false merges, and pairwise and B-cubed
    precision / recall / F1 against the story labels."""
    from feedmd.evaluation.headlines import evaluate_headlines

    settings = load_config(None, overrides=_settings_from(kwargs)).settings
    report = evaluate_headlines(path, settings, batch_minutes)
    _print_eval(
        report,
        as_json,
        [
            "items",
            "merges",
            "merge_precision",
            "merges_by_rule",
            "pairwise",
            "bcubed",
            "largest_cluster",
        ],
    )
    if not as_json:
        click.echo(f"false_merges: {len(report['false_merges'])} (--json lists them)")


@eval_group.command("events")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--pairs",
    "pairs_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Also score graded headline pairs (as for eval pairs) with the event model.",
)
@click.option(
    "--limit",
    type=int,
    default=None,
    help="Only the first N headlines in time order (a deterministic subset).",
)
@click.option(
    "--batch-minutes",
    type=float,
    default=60.0,
    show_default=True,
    help="Replay the headlines in batches of this many minutes, as a poller would.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@setting_options
def eval_events_command(
    path: str,
    pairs_path: str | None,
    limit: int | None,
    batch_minutes: float,
    as_json: bool,
    **kwargs: Any,
) -> None:
    """Replay labelled headlines oldest first through the event model and grouper and report
    merges, merge precision against the story labels, false merges, vetoes and encoding
    throughput (docs/events.md)."""
    from feedmd.evaluation.events import evaluate_event_pairs, evaluate_events

    settings = load_config(None, overrides=_settings_from(kwargs)).settings
    report = evaluate_events(path, settings, batch_minutes, limit=limit)
    keys = ["items", "merges", "merge_precision", "vetoed", "headlines_per_second"]
    if pairs_path:
        pairs = evaluate_event_pairs(pairs_path, settings)
        report["pairs"] = pairs
        if not as_json:
            click.echo(f"pairs: precision {pairs['precision']} recall {pairs['recall']}")
    _print_eval(report, as_json, ["model", "threshold", *keys])
    if not as_json:
        click.echo(f"false_merges: {len(report['false_merges'])} (--json lists them)")


@eval_group.command("pairs")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@setting_options
def eval_pairs_command(path: str, as_json: bool, **kwargs: Any) -> None:
    """Score the headline matcher on labelled pairs: tp, fp, fn, tn, precision, recall
    (unsure pairs left out)."""
    from feedmd.evaluation.headlines import evaluate_pairs

    settings = load_config(None, overrides=_settings_from(kwargs)).settings
    report = evaluate_pairs(path, settings)
    _print_eval(report, as_json, ["pairs", "tp", "fp", "fn", "tn", "precision", "recall"])


@eval_group.command("pages")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--reference",
    is_flag=True,
    help="Score trafilatura's own plain text instead of feedmd's prose.",
)
@click.option("--per-page", is_flag=True, help="Include each page's figures in --json.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@setting_options
def eval_pages_command(
    directory: str, reference: bool, per_page: bool, as_json: bool, **kwargs: Any
) -> None:
    """Score the prose of real pages against their checked bodies (DIRECTORY holds
    truth.jsonl and html/<id>.html.gz): precision, recall, F1 of word 4-gram shingles, and
    how many pages give no digest."""
    from feedmd.evaluation.pages import evaluate_pages

    settings = load_config(None, overrides=_settings_from(kwargs)).settings
    report = evaluate_pages(directory, settings, reference=reference, per_page=per_page)
    _print_eval(report, as_json, ["pages", "precision", "recall", "f1", "no_digest"])


@eval_group.command("reprints")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@setting_options
def eval_reprints_command(path: str, as_json: bool, **kwargs: Any) -> None:
    """Score stage 2 on labelled page pairs (reprint / different): reprint recall, false
    merges and precision for TLSH, for shingle containment and for both combined. Build a
    set from real pages with `feedmd eval make-reprints`."""
    from feedmd.evaluation.reprints import evaluate_reprints

    settings = load_config(None, overrides=_settings_from(kwargs)).settings
    report = evaluate_reprints(path, settings)
    _print_eval(
        report, as_json, ["pairs", "reprint_recall", "precision", "no_digest", "by_matcher"]
    )
    if not as_json:
        click.echo(f"false_merges: {len(report['false_merges'])} (--json lists them)")


@eval_group.command("make-reprints")
@click.argument("pages", type=click.Path(exists=True, file_okay=False))
@click.argument("out", type=click.Path(file_okay=False))
@click.option(
    "--seed",
    type=int,
    default=7,
    show_default=True,
    help="Seed of the wire edits; the same pages and seed give the same set.",
)
@click.option(
    "--per-body",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Pairs of each label made from each page.",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was made as JSON.")
def eval_make_reprints_command(
    pages: str, out: str, seed: int, per_body: int, as_json: bool
) -> None:
    """Build labelled page pairs for `feedmd eval reprints` from real pages with checked
    bodies (PAGES holds truth.jsonl and html/<id>.html.gz): each body is placed inside other
    pages' real layouts with wire edits (reprint pairs), and each layout carries another
    page's body against itself (different pairs). Writes OUT/html/ and OUT/pairs.jsonl."""
    from feedmd.evaluation.reprint_set import build_reprint_set

    made = build_reprint_set(pages, out, seed=seed, per_body=per_body)
    summary = {
        "pages": made.pages,
        "usable_pages": made.usable_pages,
        "pairs": len(made.pairs),
        **made.counts(),
        "pairs_file": str(Path(out) / "pairs.jsonl"),
    }
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    click.echo(
        f"{summary['usable_pages']} of {summary['pages']} pages have a usable layout; "
        f"{summary['pairs']} pairs: {summary.get('reprint', 0)} reprint, "
        f"{summary.get('different', 0)} different -> {summary['pairs_file']}"
    )


@main.command("fingerprint")
@click.argument("sources", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@setting_options
def fingerprint_command(sources: tuple[str, ...], as_json: bool, **kwargs: Any) -> None:
    """Show what feedmd sees in pages (files or URLs): prose length, the TLSH digest or why
    there is none, the junk verdict, the number of shingles."""
    from feedmd.evaluation.reprints import describe_page, load_page

    settings = load_config(None, overrides=_settings_from(kwargs)).settings
    rows = [describe_page(source, load_page(source, settings), settings) for source in sources]
    if as_json:
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    for row in rows:
        what = row["digest"] or f"no digest: {row['no_digest_reason'] or row['error']}"
        click.echo(
            f"{row['source']}: {row['prose_chars']} chars of prose, {what}, "
            f"junk: {row['junk'] or 'no'}, {row['shingles']} shingles"
        )


@main.command("compare")
@click.argument("first")
@click.argument("second")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@setting_options
def compare_command(first: str, second: str, as_json: bool, **kwargs: Any) -> None:
    """Compare two pages (files or URLs) as stage 2 would: TLSH distance, shingle
    containment, and the verdict (reprint, similar, different)."""
    from feedmd.evaluation.reprints import compare_pages, load_page

    settings = load_config(None, overrides=_settings_from(kwargs)).settings
    result = compare_pages(load_page(first, settings), load_page(second, settings), settings)
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    click.echo(
        f"verdict: {result['verdict']} (decided by {result['decided_by']}); "
        f"tlsh distance {result['tlsh_distance']}, containment {result['containment']}"
    )


def _register_delivery_commands() -> None:
    from feedmd.cli_delivery import COMMANDS

    for command in COMMANDS:
        main.add_command(command)


_register_delivery_commands()


if __name__ == "__main__":  # pragma: no cover
    main()

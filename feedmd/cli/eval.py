"""The evaluation and inspection commands: `feedmd sweep`, `feedmd eval ...`, `feedmd
fingerprint` and `feedmd compare` (registered on the main group by cli/main.py)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import click

from feedmd.cli.common import (
    BODY_SETTINGS,
    CONTEXT_SETTINGS,
    EVENT_SETTINGS,
    HEADLINE_SETTINGS,
    PAGE_FETCH_SETTINGS,
    PROSE_SETTINGS,
    config_option,
    load,
    setting_options,
    settings_from,
)
from feedmd.settings.events import CARRIED_LANGUAGE_ENTRIES


@click.command("sweep", context_settings=CONTEXT_SETTINGS)
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
@config_option
@setting_options()
def sweep_command(
    grid_specs: tuple[str, ...],
    grid_file: str | None,
    headlines: str | None,
    pairs: str | None,
    pages: str | None,
    reprints: str | None,
    plot_path: str | None,
    as_json: bool,
    config_path: str | None,
    **kwargs: Any,
) -> None:
    """Run the evaluations over a grid of settings and print, for each point, the figures
    and exactly which merges or pairs were added or removed against the current settings."""
    from feedmd.tools.evaluation.sweep import Sources, parse_grid, plot, sweep

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
    base = load(config_path, settings_from(kwargs), None).settings
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


@click.group("eval", context_settings=CONTEXT_SETTINGS)
def eval_group() -> None:
    """Measure feedmd on labelled data: your own files, or the development data in the
    repository's eval/ folder (eval/README.md there describes every format)."""


def _print_eval(report: dict[str, Any], as_json: bool, summary_keys: list[str]) -> None:
    if as_json:
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
        return
    for key in summary_keys:
        click.echo(f"{key}: {report[key]}")


# Both replays of a headlines file (stage 1's rules, the event model) batch it alike.
batch_minutes_option = click.option(
    "--batch-minutes",
    type=float,
    default=60.0,
    show_default=True,
    help="Replay the headlines in batches of this many minutes, as a poller would.",
)


@eval_group.command("headlines")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@batch_minutes_option
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@config_option
@setting_options(*HEADLINE_SETTINGS)
def eval_headlines_command(path: str, batch_minutes: float, as_json: bool, **kwargs: Any) -> None:
    """Replay labelled headlines oldest first through the real stage 1 in a temporary store
    and report merge precision, merges by rule, false merges, and pairwise and B-cubed
    precision / recall / F1 against the story labels."""
    from feedmd.tools.evaluation.headlines import evaluate_headlines

    settings = load(kwargs.pop("config_path"), settings_from(kwargs), None).settings
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
@batch_minutes_option
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@config_option
@setting_options(*EVENT_SETTINGS)
def eval_events_command(
    path: str,
    pairs_path: str | None,
    limit: int | None,
    batch_minutes: float,
    as_json: bool,
    config_path: str | None,
    **kwargs: Any,
) -> None:
    """Replay labelled headlines oldest first through the event model and grouper and report
    merges, merge precision against the story labels, false merges, vetoes and encoding
    throughput (docs/events.md); with --pairs also precision and recall on labelled pairs,
    overall and per language pair."""
    from feedmd.tools.evaluation.events import evaluate_event_pairs, evaluate_events

    settings = load(config_path, settings_from(kwargs), None).settings
    report = evaluate_events(path, settings, batch_minutes, limit=limit)
    keys = ["items", "merges", "merge_precision", "vetoed", "headlines_per_second"]
    if pairs_path:
        pairs = evaluate_event_pairs(pairs_path, settings)
        report["pairs"] = pairs
        if not as_json:
            click.echo(f"pairs: precision {pairs['precision']} recall {pairs['recall']}")
            for languages, figures in pairs["by_language_pair"].items():
                click.echo(
                    f"  {languages}: {figures['pairs']} pairs, precision "
                    f"{figures['precision']} recall {figures['recall']}"
                )
    _print_eval(report, as_json, ["model", "threshold", *keys])
    if not as_json:
        click.echo(f"false_merges: {len(report['false_merges'])} (--json lists them)")


@eval_group.command("languages")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--reference",
    default="en",
    show_default=True,
    help="The language the others are paired with; its entry is event_threshold.",
)
@click.option(
    "--carried",
    default=" ".join(CARRIED_LANGUAGE_ENTRIES),
    show_default=True,
    help="Keys whose entries this command carried over rather than chose on labelled "
    "pairs, space-separated: shown, not fitted on. '' fits on every entry.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@config_option
@setting_options(*EVENT_SETTINGS)
def eval_languages_command(
    path: str,
    reference: str,
    carried: str,
    as_json: bool,
    config_path: str | None,
    **kwargs: Any,
) -> None:
    """Carry event thresholds over to languages without labelled pairs: on the same news
    sentences in several languages (eval/news-sentences), each language's median cosine of
    unrelated sentences, its entry in event_thresholds_by_language, and the threshold the
    measured entries' share rule gives it, with each entry also predicted with itself left
    out (docs/events.md, "Languages without labelled pairs")."""
    from feedmd.tools.evaluation.languages import evaluate_languages

    settings = load(config_path, settings_from(kwargs), None).settings
    report = evaluate_languages(path, settings, reference, carried=carried.split())
    if as_json:
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
        return
    click.echo(f"sentences: {report['sentences']} in {', '.join(report['languages'])}")
    for row in report["thresholds"]:
        entry = "-" if row["entry"] is None else row["entry"]
        left_out = "-" if row["left_out"] is None else row["left_out"]
        now = "" if row["set"] is None or row["entry"] is not None else f" (set {row['set']})"
        click.echo(
            f"  {row['key']}: {row['pairs']} pairs, median {row['median']} entry {entry}"
            f"{now} share {row['share']} carried {row['carried']} left out {left_out}"
        )
    click.echo(f"largest_left_out_error: {report['largest_left_out_error']}")
    click.echo(f"without_entry: {report['without_entry'] or '(none)'}")


@eval_group.command("pairs")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@config_option
@setting_options(*HEADLINE_SETTINGS)
def eval_pairs_command(path: str, as_json: bool, **kwargs: Any) -> None:
    """Score the headline matcher on labelled pairs: tp, fp, fn, tn, precision, recall
    (unsure pairs left out)."""
    from feedmd.tools.evaluation.headlines import evaluate_pairs

    settings = load(kwargs.pop("config_path"), settings_from(kwargs), None).settings
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
@config_option
@setting_options(*PROSE_SETTINGS)
def eval_pages_command(
    directory: str, reference: bool, per_page: bool, as_json: bool, **kwargs: Any
) -> None:
    """Score the prose of real pages against their checked bodies (DIRECTORY holds
    truth.jsonl and html/<id>.html.gz): precision, recall, F1 of word 4-gram shingles, and
    how many pages give no digest."""
    from feedmd.tools.evaluation.pages import evaluate_pages

    settings = load(kwargs.pop("config_path"), settings_from(kwargs), None).settings
    report = evaluate_pages(directory, settings, reference=reference, per_page=per_page)
    _print_eval(report, as_json, ["pages", "precision", "recall", "f1", "no_digest"])


@eval_group.command("reprints")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@config_option
@setting_options(*PROSE_SETTINGS, *BODY_SETTINGS)
def eval_reprints_command(path: str, as_json: bool, **kwargs: Any) -> None:
    """Score stage 2 on labelled page pairs (reprint / different): reprint recall, false
    merges and precision for TLSH, for shingle containment and for both combined. Build a
    set from real pages with `feedmd eval make-reprints`."""
    from feedmd.tools.evaluation.reprints import evaluate_reprints

    settings = load(kwargs.pop("config_path"), settings_from(kwargs), None).settings
    report = evaluate_reprints(path, settings)
    _print_eval(
        report, as_json, ["pairs", "reprint_recall", "precision", "no_digest", "by_matcher"]
    )
    if not as_json:
        click.echo(f"false_merges: {len(report['false_merges'])} (--json lists them)")


@eval_group.command("walls")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@config_option
@setting_options("wall_model", "wall_model_threshold", "event_model_path")
def eval_walls_command(path: str, as_json: bool, **kwargs: Any) -> None:
    """Score consent walls on real notices (PATH: JSON Lines of id, lang, project, text,
    as eval/walls/notices.jsonl): each read as a page reduced to it, caught or not, for
    the libraries the model never learned from, by project and by language."""
    from feedmd.tools.evaluation.walls import evaluate_walls

    settings = load(kwargs.pop("config_path"), settings_from(kwargs), None).settings
    report = evaluate_walls(path, settings)
    _print_eval(report, as_json, ["notices", "caught", "share", "unseen_projects"])
    if not as_json:
        click.echo(f"missed: {len(report['missed'])} (--json lists them)")


@eval_group.command("build-walls")
@click.argument("out", type=click.Path(dir_okay=False))
@click.option(
    "--eval-dir",
    type=click.Path(exists=True, file_okay=False),
    default="eval",
    show_default=True,
    help="The labelled data: walls/notices.jsonl and news-sentences/.",
)
@click.option(
    "--fixtures",
    type=click.Path(exists=True, file_okay=False),
    default="fixtures",
    show_default=True,
    help="The fixture news day (newsday.py), whose paragraphs are news too.",
)
@config_option
@setting_options("event_model_path")
def eval_build_walls_command(out: str, eval_dir: str, fixtures: str, **kwargs: Any) -> None:
    """Rebuild the consent-wall discriminant (feedmd/model/consent_walls.npz) from the
    training notices and news sentences, into OUT: for a maintainer changing its data."""
    from feedmd.model.encoder import E5Encoder
    from feedmd.tools.evaluation.walls import training_discriminant, write_discriminant

    settings = load(kwargs.pop("config_path"), settings_from(kwargs), None).settings
    encoder = E5Encoder(settings.event_model_path)
    discriminant = training_discriminant(Path(eval_dir), Path(fixtures), encoder)
    write_discriminant(discriminant, Path(out))
    click.echo(f"wrote {out}: bias {discriminant.bias:.4f}")


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
    from feedmd.tools.evaluation.reprint_set import build_reprint_set

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


@click.command("fingerprint", context_settings=CONTEXT_SETTINGS)
@click.argument("sources", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@config_option
@setting_options(*PROSE_SETTINGS, *PAGE_FETCH_SETTINGS)
def fingerprint_command(sources: tuple[str, ...], as_json: bool, **kwargs: Any) -> None:
    """Show what feedmd sees in pages (files or URLs): prose length, the TLSH digest or why
    there is none, the junk verdict, the number of shingles."""
    from feedmd.tools.evaluation.reprints import describe_page, load_page

    settings = load(kwargs.pop("config_path"), settings_from(kwargs), None).settings
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


@click.command("compare", context_settings=CONTEXT_SETTINGS)
@click.argument("first")
@click.argument("second")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@config_option
@setting_options(*BODY_SETTINGS, *PAGE_FETCH_SETTINGS)
def compare_command(first: str, second: str, as_json: bool, **kwargs: Any) -> None:
    """Compare two pages (files or URLs) as stage 2 would: TLSH distance, shingle
    containment, and the verdict (reprint, similar, different)."""
    from feedmd.tools.evaluation.reprints import compare_pages, load_page

    settings = load(kwargs.pop("config_path"), settings_from(kwargs), None).settings
    result = compare_pages(load_page(first, settings), load_page(second, settings), settings)
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    click.echo(
        f"verdict: {result['verdict']} (decided by {result['decided_by']}); "
        f"tlsh distance {result['tlsh_distance']}, containment {result['containment']}"
    )


COMMANDS = [sweep_command, eval_group, fingerprint_command, compare_command]

"""The evaluation and inspection commands: ``feedmd eval headlines|pairs|pages|reprints``,
``feedmd fingerprint`` and ``feedmd compare`` (registered on ``feedmd`` by ``cli.py``)."""

from __future__ import annotations

import json
from typing import Any

import click

from feedmd.cli_options import setting_options, settings_from
from feedmd.config import load_config


@click.group("eval")
def eval_group() -> None:
    """Measure feedmd on labelled data (formats in shared/eval/README.md)."""


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

    settings = load_config(None, overrides=settings_from(kwargs)).settings
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


@eval_group.command("pairs")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@setting_options
def eval_pairs_command(path: str, as_json: bool, **kwargs: Any) -> None:
    """Score the headline matcher on labelled pairs: tp, fp, fn, tn, precision, recall
    (unsure pairs left out)."""
    from feedmd.evaluation.headlines import evaluate_pairs

    settings = load_config(None, overrides=settings_from(kwargs)).settings
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

    settings = load_config(None, overrides=settings_from(kwargs)).settings
    report = evaluate_pages(directory, settings, reference=reference, per_page=per_page)
    _print_eval(report, as_json, ["pages", "precision", "recall", "f1", "no_digest"])


@eval_group.command("reprints")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@setting_options
def eval_reprints_command(path: str, as_json: bool, **kwargs: Any) -> None:
    """Score stage 2 on labelled page pairs (reprint / different): reprint recall, false
    merges and precision for TLSH, for shingle containment and for both combined. Build a
    set from real pages with shared/tools/make_reprints.py."""
    from feedmd.evaluation.reprints import evaluate_reprints

    settings = load_config(None, overrides=settings_from(kwargs)).settings
    report = evaluate_reprints(path, settings)
    _print_eval(
        report, as_json, ["pairs", "reprint_recall", "precision", "no_digest", "by_matcher"]
    )
    if not as_json:
        click.echo(f"false_merges: {len(report['false_merges'])} (--json lists them)")


@click.command("fingerprint")
@click.argument("sources", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@setting_options
def fingerprint_command(sources: tuple[str, ...], as_json: bool, **kwargs: Any) -> None:
    """Show what feedmd sees in pages (files or URLs): prose length, the TLSH digest or why
    there is none, the junk verdict, the number of shingles."""
    from feedmd.evaluation.reprints import describe_page, load_page

    settings = load_config(None, overrides=settings_from(kwargs)).settings
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


@click.command("compare")
@click.argument("first")
@click.argument("second")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@setting_options
def compare_command(first: str, second: str, as_json: bool, **kwargs: Any) -> None:
    """Compare two pages (files or URLs) as stage 2 would: TLSH distance, shingle
    containment, and the verdict (reprint, similar, different)."""
    from feedmd.evaluation.reprints import compare_pages, load_page

    settings = load_config(None, overrides=settings_from(kwargs)).settings
    result = compare_pages(load_page(first, settings), load_page(second, settings), settings)
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    click.echo(
        f"verdict: {result['verdict']} (decided by {result['decided_by']}); "
        f"tlsh distance {result['tlsh_distance']}, containment {result['containment']}"
    )


COMMANDS = (eval_group, fingerprint_command, compare_command)

"""The options and the output of ``feedmd export``'s LLM and newsletter formats.

``feedmd.cli.delivery.export_command`` takes these options with one decorator and hands the new
formats to ``run_export``, so the command's JSON Feed / Atom path stays as it was.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from feedmd.delivery.exports.export import FORMATS, ExportError, Request, render_document, select
from feedmd.timeutil import utcnow

if TYPE_CHECKING:
    from feedmd.store import Store

__all__ = ["FORMATS", "export_new_format", "export_options", "run_export"]


def export_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options of the new formats, as one decorator."""
    options = [
        click.option(
            "--since",
            help="jsonl, markdown, digests: only items kept (or restored by a reviewer) "
            "after this cursor; every export in these formats prints the next one on "
            "standard error.",
        ),
        click.option(
            "--cursor-file",
            type=click.Path(dir_okay=False),
            help="Also write the next cursor to this file (atomically).",
        ),
        click.option(
            "--max-tokens",
            type=click.IntRange(min=1),
            help="markdown: cut the bundle into files of at most this many estimated "
            "tokens (bundle-001.md, ... in --out-dir); an item is never split.",
        ),
        click.option(
            "--out-dir",
            type=click.Path(file_okay=False),
            help="markdown: write the bundle as DIR/bundle-001.md, ... (created if needed; "
            "older bundle files there are replaced).",
        ),
        click.option("--run", "run_id", type=int, help="Digests: the kept items of this run."),
        click.option(
            "--day",
            type=click.DateTime(["%Y-%m-%d"]),
            help="Digests: the kept items published on this day in the timezone setting "
            "(default: the newest such day, when neither --run nor --since is given).",
        ),
        click.option(
            "--template",
            type=click.Path(exists=True, dir_okay=False),
            help="Digests: a Jinja2 template to render instead of the shipped one.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def export_new_format(
    store: Store,
    fmt: str,
    feed: str | None,
    org: str | None,
    output: str | None,
    limit: int,
    new: dict[str, Any],
) -> None:
    """``feedmd export`` in a new format (or json/atom given a new format's option: an
    error): check the scope, then ``run_export``. ``limit`` counts only when given."""
    if fmt not in FORMATS:
        name = next(k for k, v in new.items() if v is not None and k != "timezone")
        raise click.UsageError(
            f"--{name.removesuffix('_id').replace('_', '-')} goes with the formats "
            + ", ".join(FORMATS)
        )
    orgs = store.list_orgs()
    if feed is None and org is None:
        if len(orgs) != 1:
            raise click.UsageError(f"name --feed or --org (orgs: {', '.join(orgs) or 'none'})")
        org = next(iter(orgs))
    if feed is not None and store.find_feed(feed) is None:
        raise click.ClickException(f"no feed named {feed!r}")
    if org is not None and org not in orgs:
        raise click.ClickException(f"no org named {org!r}")
    source = click.get_current_context().get_parameter_source("limit")
    given = source is click.core.ParameterSource.COMMANDLINE
    run_export(store, Request(fmt, feed, org or "", output, limit if given else None, **new))


def run_export(store: Store, request: Request) -> None:
    """Read the items of ``request`` from ``store``, write them, report the next cursor."""
    from feedmd.delivery.deliver import write_atomically
    from feedmd.delivery.exports import bundle

    if request.max_tokens and not request.out_dir:
        raise click.UsageError("--max-tokens writes files: give --out-dir DIR")
    if request.out_dir and (request.fmt != "markdown" or request.output):
        raise click.UsageError("--out-dir goes with --format markdown, without -o")
    try:
        selection = select(store, request)
    except ExportError as exc:
        raise click.UsageError(str(exc)) from None
    items = selection.items
    if request.out_dir:
        folder = Path(request.out_dir)
        folder.mkdir(parents=True, exist_ok=True)
        files = bundle.split_bundle(items, request.max_tokens or sys.maxsize, request.zone)
        for part in files:
            write_atomically(folder / part.name, part.text.encode())
        # a smaller bundle than the last one in this folder: its extra files would be stale
        written = {part.name for part in files}
        for stale in folder.glob("bundle-[0-9][0-9][0-9]*.md"):
            if stale.name not in written:
                stale.unlink()
        click.echo(f"wrote {len(items)} items in {len(files)} files to {folder}", err=True)
    elif request.output:
        write_atomically(Path(request.output), render_document(request, selection, utcnow()))
        click.echo(f"wrote {len(items)} items to {request.output}", err=True)
    else:
        sys.stdout.buffer.write(render_document(request, selection, utcnow()))
        sys.stdout.flush()
    if request.cursor_file:
        write_atomically(Path(request.cursor_file), (selection.cursor + "\n").encode())
    click.echo(f"cursor: {selection.cursor}", err=True)

"""One export in a new format, shared by ``feedmd export`` and ``feedmd serve``: which items
(``select``) and the document they make (``render_document``). Pure of click and HTTP:
a bad request is an ``ExportError``, which the CLI shows as a usage error and the server
answers with 400.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING

from feedmd.delivery.exports import cursor
from feedmd.delivery.exports.events import one_per_event
from feedmd.delivery.reading import human_day, local, midnight, reader_zone
from feedmd.timeutil import utcnow

if TYPE_CHECKING:
    from feedmd.store import OutputItem, Store

# The formats handled here, after JSON Feed and Atom; the digests and their template kind.
FORMATS = ("jsonl", "markdown", "html", "digest-markdown")
DIGESTS = {"html": "html", "digest-markdown": "markdown"}
MEDIA_TYPES = {
    "jsonl": "application/jsonl; charset=utf-8",
    "markdown": "text/markdown; charset=utf-8",
    "html": "text/html; charset=utf-8",
    "digest-markdown": "text/markdown; charset=utf-8",
}


class ExportError(ValueError):
    """A request the export cannot answer (bad cursor, options that do not go together)."""


@dataclass(frozen=True)
class Request:
    """What one export in a new format asks for; ``org`` is ignored when ``feed`` is set."""

    fmt: str
    feed: str | None
    org: str
    output: str | None = None
    limit: int | None = None
    since: str | None = None
    cursor_file: str | None = None
    max_tokens: int | None = None
    out_dir: str | None = None
    run_id: int | None = None
    day: datetime | None = None
    template: str | None = None
    timezone: str = ""  # the ``timezone`` setting: the digest's day and times

    @property
    def zone(self) -> tzinfo | None:
        """The reader's zone (None: this machine's local zone)."""
        return reader_zone(self.timezone)

    @property
    def scope(self) -> str:
        return cursor.scope_of(org=self.org, feed=self.feed)


@dataclass(frozen=True)
class Selection:
    """The items of an export, in output order, the next cursor, and a digest's period."""

    items: list[OutputItem]
    cursor: str
    period: str


def select(store: Store, request: Request) -> Selection:
    """The items ``request`` asks for, one per event (``exports/events.py``), and the
    cursor to pass as ``since`` next time (see ``_select``)."""
    chosen = _select(store, request)
    return replace(chosen, items=one_per_event(chosen.items))


def _select(store: Store, request: Request) -> Selection:
    """The items ``request`` asks for and the cursor to pass as ``since`` next time.

    jsonl and markdown: the items that became visible as kept after the cursor, in that
    order. Digests: the items of ``run_id``, of the UTC ``day``, or after the cursor; by
    default of the newest day with kept items; newest first. The next cursor is the newest
    visibility seq read (for a run's or a day's digest: the store's newest when it was
    read), so a digest's cursor too starts the next pull."""
    try:
        start = cursor.decode(request.since, request.scope) if request.since else None
    except cursor.CursorError as exc:
        raise ExportError(str(exc)) from None
    after = start.seq if start else 0
    if request.max_tokens and request.fmt != "markdown":
        raise ExportError("max-tokens goes with the markdown format")
    digest_only = (request.run_id, request.day, request.template)
    if request.fmt not in DIGESTS and any(x is not None for x in digest_only):
        raise ExportError("run, day and template go with the digest formats")
    if sum(x is not None for x in (request.since, request.run_id, request.day)) > 1:
        raise ExportError("give one of since, run and day")
    scope = {"feed": request.feed} if request.feed else {"org": request.org}
    if request.fmt not in DIGESTS or request.since:
        visible = store.visible_items(after=after, limit=request.limit, **scope)
        last = cursor.Cursor(request.scope, max((s for s, _ in visible), default=after))
        items = [item for _, item in visible]
        if request.fmt not in DIGESTS:
            return Selection(items, last.encode(), "")
        newest_first = sorted(items, key=lambda i: (i.published, i.item_id), reverse=True)
        return Selection(newest_first, last.encode(), "New since the last digest")
    # the head is read before the items: an item kept in between is after the cursor
    head, newest = store.visibility_head(**scope)
    last = cursor.Cursor(request.scope, head).encode()
    if request.run_id is not None:
        chosen = store.digest_items(run_id=request.run_id, **scope)
        return Selection(chosen, last, f"Run {request.run_id}")
    # the day as the reader lives it: midnight to midnight in their zone
    zone = request.zone
    day = request.day.date() if request.day else local(newest or utcnow(), zone).date()
    first, end = midnight(day, zone), midnight(day + timedelta(days=1), zone)
    chosen = store.digest_items(
        published_from=first.astimezone(UTC), published_to=end.astimezone(UTC), **scope
    )
    return Selection(chosen, last, human_day(first, zone))


def render_document(request: Request, selection: Selection, generated: datetime) -> bytes:
    """The selection as one document of the request's format (the bundle unsplit)."""
    from feedmd.delivery.exports import bundle, digest, jsonl

    if request.fmt == "jsonl":
        return jsonl.jsonl_bytes(selection.items)
    if request.fmt == "markdown":
        zone = request.zone
        return "".join(bundle.item_markdown(item, zone) for item in selection.items).encode()
    return digest.render_digest(
        selection.items,
        fmt=DIGESTS[request.fmt],
        title=request.feed or request.org,
        period=selection.period,
        generated=generated,
        template=request.template,
        zone=request.zone,
    ).encode()

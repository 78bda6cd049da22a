"""The review page's event view and its "not the same event" correction.

``/review/events/{id}``: the kept items of an event (its canonical first, then in
publication order) with the cosine each joined at, the item it joined and the model; a
viewer who may correct the org gets a "Not the same event" button per item, which splits
the item from the event (``feedmd.delivery.overrides.split_event``: recorded with who and
when, the files of the feeds concerned rewritten). The split's route is an ``item_route``:
it needs a token of the item's own org.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from feedmd.delivery import overrides
from feedmd.errors import OverrideError
from feedmd.ids import parse_id
from feedmd.service.review import auth
from feedmd.service.review.auth import Viewer
from feedmd.service.review.views import (
    ReviewContext,
    _error,
    _hidden,
    _page,
    _redirect,
    _store,
    _with_notice,
    item_route,
)
from feedmd.store import ItemRow, Store
from feedmd.timeutil import utcnow


def event_page(context: ReviewContext, request: Request) -> Response:
    """An event's kept items, each with its event decision and the split form."""
    event_id = parse_id(request.path_params["event_id"])
    with _store(context) as store:
        viewer = auth.viewer_for(store, auth.presented_token(request))
        ids = store.event_member_ids(event_id) if event_id is not None else []
        rows = store.item_rows(ids)
        if not rows or event_id is None:
            return _error(request, viewer, 404, "No such event.")
        org = rows[0].org
        if not viewer.can_see(org):
            return _hidden(request, viewer, event_id)
        decisions = {row.id: store.item_event(row.id) for row in rows}
    return _page(
        request,
        "event.html",
        viewer,
        event_id=event_id,
        org=org,
        rows=rows,
        decisions=decisions,
        who=viewer.who(org),
        can_change=viewer.can_change(org),
    )


def not_same_event(
    context: ReviewContext,
    request: Request,
    form: dict[str, str],
    store: Store,
    viewer: Viewer,
    item: ItemRow,
) -> Response:
    """ "Not the same event": the item leaves its event and opens its own."""
    try:
        record = overrides.split_event(
            store, item.id, viewer.who(item.org), utcnow(), output=context.output
        )
    except OverrideError as exc:
        return _error(request, viewer, 409, str(exc))
    target = auth.local_path(form.get("next"), f"/review/items/{item.id}")
    return _redirect(
        _with_notice(target, notice="split", item=item.id, other=record.previous_event_id)
    )


def routes(context: ReviewContext) -> list[Route]:
    """The event routes, bound to ``context``."""
    return [
        Route("/review/events/{event_id:int}", lambda request: event_page(context, request)),
        item_route(context, "not-same-event", not_same_event),
    ]

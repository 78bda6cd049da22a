"""The review routes: each handler opens the store, works out the viewer, reads or changes
what the viewer may, and renders a template (or redirects after a POST, so reloading the
page never repeats a correction).

GET handlers are plain functions (Starlette runs them in its thread pool, where the
sqlite3 connection is opened and closed); POST handlers read their small form body
asynchronously, then do the same in the pool. Form bodies are parsed with the standard
library (``application/x-www-form-urlencoded`` only, size-capped), so no multipart parser
is needed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from feedmd.delivery import overrides
from feedmd.errors import OverrideError
from feedmd.ids import parse_id
from feedmd.service.review import auth, chart, filters, passages, queries
from feedmd.service.review.auth import Viewer
from feedmd.store import ItemRow, Store, connect_store
from feedmd.timeutil import utcnow
from feedmd.tools import explain

CSS_PATH = Path(__file__).parent / "static" / "review.css"
SIGN_IN = "/review/login"
SIGN_OUT = "/review/logout"
RUNS_SHOWN = 50
SEARCH_LIMIT = 50
MAX_FORM_BYTES = 16_384
# Inline SVG is markup, not script or style, so the chart needs nothing looser than this.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self';"
        " frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    # Same-origin Referer: the CSRF check's fallback when a browser sends no Origin.
    "Referrer-Policy": "same-origin",
    # Pages show private items and change with every correction.
    "Cache-Control": "no-store",
}
# Messages after a redirect, chosen by a fixed key: no request text is ever echoed.
NOTICES = {
    "restored": "Item {item} is back in its feed; its webhooks are queued.",
    "merged": "Item {item} is now marked a duplicate of item {other}.",
    "retry": "Item {item} is due: the next run fetches its page again.",
    "split": "Item {item} is now an event of its own, apart from event {other}.",
    "signed-in": "Signed in.",
    "signed-out": "Signed out.",
}


@dataclass(frozen=True)
class ReviewContext:
    """What the review routes need from the server: the store, the public base URL (an
    allowed origin for forms), where runs write feed files (rewritten by an override) and
    how long a restored item's webhook messages are retried."""

    db_path: str
    base_url: str | None = None
    output: overrides.FileOutput | None = None
    retry_hours: float = 24.0


_ENV = Environment(
    loader=PackageLoader("feedmd.service.review", "templates"),
    autoescape=select_autoescape(["html"]),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENV.filters["number"] = filters.number
_ENV.filters["href"] = filters.href
_ENV.filters["when"] = filters.when
_ENV.filters["excerpt"] = explain.excerpt  # the CLI's bounded excerpts, shared
_ENV.filters["evidence_label"] = filters.evidence_label
_ENV.filters["evidence_value"] = filters.evidence_value


@contextlib.contextmanager
def _store(context: ReviewContext) -> Iterator[Store]:
    store = connect_store(context.db_path)
    try:
        yield store
    finally:
        store.close()


def _page(
    request: Request, template: str, viewer: Viewer, status: int = 200, **values: Any
) -> HTMLResponse:
    notice = _notice(request.query_params)
    body = _ENV.get_template(template).render(
        viewer=viewer, query=values.pop("query", ""), notice=notice, **values
    )
    headers = dict(SECURITY_HEADERS)
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="feedmd"'
    return HTMLResponse(body, status_code=status, headers=headers)


def _notice(params: Mapping[str, str]) -> str | None:
    template = NOTICES.get(params.get("notice", ""))
    if template is None:
        return None
    item, other = params.get("item", ""), params.get("other", "")
    return template.format(
        item=item if parse_id(item) else "?", other=other if parse_id(other) else "?"
    )


def _error(request: Request, viewer: Viewer, status: int, message: str) -> HTMLResponse:
    return _page(request, "error.html", viewer, status, code=status, message=message)


def _hidden(request: Request, viewer: Viewer, item_id: int) -> HTMLResponse:
    """The answer for an item of a private org the viewer has no token of."""
    if viewer.token_org is None:
        message = f"Item {item_id} is private: sign in with its org's token."
        return _error(request, viewer, 401, message)
    return _error(request, viewer, 404, f"No item {item_id} that this token may see.")


def _read_only(request: Request, viewer: Viewer, org: str) -> HTMLResponse:
    """The answer for a correction by a viewer who may read the org's items but holds no
    token of it: writing always needs one (auth.py)."""
    if viewer.token_org is None:
        message = f"Corrections to org {org}'s items need one of its tokens: sign in with it."
        return _error(request, viewer, 401, message)
    message = (
        f"Your token is for org {viewer.token_org}; corrections to org {org}'s items need"
        " one of its tokens."
    )
    return _error(request, viewer, 403, message)


def _redirect(path: str, headers: Mapping[str, str] | None = None) -> RedirectResponse:
    return RedirectResponse(path, status_code=303, headers=dict(headers or {}))


def _with_notice(path: str, **params: str | int) -> str:
    return path + ("&" if "?" in path else "?") + urlencode(params)


# ---- pages ---------------------------------------------------------------------------------


def runs_page(context: ReviewContext, request: Request) -> Response:
    """Recent runs, their counts and timings, and the kept vs dropped chart."""
    with _store(context) as store:
        viewer = auth.viewer_for(store, auth.presented_token(request))
        if not viewer.sees_anything:
            return _redirect("/review/login")
        runs = store.recent_runs(RUNS_SHOWN)
    points = [
        chart.Point(run.id, run.as_of, run.count("kept"), run.dropped_total)
        for run in reversed(runs)
    ]
    svg = Markup(chart.kept_dropped_svg(points))  # the SVG escapes its only text
    return _page(request, "runs.html", viewer, runs=runs, chart=svg)


def run_page(context: ReviewContext, request: Request) -> Response:
    """One run's items, grouped into clusters. A run whose orgs (those of its items) are
    all private, or any run when no org is public, needs a token of one of them: its
    counts tell an anonymous visitor how much a private org's feeds carried."""
    run_id = parse_id(request.path_params["run_id"])
    with _store(context) as store:
        viewer = auth.viewer_for(store, auth.presented_token(request))
        run = store.get_run(run_id) if run_id is not None else None
        if run is None or run_id is None:
            return _error(request, viewer, 404, "No such run.")
        stored = store.run_items(run_id)
        orgs = {item.org for item in stored}
        if not (any(viewer.can_see(org) for org in orgs) if orgs else viewer.sees_anything):
            if viewer.token_org is None:
                message = f"Run {run_id} is private: sign in with a token of its org."
                return _error(request, viewer, 401, message)
            return _error(request, viewer, 404, f"No run {run_id} that this token may see.")
        items = [item for item in stored if viewer.can_see(item.org)]
        in_run = {item.id for item in items}
        outside = [i.matched_item_id for i in items if i.matched_item_id not in in_run]
        canonicals = store.item_rows([i for i in outside if i is not None])
        joined = store.joined_events([i.id for i in items if i.decision == "kept"])
    titles = {item.id: item.title for item in items}
    clusters = queries.clusters(items, [c for c in canonicals if viewer.can_see(c.org)])
    failed = [item for item in items if item.decision == "failed"]
    return _page(
        request,
        "run.html",
        viewer,
        run=run,
        merged=[c for c in clusters if c.members],
        alone=[c for c in clusters if not c.members],
        failed=failed,
        joined=joined,
        titles=titles,
        hidden=len(stored) - len(items),
    )


def item_page(context: ReviewContext, request: Request) -> Response:
    """An item's trail, its overrides, and the correction forms."""
    item_id = parse_id(request.path_params["item_id"])
    query = request.query_params.get("q", "").strip()
    with _store(context) as store:
        viewer = auth.viewer_for(store, auth.presented_token(request))
        trail = explain.explain(store, item_id) if item_id is not None else None
        if trail is None or item_id is None:
            return _error(request, viewer, 404, "No such item.")
        org = trail.item["org"]
        if not viewer.can_see(org):
            return _hidden(request, viewer, item_id)
        history = overrides.overrides_of(store, item_id)
        excerpts = None
        if trail.matched is not None:
            bodies = store.body_markdown([item_id, trail.matched["id"]])
            if len(bodies) == 2:
                excerpts = passages.side_by_side(bodies[item_id], bodies[trail.matched["id"]])
        candidates: list[queries.ItemRow] = []
        if query and trail.item["decision"] == "kept":
            found = store.item_rows(explain.find_items(store, query, SEARCH_LIMIT))
            candidates = [
                c for c in found if c.org == org and c.id != item_id and c.decision != "failed"
            ]
    item = trail.item
    evidence = {
        key: value
        for key, value in item["evidence"].items()
        if key not in ("window_hours", "scope") and value not in (None, [], "")
    }
    return _page(
        request,
        "item.html",
        viewer,
        trail=trail,
        item=item,
        evidence=evidence,
        excerpts=excerpts,
        history=history,
        candidates=candidates,
        merge_query=query,
        who=viewer.who(org),
        can_change=viewer.can_change(org),
    )


def search_page(context: ReviewContext, request: Request) -> Response:
    """Items by id, URL, title or publisher that the viewer may see."""
    query = request.query_params.get("q", "").strip()
    with _store(context) as store:
        viewer = auth.viewer_for(store, auth.presented_token(request))
        ids = explain.find_items(store, query, SEARCH_LIMIT) if query else []
        found = store.item_rows(ids)
    results = [item for item in found if viewer.can_see(item.org)]
    return _page(request, "search.html", viewer, query=query, results=results)


def login_page(context: ReviewContext, request: Request) -> Response:
    """The sign-in form."""
    with _store(context) as store:
        viewer = auth.viewer_for(store, auth.presented_token(request))
    next_path = auth.local_path(request.query_params.get("next"), "/review")
    return _page(request, "login.html", viewer, next_path=next_path, failed=False)


def stylesheet(_context: ReviewContext, _request: Request) -> Response:
    """The one CSS file (small enough to read per request; cached by the browser)."""
    return Response(
        CSS_PATH.read_bytes(),
        media_type="text/css; charset=utf-8",
        headers={"Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff"},
    )


# ---- forms ---------------------------------------------------------------------------------


async def _form(request: Request) -> dict[str, str] | None:
    """The urlencoded form fields (first value of each), or None when the body is not a
    small urlencoded form (or empty)."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    if not body:
        return {}  # a form with no fields (a script's bare POST) needs no content type
    if media != "application/x-www-form-urlencoded":
        return None
    fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True, max_num_fields=20)
    return {key: values[0] for key, values in fields.items()}


def _post(
    context: ReviewContext,
    action: Callable[[ReviewContext, Request, dict[str, str]], Response],
) -> Callable[[Request], Awaitable[Response]]:
    """Wrap a form action: same-origin check, form parsing, then the action in the pool."""

    async def endpoint(request: Request) -> Response:
        if not auth.same_origin(request, context.base_url):
            return HTMLResponse(
                "<!doctype html><title>Forbidden</title><p>This form must be sent from the"
                " review page itself (cross-site request refused).</p>",
                status_code=403,
                headers=SECURITY_HEADERS,
            )
        form = await _form(request)
        if form is None:
            return HTMLResponse(
                "<!doctype html><title>Bad request</title><p>Expected a small HTML form.</p>",
                status_code=400,
                headers=SECURITY_HEADERS,
            )
        return await run_in_threadpool(action, context, request, form)

    return endpoint


# What an item correction does once the viewer is known to hold a token of the item's org:
# (context, request, form, store, viewer, item) -> the response.
ItemChange = Callable[[ReviewContext, Request, dict[str, str], Store, Viewer, ItemRow], Response]


def _item_change(context: ReviewContext, change: ItemChange) -> Callable[..., Response]:
    """Wrap a correction of one item (``/review/items/{item_id}/...``): a bounded id (404
    otherwise), an item that exists and that the viewer may see, and a token of the item's
    own org, public or not (auth.py); only then ``change``. Every state-changing review
    route is built with this (``item_route``), so none can skip the check."""

    def action(context: ReviewContext, request: Request, form: dict[str, str]) -> Response:
        item_id = parse_id(request.path_params["item_id"])
        with _store(context) as store:
            viewer = auth.viewer_for(store, auth.presented_token(request))
            found = store.item_rows([item_id]) if item_id is not None else []
            if not found or item_id is None:
                return _error(request, viewer, 404, "No such item.")
            if not viewer.can_see(found[0].org):
                return _hidden(request, viewer, item_id)
            if not viewer.can_change(found[0].org):
                return _read_only(request, viewer, found[0].org)
            return change(context, request, form, store, viewer, found[0])

    return _post(context, action)


def item_route(context: ReviewContext, name: str, change: ItemChange) -> Route:
    """The POST route ``/review/items/{item_id}/<name>``, guarded by ``_item_change``."""
    return Route(
        f"/review/items/{{item_id:int}}/{name}", _item_change(context, change), methods=["POST"]
    )


def _done(form: dict[str, str], item_id: int, notice: str, other: object = "") -> Response:
    """The redirect after a correction: back to the form's page (on this site) or the item."""
    target = auth.local_path(form.get("next"), f"/review/items/{item_id}")
    return _redirect(_with_notice(target, notice=notice, item=item_id, other=other))


def not_duplicate(
    context: ReviewContext,
    request: Request,
    form: dict[str, str],
    store: Store,
    viewer: Viewer,
    item: ItemRow,
) -> Response:
    """ "Not a duplicate": restore the item (overrides.restore)."""
    try:
        record = overrides.restore(
            store,
            item.id,
            viewer.who(item.org),
            utcnow(),
            retry_hours=context.retry_hours,
            output=context.output,
        )
    except OverrideError as exc:
        return _error(request, viewer, 409, str(exc))
    return _done(form, record.item_id, "restored", record.other_item_id)


def merge(
    context: ReviewContext,
    request: Request,
    form: dict[str, str],
    store: Store,
    viewer: Viewer,
    item: ItemRow,
) -> Response:
    """ "Merge": mark the item a duplicate of the chosen canonical (overrides.merge)."""
    canonical = parse_id(form.get("canonical", ""))
    if canonical is None:
        return _error(request, viewer, 400, "Choose the canonical item to merge into.")
    try:
        record = overrides.merge(
            store, item.id, canonical, viewer.who(item.org), utcnow(), output=context.output
        )
    except OverrideError as exc:
        return _error(request, viewer, 409, str(exc))
    return _done(form, record.item_id, "merged", record.other_item_id)


def retry(
    _context: ReviewContext,
    request: Request,
    form: dict[str, str],
    store: Store,
    viewer: Viewer,
    item: ItemRow,
) -> Response:
    """ "Retry": a failed item is due at once (``feedmd retry --item``)."""
    if not store.schedule_retries(item_id=item.id):
        return _error(request, viewer, 409, f"Item {item.id} is not a failed item.")
    return _done(form, item.id, "retry")


def login(context: ReviewContext, request: Request, form: dict[str, str]) -> Response:
    """Check the token and keep it in an HttpOnly cookie (auth.py says why)."""
    token = form.get("token", "").strip()
    next_path = auth.local_path(form.get("next"), "/review")
    with _store(context) as store:
        identity = auth.token_identity(store, token) if token else None
        viewer = auth.viewer_for(store, None)
    if identity is None:
        return _page(request, "login.html", viewer, 401, next_path=next_path, failed=True)
    response = _redirect(_with_notice(next_path, notice="signed-in"))
    response.set_cookie(
        auth.COOKIE,
        token,
        path=auth.COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


def logout(_context: ReviewContext, _request: Request, _form: dict[str, str]) -> Response:
    """Forget the cookie."""
    response = _redirect(_with_notice("/review", notice="signed-out"))
    response.delete_cookie(auth.COOKIE, path=auth.COOKIE_PATH, httponly=True, samesite="strict")
    return response


def routes(context: ReviewContext) -> list[Route]:
    """The review routes, bound to ``context``."""

    def bound(handler: Callable[[ReviewContext, Request], Response]) -> Callable[..., Response]:
        return lambda request: handler(context, request)

    return [
        Route("/review", bound(runs_page)),
        Route("/review/", bound(runs_page)),
        Route("/review/review.css", bound(stylesheet)),
        Route("/review/runs/{run_id:int}", bound(run_page)),
        Route("/review/items/{item_id:int}", bound(item_page)),
        Route("/review/search", bound(search_page)),
        Route("/review/login", bound(login_page), methods=["GET"]),
        # the only POST routes without a token: they set or clear the viewer's own cookie
        Route(SIGN_IN, _post(context, login), methods=["POST"]),
        Route(SIGN_OUT, _post(context, logout), methods=["POST"]),
        item_route(context, "not-duplicate", not_duplicate),
        item_route(context, "merge", merge),
        item_route(context, "retry", retry),
    ]

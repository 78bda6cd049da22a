"""``feedmd serve``: the feeds over HTTP (Starlette on uvicorn) and the scheduler that runs
each feed at its own interval and keeps delivering webhooks.

Routes: ``/`` a landing page; ``/health``; ``/feeds`` (the feeds the caller may read, with
``name``, ``json_url``, ``atom_url``); ``/feeds/{name}.json|.atom`` and
``/orgs/{name}.json|.atom``, paged with ``?before=<item id>``, with ETag and Last-Modified
and 304 for a matching conditional request. A feed marked public is served to anyone;
every other feed needs ``Authorization: Bearer <token>`` with a live token of its org
(stored hashed, compared in constant time). Unknown feed: 404; missing or wrong token: 401.
``/review`` and below: the review page (``feedmd/service/review``): runs, clusters, explain
trails, search, and the "Not a duplicate" / "Merge" corrections.

Each request opens its own SQLite connection (sqlite3 connections stay in their thread;
WAL lets readers run beside a pipeline run).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import html
import logging
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from email.utils import format_datetime, parsedate_to_datetime
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from feedmd.delivery import render
from feedmd.delivery.overrides import FileOutput
from feedmd.ids import MAX_ID, parse_id
from feedmd.service import review
from feedmd.service.review.views import SECURITY_HEADERS as REVIEW_HEADERS
from feedmd.service.scheduler import Scheduler
from feedmd.store import FeedRow, Store, connect_store, hash_token
from feedmd.timeutil import utcnow

log = logging.getLogger(__name__)

JSON_TYPE = "application/feed+json; charset=utf-8"
ATOM_TYPE = "application/atom+xml; charset=utf-8"
# Sent with every response that does not set its own (SecurityHeaders): HTML gets the review
# page's strict policy (no script, styles from this site only), anything else a policy
# that lets it run nothing if a browser is tricked into rendering it.
HTML_CSP = REVIEW_HEADERS["Content-Security-Policy"]
DATA_CSP = "default-src 'none'; frame-ancestors 'none'; sandbox"
COMMON_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}


class SecurityHeaders:
    """ASGI middleware adding Content-Security-Policy, X-Content-Type-Options: nosniff,
    X-Frame-Options and Referrer-Policy to every response (feeds, /health, errors, 404s,
    the landing page, not only the review pages), unless the route set them itself."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                html = headers.get("content-type", "").startswith("text/html")
                wanted = {
                    **COMMON_HEADERS,
                    "Content-Security-Policy": HTML_CSP if html else DATA_CSP,
                }
                for name, value in wanted.items():
                    if name not in headers:
                        headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)


# ---- the HTTP app ---------------------------------------------------------------------------


@dataclass
class _Context:
    db_path: str
    base_url: str | None
    page_size: int
    scheduler: Scheduler | None
    timezone: str = ""


def create_app(
    db_path: str | Path,
    *,
    base_url: str | None = None,
    page_size: int = render.DEFAULT_PAGE_SIZE,
    scheduler: Scheduler | None = None,
    tick_seconds: float = 15.0,
    output: FileOutput | None = None,
    webhook_retry_hours: float = 24.0,
    timezone: str = "",
) -> Starlette:
    """The ASGI app serving the store at ``db_path``; with a ``scheduler`` it also ticks
    every ``tick_seconds`` in a background thread for the app's lifetime.

    ``base_url`` is used in feed links (default: the address of the socket that took the
    connection, never the Host header) and is an allowed origin of the review forms. Every
    response gets the security headers (``SecurityHeaders``). ``output`` is where runs
    write feed files: a correction on the review page rewrites the files it changes there
    (None: no files, as with ``--db`` alone); ``webhook_retry_hours`` is how long a restored
    item's webhook messages are retried; ``timezone`` is the digests' (the setting).
    """
    context = _Context(str(db_path), base_url, page_size, scheduler, timezone)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        stop = threading.Event()
        thread = None
        if scheduler is not None:
            thread = threading.Thread(
                target=scheduler.run_forever, args=(stop, tick_seconds), daemon=True
            )
            thread.start()
        try:
            yield
        finally:
            stop.set()
            if thread is not None:
                thread.join(timeout=5)
            if scheduler is not None:
                scheduler.shutdown()

    def bound(handler: Callable[[_Context, Request], Response]) -> Callable[[Request], Response]:
        return lambda request: handler(context, request)

    routes = [
        Route("/", bound(_landing)),
        Route("/health", bound(_health)),
        Route("/feeds", bound(_feed_list)),
        Route("/feeds/{name}.json", bound(lambda c, r: _document(c, r, "feed", "json"))),
        Route("/feeds/{name}.atom", bound(lambda c, r: _document(c, r, "feed", "atom"))),
        Route("/orgs/{name}.json", bound(lambda c, r: _document(c, r, "org", "json"))),
        Route("/orgs/{name}.atom", bound(lambda c, r: _document(c, r, "org", "atom"))),
        # the LLM bundle and the digest (feedmd/delivery/exports), same tokens as the org's feed
        Route("/orgs/{name}.jsonl", bound(lambda c, r: _export(c, r, "jsonl"))),
        Route("/orgs/{name}.md", bound(lambda c, r: _export(c, r, "markdown"))),
        Route("/orgs/{name}/digest.html", bound(lambda c, r: _export(c, r, "html"))),
        Route("/orgs/{name}/digest.md", bound(lambda c, r: _export(c, r, "digest-markdown"))),
        *review.routes(review.ReviewContext(str(db_path), base_url, output, webhook_retry_hours)),
    ]
    # feeds are large, repetitive text: gzip them for clients that accept it; every
    # response (errors included) carries the security headers
    middleware = [Middleware(GZipMiddleware, minimum_size=500), Middleware(SecurityHeaders)]
    return Starlette(routes=routes, lifespan=lifespan, middleware=middleware)


@contextlib.contextmanager
def _open(context: _Context) -> Any:
    store = connect_store(context.db_path)
    try:
        yield store
    finally:
        store.close()


def _base(context: _Context, request: Request) -> str:
    """The base of the links in documents and pages: the configured base URL, else the
    address of the socket that took the connection. Never the Host header: it is the
    client's to choose, and public documents are cached (``Cache-Control: public``), so a
    forged Host would put a stranger's feed_url and next_url in front of other readers."""
    if context.base_url:
        return context.base_url.rstrip("/")
    scheme = request.url.scheme
    host, port = (request.scope.get("server") or (None, None))[:2]
    if not host or port is None:  # a Unix socket: no address to name
        return f"{scheme}://localhost"
    shown = f"[{host}]" if ":" in str(host) else str(host)
    default = (scheme == "http" and port == 80) or (scheme == "https" and port == 443)
    return f"{scheme}://{shown}" + ("" if default else f":{port}")


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    return JSONResponse({"error": message}, status_code=status, headers=dict(headers or {}))


def _bearer(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _authorised(store: Store, org: str, token: str | None) -> bool:
    """True when ``token`` is a live token of ``org``; every stored hash is compared in
    constant time, so timing tells nothing about how close a guess was."""
    if token is None:
        return False
    presented = hash_token(token).encode()
    matched = False
    for stored in store.token_hashes(org):
        matched |= hmac.compare_digest(presented, stored.encode())
    return matched


def _visible_feeds(store: Store, token: str | None) -> list[FeedRow]:
    feeds = store.list_feeds()
    orgs = {feed.org for feed in feeds if not feed.public}
    allowed = {org for org in orgs if _authorised(store, org, token)}
    return [feed for feed in feeds if feed.public or feed.org in allowed]


def _landing(context: _Context, request: Request) -> Response:
    with _open(context) as store:
        feeds = _visible_feeds(store, _bearer(request))
    base = _base(context, request)
    rows = "\n".join(
        f"<li>{html.escape(feed.title or feed.name)}: "
        f'<a href="{base}/feeds/{html.escape(feed.name)}.json">JSON Feed</a>, '
        f'<a href="{base}/feeds/{html.escape(feed.name)}.atom">Atom</a></li>'
        for feed in feeds
    )
    body = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>feedmd</title>'
        "</head><body><h1>feedmd</h1><p>De-duplicated, full-text news feeds.</p>"
        f"<ul>{rows or '<li>No public feeds.</li>'}</ul>"
        f'<p><a href="{base}/feeds">/feeds</a> lists them as JSON; private feeds need '
        "<code>Authorization: Bearer &lt;token&gt;</code>.</p>"
        f'<p><a href="{base}/review">Review</a>: runs, clusters, and why each item was '
        "dropped.</p></body></html>"
    )
    return HTMLResponse(body)


def _health(context: _Context, _request: Request) -> Response:
    try:
        with _open(context) as store:
            count = len(store.list_feeds())
    except Exception as exc:  # a broken or missing store is what /health reports
        return _error(503, f"store unavailable: {type(exc).__name__}")
    status: dict[str, Any] = {"status": "ok", "feeds": count}
    if context.scheduler is not None:
        status["scheduler"] = context.scheduler.status()
    return JSONResponse(status)


def _feed_list(context: _Context, request: Request) -> Response:
    base = _base(context, request)
    with _open(context) as store:
        feeds = _visible_feeds(store, _bearer(request))
    return JSONResponse(
        [
            {
                "name": feed.name,
                "title": feed.title,
                "org": feed.org,
                "public": feed.public,
                "json_url": f"{base}/feeds/{feed.name}.json",
                "atom_url": f"{base}/feeds/{feed.name}.atom",
            }
            for feed in feeds
        ]
    )


def _document(context: _Context, request: Request, kind: str, fmt: str) -> Response:
    name = request.path_params["name"]
    before_text = request.query_params.get("before")
    before = parse_id(before_text)
    if before_text is not None and before is None:
        return _error(400, f"'before' must be an item id (a whole number from 1 to {MAX_ID})")
    base = _base(context, request)
    with _open(context) as store:
        if kind == "feed":
            feed = store.find_feed(name)
            if feed is None:
                return _error(404, f"no feed named {name!r}")
            org, public, meta = feed.org, feed.public, render.feed_meta(feed, base)
        else:
            orgs = store.list_orgs()
            if name not in orgs:
                return _error(404, f"no org named {name!r}")
            org, public, meta = name, orgs[name], render.org_meta(name, base)
        if not public and not _authorised(store, org, _bearer(request)):
            return _error(
                401,
                f"{kind} {name!r} is private: send 'Authorization: Bearer <token>' with a "
                f"token of org {org!r} (feedmd tokens create --org {org})",
                {"WWW-Authenticate": 'Bearer realm="feedmd"'},
            )
        query = {"feed": name} if kind == "feed" else {"org": name}
        items = store.kept_items(before=before, limit=context.page_size, **query)
    meta = render.page_meta(meta, items, context.page_size)
    if fmt == "json":
        body, media = render.json_bytes(render.json_feed(meta, items)), JSON_TYPE
    else:
        body, media = render.atom_feed(meta, items), ATOM_TYPE
    modified = max((item.stored for item in items), default=render.EPOCH)
    return _conditional(request, body, media, modified, public)


def _export(context: _Context, request: Request, fmt: str) -> Response:
    """An org's LLM bundle (jsonl, markdown) or digest (html, digest-markdown): ``since``
    (a cursor), ``limit``, and for the digest ``run`` or ``day`` (YYYY-MM-DD); the next
    cursor is in the X-Feedmd-Cursor header. Private orgs need a token, as their feeds do."""
    from feedmd.delivery.exports.export import MEDIA_TYPES, ExportError, render_document, select
    from feedmd.delivery.exports.export import Request as ExportRequest

    name, query = request.path_params["name"], request.query_params
    try:
        for key in ("limit", "run"):
            if key in query and not query[key].isdigit():
                raise ExportError(f"'{key}' must be a whole number")
        asked = ExportRequest(
            fmt,
            None,
            name,
            limit=int(query["limit"]) or None if "limit" in query else None,
            since=query.get("since"),
            run_id=int(query["run"]) if "run" in query else None,
            day=datetime.strptime(query["day"], "%Y-%m-%d") if "day" in query else None,
            timezone=context.timezone,
        )
    except (ExportError, ValueError) as exc:
        return _error(400, str(exc))
    with _open(context) as store:
        orgs = store.list_orgs()
        if name not in orgs:
            return _error(404, f"no org named {name!r}")
        if not orgs[name] and not _authorised(store, name, _bearer(request)):
            return _error(
                401,
                f"org {name!r} is private: send 'Authorization: Bearer <token>' with a "
                f"token of org {name!r} (feedmd tokens create --org {name})",
                {"WWW-Authenticate": 'Bearer realm="feedmd"'},
            )
        try:
            selection = select(store, asked)
        except ExportError as exc:
            return _error(400, str(exc))
    headers = {
        "X-Feedmd-Cursor": selection.cursor,
        "Cache-Control": "no-store",
        "Vary": "Authorization",
    }
    body = render_document(asked, selection, utcnow())
    return Response(body, media_type=MEDIA_TYPES[fmt], headers=headers)


def _conditional(
    request: Request, body: bytes, media: str, modified: datetime, public: bool
) -> Response:
    """200 with validators, or 304 when the client's copy is current (If-None-Match wins
    over If-Modified-Since, as RFC 9110 says)."""
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    headers = {
        "ETag": etag,
        "Last-Modified": format_datetime(modified.replace(microsecond=0), usegmt=True),
        "Cache-Control": ("public" if public else "private") + ", max-age=60",
        "Vary": "Authorization",
    }
    match = request.headers.get("if-none-match")
    since = request.headers.get("if-modified-since")
    if match is not None:
        tags = {tag.strip().removeprefix("W/") for tag in match.split(",")}
        if etag in tags or "*" in tags:
            return Response(status_code=304, headers=headers)
    elif since is not None:
        with contextlib.suppress(TypeError, ValueError):
            if modified.replace(microsecond=0) <= parsedate_to_datetime(since):
                return Response(status_code=304, headers=headers)
    return Response(body, media_type=media, headers=headers)

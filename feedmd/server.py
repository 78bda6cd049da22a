"""``feedmd serve``: the feeds over HTTP (Starlette on uvicorn) and the scheduler that runs
each feed at its own interval and keeps delivering webhooks.

Routes: ``/`` a landing page; ``/health``; ``/feeds`` (the feeds the caller may read, with
``name``, ``json_url``, ``atom_url``); ``/feeds/{name}.json|.atom`` and
``/orgs/{name}.json|.atom``, paged with ``?before=<item id>``, with ETag and Last-Modified
and 304 for a matching conditional request. A feed marked public is served to anyone;
every other feed needs ``Authorization: Bearer <token>`` with a live token of its org
(stored hashed, compared in constant time). Unknown feed: 404; missing or wrong token: 401.
``/review`` and below: the review page (``feedmd/review``): runs, clusters, explain
trails, search, and the "Not a duplicate" / "Merge" corrections.

Each request opens its own SQLite connection (sqlite3 connections stay in their thread;
WAL lets readers run beside a pipeline run).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import hmac
import html
import logging
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from feedmd import render, review
from feedmd.config import FeedConfig
from feedmd.overrides import FileOutput
from feedmd.store import Store, connect_store
from feedmd.store.outputs import FeedRow, hash_token
from feedmd.timeutil import utcnow

log = logging.getLogger(__name__)

JSON_TYPE = "application/feed+json; charset=utf-8"
ATOM_TYPE = "application/atom+xml; charset=utf-8"


# ---- the HTTP app ---------------------------------------------------------------------------


@dataclass
class _Context:
    db_path: str
    base_url: str | None
    page_size: int
    scheduler: Scheduler | None


def create_app(
    db_path: str | Path,
    *,
    base_url: str | None = None,
    page_size: int = render.DEFAULT_PAGE_SIZE,
    scheduler: Scheduler | None = None,
    tick_seconds: float = 15.0,
    output: FileOutput | None = None,
    webhook_retry_hours: float = 24.0,
) -> Starlette:
    """The ASGI app serving the store at ``db_path``; with a ``scheduler`` it also ticks
    every ``tick_seconds`` in a background thread for the app's lifetime.

    ``base_url`` is used in feed links (default: the URL the request came in on) and is an
    allowed origin of the review forms. ``output`` is where runs write feed files: a
    correction on the review page rewrites the files it changes there (None: no files,
    as with ``--db`` alone); ``webhook_retry_hours`` is how long a restored item's
    webhook messages are retried.
    """
    context = _Context(str(db_path), base_url, page_size, scheduler)

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
        *review.routes(review.ReviewContext(str(db_path), base_url, output, webhook_retry_hours)),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


@contextlib.contextmanager
def _open(context: _Context) -> Any:
    store = connect_store(context.db_path)
    try:
        yield store
    finally:
        store.close()


def _base(context: _Context, request: Request) -> str:
    return (context.base_url or str(request.base_url)).rstrip("/")


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
    if before_text is not None and not before_text.isdigit():
        return _error(400, "'before' must be an item id (a whole number)")
    before = int(before_text) if before_text is not None else None
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


# ---- the scheduler --------------------------------------------------------------------------


@dataclass
class Scheduler:
    """Runs each feed at its own poll interval, in worker threads.

    Due feeds of one org run together in one pipeline run, and an org never has two runs
    at once: two runs of one feed would store its entries twice, and two runs of one org
    could each keep a copy the other is keeping (org-scope dedup reads the window before
    it writes). A run that raises is logged and the feed is due again at its next
    interval; the scheduler goes on. ``clock`` and ``tick`` make it testable without
    waiting: move the clock, call ``tick``.
    """

    feeds: Sequence[FeedConfig]
    run_org: Callable[[str, tuple[FeedConfig, ...]], object]
    deliver: Callable[[], object] | None = None
    clock: Callable[[], datetime] = utcnow
    first_due: Mapping[str, datetime] = field(default_factory=dict)
    workers: int = 4
    # after a run: the feeds due sooner than their interval (a failed fetch's retry time)
    retry_due: Callable[[tuple[FeedConfig, ...]], Mapping[str, datetime]] | None = None

    def __post_init__(self) -> None:
        start = self.clock()
        self.next_due = {feed.name: self.first_due.get(feed.name, start) for feed in self.feeds}
        self.running: dict[str, Future[None]] = {}
        self.failures: dict[str, str] = {}
        self.runs = 0
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="feedmd-run")
        self._lock = threading.Lock()

    def tick(self) -> list[str]:
        """Start a run for every org with due feeds and no run in flight, and a delivery
        pass if none is in flight; return the names of the feeds started."""
        now = self.clock()
        started: list[str] = []
        with self._lock:
            self.running = {k: f for k, f in self.running.items() if not f.done()}
            due: dict[str, list[FeedConfig]] = {}
            for feed in self.feeds:
                if self.next_due[feed.name] <= now and feed.org not in self.running:
                    due.setdefault(feed.org, []).append(feed)
            for org, feeds in due.items():
                for feed in feeds:
                    self.next_due[feed.name] = now + timedelta(minutes=feed.poll_minutes)
                    started.append(feed.name)
                self.running[org] = self._pool.submit(self._guarded, org, tuple(feeds))
            if self.deliver is not None and "<deliveries>" not in self.running:
                self.running["<deliveries>"] = self._pool.submit(self._deliver)
        return started

    def _guarded(self, org: str, feeds: tuple[FeedConfig, ...]) -> None:
        try:
            self.run_org(org, feeds)
            self.failures.pop(org, None)
        except Exception as exc:  # a failing feed must not stop the others
            self.failures[org] = f"{type(exc).__name__}: {exc}"
            log.exception(
                "run of %s failed; next at its interval", ", ".join(f.name for f in feeds)
            )
        finally:
            self.runs += 1
            self._due_sooner(feeds)

    def _due_sooner(self, feeds: tuple[FeedConfig, ...]) -> None:
        """Bring forward the feeds whose fetch failed to their retry time (issue 14)."""
        if self.retry_due is None:
            return
        try:
            sooner = self.retry_due(feeds)
        except Exception:
            log.exception("reading the feeds' retry times failed; next at their interval")
            return
        with self._lock:
            for name, due in sooner.items():
                if name in self.next_due:
                    self.next_due[name] = min(self.next_due[name], due)

    def _deliver(self) -> None:
        try:
            if self.deliver is not None:
                self.deliver()
        except Exception:
            log.exception("webhook delivery pass failed; retried next tick")

    def wait_idle(self, timeout: float = 30.0) -> None:
        """Wait for the runs in flight (tests and shutdown)."""
        with self._lock:
            pending = list(self.running.values())
        for future in pending:
            future.result(timeout=timeout)

    def run_forever(self, stop: threading.Event, tick_seconds: float) -> None:
        """Tick until ``stop`` is set."""
        while not stop.is_set():
            try:
                self.tick()
            except Exception:
                log.exception("scheduler tick failed")
            stop.wait(tick_seconds)

    def shutdown(self) -> None:
        """Stop taking work and wait for the runs in flight."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def status(self) -> dict[str, Any]:
        """What /health shows: feeds, their next run, orgs running, recent failures."""
        with self._lock:
            running = sorted(k for k, f in self.running.items() if not f.done())
            next_due = {name: due.isoformat() for name, due in self.next_due.items()}
        return {
            "runs": self.runs,
            "running": running,
            "next_due": next_due,
            "failures": dict(self.failures),
        }


# ---- wiring for `feedmd serve` ----------------------------------------------------------------


def pipeline_scheduler(config: Any, clock: Callable[[], datetime] = utcnow) -> Scheduler:
    """A Scheduler running the real pipeline on ``config``'s feeds and delivery passes.

    A feed is first due at its last fetch plus its interval (from the store), so a restart
    does not poll every feed at once; a feed never fetched is due now.
    """
    from feedmd import pipeline, webhooks
    from feedmd.stages.fetch import next_due
    from feedmd.store import open_store

    def run_org(_org: str, feeds: tuple[FeedConfig, ...]) -> object:
        store = open_store(config.database)
        try:
            subset = dataclasses.replace(config, feeds=feeds)
            return pipeline.run(store, subset, force=True)
        finally:
            store.close()

    policy = webhooks.policy_from(config.settings)

    def deliver_pass() -> object:
        store = connect_store(config.database)
        try:
            return webhooks.deliver_due(store, policy)
        finally:
            store.close()

    def retry_due(feeds: tuple[FeedConfig, ...]) -> dict[str, datetime]:
        store = connect_store(config.database)
        try:
            specs = store.feed_specs(feed.name for feed in feeds)
        finally:
            store.close()
        return {spec.name: spec.next_due_at for spec in specs if spec.next_due_at is not None}

    store = open_store(config.database)
    try:
        specs = store.feed_specs(feed.name for feed in config.feeds)
    finally:
        store.close()
    # at its last fetch plus its interval, or at its retry time after a failed fetch
    first_due = {spec.name: next_due(spec) for spec in specs if spec.last_fetched_at is not None}
    return Scheduler(
        feeds=config.feeds,
        run_org=run_org,
        deliver=deliver_pass,
        clock=clock,
        first_due=first_due,
        retry_due=retry_due,
    )

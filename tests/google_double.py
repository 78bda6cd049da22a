"""A loopback stand-in for Google News's two link-resolving endpoints.

``GoogleDouble`` runs a ThreadingHTTPServer on 127.0.0.1 that answers like news.google.com:

- ``GET /articles/<id>`` and ``GET /rss/articles/<id>``: the article page, whose
  ``c-wiz > div[jscontroller]`` carries ``data-n-a-sg="SIG-<id>"`` and
  ``data-n-a-ts="1730000000"`` (404 for an unknown id);
- ``POST /_/DotsSplashUi/data/batchexecute``: checks the form body (the ``f.req`` envelope,
  the request context, and that id, timestamp and signature are what the page gave; 400
  otherwise) and answers in Google's framing: ``)]}'``, a blank line, then length-prefixed
  JSON arrays whose ``wrb.fr``/``Fbv4je`` entry carries ``["garturlres","<url>",1]``;
- ``GET /publisher/...``: a publisher page, the target of the redirect mode (reach it as
  ``http://localhost:PORT/publisher/...`` so its host differs from the double's); paths
  under ``/publisher/gone/`` answer 404, like a publisher that turns robots away.

``mode`` switches behaviour: "normal", "redirect" (``/articles/<id>`` answers 302 to the
publisher URL), "garbage" (batchexecute answers junk), "refused" (batchexecute answers
Google's null result), "no-signature" (pages without the attributes), "articles-down"
(``/articles/`` answers 500 so the ``/rss/articles/`` fallback is used); ``delay_seconds``
makes every answer slow; ``framing = "plain"`` drops the length lines from batchexecute
answers (Google's answer without ``rt=c``). ``requests`` counts ``(kind, id)`` pairs,
``max_in_flight`` the most requests handled at once, ``user_agents`` who asked.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from loopback import QuietServer

from feedmd.sources.links import encode_google_news_id

TIMESTAMP = 1730000000
BATCHEXECUTE_PATH = "/_/DotsSplashUi/data/batchexecute"
# What Google's page sends as the garturlreq context (and what googlenewsdecoder copies).
GARTURLREQ_CONTEXT = json.loads(
    '[["X","X",["X","X"],null,null,1,1,"US:en",null,1,null,null,null,null,null,0,1],'
    '"X","X",1,[1,1,1],1,1,null,0,0,null,0]'
)
MODES = ("normal", "redirect", "garbage", "refused", "no-signature", "articles-down")


def new_style_id(seed: str) -> str:
    """A new-format Google News id: ``CBMi`` + the protobuf ``08 13 22 <varint len>`` around an
    ``AU_yqL...`` token (not a URL) + ``d2 01 00``, as real RSS links carry since 2024."""
    digest = b"".join(hashlib.sha256(f"{seed}/{n}".encode()).digest() for n in range(6))
    token = "AU_yqL" + base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")[:170]
    return encode_google_news_id(token)


def signature_for(article_id: str) -> str:
    """The signature the double's page gives for ``article_id``."""
    return f"SIG-{article_id}"


def article_page(article_id: str, *, with_signature: bool = True) -> str:
    """An article page shaped like Google's (attributes on the c-wiz's first div)."""
    attributes = (
        f'data-n-a-sg="{signature_for(article_id)}" data-n-a-ts="{TIMESTAMP}" '
        if with_signature
        else ""
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Google News'
        "</title><script>var w='<div data-n-a-sg=\"decoy\">';</script></head><body>"
        '<c-wiz jsrenderer="ZsHbLb" class="ZXqGbb" jsshadow jsmodel="hc6Ubd">'
        f'<div jscontroller="aLI87" jsaction="rcuQ6b:npT2md" class="ov7Ic" {attributes}'
        f'data-n-a-id="{article_id}" data-n-a-lc="en"></div></c-wiz>'
        "<noscript>Opening the article…</noscript></body></html>"
    )


def batchexecute_answer(url: str | None, *, framing: str = "chunked") -> str:
    """Google's exact framing of a garturlres answer (url None: a refused request).

    "chunked" is the ``rt=c`` form, each array after a line with its length; "plain" is
    one array after the blank line."""
    payload = json.dumps(["garturlres", url, 1], separators=(",", ":")) if url else None
    entry: list[Any] = (
        ["wrb.fr", "Fbv4je", payload, None, None, None, "generic"]
        if payload
        else ["wrb.fr", "Fbv4je", None, None, None, [3], "generic"]
    )
    first = json.dumps([entry, ["di", 10], ["af.httprm", 10, "-6", 7]], separators=(",", ":"))
    if framing == "plain":
        return f")]}}'\n\n{first}"
    second = json.dumps([["e", 4, None, None, 129]], separators=(",", ":"))
    return f")]}}'\n\n{len(first) + 1}\n{first}\n{len(second) + 1}\n{second}\n"


class GoogleDouble:
    """The server; use as a context manager, register articles with ``add``."""

    def __init__(self) -> None:
        self.articles: dict[str, str] = {}
        self.mode = "normal"
        self.delay_seconds = 0.0
        self.framing = "chunked"
        self.user_agents: set[str] = set()
        self.requests: Counter[tuple[str, str]] = Counter()
        self.rejections: list[str] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = QuietServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """The base URL, the value for the ``google_news_base_url`` setting."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def publisher_url(self, path: str) -> str:
        """A publisher URL the double itself serves, on a host other than the base's."""
        return f"http://localhost:{self._server.server_address[1]}/publisher/{path}"

    def add(self, publisher_url: str, seed: str | None = None) -> str:
        """Register an article pointing at ``publisher_url``; return its RSS link."""
        article_id = new_style_id(seed or publisher_url)
        self.articles[article_id] = publisher_url
        return f"https://news.google.com/rss/articles/{article_id}?oc=5"

    def count(self, kind: str, article_id: str) -> int:
        """How many requests of ``kind`` (page, rss-page, batchexecute) named the id."""
        with self._lock:
            return self.requests[(kind, article_id)]

    def __enter__(self) -> GoogleDouble:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                double._handle(self, "GET")

            def do_POST(self) -> None:
                double._handle(self, "POST")

        return Handler

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            self.user_agents.add(handler.headers.get("User-Agent", ""))
        try:
            if self.delay_seconds and self._stopping.wait(self.delay_seconds):
                return
            status, headers, body = self._answer(handler, method)
        finally:
            # A request stops counting before its answer is written: once the client has read
            # it, it may send the next one while this thread is still unwinding, and counting
            # both would report one request more than the client ever had open at once.
            with self._lock:
                self._in_flight -= 1
        try:
            handler.send_response(status)
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (the timeout tests)

    def _answer(
        self, handler: BaseHTTPRequestHandler, method: str
    ) -> tuple[int, dict[str, str], bytes]:
        path = urlsplit(handler.path).path
        if method == "POST" and path == BATCHEXECUTE_PATH:
            length = int(handler.headers.get("Content-Length") or 0)
            return self._batchexecute(handler, handler.rfile.read(length))
        if method == "GET" and path.startswith("/publisher/gone/"):
            return 404, {"Content-Type": "text/html"}, b"<html><body>Access denied</body></html>"
        if method == "GET" and path.startswith("/publisher/"):
            return 200, {"Content-Type": "text/html"}, b"<html><body>publisher</body></html>"
        for prefix, kind in (("/articles/", "page"), ("/rss/articles/", "rss-page")):
            if method == "GET" and path.startswith(prefix):
                return self._page(kind, path[len(prefix) :])
        return 404, {"Content-Type": "text/plain"}, b"not found"

    def _page(self, kind: str, article_id: str) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.requests[(kind, article_id)] += 1
        html = {"Content-Type": "text/html; charset=utf-8"}
        if article_id not in self.articles:
            return 404, html, b"<html><body>404. That's an error.</body></html>"
        if self.mode == "articles-down" and kind == "page":
            return 500, html, b"<html><body>500. That's an error.</body></html>"
        if self.mode == "redirect" and kind == "page":
            return 302, {"Location": self.articles[article_id]}, b""
        page = article_page(article_id, with_signature=self.mode != "no-signature")
        return 200, html, page.encode("utf-8")

    def _batchexecute(
        self, handler: BaseHTTPRequestHandler, body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        text = {"Content-Type": "text/plain"}
        problem, article_id = self._check_request(handler, body)
        with self._lock:
            self.requests[("batchexecute", article_id or "?")] += 1
            if problem:
                self.rejections.append(problem)
        if problem:
            return 400, text, problem.encode("utf-8")
        answer = {"Content-Type": "application/json; charset=utf-8"}
        if self.mode == "garbage":
            return 200, answer, b")]}'\n\n<html>Something went wrong</html>"
        url = None if self.mode == "refused" else self.articles[article_id]
        return 200, answer, batchexecute_answer(url, framing=self.framing).encode("utf-8")

    def _check_request(self, handler: BaseHTTPRequestHandler, body: bytes) -> tuple[str, str]:
        """("", id) for a well-formed garturlreq, else (the problem, id or "")."""
        content_type = handler.headers.get("Content-Type", "")
        if not content_type.startswith("application/x-www-form-urlencoded"):
            return f"content type {content_type!r}", ""
        form = parse_qs(body.decode("utf-8", "replace"))
        if list(form) != ["f.req"] or len(form["f.req"]) != 1:
            return f"form fields {sorted(form)}", ""
        try:
            envelope = json.loads(form["f.req"][0])
            call = envelope[0][0]
            inner = json.loads(call[1])
        except (ValueError, IndexError, KeyError, TypeError):
            return "f.req is not a batchexecute envelope", ""
        if len(envelope) != 1 or len(envelope[0]) != 1 or len(call) != 4:
            return f"unexpected envelope {envelope!r}", ""
        if call[0] != "Fbv4je" or call[2:] != [None, "generic"]:
            return f"unexpected call {call!r}", ""
        if not isinstance(inner, list) or len(inner) != 5:
            return f"unexpected request {inner!r}", ""
        name, context, article_id, timestamp, signature = inner
        if name != "garturlreq" or context != GARTURLREQ_CONTEXT:
            return f"unexpected request {inner[:2]!r}", ""
        if article_id not in self.articles:
            return f"unknown id {article_id!r}", str(article_id)
        if timestamp != TIMESTAMP or type(timestamp) is not int:
            return f"timestamp {timestamp!r}", article_id
        if signature != signature_for(article_id):
            return f"signature {signature!r}", article_id
        return "", article_id

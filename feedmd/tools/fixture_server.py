"""A real HTTP server on 127.0.0.1 that serves a fixture news day, for the demo and tests.

It is an HTTP forward proxy: the pipeline sets ``proxy = http://127.0.0.1:PORT`` and keeps
the fixtures' realistic URLs (``http://www.capitaltribune.example/world/...``); the server
answers ``http://HOST/PATH`` from ``ROOT/site/HOST/PATH`` (then ``PATH.html``, then
``PATH/index.html``), so per-host behaviour (limits, furniture) is real. It also answers
plain requests for ``/HOST/PATH`` when used without the proxy setting.

``ROOT/routes.toml`` declares special routes (``delay_seconds``, ``drip_seconds`` for a body
that never finishes, ``status`` with an optional ``fail_times`` and ``retry_after``,
``content_type``), and
``edition`` switches to ``FILE.ed2`` variants to model a feed that changed between runs.
Responses carry an ETag and honour If-None-Match with 304, like a well-behaved publisher.
``latency_seconds`` delays every answer, to measure concurrency (benchmarks/scrape.py).
"""

from __future__ import annotations

import hashlib
import mimetypes
import threading
import time
import tomllib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

CONTENT_TYPES = {
    ".xml": "application/rss+xml; charset=utf-8",
    ".rss": "application/rss+xml; charset=utf-8",
    ".atom": "application/atom+xml; charset=utf-8",
    ".html": "text/html",
    ".json": "application/json",
}


class _QuietServer(ThreadingHTTPServer):
    """Clients of a fixture server time out and drop connections on purpose (slow pages):
    no traceback on stderr for that."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        return


class FixtureServer:
    """Serve ``root`` on 127.0.0.1 in a background thread (use as a context manager)."""

    def __init__(self, root: str | Path, port: int = 0, latency_seconds: float = 0.0) -> None:
        self.root = Path(root)
        self.latency_seconds = latency_seconds
        self.site = self.root / "site"
        self.edition = 1
        self.requests: list[str] = []
        self.routes = self._load_routes()
        self._lock = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", port), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def port(self) -> int:
        """The bound TCP port."""
        return int(self._server.server_address[1])

    @property
    def proxy_url(self) -> str:
        """The value for the ``proxy`` setting."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FixtureServer:
        """Start serving in a daemon thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FixtureServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def count(self, fragment: str) -> int:
        """How many requests so far had ``fragment`` in their URL."""
        with self._lock:
            return sum(fragment in url for url in self.requests)

    def _load_routes(self) -> dict[str, dict[str, Any]]:
        path = self.root / "routes.toml"
        if not path.exists():
            return {}
        with path.open("rb") as handle:
            document = tomllib.load(handle)
        return {route["url"]: route for route in document.get("route", [])}

    def resolve(self, url: str) -> Path | None:
        """The fixture file that answers ``url``, or None (404)."""
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        path = parts.path.lstrip("/")
        base = (self.site / host / path).resolve()
        if not base.is_relative_to(self.site.resolve()):
            return None
        for candidate in (base, Path(f"{base}.html"), base / "index.html"):
            if self.edition >= 2 and Path(f"{candidate}.ed2").is_file():
                return Path(f"{candidate}.ed2")
            if candidate.is_file():
                return candidate
        return None

    def _should_fail(self, url: str, route: dict[str, Any]) -> bool:
        """A route with ``fail_times = N`` answers its status N times, then serves the file."""
        if "fail_times" not in route:
            return True
        with self._lock:
            seen = sum(1 for earlier in self.requests if earlier.split("?", 1)[0] == url)
        return seen <= int(route["fail_times"])

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return  # keep test and demo output clean

            def do_GET(self) -> None:
                url = self._target_url()
                with server._lock:
                    server.requests.append(url)
                route = server.routes.get(url.split("?", 1)[0], {})
                if server.latency_seconds:
                    time.sleep(server.latency_seconds)
                if route.get("drip_seconds"):
                    self._drip(float(route["drip_seconds"]))
                    return
                if route.get("delay_seconds"):
                    time.sleep(float(route["delay_seconds"]))
                if route.get("status") and server._should_fail(url, route):
                    extra = (
                        {"Retry-After": str(route["retry_after"])}
                        if route.get("retry_after") is not None
                        else {}
                    )
                    self._send(int(route["status"]), b"error\n", "text/plain", extra)
                    return
                path = server.resolve(url)
                if path is None:
                    self._send(
                        404, b"<html><body><h1>404 Not Found</h1></body></html>", "text/html"
                    )
                    return
                body = path.read_bytes()
                etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
                if self.headers.get("If-None-Match") == etag:
                    self._send(304, b"", None, {"ETag": etag})
                    return
                name = path.name.removesuffix(".ed2")
                suffix = Path(name).suffix or ".html"
                kind = (
                    CONTENT_TYPES.get(suffix)
                    or mimetypes.guess_type(name)[0]
                    or "application/octet-stream"
                )
                self._send(200, body, kind, {"ETag": etag})

            def _drip(self, seconds: float) -> None:
                """A page that never finishes: headers, then a byte every 50 ms."""
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", "1000000")
                    self.end_headers()
                    ends = time.monotonic() + seconds
                    while time.monotonic() < ends:
                        self.wfile.write(b"<")
                        self.wfile.flush()
                        time.sleep(0.05)
                except (BrokenPipeError, ConnectionResetError):
                    return

            def _target_url(self) -> str:
                if self.path.startswith(("http://", "https://")):
                    return self.path
                host, _, rest = self.path.lstrip("/").partition("/")
                return f"http://{host}/{rest}"

            def _send(
                self,
                status: int,
                body: bytes,
                kind: str | None,
                headers: dict[str, str] | None = None,
            ) -> None:
                try:
                    self.send_response(status)
                    if kind:
                        self.send_header("Content-Type", kind)
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    if body:
                        self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    return  # the client gave up (a timeout test): nothing to do

        return Handler

"""Limits: a compressed bomb, a truncated or unknown encoding, too many entries, a huge
title, an over-long URL: each is abandoned or cut at its setting, with a readable reason."""

from __future__ import annotations

import asyncio
import gzip
import threading
import tracemalloc
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from conftest import FeedItemSpec, Site, article_html, at, make_config, rss
from loopback import QuietServer

from feedmd.errors import FetchError, ResponseTooLarge
from feedmd.models import FeedSpec
from feedmd.pipeline import run
from feedmd.settings import Settings
from feedmd.sources.fetch import parse_feed
from feedmd.sources.http import BoundedDecoder, Fetcher
from feedmd.store import Store

NOW = datetime(2026, 10, 12, 12, tzinfo=UTC)
FEED = FeedSpec(name="f", org="o", url="http://feeds.example/f.xml", poll_minutes=15)
SETTINGS = Settings(allow_private_addresses=True, fetch_timeout_seconds=10.0)
# 1 GB of zeros: about 1 MB of gzip (ratio ~1030:1), built once in a stream
BOMB_BYTES = 1_000_000_000


def _gzip_bomb(size: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = b"\0" * 1_000_000
    parts = [packer.compress(block) for _ in range(size // len(block))]
    return b"".join([*parts, packer.flush()])


class _Served:
    """Loopback server answering each path with (body, headers) from ``routes``."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[bytes, dict[str, str]]] = {}
        routes = self.routes

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                body, headers = routes.get(self.path, (b"missing", {}))
                try:
                    self.send_response(200 if self.path in routes else 404)
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    return

        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"


@pytest.fixture(scope="module")
def served() -> Iterator[_Served]:
    server = _Served()
    server.routes["/bomb"] = (
        _gzip_bomb(BOMB_BYTES),
        {"Content-Encoding": "gzip", "Content-Type": "text/html"},
    )
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def _get(url: str, settings: Settings = SETTINGS) -> Any:
    async def go() -> Any:
        async with Fetcher(settings) as fetcher:
            return await fetcher.get(url)

    return asyncio.run(go())


def test_a_gzip_bomb_is_abandoned_at_the_decompressed_limit(served: _Served) -> None:
    wire = len(served.routes["/bomb"][0])
    assert wire < SETTINGS.max_response_bytes  # small on the wire: only decoding shows it
    tracemalloc.start()
    try:
        with pytest.raises(ResponseTooLarge, match="decompressed body passed the limit"):
            _get(f"{served.url}/bomb")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # about twice the limit (zlib grows its output buffer by doubling), not the 1 GB
    assert peak < 3 * SETTINGS.max_decompressed_bytes


def test_a_compressed_page_within_the_limits_decodes(served: _Served) -> None:
    page = b"<html><body>" + b"<p>a real paragraph of news text</p>" * 5000 + b"</body></html>"
    served.routes["/gz"] = (gzip.compress(page), {"Content-Encoding": "gzip"})
    served.routes["/deflate"] = (zlib.compress(page), {"Content-Encoding": "deflate"})
    raw = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    served.routes["/raw-deflate"] = (
        raw.compress(page) + raw.flush(),
        {"Content-Encoding": "deflate"},
    )
    for path in ("/gz", "/deflate", "/raw-deflate"):
        assert _get(f"{served.url}{path}").body == page, path


def test_a_truncated_gzip_body_is_an_error(served: _Served) -> None:
    whole = gzip.compress(b"<p>news</p>" * 20_000)
    served.routes["/cut"] = (whole[: len(whole) // 2], {"Content-Encoding": "gzip"})
    with pytest.raises(FetchError, match=r"gzip body ended before its end marker \(truncated\)"):
        _get(f"{served.url}/cut")
    served.routes["/garbage"] = (b"not gzip at all" * 10, {"Content-Encoding": "gzip"})
    with pytest.raises(FetchError, match="bad gzip body"):
        _get(f"{served.url}/garbage")


def test_an_encoding_we_did_not_ask_for_is_refused(served: _Served) -> None:
    served.routes["/br"] = (b"\x1b\x00\x00", {"Content-Encoding": "br"})
    with pytest.raises(FetchError, match="unsupported Content-Encoding 'br'"):
        _get(f"{served.url}/br")
    twice = gzip.compress(gzip.compress(b"x" * 1000))
    served.routes["/twice"] = (twice, {"Content-Encoding": "gzip, gzip"})
    with pytest.raises(FetchError, match="refused 2 layers"):
        _get(f"{served.url}/twice")


def test_the_decoder_inflates_at_most_the_limit_per_step() -> None:
    decoder = BoundedDecoder("gzip", 10_000)
    bomb = _gzip_bomb(5_000_000)
    with pytest.raises(ResponseTooLarge):
        decoder.feed(bomb)
    assert sum(len(chunk) for chunk in decoder._chunks) <= 10_000


def test_an_over_long_url_is_not_requested(served: _Served) -> None:
    settings = Settings(allow_private_addresses=True, max_url_chars=300)
    with pytest.raises(FetchError, match=r"URL of 3[0-9]{2} characters is over the limit of 300"):
        _get(f"{served.url}/{'a' * 300}", settings)


def _rss(count: int, title: str = "Headline") -> bytes:
    items = "".join(
        f"<item><title>{title} {n}</title><link>http://pub.example/{n}</link>"
        f"<guid>id-{n}</guid><pubDate>Mon, 12 Oct 2026 08:00:00 GMT</pubDate></item>"
        for n in range(count)
    )
    return f'<rss version="2.0"><channel><title>t</title>{items}</channel></rss>'.encode()


def test_entries_past_the_limit_are_left_out() -> None:
    settings = Settings(max_entries_per_feed=10)
    result = parse_feed(FEED, _rss(25), {}, settings, NOW)
    assert result.status == "ok"
    assert [e.title for e in result.entries] == [f"Headline {n}" for n in range(10)]
    assert result.found == 25
    assert result.over_limit == 15


def test_long_titles_and_links_are_cut_or_refused() -> None:
    settings = Settings(max_title_chars=50, max_url_chars=300)
    long_link = "http://pub.example/" + "p" * 400
    body = (
        '<rss version="2.0"><channel><title>t</title>'
        f"<item><title>{'word ' * 1000}</title><link>http://pub.example/ok</link></item>"
        f"<item><title>fine</title><link>{long_link}</link></item>"
        "</channel></rss>"
    ).encode()
    result = parse_feed(FEED, body, {}, settings, NOW)
    assert [len(e.title) for e in result.entries] == [50]
    assert result.invalid == 1


def test_feeds_past_the_page_budget_wait_for_the_next_run(site: Site, store: Store) -> None:
    from conftest import fixture_bodies

    bodies = iter(list(fixture_bodies().values())[:6])
    headlines = iter(
        [
            "Harbour council approves ferry terminal budget",
            "Storm cuts power across valley",
            "Museum festival draws record crowds",
            "Orchard growers fear smallest harvest",
            "Railway strike halts commuter trains",
            "Stadium lease talks collapse overnight",
        ]
    )

    def feed_of(name: str, count: int) -> str:
        items = []
        for n in range(count):
            url = site.put(f"http://{name}.example/{n}", article_html(name, next(bodies)))
            items.append(FeedItemSpec(next(headlines), url, at(8, n)))
        return site.put(f"http://feeds.example/{name}.xml", rss(items))

    first, second = feed_of("alpha", 3), feed_of("beta", 3)
    server = site.start()
    config = make_config(
        [("o", "alpha", first), ("o", "beta", second)], server, max_pages_per_run=4
    )
    report = run(store, config, now=at(12))
    assert report.feeds_deferred == 1 and report.scraped == 3 and report.kept == 3
    deferred = next(store._db.query("SELECT last_fetched_at FROM feeds WHERE name = 'beta'"))
    assert deferred["last_fetched_at"] is None  # untouched: due again at once
    report = run(store, config, now=at(12, 5))
    assert report.feeds_deferred == 0 and report.scraped == 3 and report.kept == 3
    assert next(store._db.query("SELECT COUNT(*) AS n FROM items"))["n"] == 6

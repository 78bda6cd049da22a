"""Fuzzing the parsers that read strangers' bytes: ``fetch.parse_feed`` and
``scrape.extract_page`` on malformed XML, truncated gzip, binary, wrong declared encodings,
hostile HTML and a 50 MB title. Each input gives a FeedResult / Page with a readable
reason, never an unhandled exception. The default examples are few and small (fast); the
heavy cases are marked slow."""

from __future__ import annotations

import gzip
import time
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from feedmd.models import FeedResult, FeedSpec, Page
from feedmd.settings import Settings
from feedmd.sources.fetch import parse_feed
from feedmd.stages.scrape import extract_page

NOW = datetime(2026, 10, 12, 12, tzinfo=UTC)
FEED = FeedSpec(name="f", org="o", url="http://feeds.example/f.xml", poll_minutes=15)
BASE = Page(url_hash="h", url="http://pub.example/a", org="o", status="failed")
SETTINGS = Settings()
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

GOOD_RSS = (
    b'<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>t</title>'
    b"<item><title>Harbour council approves new ferry terminal budget</title>"
    b"<link>http://pub.example/ferry</link><guid>g1</guid>"
    b"<pubDate>Mon, 12 Oct 2026 08:00:00 GMT</pubDate></item></channel></rss>"
)


def check_feed(result: FeedResult) -> None:
    """A feed outcome is either entries or an error a person can read."""
    assert isinstance(result, FeedResult)
    if result.status == "error":
        assert result.error and isinstance(result.error, str)
        assert result.error.isprintable() or "\n" in result.error
    else:
        assert result.status == "ok"
        for entry in result.entries:
            assert entry.link.startswith(("http://", "https://"))
            assert len(entry.title) <= SETTINGS.max_title_chars


def check_page(page: Page) -> None:
    assert isinstance(page, Page)
    assert page.status in ("ok", "failed")
    if page.status == "failed":
        assert page.error
    elif page.digest is None:
        assert page.no_digest_reason


@st.composite
def mangled_feeds(draw: st.DrawFn) -> bytes:
    """The good feed cut, spliced with noise, re-encoded or mislabelled."""
    body = GOOD_RSS
    cut = draw(st.integers(0, len(body)))
    noise = draw(st.binary(max_size=200))
    where = draw(st.integers(0, len(body)))
    choice = draw(st.sampled_from(["cut", "splice", "declared", "gzip-cut", "utf16", "nul"]))
    if choice == "cut":
        return body[:cut]
    if choice == "splice":
        return body[:where] + noise + body[where:]
    if choice == "declared":
        encoding = draw(
            st.sampled_from(["ISO-8859-1", "UTF-16", "Shift_JIS", "nonsense", "ebcdic"])
        )
        return body.replace(b"UTF-8", encoding.encode()) + noise
    if choice == "gzip-cut":
        packed = gzip.compress(body)
        return packed[: max(1, cut * len(packed) // len(body))]
    if choice == "utf16":
        return body.decode().encode("utf-16")[:cut]
    return body.replace(b"<title>", b"<title>\x00\x01\x02", 1)


@FAST
@given(mangled_feeds())
def test_mangled_feeds_give_entries_or_a_readable_error(body: bytes) -> None:
    check_feed(parse_feed(FEED, body, {}, SETTINGS, NOW))


@FAST
@given(
    st.binary(max_size=2000), st.sampled_from(["", "application/xml", "text/html; charset=utf-16"])
)
def test_binary_feeds_give_a_readable_error(body: bytes, content_type: str) -> None:
    headers = {"content-type": content_type} if content_type else {}
    check_feed(parse_feed(FEED, body, headers, SETTINGS, NOW))


@FAST
@given(st.text(max_size=300))
def test_any_text_in_a_title_or_link_is_safe(text: str) -> None:
    from xml.sax.saxutils import escape

    body = GOOD_RSS.replace(b"Harbour council", escape(text).encode("utf-8", "replace"))
    check_feed(parse_feed(FEED, body, {}, SETTINGS, NOW))
    body = GOOD_RSS.replace(b"http://pub.example/ferry", escape(text).encode("utf-8", "replace"))
    check_feed(parse_feed(FEED, body, {}, SETTINGS, NOW))


HOSTILE_PIECES = [
    "<html>",
    "</html>",
    "<body>",
    "<div>" * 50,
    "</div>" * 50,
    "<p>",
    "<script>",
    "</script>",
    "<!--",
    "-->",
    "<![CDATA[",
    "<table><tr><td>",
    "<svg><foreignObject>",
    "<meta charset='utf-16'>",
    "<meta http-equiv='refresh' content='0;url=javascript:alert(1)'>",
    "&#0;",
    "&#x110000;",
    "&nonsense;",
    "\x00",
    "\ufffd",
    "<a href='javascript:alert(1)'>link</a>",
    "In the harbour the council said on Monday that the ferry budget would be reviewed.",
]


@FAST
@given(st.lists(st.sampled_from(HOSTILE_PIECES) | st.text(max_size=40), max_size=60))
def test_hostile_html_gives_a_page_with_a_reason(pieces: list[str]) -> None:
    check_page(extract_page(BASE, "".join(pieces).encode("utf-8", "surrogatepass"), SETTINGS))


@FAST
@given(st.binary(max_size=3000))
def test_binary_pages_give_a_page_with_a_reason(body: bytes) -> None:
    check_page(extract_page(BASE, body, SETTINGS))


def test_deep_nesting_does_not_overflow() -> None:
    html = ("<div>" * 20_000 + "<p>deep text of the story</p>" + "</div>" * 20_000).encode()
    check_page(extract_page(BASE, html, SETTINGS))


def test_a_truncated_gzip_feed_is_a_readable_error() -> None:
    packed = gzip.compress(GOOD_RSS)
    result = parse_feed(FEED, packed[: len(packed) // 2], {}, SETTINGS, NOW)
    assert result.status == "error"
    assert result.error and result.error.startswith("malformed feed")


@pytest.mark.slow
def test_a_50_mb_title_is_cut_not_carried() -> None:
    title = "word " * 10_000_000  # 50 MB
    body = GOOD_RSS.replace(b"Harbour council approves new ferry terminal budget", title.encode())
    started = time.monotonic()
    result = parse_feed(FEED, body, {}, SETTINGS, NOW)
    assert result.status == "ok"
    assert [len(e.title) for e in result.entries] == [SETTINGS.max_title_chars]
    assert time.monotonic() - started < 120


@pytest.mark.slow
def test_a_50_mb_page_title_gives_a_page_with_a_reason() -> None:
    html = f"<html><head><title>{'word ' * 10_000_000}</title></head><body></body></html>"
    check_page(extract_page(BASE, html.encode(), SETTINGS))


@pytest.mark.slow
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mangled_feeds())
def test_many_mangled_feeds(body: bytes) -> None:
    check_feed(parse_feed(FEED, body, {}, SETTINGS, NOW))


@pytest.mark.slow
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(HOSTILE_PIECES) | st.text(max_size=80), max_size=300))
def test_much_hostile_html(pieces: list[str]) -> None:
    check_page(extract_page(BASE, "".join(pieces).encode("utf-8", "surrogatepass"), SETTINGS))

"""New-format Google News links resolved over real HTTP against a loopback Google double."""

from __future__ import annotations

import asyncio
import base64
import socket
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from google_double import GoogleDouble, new_style_id

from feedmd.settings import Settings
from feedmd.sources.http import Fetcher
from feedmd.sources.links import decode_google_news_id, encode_google_news_id
from feedmd.sources.resolve import (
    LinkResolution,
    google_news_id,
    needs_http,
    resolve_google_news,
    resolve_links,
)

PUBLISHER = "https://www.reuters.com/world/europe/pope-leo-surgery-2026-10-12/"
OLD_ID = encode_google_news_id(PUBLISHER)
NEW_ID = new_style_id("pope-leo")


@pytest.fixture
def google() -> Iterator[GoogleDouble]:
    """A running Google News double on 127.0.0.1."""
    with GoogleDouble() as double:
        yield double


def settings_for(double: GoogleDouble, **values: Any) -> Settings:
    return Settings(
        **{
            "google_news_base_url": double.url,
            "fetch_timeout_seconds": 2.0,
            "allow_private_addresses": True,  # the double listens on loopback
            **values,
        }
    )


def resolve_one(double: GoogleDouble, link: str, **values: Any) -> LinkResolution:
    settings = settings_for(double, **values)

    async def go() -> LinkResolution:
        async with Fetcher(settings) as fetcher:
            return await resolve_google_news(fetcher, link, settings.google_news_base_url)

    return asyncio.run(go())


def resolve_many(
    double: GoogleDouble, links: Sequence[str], **values: Any
) -> dict[str, LinkResolution]:
    settings = settings_for(double, **values)

    async def go() -> dict[str, LinkResolution]:
        async with Fetcher(settings) as fetcher:
            return await resolve_links(fetcher, links, settings.google_news_base_url)

    return asyncio.run(go())


def id_of(link: str) -> str:
    article_id = google_news_id(link)
    assert article_id is not None
    return article_id


# --- recognising links ---


def test_new_style_ids_have_the_real_shape() -> None:
    raw = base64.urlsafe_b64decode(NEW_ID + "=" * (-len(NEW_ID) % 4))
    assert NEW_ID.startswith("CBMi")
    assert raw[:3] == b"\x08\x13\x22"
    assert raw[3] & 0x80  # a token this long needs a two-byte varint, as real ones do
    assert raw[5:11] == b"AU_yqL"
    assert raw.endswith(b"\xd2\x01\x00")
    assert decode_google_news_id(NEW_ID) is None


@pytest.mark.parametrize(
    ("link", "article_id", "http"),
    [
        (f"https://news.google.com/rss/articles/{NEW_ID}?oc=5", NEW_ID, True),
        (f"https://news.google.com/articles/{NEW_ID}?hl=en-US&gl=US&ceid=US:en", NEW_ID, True),
        (f"https://news.google.com/read/{NEW_ID}", NEW_ID, True),
        (f"https://NEWS.google.com/__i/rss/rd/articles/{NEW_ID}", NEW_ID, True),
        (f"https://news.google.com/rss/articles/{OLD_ID}?oc=5", OLD_ID, False),
        (f"https://news.google.com/read/{OLD_ID}", OLD_ID, False),
        (f"https://www.reuters.com/articles/{NEW_ID}", None, False),
        ("https://www.google.com/url?url=https://example.com/a", None, False),
        (
            "https://news.google.com/topics/CAAqJggKIiBDQkFTRWdvSUwyMHZNRGx1YlY4U0FtVnVHZ0pWVXlnQVAB",
            None,
            False,
        ),
        ("https://news.google.com/rss/articles/", None, False),
        ("https://news.google.com/rss/articles/not%20an%20id", None, False),
        ("not a url at all", None, False),
        ("http://[::1", None, False),
    ],
)
def test_google_news_id_and_needs_http(link: str, article_id: str | None, http: bool) -> None:
    assert google_news_id(link) == article_id
    assert needs_http(link) is http


# --- resolving one link ---


@pytest.mark.parametrize("framing", ["chunked", "plain"])
def test_batchexecute_gives_the_publisher_url(google: GoogleDouble, framing: str) -> None:
    google.framing = framing
    link = google.add(PUBLISHER)
    result = resolve_one(google, link)
    assert result == LinkResolution(link, PUBLISHER, "google-news-batchexecute")
    assert google.count("page", id_of(link)) == 1
    assert google.count("batchexecute", id_of(link)) == 1
    assert google.rejections == []
    assert google.user_agents == {Settings().user_agent}


def test_redirect_off_google_is_the_publisher_url(google: GoogleDouble) -> None:
    google.mode = "redirect"
    publisher = google.publisher_url("world/story-1")
    link = google.add(publisher)
    result = resolve_one(google, link)
    assert result == LinkResolution(link, publisher, "google-news-redirect")
    assert google.count("batchexecute", id_of(link)) == 0


def test_redirect_to_a_publisher_that_refuses_us_still_resolves(google: GoogleDouble) -> None:
    google.mode = "redirect"
    publisher = google.publisher_url("gone/story-2")
    result = resolve_one(google, google.add(publisher))
    assert (result.url, result.method) == (publisher, "google-news-redirect")


def test_rss_articles_is_the_fallback(google: GoogleDouble) -> None:
    google.mode = "articles-down"
    link = google.add(PUBLISHER)
    result = resolve_one(google, link, retry_backoff_seconds=0.01)
    assert (result.url, result.method) == (PUBLISHER, "google-news-batchexecute")
    # a 500 is retried (fetch_retries = 2) before the fallback is used
    assert google.count("page", id_of(link)) == 3
    assert google.count("rss-page", id_of(link)) == 1


def test_old_format_and_foreign_links_need_no_request(google: GoogleDouble) -> None:
    old = f"https://news.google.com/rss/articles/{OLD_ID}?oc=5"
    assert resolve_one(google, old) == LinkResolution(old, PUBLISHER, "google-news-offline")
    foreign = "https://www.reuters.com/world/"
    result = resolve_one(google, foreign)
    assert (result.url, result.method) == (foreign, "unresolved")
    assert result.error == "not a Google News article link"
    assert sum(google.requests.values()) == 0


# --- failures: unresolved with a reason, never an exception ---


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("garbage", "batchexecute answer is not JSON"),
        ("refused", "batchexecute refused the request"),
        ("no-signature", "no element with data-n-a-sg and data-n-a-ts"),
    ],
)
def test_bad_answers_leave_the_link_unresolved(
    google: GoogleDouble, mode: str, reason: str
) -> None:
    google.mode = mode
    link = google.add(PUBLISHER)
    result = resolve_one(google, link)
    assert (result.url, result.method) == (link, "unresolved")
    assert result.error is not None and reason in result.error


def test_unknown_article_is_unresolved_with_both_404s(google: GoogleDouble) -> None:
    link = f"https://news.google.com/rss/articles/{NEW_ID}?oc=5"
    result = resolve_one(google, link)
    assert (result.url, result.method) == (link, "unresolved")
    assert result.error is not None
    assert f"/articles/{NEW_ID}: HTTP 404" in result.error
    assert f"/rss/articles/{NEW_ID}: HTTP 404" in result.error


def test_a_result_that_is_not_an_http_url_is_unresolved(google: GoogleDouble) -> None:
    link = google.add("javascript:alert(1)")
    result = resolve_one(google, link)
    assert (result.url, result.method) == (link, "unresolved")
    assert result.error is not None and "non-http(s) URL" in result.error


def test_slow_google_times_out(google: GoogleDouble) -> None:
    google.delay_seconds = 5.0
    link = google.add(PUBLISHER)
    result = resolve_one(google, link, fetch_timeout_seconds=0.2)
    assert (result.url, result.method) == (link, "unresolved")
    assert result.error is not None and "timed out after 0.2 s" in result.error


def test_unreachable_google_is_unresolved() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    link = f"https://news.google.com/rss/articles/{NEW_ID}?oc=5"

    async def go() -> LinkResolution:
        async with Fetcher(
            Settings(fetch_timeout_seconds=2.0, allow_private_addresses=True)
        ) as fetcher:
            return await resolve_google_news(fetcher, link, f"http://127.0.0.1:{port}/")

    result = asyncio.run(go())
    assert (result.url, result.method) == (link, "unresolved")
    assert result.error is not None and "ConnectError" in result.error


# --- many links ---


def test_many_links_resolve_concurrently_each_once(google: GoogleDouble) -> None:
    google.delay_seconds = 0.05
    publishers = [f"https://publisher{n}.example/story/{n}" for n in range(12)]
    links = [google.add(url) for url in publishers]
    # Feeds repeat links, and the same article arrives by its /articles/ and /read/ forms.
    same_articles = [f"https://news.google.com/articles/{id_of(links[0])}", links[1] + "&x=1"]
    requested = links + links[::-1] + same_articles
    results = resolve_many(google, requested, fetch_concurrency_per_host=4)
    assert set(results) == set(requested)
    for link, publisher in zip(links, publishers, strict=True):
        assert results[link] == LinkResolution(link, publisher, "google-news-batchexecute")
        assert google.count("page", id_of(link)) == 1
        assert google.count("batchexecute", id_of(link)) == 1
    assert results[same_articles[0]].url == publishers[0]
    assert results[same_articles[0]].link == same_articles[0]
    assert results[same_articles[1]].url == publishers[1]
    # concurrent, and within the Fetcher's per-host limit
    assert 2 <= google.max_in_flight <= 4

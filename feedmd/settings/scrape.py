"""The scrape: what is fetched, how politely, and the reduction budget.

One part of ``Settings`` (``core.py`` assembles the parts into one flat, frozen dataclass).
"""

from __future__ import annotations

from dataclasses import dataclass

from feedmd.settings.fields import setting


@dataclass(frozen=True)
class ScrapeSettings:
    """The scrape: what is fetched, how politely, and the reduction budget."""

    fetch_timeout_seconds: float = setting(
        20.0,
        "Total time allowed for one feed or page request, connect to last byte.",
        minimum=0.1,
        maximum=600,
    )
    connect_timeout_seconds: float = setting(
        10.0, "Time allowed to open a connection.", minimum=0.1, maximum=300
    )
    max_response_bytes: int = setting(
        5_000_000,
        "A feed or page body larger than this is abandoned while streaming "
        "(5 MB: the 111 labelled real article pages are 26 KB to 1.09 MB, median 119 KB).",
        minimum=1024,
        maximum=1_000_000_000,
    )
    max_markdown_chars: int = setting(
        200_000,
        "The extraction budget: a page whose article Markdown is longer than this is no news "
        "story (an archive, a list of thousands of results) and costly to fingerprint (about "
        "2.4 s of CPU per MB of distinct paragraphs, measured): its Markdown is cut to this "
        "length and it gets no digest, with the reason recorded. The longest Markdown of 111 "
        "labelled real article pages is 54,871 characters (median 3,431).",
        minimum=1000,
        maximum=100_000_000,
    )
    max_redirects: int = setting(5, "Redirects followed per request.", minimum=0, maximum=30)
    fetch_retries: int = setting(
        2,
        "Retries of a request answered 429 or 5xx (3 attempts in all): publishers rate-limit "
        "bursts and CDNs fail transiently; a third failure is recorded on the item.",
        minimum=0,
        maximum=10,
    )
    retry_backoff_seconds: float = setting(
        1.0,
        "First wait before a retry, doubled each time, unless the answer's Retry-After "
        "asks for longer.",
        minimum=0,
        maximum=600,
    )
    max_retry_wait_seconds: float = setting(
        30.0,
        "A Retry-After longer than this is not waited for: the request fails now and the "
        "run goes on (a run polls 200 feeds every 15 minutes and cannot sleep for an hour).",
        minimum=0,
        maximum=3600,
    )
    fetch_concurrency: int = setting(
        8,
        "Requests in flight at once, across all hosts (benchmarks/run.py scrape: 8 in flight "
        "give 4.1x the pages/s of one at a time at 50 ms latency, on 2 cores).",
        minimum=1,
        maximum=256,
    )
    fetch_concurrency_per_host: int = setting(
        2,
        "Requests in flight at once to one host, to stay polite to publishers (a browser "
        "opens about 6; a crawler that wants to stay welcome, 1-2).",
        minimum=1,
        maximum=64,
    )
    user_agent: str = setting(
        "feedmd/0.1 (+https://github.com/feedmd/feedmd)",
        "User-Agent sent with every request, so publishers can tell who is fetching.",
    )
    proxy: str = setting(
        "",
        "HTTP proxy for every request (empty: none). The demo points it at its loopback "
        "fixture server.",
    )

    google_news_base_url: str = setting(
        "https://news.google.com",
        "Where new-format Google News links (ids that do not decode offline) are resolved: "
        "the article page gives a signature, the batchexecute endpoint the publisher URL. "
        "Tests point it at a loopback double.",
    )

"""Safety limits (SECURITY.md): sizes, times, addresses, workers.

One part of ``Settings`` (``core.py`` assembles the parts into one flat, frozen dataclass).
"""

from __future__ import annotations

from dataclasses import dataclass

from feedmd.settings.fields import setting


@dataclass(frozen=True)
class LimitSettings:
    """Safety limits (SECURITY.md): sizes, times, addresses, workers."""

    allow_private_addresses: bool = setting(
        False,
        "Connect to loopback, private, link-local, multicast, reserved and unspecified "
        "addresses (and to a proxy on one). Off: feed URLs come from strangers and could point "
        "feedmd at 169.254.169.254 or a service on localhost. The demo and the tests that use "
        "the loopback fixture server turn it on.",
    )
    max_decompressed_bytes: int = setting(
        20_000_000,
        "A gzip or deflate body that decodes to more than this is abandoned while decoding, "
        "so a compression bomb (zeros compress 1000:1) costs at most this much memory. 20 MB: "
        "four times max_response_bytes; the largest of 111 real article pages is 1.09 MB.",
        minimum=1024,
        maximum=4_000_000_000,
    )
    max_pages_per_run: int = setting(
        2000,
        "Pages one run may fetch. Past it, whole feeds are left for the next run (counted, "
        "their fetch state untouched, so they are read again): 200 Google News queries of "
        "100 entries give at most 20,000 entries, of which stage 1 keeps a fraction; at the "
        "scrape benchmark's ~70 pages/s, 2,000 pages take about 30 s of a 15-minute cycle.",
        minimum=1,
        maximum=10_000_000,
    )
    run_deadline_seconds: float = setting(
        600.0,
        "A run stops waiting for pages this long after it started: the feeds whose pages "
        "are not done are left whole for the next run (not failed, fetch state untouched), "
        "so pages that never finish cannot hold the org's lease for long. 600 s: well "
        "inside a 15-minute cycle, twenty times the 2,000-page budget's 30 s.",
        minimum=1,
        maximum=86_400,
    )
    item_retry_base_minutes: float = setting(
        10.0,
        "A page that failed for a transient reason (timeout, connection error, 429, 5xx, "
        "404 / 410 in the grace period) is fetched again by a later run after this long, "
        "doubling after each failed attempt: 10 min is under one 15-minute poll cycle, so "
        "the next run already retries it.",
        minimum=0,
        maximum=1440,
    )
    item_retry_max_hours: float = setting(
        6.0,
        "The longest wait between two retries of a failed page (the backoff's cap); retries "
        "stop anyway when the item's dedup window ends. 6 h: a 48 h window still gets "
        "about ten attempts.",
        minimum=0,
        maximum=168,
    )
    item_retry_gone_grace_hours: float = setting(
        2.0,
        "A 404 or 410 is retried only this long after the entry was first seen (a feed "
        "often lists an article minutes before the publisher's deploy serves it); after "
        "that it is permanent and the retries stop.",
        minimum=0,
        maximum=168,
    )
    item_retries_per_run: int = setting(
        200,
        "Failed pages one run fetches again at most (the oldest due first; the others wait "
        "for the next run): a tenth of max_pages_per_run, so retries never crowd out new "
        "entries.",
        minimum=0,
        maximum=1_000_000,
    )
    feed_retry_base_minutes: float = setting(
        2.0,
        "A feed whose fetch failed is due again after this long, doubling with each failure "
        "in a row, never later than its poll interval.",
        minimum=0,
        maximum=1440,
    )
    max_entries_per_feed: int = setting(
        1000,
        "Entries read from one feed document (the first listed; the rest are counted and "
        "left out). Google News searches list at most 100, Google Alerts 20: a feed listing "
        "more is broken or hostile.",
        minimum=1,
        maximum=1_000_000,
    )
    max_title_chars: int = setting(
        2000,
        "Titles are cut to this many characters: real headlines are under 300, and a 50 MB "
        "title must not reach the headline index.",
        minimum=20,
        maximum=1_000_000,
    )
    max_url_chars: int = setting(
        8192,
        "An entry link, or a URL to request (redirects included), longer than this is "
        "refused (RFC 9110 asks for at least 8000 octets; CDNs cap around 8 KB).",
        minimum=256,
        maximum=1_000_000,
    )
    run_lease_seconds: float = setting(
        600.0,
        "How long a run's lease on its orgs lasts unless renewed; a live run renews it every "
        "third of this. A run killed on this host is taken over at once (its process is "
        "gone); on another host, after this.",
        minimum=5,
        maximum=86_400,
    )
    max_poll_minutes: float = setting(
        43_200.0,
        "Longest poll_minutes a feed may declare (30 days): a feed polled less often than "
        "monthly is a mistake, and an unbounded interval overflows the scheduler's dates.",
        minimum=1,
        maximum=525_600,
    )
    worker_claim_seconds: float = setting(
        600.0,
        "How long a `feedmd worker`'s claim on an org lasts unless renewed; a live worker "
        "renews it every third of this. A worker killed on this host is taken over at once "
        "(its process is gone); on another host, after this. 600 s, as run_lease_seconds: "
        "the killed run's lease holds its org that long anyway.",
        minimum=1,
        maximum=86_400,
    )
    worker_poll_seconds: float = setting(
        15.0,
        "How long an idle `feedmd worker` (no org due, webhook messages sent) waits before "
        "looking again: 15 s, as `feedmd serve`'s scheduler tick; a feed polled every 15 "
        "minutes then starts at most 15 s late.",
        minimum=0.05,
        maximum=3600,
    )
    run_lease_wait_seconds: float = setting(
        60.0,
        "How long a run waits for another run of the same orgs before giving up with exit "
        "code 4 (0: give up at once).",
        minimum=0,
        maximum=86_400,
    )

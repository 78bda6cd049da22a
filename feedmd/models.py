"""The frozen dataclasses that flow between the stages.

fetch -> ``FeedResult`` (with ``Entry`` rows) -> stage 1 -> ``Decision`` per entry ->
scrape -> ``Page`` per surviving URL -> stage 2 -> ``Decision`` -> store -> deliver.

Stages 1 and 2 read history only through ``WindowSnapshot``: plain data loaded by the store,
so the deciding code never touches the database.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # a field type only: models stays free of stage code at run time
    from feedmd.fingerprints.headlines import Headline

DecisionKind = Literal["kept", "duplicate", "failed"]
# how a failed fetch is retried (``feedmd.stages.retry``)
Kind = Literal["transient", "gone", "permanent"]
StageName = Literal["stage1", "scrape", "stage2"]


@dataclass(frozen=True)
class FeedSpec:
    """A feed as the pipeline needs it: the config plus its stored fetch state."""

    name: str
    org: str
    url: str
    poll_minutes: float
    title: str = ""
    etag: str | None = None
    last_modified: str | None = None
    last_fetched_at: datetime | None = None
    # after failed fetches: how many in a row, and when it is due again (sooner than
    # poll_minutes, ``stages/retry.py``); 0 and None after a successful fetch
    error_streak: int = 0
    next_due_at: datetime | None = None


@dataclass(frozen=True)
class Entry:
    """One feed entry, with its link resolved to the publisher URL where possible."""

    feed: str
    org: str
    entry_id: str
    link: str
    url: str
    title: str
    publisher: str
    published: datetime
    fetched: datetime
    summary: str = ""
    link_resolution: str = "direct"

    @property
    def key(self) -> str:
        """Identity of the entry inside one run: feed name and entry id."""
        return f"{self.feed}\x1f{self.entry_id}"


@dataclass(frozen=True)
class FeedResult:
    """What fetching one feed produced: its new state, its entries, and what was skipped."""

    feed: str
    status: Literal["ok", "not-modified", "error", "deferred"]
    http_status: int | None = None
    etag: str | None = None
    last_modified: str | None = None
    error: str | None = None
    entries: tuple[Entry, ...] = ()
    found: int = 0
    skipped_old: int = 0
    repeated_in_feed: int = 0
    invalid: int = 0
    over_limit: int = 0


@dataclass(frozen=True)
class Match:
    """What a duplicate matched: a stored item (``item_id``) or an entry of this run."""

    item_id: int | None = None
    batch_key: str | None = None


@dataclass(frozen=True)
class Decision:
    """The verdict on one entry at one stage, with the evidence a user needs to audit it."""

    key: str
    stage: StageName
    decision: DecisionKind
    rule: str | None = None
    score: float | None = None
    threshold: float | None = None
    matched: Match | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class StoredHeadline:
    """A kept item in the dedup window, as stage 1 compares against it."""

    item_id: int
    feed: str
    org: str
    title: str
    tokens: tuple[str, ...]
    simhash: int
    published: datetime
    host: str = ""  # the publisher's host (``urls.publisher_host``); "" when unknown


@dataclass(frozen=True)
class StoredBody:
    """A kept item's prose digest in the dedup window, as stage 2 compares against it."""

    item_id: int
    feed: str
    org: str
    digest: str
    published: datetime
    shingles: bytes = b""
    host: str = ""  # the publisher's host (``urls.publisher_host``); "" when unknown
    tokens: tuple[str, ...] = ()  # the item's normalised headline tokens
    # the headline tokens of the window's items stage 2 found carrying this same body (its
    # reprints, the items kept as its host's furniture or as a shared block of it): the
    # shared-block check's count; and whether one of them was kept as a shared block
    echoes: tuple[tuple[str, ...], ...] = ()
    shared_block: bool = False


@dataclass(frozen=True)
class WindowAggregates:
    """Sums over the whole window (the orgs of the run) that a snapshot restricted to the
    candidates of the run's entries cannot recount: the subject gate's casing sightings
    ``(word, capitalised, count)`` and the CJK gram document frequencies, each for (at
    least) every word / gram the run's comparisons can look up."""

    casing: tuple[tuple[str, bool, int], ...] = ()
    cjk_documents: int = 0
    cjk_frequency: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class WindowSnapshot:
    """What the store holds inside the dedup window, for the feeds of this run: all of it
    (``aggregates`` None), or only the items that can match the run's entries, with the
    window's aggregates (``Store.snapshot``, issue 13)."""

    entry_ids: tuple[tuple[str, str, str, int], ...] = ()  # (feed, org, entry_id, item_id)
    url_hashes: tuple[tuple[str, str, str, int], ...] = ()  # (feed, org, url_hash, item_id)
    headlines: tuple[StoredHeadline, ...] = ()
    bodies: tuple[StoredBody, ...] = ()
    aggregates: WindowAggregates | None = None

    def window_sums(self) -> WindowAggregates:
        """The window's aggregates; empty when the snapshot holds the whole window."""
        return self.aggregates or WindowAggregates()


# The content types a page is parsed as (empty: the server did not say); others are recorded
# as "not-html" and get no digest.
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml", ""})


@dataclass(frozen=True)
class Page:
    """A scraped (or reused) page reduced to Markdown, prose and a digest."""

    url_hash: str
    url: str
    org: str
    status: Literal["ok", "reused", "failed", "not-html", "skipped"]
    http_status: int | None = None
    content_type: str | None = None
    markdown: str = ""
    prose: str = ""
    digest: str | None = None
    no_digest_reason: str | None = None
    error: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    extractor: str = ""
    body_id: int | None = None
    shingles: bytes = b""
    stale: bool = False
    line_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Candidate:
    """An entry with the keys stage 1 compares: normalised URL, URL hash, headline."""

    entry: Entry
    url: str
    url_hash: str
    tokens: tuple[str, ...]
    headline: Headline
    is_cjk: bool = False
    grams: frozenset[str] = frozenset()
    lead: str = ""
    host: str = ""  # the publisher's host, of the normalised URL ("" for an unresolved link)
    # set when only a recurring title matched: the decision the title alone would make,
    # for stage 2 to confirm on the body
    recurring: Decision | None = None

    @property
    def key(self) -> str:
        """The entry's identity inside the run."""
        return self.entry.key

    @property
    def page_key(self) -> str:
        """What the scrape and the bodies table key a page by: the URL hash, or for an
        unresolved link the hash of the link itself."""
        if self.url_hash:
            return self.url_hash
        return "link-" + hashlib.sha256(self.entry.url.encode("utf-8")).hexdigest()


@dataclass
class Stage1Result:
    """Stage 1's output: the new candidates oldest first, the entries seen before, and a
    decision for every new candidate."""

    candidates: list[Candidate]
    seen_before: list[Entry]
    decisions: dict[str, Decision] = field(default_factory=dict)

    @property
    def survivors(self) -> list[Candidate]:
        """Candidates kept by stage 1, oldest first: the only ones worth scraping."""
        return [c for c in self.candidates if self.decisions[c.key].decision == "kept"]


@dataclass(frozen=True)
class LinkResolution:
    """What one resolution attempt produced: the publisher URL (or the link) and how."""

    link: str
    url: str
    # "google-news-redirect", "google-news-batchexecute", "google-news-offline" or "unresolved"
    method: str
    error: str | None = None


# --- retries: what the retry policy (``feedmd.stages.retry``) and the store exchange ---


@dataclass(frozen=True)
class Verdict:
    """What to do after one failed attempt: ``retry_at`` a time, or ``gave_up`` a reason."""

    kind: Kind
    retry_at: datetime | None = None
    gave_up: str | None = None


@dataclass(frozen=True)
class DueRetry:
    """A stored failed item whose page a run fetches again, with its retry record."""

    item_id: int
    entry: Entry
    attempts: int
    first_failed_at: datetime

    @property
    def key(self) -> str:
        """The entry's key in the run (its feed and entry id)."""
        return self.entry.key


@dataclass(frozen=True)
class Attempt:
    """One fetch of a page that failed now or had failed before: what the store records.
    ``item_id`` is None for an item of this run (its id is given when it is stored)."""

    key: str
    outcome: Literal["failed", "recovered"]
    attempts: int
    first_seen: datetime
    item_id: int | None = None
    http_status: int | None = None
    error: str | None = None
    verdict: Verdict | None = None


@dataclass(frozen=True)
class RetryBatch:
    """A run's retry writes: the items it fetched again, every attempt (new failures
    included), and the feeds and time before which waiting retries are given up (their
    items have left the dedup window)."""

    due: tuple[DueRetry, ...] = ()
    # the due items as stage-1 candidates (``stages.retry.candidates``), in ``due``'s order
    candidates: tuple[Candidate, ...] = ()
    attempts: tuple[Attempt, ...] = ()
    feeds: tuple[str, ...] = ()
    window_starts: datetime | None = None

    @property
    def given_up(self) -> int:
        """Attempts after which the retries stopped."""
        return sum(1 for a in self.attempts if a.verdict is not None and a.verdict.gave_up)


# --- delivery: what step 6 did (``feedmd.delivery.deliver``), for the run report ---


@dataclass(frozen=True)
class WebhookCounts:
    """The webhook side of one step 6: messages newly queued (per-item and batch), and of
    the delivery pass that followed (which also sends earlier runs' due retries), the
    messages delivered and the attempts that failed."""

    queued: int = 0
    delivered: int = 0
    failed_attempts: int = 0


class Delivered(int):
    """What step 6 did. The int value is the items newly written to files, which is what
    ``RunReport.delivered`` has always counted, so the conductor and the report keep
    working unchanged; ``webhooks`` carries the webhook counts for the report to show.

    An int subclass, not a plain dataclass, so the report can start showing the webhook
    counts in a change of its own: until then ``dataclasses.asdict``, ``json.dumps`` and
    f-strings see the plain number.
    """

    webhooks: WebhookCounts

    def __new__(cls, files: int = 0, webhooks: WebhookCounts | None = None) -> Delivered:
        value = super().__new__(cls, files)
        value.webhooks = webhooks or WebhookCounts()
        return value

    @property
    def files(self) -> int:
        """Items newly written to the output files (0 without an output folder)."""
        return int(self)

    def __repr__(self) -> str:
        return f"Delivered(files={int(self)}, webhooks={self.webhooks!r})"


# --- events: what the store's event window answers (``feedmd.events.grouper``) ---


@dataclass(frozen=True)
class Neighbour:
    """A stored item near a query vector: its id, its event's id, its title and the cosine."""

    item_id: str
    event_id: str
    title: str
    score: float

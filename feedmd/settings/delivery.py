"""Delivery: the output files, webhooks and serving.

One part of ``Settings`` (``core.py`` assembles the parts into one flat, frozen dataclass).
"""

from __future__ import annotations

from dataclasses import dataclass

from feedmd.settings.fields import setting, time_zone_problem


@dataclass(frozen=True)
class DeliverySettings:
    """Delivery: the output files, webhooks and serving."""

    timezone: str = setting(
        "",
        "The time zone of the dates people read: the digest's day and times and the "
        "Markdown bundle's dates (an IANA name such as Europe/Berlin; empty: this machine's "
        "local time zone). Stored times, JSON Feed, Atom and JSON Lines stay UTC.",
        check=time_zone_problem,
    )
    feed_page_size: int = setting(
        100,
        "Items per JSON Feed / Atom page and in a run's output files; older items are "
        "reached through next_url.",
        minimum=1,
        maximum=1000,
    )
    webhook_timeout_seconds: float = setting(
        10.0,
        "Time allowed for one whole webhook POST, connect to last byte (a receiver that "
        "trickles its answer cannot stretch it); a slower receiver counts as failed and is "
        "retried (GitHub gives its receivers 10 s). The message's claim lasts three times "
        "this plus 60 s, so an attempt always ends before another pass may take it.",
        minimum=0.1,
        maximum=300,
    )
    webhook_retry_base_seconds: float = setting(
        30.0,
        "First wait after a failed delivery, doubled after each further failure, with jitter.",
        minimum=1,
        maximum=86_400,
    )
    webhook_retry_max_seconds: float = setting(
        14400.0,
        "Longest wait between delivery attempts (4 h), so a message still gets several "
        "attempts in its last day.",
        minimum=1,
        maximum=604_800,
    )
    webhook_retry_hours: float = setting(
        24.0,
        "A webhook message still failing this long after it was queued is marked failed "
        "(at-least-once for a day).",
        minimum=0,
        maximum=8760,
    )
    webhook_disable_after_failures: int = setting(
        15,
        "An endpoint is disabled after this many failed attempts in a row; with the pauses "
        "between failures that is 12-24 h of continuous failure: a day-long outage disables "
        "it, a blip never does.",
        minimum=1,
        maximum=1_000_000,
    )

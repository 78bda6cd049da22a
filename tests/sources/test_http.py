"""Retry-After parsing and which statuses are retried."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from feedmd.sources.http import is_retryable, retry_after_seconds


def test_retryable_statuses() -> None:
    assert [s for s in (200, 304, 404, 428, 429, 500, 503, 599, 600) if is_retryable(s)] == [
        429,
        500,
        503,
        599,
    ]


def test_retry_after_forms() -> None:
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=90), usegmt=True)
    assert 80 <= (retry_after_seconds(later) or 0) <= 91
    past = format_datetime(datetime.now(UTC) - timedelta(hours=1), usegmt=True)
    assert retry_after_seconds(past) == 0.0

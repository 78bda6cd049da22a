"""Timestamps: always timezone-aware UTC inside feedmd, ISO 8601 with 'Z' in the store."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """The current time, aware, in UTC."""
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """Format an aware datetime as ISO 8601 UTC with a 'Z' (sorts as text in SQLite)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> datetime:
    """Parse ISO 8601 (a trailing 'Z' allowed); naive input is taken as UTC."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)

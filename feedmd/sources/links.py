"""Redirect links resolved to publisher URLs, offline where the link carries the URL.

Hashing ``news.google.com`` links tells nothing (seed 003), so links are resolved first.

- Google News RSS links ``https://news.google.com/rss/articles/<id>`` carry, in their older
  and still common form, the publisher URL inside a base64url protobuf: ``08 13 22`` then a
  varint length and the URL bytes (the id starts ``CBMi``). Newer ids (payload ``AU_yqL...``)
  need Google's servers; those stay unresolved here and keep their link.
- Google Alerts links ``https://www.google.com/url?...&url=<publisher URL>&...`` carry the
  URL as a query parameter.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

GOOGLE_NEWS_HOSTS = frozenset({"news.google.com"})
GOOGLE_ALERT_HOSTS = frozenset({"www.google.com", "google.com"})
_PROTOBUF_URL_PREFIX = b"\x08\x13\x22"


@dataclass(frozen=True)
class Resolution:
    """The publisher URL for a feed link and how it was found."""

    url: str
    method: str  # "direct", "google-news-offline", "google-alerts", "unresolved"


def resolve_offline(link: str) -> Resolution:
    """Resolve a feed link without the network; unknown redirect forms are 'unresolved'."""
    try:
        parts = urlsplit(link)
        host = (parts.hostname or "").lower()
    except ValueError:
        return Resolution(link, "unresolved")
    if host in GOOGLE_NEWS_HOSTS and "/articles/" in parts.path:
        decoded = decode_google_news_id(parts.path.rsplit("/", 1)[-1])
        return (
            Resolution(decoded, "google-news-offline")
            if decoded
            else Resolution(link, "unresolved")
        )
    if host in GOOGLE_ALERT_HOSTS and parts.path == "/url":
        targets = parse_qs(parts.query).get("url") or parse_qs(parts.query).get("q")
        if targets and targets[0].startswith(("http://", "https://")):
            return Resolution(targets[0], "google-alerts")
        return Resolution(link, "unresolved")
    return Resolution(link, "direct")


def decode_google_news_id(article_id: str) -> str | None:
    """Decode the publisher URL from an old-format Google News article id, else None."""
    try:
        raw = base64.urlsafe_b64decode(article_id + "=" * (-len(article_id) % 4))
    except (ValueError, TypeError):
        return None
    if not raw.startswith(_PROTOBUF_URL_PREFIX):
        return None
    length, offset = _read_varint(raw, len(_PROTOBUF_URL_PREFIX))
    if length is None or offset + length > len(raw):
        return None
    try:
        url = raw[offset : offset + length].decode("utf-8")
    except UnicodeDecodeError:
        return None
    if url.startswith("AU_yqL") or not url.startswith(("http://", "https://")):
        return None
    return url


def encode_google_news_id(url: str) -> str:
    """Encode a URL the way old-format Google News ids do (used to build test fixtures)."""
    data = url.encode("utf-8")
    payload = _PROTOBUF_URL_PREFIX + _write_varint(len(data)) + data + b"\xd2\x01\x00"
    return base64.urlsafe_b64encode(payload).decode("ascii").rstrip("=")


def _read_varint(raw: bytes, offset: int) -> tuple[int | None, int]:
    value = 0
    shift = 0
    while offset < len(raw) and shift < 35:
        byte = raw[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, offset
        shift += 7
    return None, offset


def _write_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)

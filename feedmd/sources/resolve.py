"""New-format Google News links resolved to publisher URLs over HTTP.

Newer Google News ids (``CBMi...`` whose protobuf payload is an ``AU_yqL...`` token, not
the URL) cannot be decoded offline (``links.decode_google_news_id`` returns None). Google's
own site turns them into the publisher URL in two requests, and so do we, as the public
googlenewsdecoder project does:

1. GET ``{base}/articles/<id>`` (then ``{base}/rss/articles/<id>`` if that fails). A redirect
   to a non-Google host is already the answer; otherwise the page's ``c-wiz > div[jscontroller]``
   element carries a signature (``data-n-a-sg``) and a timestamp (``data-n-a-ts``).
2. POST both with the id to ``{base}/_/DotsSplashUi/data/batchexecute`` (RPC ``Fbv4je``); the
   answer carries ``["garturlres", "<publisher URL>", 1]``.

Every request goes through the shared ``Fetcher``, so its limits (news.google.com is one
host: ``fetch_concurrency_per_host`` requests at a time), timeouts, proxy and User-Agent
apply. Nothing here raises: a failure is a ``LinkResolution`` with method "unresolved", the
link kept as its URL, and a readable ``error``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import html
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

from feedmd.errors import FetchError
from feedmd.models import LinkResolution
from feedmd.sources.http import Fetcher
from feedmd.sources.links import GOOGLE_NEWS_HOSTS, decode_google_news_id

BATCHEXECUTE_PATH = "/_/DotsSplashUi/data/batchexecute"
FORM_CONTENT_TYPE = "application/x-www-form-urlencoded;charset=UTF-8"
_RPC_ID = "Fbv4je"
# The fixed request context Google's own page sends with "garturlreq" (googlenewsdecoder
# sends the same); only the id, the timestamp and the signature change per article.
_GARTURLREQ_CONTEXT = json.loads(
    '[["X","X",["X","X"],null,null,1,1,"US:en",null,1,null,null,null,null,null,0,1],'
    '"X","X",1,[1,1,1],1,1,null,0,0,null,0]'
)
_ARTICLE_ID = re.compile(r"^[A-Za-z0-9_-]+$")
_ID_SEGMENTS = frozenset({"articles", "read"})
# Redirects that stay on Google (consent.google.com, www.google.de, ...) are not an answer.
_GOOGLE_HOST = re.compile(r"(?:^|\.)google(?:\.[a-z]{2,3}){1,2}$")
_SIGNATURE_ATTRIBUTE = re.compile(r"\bdata-n-a-sg\s*=")
_TAG = re.compile(r"""<[A-Za-z][\w-]*(?:[^>"']|"[^"]*"|'[^']*')*>""")
_ATTRIBUTE = re.compile(r"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?""")
_ANSWER_PREFIX = ")]}'"


class _Unresolved(Exception):
    """A step failed; the message is the reason recorded on the resolution."""


@dataclass(frozen=True)
class _Signature:
    timestamp: int
    signature: str


def google_news_id(link: str) -> str | None:
    """The article id of a news.google.com ``/rss/articles/``, ``/articles/`` or ``/read/``
    link, else None; the id is what both offline decoding and Google's endpoints take."""
    try:
        parts = urlsplit(link)
        host = (parts.hostname or "").lower()
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or host not in GOOGLE_NEWS_HOSTS:
        return None
    segments = parts.path.split("/")
    if len(segments) < 3 or segments[-2] not in _ID_SEGMENTS:
        return None
    article_id = segments[-1]
    return article_id if _ARTICLE_ID.match(article_id) else None


def needs_http(link: str) -> bool:
    """True for a Google News article link whose id does not decode offline, so only
    Google's servers can say where it points."""
    article_id = google_news_id(link)
    return article_id is not None and decode_google_news_id(article_id) is None


async def resolve_links(
    fetcher: Fetcher, links: Sequence[str], base_url: str
) -> dict[str, LinkResolution]:
    """Resolve many links concurrently and return a resolution per link.

    Links naming the same article (same id, other path or query) are resolved once, so a
    story repeated across feeds costs Google one lookup; the Fetcher's per-host limit keeps
    the requests to Google polite.
    """
    by_key: dict[str, list[str]] = {}
    for link in links:
        by_key.setdefault(google_news_id(link) or link, []).append(link)
    groups = list(by_key.values())
    results = await asyncio.gather(
        *(resolve_google_news(fetcher, group[0], base_url) for group in groups)
    )
    resolved: dict[str, LinkResolution] = {}
    for group, result in zip(groups, results, strict=True):
        for link in group:
            resolved[link] = dataclasses.replace(result, link=link)
    return resolved


async def resolve_google_news(fetcher: Fetcher, link: str, base_url: str) -> LinkResolution:
    """Resolve one Google News link to its publisher URL; never raises.

    An old-format id is decoded offline; a new-format one takes the article page (for a
    redirect, or the signature) and then batchexecute. Any failure gives method
    "unresolved", the link as URL, and the reason in ``error``.
    """
    article_id = google_news_id(link)
    if article_id is None:
        return LinkResolution(link, link, "unresolved", "not a Google News article link")
    offline = decode_google_news_id(article_id)
    if offline is not None:
        return LinkResolution(link, offline, "google-news-offline")
    base = base_url.rstrip("/")
    try:
        step = await _article_page(fetcher, base, article_id)
        if isinstance(step, str):
            return LinkResolution(link, step, "google-news-redirect")
        url = await _batchexecute(fetcher, base, article_id, step)
    except _Unresolved as exc:
        return LinkResolution(link, link, "unresolved", str(exc))
    return LinkResolution(link, url, "google-news-batchexecute")


async def _article_page(fetcher: Fetcher, base: str, article_id: str) -> str | _Signature:
    """The publisher URL if the article page redirects off Google, else its signature."""
    failures: list[str] = []
    for url in (f"{base}/articles/{article_id}", f"{base}/rss/articles/{article_id}"):
        try:
            response = await fetcher.get(url)
        except FetchError as exc:
            failures.append(f"GET {url}: {exc}")
            continue
        # The publisher may answer 403 or 404 to us; the URL we were sent to is still right.
        if _is_publisher_url(response.url, base):
            return response.url
        if response.status != 200:
            failures.append(f"GET {url}: HTTP {response.status}")
            continue
        try:
            return _page_signature(response.body)
        except _Unresolved as exc:
            failures.append(f"GET {url}: {exc} (page at {response.url})")
    raise _Unresolved("; ".join(failures))


def _is_publisher_url(url: str, base: str) -> bool:
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        base_host = (urlsplit(base).hostname or "").lower()
    except ValueError:
        return False
    return (
        parts.scheme in ("http", "https")
        and bool(host)
        and host != base_host
        and not _GOOGLE_HOST.search(host)
    )


def _page_signature(body: bytes) -> _Signature:
    """The signature and timestamp from the first tag that carries both."""
    text = body.decode("utf-8", "replace")
    for found in _SIGNATURE_ATTRIBUTE.finditer(text):
        start = text.rfind("<", 0, found.start())
        tag = _TAG.match(text, start) if start >= 0 else None
        if tag is None or tag.end() <= found.start():
            continue
        attributes = _tag_attributes(tag.group(0))
        signature = attributes.get("data-n-a-sg", "")
        timestamp = attributes.get("data-n-a-ts", "")
        if not signature or not timestamp:
            continue
        if not timestamp.isascii() or not timestamp.isdigit():
            raise _Unresolved(f"data-n-a-ts is not a number: {timestamp[:40]!r}")
        return _Signature(int(timestamp), signature)
    raise _Unresolved("no element with data-n-a-sg and data-n-a-ts")


def _tag_attributes(tag: str) -> dict[str, str]:
    attributes: dict[str, str] = {}
    inside = tag[1:-1].split(None, 1)
    for match in _ATTRIBUTE.finditer(inside[1] if len(inside) > 1 else ""):
        name, double, single, bare = match.groups()
        value = next((v for v in (double, single, bare) if v is not None), "")
        attributes.setdefault(name.lower(), html.unescape(value))
    return attributes


async def _batchexecute(fetcher: Fetcher, base: str, article_id: str, sign: _Signature) -> str:
    """Ask batchexecute for the publisher URL of ``article_id``."""
    url = base + BATCHEXECUTE_PATH
    try:
        response = await fetcher.post(
            url,
            _batchexecute_body(article_id, sign.timestamp, sign.signature),
            {"Content-Type": FORM_CONTENT_TYPE},
        )
    except FetchError as exc:
        raise _Unresolved(f"POST {url}: {exc}") from None
    if response.status != 200:
        raise _Unresolved(f"POST {url}: HTTP {response.status}")
    publisher = _parse_batchexecute(response.body)
    if not _is_http_url(publisher):
        raise _Unresolved(f"batchexecute answered a non-http(s) URL: {publisher[:200]!r}")
    return publisher


def _batchexecute_body(article_id: str, timestamp: int, signature: str) -> bytes:
    """The form body of a ``garturlreq`` call, byte for byte what Google's page sends
    (compact JSON in ``f.req``), so the double and the real endpoint accept it alike."""
    inner = ["garturlreq", _GARTURLREQ_CONTEXT, article_id, timestamp, signature]
    envelope = [[[_RPC_ID, _compact_json(inner), None, "generic"]]]
    return urlencode({"f.req": _compact_json(envelope)}).encode("ascii")


def _parse_batchexecute(body: bytes) -> str:
    """The publisher URL from a batchexecute answer; raise _Unresolved when there is none.

    The answer is ``)]}'``, a blank line, then JSON arrays, each optionally preceded by its
    length on a line of its own (``rt=c`` framing). The ``wrb.fr`` entry for our RPC holds
    at index 2 a JSON string ``["garturlres", "<URL>", 1]``, or null when Google refused.
    """
    text = body.decode("utf-8", "replace")
    if not text.startswith(_ANSWER_PREFIX):
        raise _Unresolved(f"batchexecute answer does not start with )]}}': {text[:80]!r}")
    decoder = json.JSONDecoder()
    position = len(_ANSWER_PREFIX)
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            break
        try:
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise _Unresolved(f"batchexecute answer is not JSON: {exc}") from None
        entry = _rpc_entry(value)
        if entry is not None:
            return _garturlres(entry)
    raise _Unresolved(f"batchexecute answer has no {_RPC_ID} result")


def _rpc_entry(value: object) -> list[object] | None:
    if not isinstance(value, list):
        return None
    for entry in value:
        if isinstance(entry, list) and entry[:2] == ["wrb.fr", _RPC_ID]:
            return entry
    return None


def _garturlres(entry: list[object]) -> str:
    payload = entry[2] if len(entry) > 2 else None
    if not isinstance(payload, str):
        detail = entry[5] if len(entry) > 5 else None
        raise _Unresolved(f"batchexecute refused the request (error {json.dumps(detail)})")
    try:
        result = json.loads(payload)
    except json.JSONDecodeError:
        raise _Unresolved(f"batchexecute result is not JSON: {payload[:80]!r}") from None
    if (
        not isinstance(result, list)
        or len(result) < 2
        or result[0] != "garturlres"
        or not isinstance(result[1], str)
    ):
        raise _Unresolved(f"batchexecute result is not a garturlres: {payload[:80]!r}")
    return result[1]


def _is_http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        return False


def _compact_json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

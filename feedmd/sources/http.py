"""HTTP for feeds and pages: one httpx client, polite limits, bounded bodies, no SSRF.

Every request goes through ``Fetcher.get`` (or ``Fetcher.post``): a global concurrency limit
and a per-host one, a connect timeout and a total deadline, a redirect limit, a clear
User-Agent, and a body read in a stream that is abandoned as soon as it passes
``max_response_bytes`` on the wire or ``max_decompressed_bytes`` once decoded (we decode
gzip and deflate ourselves, at most that many bytes per step, so a 1000:1 gzip bomb costs
at most the limit), so a huge or never-ending response costs at most that much memory and
that much time.

The SSRF guard (``feedmd.sources.security``) sits in the connection layer: ``GuardedBackend``
resolves each host name, refuses the connection when any of its addresses is not public,
and connects to the checked address itself, so DNS cannot answer differently between check
and connect. Every redirect hop opens its connection through the same backend, and goes
through ``_check_request`` (scheme, URL length, IP literals) first. A configured proxy's
address passes the same check. ``allow_private_addresses`` turns the address checks off
(the demo and the tests serve fixtures on 127.0.0.1).
"""

from __future__ import annotations

import asyncio
import socket
import zlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpcore
import httpx

from feedmd.errors import FetchError, ResponseTooLarge
from feedmd.fingerprints.urls import host_of
from feedmd.settings import Settings
from feedmd.sources.security import check_address, check_url, refusal

# Only encodings we decode ourselves, within the limit: httpx would inflate a whole chunk
# at once (64 KB of a gzip bomb is 64 MB) before we could count it.
ACCEPT_ENCODING = "gzip, deflate"


def allow_private(settings: Settings) -> bool:
    """Whether the SSRF guard is off (``allow_private_addresses``)."""
    return settings.allow_private_addresses


def max_url_chars(settings: Settings) -> int:
    """Longest URL requested or stored (``max_url_chars``)."""
    return settings.max_url_chars


@dataclass(frozen=True)
class Response:
    """A fully read, size-bounded response."""

    url: str
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def content_type(self) -> str:
        """The media type without parameters, lowercased ('' when absent)."""
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()


class Fetcher:
    """Shared async HTTP client with global and per-host concurrency limits."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        timeout = httpx.Timeout(
            settings.fetch_timeout_seconds, connect=settings.connect_timeout_seconds
        )
        limits = httpx.Limits(
            max_connections=settings.fetch_concurrency,
            max_keepalive_connections=settings.fetch_concurrency,
        )
        # trust_env=False on the client: an HTTP(S)_PROXY variable would route requests
        # through a transport without the guard. The ``proxy`` setting is the one way.
        self._client = httpx.AsyncClient(
            transport=guarded_transport(settings, limits),
            timeout=timeout,
            follow_redirects=True,
            max_redirects=settings.max_redirects,
            headers={"User-Agent": settings.user_agent, "Accept-Encoding": ACCEPT_ENCODING},
            trust_env=False,
            event_hooks={"request": [self._check_request]},
        )
        self._global = asyncio.Semaphore(settings.fetch_concurrency)
        self._per_host: defaultdict[str, asyncio.Semaphore] = defaultdict(
            lambda: asyncio.Semaphore(settings.fetch_concurrency_per_host)
        )

    async def __aenter__(self) -> Fetcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._client.aclose()

    async def _check_request(self, request: httpx.Request) -> None:
        """Called by httpx for the first request and for every redirect it follows."""
        check_url(str(request.url), max_url_chars(self.settings), allow_private(self.settings))

    async def get(self, url: str, headers: dict[str, str] | None = None) -> Response:
        """GET ``url`` within the limits; raise FetchError with a readable reason on failure."""
        return await self._request("GET", url, headers or {}, None)

    async def post(self, url: str, data: bytes, headers: dict[str, str] | None = None) -> Response:
        """POST ``data`` to ``url`` with the same limits, size cap and errors as ``get``.

        Needed for endpoints that only answer a form post (Google News batchexecute).
        """
        return await self._request("POST", url, headers or {}, data)

    async def _request(
        self, method: str, url: str, headers: dict[str, str], content: bytes | None
    ) -> Response:
        """Send with retries: a 429 or 5xx answer is retried ``fetch_retries`` times after
        an exponential backoff, or after the answer's Retry-After when that is longer (up to
        ``max_retry_wait_seconds``; a longer ask is not waited for)."""
        settings = self.settings
        for attempt in range(settings.fetch_retries + 1):
            response = await self._attempt(method, url, headers, content)
            if not is_retryable(response.status) or attempt == settings.fetch_retries:
                return response
            wait = max(
                settings.retry_backoff_seconds * 2**attempt,
                retry_after_seconds(response.headers.get("retry-after")) or 0.0,
            )
            if wait > settings.max_retry_wait_seconds:
                return response
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _attempt(
        self, method: str, url: str, headers: dict[str, str], content: bytes | None
    ) -> Response:
        async with self._per_host[host_of(url)], self._global:
            try:
                return await asyncio.wait_for(
                    self._send(method, url, headers, content),
                    self.settings.fetch_timeout_seconds,
                )
            except TimeoutError:
                raise FetchError(
                    f"timed out after {self.settings.fetch_timeout_seconds:g} s"
                ) from None
            except httpx.TooManyRedirects:
                raise FetchError(f"more than {self.settings.max_redirects} redirects") from None
            except httpx.InvalidURL as exc:
                raise FetchError(f"invalid URL: {exc}") from None
            except httpx.TimeoutException:
                raise FetchError(
                    f"timed out after {self.settings.fetch_timeout_seconds:g} s"
                ) from None
            except httpx.HTTPError as exc:
                raise FetchError(f"{type(exc).__name__}: {exc}") from None

    async def _send(
        self, method: str, url: str, headers: dict[str, str], content: bytes | None
    ) -> Response:
        limit = self.settings.max_response_bytes
        async with self._client.stream(method, url, headers=headers, content=content) as response:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                raise ResponseTooLarge(
                    f"response of {int(declared)} bytes is over the limit of {limit} bytes"
                )
            decoder = BoundedDecoder(
                response.headers.get("content-encoding", ""),
                int(self.settings.max_decompressed_bytes),
            )
            size = 0
            async for chunk in response.aiter_raw():
                size += len(chunk)
                if size > limit:
                    raise ResponseTooLarge(f"response passed the limit of {limit} bytes")
                decoder.feed(chunk)
            return Response(
                url=str(response.url),
                status=response.status_code,
                headers={k.lower(): v for k, v in response.headers.items()},
                body=decoder.finish(),
            )


class BoundedDecoder:
    """Decode a body's Content-Encoding (gzip, deflate or none) while counting the decoded
    bytes: past ``limit`` the body is abandoned with ResponseTooLarge, having inflated at
    most ``limit + 1`` bytes (zlib's ``max_length``), whatever the compression ratio. A
    compressed stream that ends early is an error, not a silently shortened body (a
    truncated page would be stored and reused as if complete)."""

    def __init__(self, content_encoding: str, limit: int) -> None:
        codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        for coding in codings:
            if coding not in ("gzip", "x-gzip", "deflate"):
                raise FetchError(f"unsupported Content-Encoding {coding!r}")
        if len(codings) > 1:  # we asked for one; stacked layers multiply a bomb's ratio
            raise FetchError(f"refused {len(codings)} layers of Content-Encoding")
        self._inflater = _Inflater(codings[0]) if codings else None
        self._limit = limit
        self._chunks: list[bytes] = []
        self._size = 0

    def feed(self, data: bytes) -> None:
        """Decode one raw chunk."""
        if self._inflater is not None:
            data = self._inflater.feed(data, self._limit - self._size)
        self._size += len(data)
        if self._size > self._limit:
            raise ResponseTooLarge(f"decompressed body passed the limit of {self._limit} bytes")
        if data:
            self._chunks.append(data)

    def finish(self) -> bytes:
        """The decoded body; FetchError when a compressed stream was cut short."""
        if self._inflater is not None:
            self._inflater.finish()
        return b"".join(self._chunks)


class _Inflater:
    """One gzip or deflate layer, inflating at most ``room + 1`` bytes per call."""

    def __init__(self, coding: str) -> None:
        self.coding = "gzip" if coding == "x-gzip" else coding
        self._raw_deflate = False
        self._started = False
        self._new()

    def _new(self) -> None:
        if self.coding == "gzip":
            self._inflate = zlib.decompressobj(zlib.MAX_WBITS | 16)
        else:  # "deflate" is meant to be zlib-wrapped, but servers send raw deflate too
            self._inflate = zlib.decompressobj(-zlib.MAX_WBITS if self._raw_deflate else 0)

    def feed(self, data: bytes, room: int) -> bytes:
        out: list[bytes] = []
        total = 0
        while data:
            try:
                piece = self._inflate.decompress(data, max(room - total, 0) + 1)
            except zlib.error as exc:
                if self.coding == "deflate" and not self._started and not self._raw_deflate:
                    self._raw_deflate = True
                    self._new()
                    continue
                raise FetchError(f"bad {self.coding} body: {exc}") from None
            self._started = True
            out.append(piece)
            total += len(piece)
            if total > room:
                break  # the caller raises ResponseTooLarge
            if self._inflate.unconsumed_tail:
                data = self._inflate.unconsumed_tail
            elif self._inflate.eof and self._inflate.unused_data:
                data = self._inflate.unused_data  # a second gzip member follows
                self._new()
            else:
                data = b""
        return b"".join(out)

    def finish(self) -> None:
        if self._started and not self._inflate.eof:
            raise FetchError(f"{self.coding} body ended before its end marker (truncated)")


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """An httpcore network backend that connects only to public addresses.

    The host is resolved here, every address it resolves to is checked (one non-public
    answer refuses the whole name: a mixed answer is how rebinding attacks start), and the
    connection is opened to a checked address, never to the name again."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend, role: str = "") -> None:
        self._inner = inner
        self._role = role

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await _resolve(host, port, timeout)
        for address in addresses:
            check_address(address, host, self._role)
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None  # _resolve never returns an empty list
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise refusal(path)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


async def _resolve(host: str, port: int, timeout: float | None) -> list[str]:
    """Every address ``host`` resolves to, in the resolver's order, without duplicates."""
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP),
            timeout,
        )
    except TimeoutError:
        raise httpcore.ConnectTimeout(f"resolving {host} timed out") from None
    except (OSError, UnicodeError) as exc:
        raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise httpcore.ConnectError(f"cannot resolve {host}: no addresses")
    return addresses


def guarded_transport(settings: Settings, limits: httpx.Limits) -> httpx.AsyncHTTPTransport:
    """An httpx transport (through ``settings.proxy`` when set) whose every connection,
    to a server or to the proxy, goes through ``GuardedBackend`` unless private addresses
    are allowed."""
    transport = httpx.AsyncHTTPTransport(limits=limits, proxy=settings.proxy or None)
    if allow_private(settings):
        return transport
    # httpx has no public hook for the network backend; the pool's is set at construction.
    # tests/sources/test_ssrf.py fails loudly if a new httpcore moves it.
    pool = transport._pool
    if not hasattr(pool, "_network_backend"):
        raise RuntimeError("httpcore changed: cannot install the SSRF guard")
    pool._network_backend = GuardedBackend(pool._network_backend, "proxy" if settings.proxy else "")
    return transport


def is_retryable(status: int) -> bool:
    """429 Too Many Requests and 5xx server errors are worth another try."""
    return status == 429 or 500 <= status <= 599


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds asked by a Retry-After header (delta-seconds or an HTTP date), else None."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())

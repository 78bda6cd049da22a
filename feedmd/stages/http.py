"""HTTP for feeds and pages: one httpx client, polite limits, bounded bodies.

Every request goes through ``Fetcher.get`` (or ``Fetcher.post``): a global concurrency limit
and a per-host one, a connect timeout and a total deadline, a redirect limit, a clear
User-Agent, and a body read in a stream that is abandoned as soon as it passes
``max_response_bytes``, so a huge or never-ending response costs at most that much memory
and that much time.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

from feedmd.config import Settings
from feedmd.errors import FetchError, ResponseTooLarge
from feedmd.stages.urls import host_of


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
        self._client = httpx.AsyncClient(
            timeout=timeout,
            limits=limits,
            follow_redirects=True,
            max_redirects=settings.max_redirects,
            headers={"User-Agent": settings.user_agent},
            proxy=settings.proxy or None,
            trust_env=not settings.proxy,
        )
        self._global = asyncio.Semaphore(settings.fetch_concurrency)
        self._per_host: defaultdict[str, asyncio.Semaphore] = defaultdict(
            lambda: asyncio.Semaphore(settings.fetch_concurrency_per_host)
        )

    async def __aenter__(self) -> Fetcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._client.aclose()

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
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    raise ResponseTooLarge(f"response passed the limit of {limit} bytes")
                chunks.append(chunk)
            return Response(
                url=str(response.url),
                status=response.status_code,
                headers={k.lower(): v for k, v in response.headers.items()},
                body=b"".join(chunks),
            )


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

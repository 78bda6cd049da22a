"""The webhook client's connection layer: one deadline for a whole POST.

httpx's timeouts apply per connect, read and write, so a receiver that trickles a byte every
second holds a POST for as long as it likes (a 2 s setting, 50 s observed). Every network
operation of the client made here is cut to the time left before ``deadline``'s end.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx


class _Deadline(threading.local):
    """The monotonic time by which the current thread's POST must be over (None: none)."""

    at: float | None = None

    def clamp(self, timeout: float | None, error: type[Exception]) -> float | None:
        """``timeout`` cut to the time left; ``error`` when none is left."""
        if self.at is None:
            return timeout
        left = self.at - time.monotonic()
        if left <= 0:
            raise error("webhook POST deadline passed")
        return left if timeout is None else min(timeout, left)


DEADLINE = _Deadline()


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    DEADLINE.at = None if seconds is None else time.monotonic() + seconds
    try:
        yield
    finally:
        DEADLINE.at = None


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read and write waits at most until the POST's deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, DEADLINE.clamp(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, DEADLINE.clamp(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        wrapped = self._inner.start_tls(
            ssl_context, server_hostname, DEADLINE.clamp(timeout, httpcore.ConnectTimeout)
        )
        return _DeadlineStream(wrapped)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's network backend with every connect, read and write cut to the deadline."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        stream = self._inner.connect_tcp(
            host,
            port,
            DEADLINE.clamp(timeout, httpcore.ConnectTimeout),
            local_address,
            socket_options,
        )
        return _DeadlineStream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("webhooks are sent over TCP only")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def deadline_client(timeout_seconds: float, user_agent: str) -> httpx.Client:
    """An httpx client whose connection layer holds each request inside ``deadline``:
    redirects not followed, ``HTTP(S)_PROXY`` ignored."""
    transport = httpx.HTTPTransport()
    # httpx has no public hook for the network backend (stages/http.py does the same for
    # the SSRF guard); tests/delivery/test_webhooks.py fails loudly if a new httpcore moves it.
    pool = transport._pool
    if not hasattr(pool, "_network_backend"):
        raise RuntimeError("httpcore changed: cannot install the webhook deadline")
    pool._network_backend = _DeadlineBackend(pool._network_backend)
    return httpx.Client(
        transport=transport,
        timeout=timeout_seconds,
        follow_redirects=False,
        headers={"User-Agent": user_agent},
        trust_env=False,
    )

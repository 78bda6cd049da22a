"""What the tests' loopback servers share: a loopback HTTP server (a free port of
127.0.0.1, a daemon thread, quiet about clients that drop their connection), a quiet
request handler that reads a POST, Standard Webhooks verification, a webhook
``Receiver`` that fails on plan, and ``serving``, an ASGI app on uvicorn."""

from __future__ import annotations

import base64
import hashlib
import hmac
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import uvicorn

from feedmd.delivery import webhooks


class QuietServer(ThreadingHTTPServer):
    """A server that does not print a traceback when a client drops the connection (the
    tests do that on purpose); click's CliRunner would mix it into a command's output."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        return


class LoopbackServer:
    """``handler`` served on 127.0.0.1 (a free port) until ``stop``."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._server = QuietServer(("127.0.0.1", 0), handler)
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    @property
    def base(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()


class QuietHandler(BaseHTTPRequestHandler):
    """A keep-alive handler that logs nothing; ``read_post`` gives a POST's body and its
    headers (lower-cased names)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def read_post(self) -> tuple[bytes, dict[str, str]]:
        """The request body and headers of a POST."""
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        return body, {k.lower(): v for k, v in self.headers.items()}


def verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """Standard Webhooks verification in a few lines of the standard library (the README's
    receiver example)."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    fresh = abs(time.time() - int(headers["webhook-timestamp"])) < 300
    return fresh and any(
        hmac.compare_digest(expected, sig.removeprefix("v1,"))
        for sig in headers["webhook-signature"].split()
        if sig.startswith("v1,")
    )


SECRET_ENV = "FEEDMD_TEST_WEBHOOK_SECRET"
FAST = webhooks.WebhookPolicy(timeout_seconds=0.5)


class Receiver:
    """A webhook receiver answering from a plan (an int status, 'hang', 'close',
    'redirect'), then ``default``; it records every request and whether it verified."""

    def __init__(self, secret: str, plan: list[Any] | None = None, default: Any = 200) -> None:
        self.secret = secret
        self.plan = list(plan or [])
        self.default = default
        self.seen: list[dict[str, Any]] = []
        self.release = threading.Event()
        self._server = LoopbackServer(self._handler())

    @property
    def url(self) -> str:
        return f"{self._server.base}/hook?token=abc"

    def stop(self) -> None:
        self.release.set()
        self._server.stop()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body, headers = self.read_post()
                receiver.seen.append(
                    {
                        "path": self.path,
                        "id": headers.get("webhook-id"),
                        "headers": headers,
                        "body": body,
                        "valid": verify(receiver.secret, headers, body),
                    }
                )
                action = receiver.plan.pop(0) if receiver.plan else receiver.default
                if action == "hang":
                    receiver.release.wait(5)
                    return
                if action == "close":
                    self.close_connection = True
                    return
                if action == "redirect":
                    self.send_response(307)
                    self.send_header("Location", "/elsewhere")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                payload = b"ok" if action < 300 else b"receiver says no"
                self.send_response(int(action))
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler


@contextmanager
def serving(app: Any) -> Iterator[httpx.Client]:
    """Run ``app`` on uvicorn on a free 127.0.0.1 port; yield a client for it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        with httpx.Client(base_url=base, timeout=5) as http:
            yield http
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()

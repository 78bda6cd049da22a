"""What the tests' webhook receivers share: a loopback HTTP server (a free port of
127.0.0.1, a daemon thread, quiet about clients that drop their connection), a quiet
request handler that reads a POST, and Standard Webhooks verification."""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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

"""One loopback HTTP server for the tests' webhook receivers: started on a free port of
127.0.0.1 in a daemon thread, quiet about clients that drop their connection."""

from __future__ import annotations

import threading
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

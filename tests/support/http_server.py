"""A test's own HTTP server on 127.0.0.1: each request goes to `respond`, whose answer is written
back, or, when it answers None, the connection is closed without a word (an answer lost). The
client tier scripts its answers with it (tests/client/conftest.py); the handler tier bridges the
client to the real API handler (tests/handler/test_resize_client.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # with its query, as sent
    headers: dict[str, str]  # names as sent
    body: bytes

    def header(self, name: str) -> str | None:
        """A header's value, its name matched as HTTP does, without regard to case."""
        return next((value for sent, value in self.headers.items() if sent.lower() == name.lower()), None)


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]  # Content-Length is added
    body: bytes


class LocalServer:
    def __init__(self, respond: Callable[[Request], Response | None]) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def answer(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                response = respond(Request(self.command, self.path, dict(self.headers.items()), body))
                if response is None:
                    self.close_connection = True
                    return
                self.send_response(response.status)
                for name, value in response.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(response.body)))
                self.end_headers()
                self.wfile.write(response.body)

            do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = answer

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/prod/"
        # Polled often, so that a test's server stops at once.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.01,), daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

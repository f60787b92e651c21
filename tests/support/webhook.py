"""A webhook on 127.0.0.1 for the calls EventBridge API destinations make (the local runtime makes
them for real): keeps each request's headers, names lower-cased, and its JSON body, in order."""

from __future__ import annotations

import http.server
import json
import threading
from types import TracebackType
from typing import Any

Received = tuple[dict[str, str], dict[str, Any]]


class Webhook:
    def __init__(self, path: str = "/usage") -> None:
        received: list[Received] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                received.append(({name.lower(): value for name, value in self.headers.items()}, body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                return

        self.received = received
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}{path}"

    def __enter__(self) -> Webhook:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()

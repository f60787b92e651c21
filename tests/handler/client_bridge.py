"""A local HTTP bridge that serves the real API handler to the Python client: each signed request
the client sends on 127.0.0.1 is handed to the handler as API Gateway's proxy event (the harness's
in-process API, tests/support/api_events.py), on the handler tier's table. The `bridge` and
`client` fixtures (tests/handler/conftest.py) give a test one of each."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from tests.handler.conftest import Kind
from tests.support.http_server import LocalServer, Request, Response

# The request headers the API reads; the signature's are API Gateway's business, not the handler's.
FORWARDED = ("content-type", "idempotency-key", "if-match")


@dataclass
class Bridge:
    """Serves the handler over HTTP. `before`: for each request of a method, in turn, what runs
    before it is handed on (another caller's write, say; None: nothing). `lose`: methods whose next
    answer is lost after the handler ran (the connection closed without a word)."""

    kind: Kind
    before: dict[str, list[Callable[[], None] | None]] = field(default_factory=dict)
    lose: set[str] = field(default_factory=set)
    seen: list[tuple[str, str | None]] = field(default_factory=list)  # each request's method and If-Match

    def __post_init__(self) -> None:
        self._http = LocalServer(self._answer)
        self.url = self._http.url

    def _answer(self, request: Request) -> Response | None:
        headers = {name: value for name, value in request.headers.items() if name.lower() in FORWARDED}
        self.seen.append((request.method, request.header("If-Match")))
        queued = self.before.get(request.method) or [None]
        hook = queued.pop(0)
        if hook is not None:
            hook()
        url = urlsplit(request.path)
        path = url.path.removeprefix("/prod") + (f"?{url.query}" if url.query else "")
        response = self.kind.harness.api.request(request.method, path, request.body.decode() or None, headers)
        if request.method in self.lose:
            self.lose.discard(request.method)
            return None
        answered = {
            name: value
            for name, value in response.headers.items()
            if name.lower() not in ("content-length", "connection")
        }
        return Response(response.status, answered, response.text.encode())

    def close(self) -> None:
        self._http.close()

"""The client tier: the Python client (clients/python) against a scripted HTTP server on 127.0.0.1
that answers what each test scripts and records what it was sent. The client's tests against the
whole system are in tests/integration/test_python_client.py, where the running system is."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from hybrid_counter_client import LimitsClient, RetryPolicy

REGION = "eu-west-3"


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any = None  # JSON; None: no body
    headers: dict[str, str] = field(default_factory=dict)


# Read the request, then close the connection without a word: the answer is lost.
DROP = Reply(0)


def envelope(
    status: int, code: str, message: str = "refused", request_id: str | None = "req-1", **headers: str
) -> Reply:
    error: dict[str, Any] = {"code": code, "message": message}
    if request_id is not None:
        error["requestId"] = request_id
    return Reply(status, {"error": error}, {name.replace("_", "-"): value for name, value in headers.items()})


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # names in lower case
    body: bytes


class ScriptedServer:
    """Answers each request with the next reply of its script; records every request."""

    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.received: list[Received] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def answer(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                url = urlsplit(self.path)
                with server._lock:
                    server.received.append(
                        Received(
                            self.command,
                            url.path,
                            parse_qs(url.query),
                            {name.lower(): value for name, value in self.headers.items()},
                            body,
                        )
                    )
                    reply = server.script.pop(0) if server.script else Reply(599, {"unscripted": True})
                if reply is DROP:
                    self.close_connection = True
                    return
                raw = b"" if reply.body is None else json.dumps(reply.body).encode()
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if raw:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = answer

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/prod/"
        # Polled often, so that a test's server stops at once.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.01,), daemon=True)
        self._thread.start()

    def answers(self, *replies: Reply) -> None:
        self.script.extend(replies)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Waits:
    """The client's clock and sleep: sleeping moves the clock on, and nothing really waits."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    async def async_sleep(self, seconds: float) -> None:
        self.sleep(seconds)


def static_session(access_key: str = "AKIDEXAMPLE", token: str | None = "session-token") -> Any:
    return boto3.Session(
        aws_access_key_id=access_key, aws_secret_access_key="secret", aws_session_token=token, region_name=REGION
    )


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    scripted = ScriptedServer()
    yield scripted
    scripted.close()


@pytest.fixture
def waits() -> Waits:
    return Waits()


def client_of(server: ScriptedServer, waits: Waits, retry: RetryPolicy | None = None, **options: Any) -> LimitsClient:
    """A client of the scripted server whose jitter is half its range, on the test's clock."""
    return LimitsClient(
        server.url,
        options.pop("session", None) or static_session(),
        retry=retry,
        clock=waits.clock,
        sleep=waits.sleep,
        random=lambda: 0.5,
        **options,
    )


ACCOUNT = {
    "accountId": "acme",
    "limit": 3,
    "bestEffort": 1,
    "eventual": 0,
    "used": 1,
    "available": 2,
    "rateLimit": {"requestsPerSecond": 1000, "burstSeconds": 2},
}
RESOURCE = {
    "accountId": "acme",
    "resourceId": "r-1",
    "name": "vm-1",
    "attributes": {"size": 2},
    "createdAt": "2026-11-25T13:37:11.250Z",
}


def account_reply(etag: str = '"1"') -> Reply:
    return Reply(200, ACCOUNT, {"ETag": etag})

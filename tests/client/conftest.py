"""The client tier: the Python client (clients/python) against a scripted HTTP server on 127.0.0.1
that answers what each test scripts and records what it was sent. The client's tests against the
whole system are in tests/integration/test_python_client.py, where the running system is."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from hybrid_counter_client import LimitsClient, RetryPolicy

from tests.support.http_server import LocalServer, Request, Response

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
        self._http = LocalServer(self._respond)
        self.url = self._http.url

    def _respond(self, request: Request) -> Response | None:
        url = urlsplit(request.path)
        headers = {name.lower(): value for name, value in request.headers.items()}
        with self._lock:
            self.received.append(Received(request.method, url.path, parse_qs(url.query), headers, request.body))
            reply = self.script.pop(0) if self.script else Reply(599, {"unscripted": True})
        if reply is DROP:
            return None
        raw = b"" if reply.body is None else json.dumps(reply.body).encode()
        json_type = {"Content-Type": "application/json"} if raw else {}
        return Response(reply.status, {**reply.headers, **json_type}, raw)

    def answers(self, *replies: Reply) -> None:
        self.script.extend(replies)

    def close(self) -> None:
        self._http.close()


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

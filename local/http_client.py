"""A small HTTP client for the API (tests, benchmarks, chaos): the standard library, and botocore's
SigV4 signer."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from local.sigv4 import sign

T = TypeVar("T")


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: Any


class HttpApi:
    """The API over HTTP, every request signed with SigV4 by `credentials` (the API's methods are
    authorized with IAM: docs/security.md); unsigned when they are None."""

    def __init__(self, base_url: str, timeout: float = 30, credentials: Any = None, region: str = "us-east-1") -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.credentials = credentials  # botocore credentials: access_key, secret_key, token
        self.region = region

    def signed_as(self, credentials: Any) -> HttpApi:
        """The same API, called by someone else."""
        return HttpApi(self.base_url, self.timeout, credentials, self.region)

    def request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Reply:
        data = None if body is None else json.dumps(body).encode()
        url = self.base_url + path
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        if self.credentials is not None:
            all_headers = sign(self.credentials, self.region, method, url, data, all_headers)
        request = urllib.request.Request(url, data=data, method=method, headers=all_headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return self._reply(response.status, dict(response.headers), response.read())
        except urllib.error.HTTPError as error:
            return self._reply(error.code, dict(error.headers), error.read())

    @staticmethod
    def _reply(status: int, headers: dict[str, str], raw: bytes) -> Reply:
        return Reply(status, headers, json.loads(raw) if raw else None)

    def new_account(self, prefix: str = "it", limit: int = 10) -> str:
        """A fresh account per test, so tests never see each other's resources."""
        account_id = f"{prefix}-{uuid.uuid4().hex[:12]}"
        assert self.request("PUT", f"/accounts/{account_id}", {"limit": limit}).status == 200
        return account_id

    def account(self, account_id: str) -> dict[str, Any]:
        reply = self.request("GET", f"/accounts/{account_id}")
        assert reply.status == 200, reply.body
        return reply.body  # type: ignore[no-any-return]

    def create(self, account_id: str, name: str = "r", key: str | None = None) -> Reply:
        headers = {"Idempotency-Key": key} if key else None
        return self.request("POST", f"/accounts/{account_id}/resources", {"name": name}, headers)

    def delete(self, account_id: str, resource_id: str) -> Reply:
        return self.request("DELETE", f"/accounts/{account_id}/resources/{resource_id}")


def poll(read: Callable[[], T], until: Callable[[T], bool], timeout: float = 60, interval: float = 0.1) -> T:
    """Read until the condition holds; fail with the last value seen after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if until(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s; last value: {value!r}")
        time.sleep(interval)

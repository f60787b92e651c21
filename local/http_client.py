"""A small HTTP client of an API behind the local API Gateway (or a deployed one): the standard
library, and botocore's SigV4 signer. The local tools call this product's API with its own client
(hybrid_counter_client, made by local/product.py `api_client`); this one is the raw path the
integration tier keeps for what that client does not send or show (tests/support/raw_api.py)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Self, TypeVar

from local.sigv4 import sign

T = TypeVar("T")


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: Any


class HttpApi:
    """An API over HTTP, every request signed with SigV4 by `credentials` (for methods authorized
    with AWS_IAM); unsigned when they are None."""

    def __init__(self, base_url: str, timeout: float = 30, credentials: Any = None, region: str = "us-east-1") -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.credentials = credentials  # botocore credentials: access_key, secret_key, token
        self.region = region

    def signed_as(self, credentials: Any) -> Self:
        """The same API, called by someone else."""
        return type(self)(self.base_url, self.timeout, credentials, self.region)

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

"""How many requests of each kind the embedded emulator has served: what one iteration of a load
really costs the emulator (the load benchmark prints it per iteration), stream polls and queue
polls included, instead of what a design says it should.

    GET /_local/request-counts  ->  {"DynamoDB.UpdateItem": 1234, "SQS.ReceiveMessage": 56, ...}
    GET /_local/request-cpu     ->  {"DynamoDB.UpdateItem": 4.2, ...}  (CPU seconds spent answering)

The CPU time is the answering thread's own (`time.thread_time`), from the request passing this layer
to its answer's last byte (the emulator's inner layers and moto): what each kind of request costs
the emulator, waits for the one-at-a-time lock and the HTTP server's parsing left out. A request
is counted once answered.

A request is named by its JSON-protocol target (`X-Amz-Target`, the service's prefix shortened) or,
for a query-protocol call, its `Action`; anything else by its method and path's first segment.
"""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from local.dynamodb_wire import get_json, json_answer

COUNTS_PATH = "/_local/request-counts"
CPU_PATH = "/_local/request-cpu"
SERVICES = {"DynamoDB_20120810": "DynamoDB", "DynamoDBStreams_20120810": "DynamoDBStreams", "AmazonSQS": "SQS"}


def request_name(environ: dict[str, Any]) -> str:
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    if target:
        service, _, operation = target.partition(".")
        return f"{SERVICES.get(service, service)}.{operation}"
    action = urllib.parse.parse_qs(environ.get("QUERY_STRING", "")).get("Action")
    if action:
        return f"Query.{action[0]}"
    first = environ.get("PATH_INFO", "/").strip("/").split("/")[0]
    return f"{environ.get('REQUEST_METHOD', 'GET')} /{first}"


class RequestCounts:
    """WSGI layer counting every request by name, and its CPU time; answers COUNTS_PATH and
    CPU_PATH with each so far."""

    def __init__(self, application: Callable[..., Iterable[bytes]]) -> None:
        self._application = application
        self._counts: Counter[str] = Counter()
        self._cpu_seconds: defaultdict[str, float] = defaultdict(float)
        self._lock = threading.Lock()
        self._endpoints: dict[str, Mapping[str, float]] = {COUNTS_PATH: self._counts, CPU_PATH: self._cpu_seconds}

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        asked = self._endpoints.get(environ.get("PATH_INFO", ""))
        if asked is not None:
            with self._lock:
                snapshot = dict(asked)
            return json_answer(start_response, snapshot)
        name = request_name(environ)
        started = time.thread_time()
        answer = list(self._application(environ, start_response))  # moto answers whole bodies anyway
        spent = time.thread_time() - started
        with self._lock:
            self._counts[name] += 1
            self._cpu_seconds[name] += spent
        return answer


def read_request_counts(emulator_url: str) -> Counter[str]:
    """The emulator's requests so far, by name (GET COUNTS_PATH)."""
    return Counter(get_json(emulator_url, COUNTS_PATH))


def read_request_cpu(emulator_url: str) -> Counter[str]:
    """The emulator's CPU seconds so far answering each kind of request (GET CPU_PATH)."""
    return Counter(get_json(emulator_url, CPU_PATH))

"""A retried PUT never undoes a later PUT (README: "a PUT received earlier never overwrites one
received later"; docs/admission.md, "Limit changes").

Every attempt of one PUT call sends the same `Idempotency-Key`, and the API takes a retry for the
request its first attempt was: received when that attempt was received. So a retry after another
admin's PUT landed is overtaken by it: it writes nothing, announces nothing, and answers the quota
as the later PUT left it. A PUT without a key is answered as it always was.

The first test runs the Python client itself against the real handler, over HTTP, with the first
attempt's answer lost after it landed; the others send the proxy events a retry would.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

import boto3
import pytest
from hybrid_counter_client import LimitsClient, RetryPolicy

from benchmarks.capacity_meter import CapacityMeter
from functions.adapters import keys
from functions.adapters.api_store import DynamoApiStore
from functions.adapters.attributes import from_attributes
from functions.adapters.dynamo_table import DynamoTable
from functions.core import accounts
from functions.core.leases import DEFAULT_TOMBSTONE_RETENTION
from functions.core.model import Quota
from tests.conftest import Backend
from tests.handler.conftest import Harness, Kind
from tests.handler.test_limit_changes import limit_changes
from tests.support.faults import Faults
from tests.support.http_server import LocalServer, Request, Response

# The admin's "first" PUT, then another admin's, a second later.
FIRST, LATER = 5, 9


class HandlerOverHttp:
    """The test's API handler served on 127.0.0.1, as API Gateway passes it requests (the caller
    is the admin; nothing checks the signature). `lose_answer(method, path)` runs after the
    handler answered; True drops the connection without the answer."""

    def __init__(self, harness: Harness, lose_answer: Callable[[str, str], bool]) -> None:
        self._api = harness.api
        self._lose_answer = lose_answer
        self.answered: list[tuple[str, int]] = []
        self._http = LocalServer(self._forward)
        self.url = self._http.url

    def _forward(self, request: Request) -> Response | None:
        path = request.path.removeprefix("/prod")
        wanted = ("if-match", "idempotency-key")
        headers = {name: value for name, value in request.headers.items() if name.lower() in wanted}
        answer = self._api.request(request.method, path, request.body.decode() or None, headers)
        self.answered.append((request.method, answer.status))
        if self._lose_answer(request.method, path):
            return None
        answered = {name: value for name, value in answer.headers.items() if name.lower() != "content-length"}
        return Response(answer.status, answered, answer.text.encode())

    def __enter__(self) -> HandlerOverHttp:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._http.close()


def admin_client(url: str) -> LimitsClient:
    session = boto3.Session(aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret", region_name="us-east-1")
    return LimitsClient(url, session, timeout=5, retry=RetryPolicy(max_attempts=3), sleep=lambda _: None)


def test_a_client_put_whose_answer_was_lost_does_not_undo_a_later_put(harness: Harness, kind: Kind) -> None:
    """The client's PUT lands and its answer is lost; another admin's PUT lands; the client
    retries. (Before: the retry was a new request, received last, and set the limit back to 5,
    with a third Limit Changed event.)"""
    kind.put(2)
    harness.clock.advance(timedelta(seconds=1))
    lost: list[str] = []

    def lose_the_first_put_after_another_lands(method: str, path: str) -> bool:
        if method != "PUT" or lost:
            return False
        lost.append(path)
        harness.clock.advance(timedelta(seconds=1))
        assert kind.put(LATER).status == 200  # another admin, meanwhile
        harness.clock.advance(timedelta(seconds=1))
        return True

    with HandlerOverHttp(harness, lose_the_first_put_after_another_lands) as api, admin_client(api.url) as client:
        if kind.resource_type is None:
            answered = client.put_account(kind.ACCOUNT, limit=FIRST).limit
        else:
            answered = client.put_type_limit(kind.ACCOUNT, kind.resource_type, limit=FIRST).limit

    assert lost
    assert api.answered == [("PUT", 200), ("PUT", 200)]
    assert answered == LATER  # overtaken: the quota as the later PUT left it
    assert kind.read()["limit"] == LATER
    assert [(e["oldLimit"], e["newLimit"]) for e in limit_changes(harness, kind.quota)] == [(2, FIRST), (FIRST, LATER)]


def put(kind: Kind, limit: int, key: str | None = "put-1", **headers: str) -> Any:
    if key is not None:
        headers["Idempotency-Key"] = key
    return kind.harness.api.request("PUT", kind.url, {"limit": limit}, headers)


def later(kind: Kind) -> None:
    kind.harness.clock.advance(timedelta(seconds=1))


@pytest.mark.parametrize("first", [FIRST, 2], ids=["a change", "the same limit again"])
def test_a_keyed_retry_after_a_later_put_changes_nothing(harness: Harness, kind: Kind, first: int) -> None:
    kind.put(2)
    assert put(kind, first).json()["limit"] == first
    later(kind)
    assert kind.put(LATER).status == 200
    etag = kind.harness.api.request("GET", kind.url).headers["ETag"]
    later(kind)
    retry = put(kind, first)
    assert (retry.status, retry.json()["limit"], retry.headers["ETag"]) == (200, LATER, etag)
    assert kind.read()["limit"] == LATER
    assert [e["newLimit"] for e in limit_changes(harness, kind.quota)] == ([first] if first != 2 else []) + [LATER]


def test_a_keyed_retry_with_nothing_in_between_is_a_replay(harness: Harness, kind: Kind) -> None:
    """Answered as the first attempt was, with no second write: the ETag does not move, and an
    If-Match that held for the first attempt is not refused on its retry."""
    kind.put(2)
    first = put(kind, FIRST, **{"If-Match": '"1"'})
    later(kind)
    retry = put(kind, FIRST, **{"If-Match": '"1"'})
    assert (retry.status, retry.headers["ETag"], retry.text) == (200, '"2"', first.text)
    assert len(limit_changes(harness, kind.quota)) == 1


def test_a_keyed_put_whose_function_died_after_its_write_is_not_applied_again(
    harness: Harness, kind: Kind, faults: Faults
) -> None:
    """The limit's write (with its event) lands and the function dies before it answers (API
    Gateway's 502); another admin's PUT lands; the client retries with the same key."""
    kind.put(2)
    later(kind)
    faults.crash_after("TransactWriteItems", lambda params: ":token" in json.dumps(params))
    with pytest.raises(Faults.SimulatedCrash):
        put(kind, FIRST)
    later(kind)
    assert kind.put(LATER).status == 200
    later(kind)
    retry = put(kind, FIRST)
    assert (retry.status, retry.json()["limit"]) == (200, LATER)
    assert kind.read()["limit"] == LATER
    assert [(e["oldLimit"], e["newLimit"]) for e in limit_changes(harness, kind.quota)] == [(2, FIRST), (FIRST, LATER)]


def test_a_keyed_put_whose_first_attempt_wrote_no_limit_is_applied_by_its_retry(
    harness: Harness, kind: Kind, faults: Faults
) -> None:
    """The first attempt dies before its limit's write: its retry is the request, and applies."""
    kind.put(2)
    died: list[str] = []

    def die_once(params: dict[str, Any]) -> None:
        if not died:
            died.append("before the write")
            raise Faults.SimulatedCrash("died before the limit's write")

    faults.before_call("TransactWriteItems", die_once)
    with pytest.raises(Faults.SimulatedCrash):
        put(kind, FIRST)
    later(kind)
    retry = put(kind, FIRST)
    assert (retry.status, retry.json()["limit"], retry.headers["ETag"]) == (200, FIRST, '"2"')
    assert len(limit_changes(harness, kind.quota)) == 1


def test_a_key_sent_again_with_another_body_is_refused_and_changes_nothing(harness: Harness, kind: Kind) -> None:
    kind.put(2)
    put(kind, FIRST)
    later(kind)
    answer = put(kind, FIRST + 1)
    assert (answer.status, answer.json()["error"]["code"]) == (422, "IdempotencyKeyMismatch")
    assert kind.read()["limit"] == FIRST


def test_after_the_keys_window_the_same_key_is_a_new_put(harness: Harness, kind: Kind) -> None:
    kind.put(2)
    put(kind, FIRST)
    later(kind)
    kind.put(LATER)
    harness.clock.advance(DEFAULT_TOMBSTONE_RETENTION + timedelta(seconds=1))
    assert put(kind, FIRST).json()["limit"] == FIRST


def test_a_put_without_a_key_writes_what_it_always_wrote(harness: Harness, kind: Kind) -> None:
    """An old client's PUT: no key's item, and its retry is a new request, as it always was."""
    kind.put(2)
    put(kind, FIRST, key=None)
    later(kind)
    kind.put(LATER)
    later(kind)
    assert put(kind, FIRST, key=None).json()["limit"] == FIRST
    items = harness.backend.dynamodb.scan(TableName=harness.backend.table, ConsistentRead=True)["Items"]
    assert not [item for item in map(from_attributes, items) if str(item["sk"]).startswith(keys.PUT_REQUEST_PREFIX)]


def test_a_key_costs_one_write_of_one_unit_and_its_retry_writes_nothing_else(backend: Backend) -> None:
    """docs/admission.md, "What it costs": a key adds its record (one PutItem, 1 WCU, in the
    quota's partition); a retry, replayed or overtaken, only has that PutItem refused (1 WCU)."""
    meter = CapacityMeter(backend.dynamodb, reader=boto3.client("dynamodb", endpoint_url=backend.endpoint_url))
    store = DynamoApiStore(DynamoTable(backend.dynamodb, backend.table))
    quota, window = Quota("acme"), int(DEFAULT_TOMBSTONE_RETENTION.total_seconds())

    def change(limit: int, key: str | None) -> accounts.LimitChange:
        plain = accounts.limit_change(limit, backend.clock.epoch_ms())
        return plain if key is None else replace(plain, key=accounts.PutKey(key, window))

    def cost(limit: int, key: str | None) -> tuple[dict[str, float], float]:
        with meter.operation(f"PUT {len(meter.usage)}") as usage:  # each its own
            accounts.put_account(store, quota, change(limit, key), backend.clock.timestamp)
        backend.clock.advance(timedelta(seconds=1))
        writes = {call: count for call, count in usage.calls.items() if call != "BatchGetItem"}
        return writes, usage.total_wcu

    cost(2, None)
    assert cost(2, None) == ({"UpdateItem": 1}, 1)
    assert cost(2, "same") == ({"PutItem": 1, "UpdateItem": 1}, 2)
    assert cost(5, None) == ({"TransactWriteItems": 1}, 5)  # 4, and the change's pending index entry
    assert cost(6, "change") == ({"PutItem": 1, "TransactWriteItems": 1}, 6)
    assert cost(6, "change") == ({"PutItem": 1}, 1)  # a replay
    cost(9, None)
    assert cost(6, "change") == ({"PutItem": 1}, 1)  # overtaken


@pytest.mark.parametrize("key", ["with space", "x" * 256, "caf\u00e9"], ids=["a space", "256 characters", "not ASCII"])
def test_a_put_key_outside_the_pattern_is_a_400_that_writes_nothing(harness: Harness, kind: Kind, key: str) -> None:
    kind.put(2)
    answer = put(kind, FIRST, key=key)
    assert (answer.status, answer.json()["error"]["code"]) == (400, "ValidationError")
    assert kind.read()["limit"] == 2
    items = harness.backend.dynamodb.scan(TableName=harness.backend.table, ConsistentRead=True)["Items"]
    assert not [item for item in map(from_attributes, items) if str(item["sk"]).startswith(keys.PUT_REQUEST_PREFIX)]

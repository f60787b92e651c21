"""The system end to end over HTTP: the API, the stream, the consumer and the dead-letter path."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hybrid_counter_client import Account, HybridCounterError, LimitExceeded, ResourceNotFound

from local.http_client import poll
from local.product import new_account
from tests.integration.conftest import POISON_EVERYWHERE, POISON_IN_CONSUMER, SWEEP_PERIOD_SECONDS, RunningSystem


def eventual_reaches(running_system: RunningSystem, account_id: str, expected: int, timeout: float = 60) -> Account:
    return poll(lambda: running_system.client.get_account(account_id), lambda a: a.eventual == expected, timeout)


def refused(call: Callable[[], object]) -> HybridCounterError:
    """The error a call of the client (one request: SINGLE_ATTEMPT) raised."""
    with pytest.raises(HybridCounterError) as raised:
        call()
    return raised.value


def test_create_get_list_delete(running_system: RunningSystem) -> None:
    client = running_system.client
    account_id = new_account(client)
    created = client.create_resource(account_id, "vm-1")
    assert client.get_resource(account_id, created.resource_id) == created
    assert list(client.list_resources(account_id)) == [created]
    client.delete_resource(account_id, created.resource_id)
    with pytest.raises(ResourceNotFound):
        client.get_resource(account_id, created.resource_id)
    assert list(client.list_resources(account_id)) == []


def test_eventual_converges_to_the_live_count(running_system: RunningSystem) -> None:
    client = running_system.client
    account_id = new_account(client, limit=20)
    ids = [client.create_resource(account_id, f"r{i}").resource_id for i in range(6)]
    for resource_id in ids[:2]:
        client.delete_resource(account_id, resource_id)
    account = eventual_reaches(running_system, account_id, 4)
    assert account.best_effort == 4
    assert account.used == 4


def test_the_limit_is_refused_with_409(running_system: RunningSystem) -> None:
    client = running_system.client
    account_id = new_account(client, limit=2)
    client.create_resource(account_id, "r")
    client.create_resource(account_id, "r")
    for _ in range(2):
        error = refused(lambda: client.create_resource(account_id, "r"))
        assert (type(error), error.status, error.code) == (LimitExceeded, 409, "LimitExceeded")


def test_concurrent_creates_at_the_last_slots_never_exceed_the_limit(running_system: RunningSystem) -> None:
    client = running_system.client
    account_id = new_account(client, limit=3)
    client.create_resource(account_id, "r")

    def race(index: int) -> int | None:
        try:
            client.create_resource(account_id, f"racer-{index}")
            return 201
        except HybridCounterError as error:
            return error.status

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(race, range(8)))
    assert sorted(statuses, key=str) == [201, 201] + [409] * 6
    assert len(client.list_resources_page(account_id, limit=100).items) == 3
    eventual_reaches(running_system, account_id, 3)


def test_idempotent_retries_count_once(running_system: RunningSystem) -> None:
    # Raw HTTP: a replay's 200 against the first call's 201, which the client reads alike.
    api = running_system.api
    account_id = api.new_account()
    first = api.create(account_id, "vm", key="req-1")
    again = api.create(account_id, "vm", key="req-1")
    assert (first.status, again.status) == (201, 200)
    assert again.body == first.body
    assert api.create(account_id, "other", key="req-1").status == 422
    account = eventual_reaches(running_system, account_id, 1)
    assert account.best_effort == 1


def test_bad_input_is_a_4xx(running_system: RunningSystem) -> None:
    # Raw HTTP: bodies outside the contract, which the client's typed calls cannot send.
    api = running_system.api
    account_id = api.new_account()
    assert api.request("POST", f"/accounts/{account_id}/resources", {"name": ""}).status == 400
    assert api.request("PUT", f"/accounts/{account_id}", {"limit": "many"}).status == 400
    assert api.request("GET", "/accounts/nobody-here").status == 404


def test_a_poison_record_reaches_dlq1_is_redriven_and_counted_once(
    running_system: RunningSystem, local_runtime: Any
) -> None:
    client = running_system.client
    account_id = new_account(client, prefix=POISON_IN_CONSUMER)
    sent_before = local_runtime.stream_stats.sent_to_destination
    client.create_resource(account_id, "poison")
    eventual_reaches(running_system, account_id, 1)
    # It went the long way: retries exhausted, metadata to DLQ 1, redrive re-read the stream.
    assert local_runtime.stream_stats.sent_to_destination > sent_before
    time.sleep(0)  # nothing else to wait for: the count is already final
    assert client.get_account(account_id).eventual == 1


def test_a_record_that_keeps_failing_ends_in_dlq2(running_system: RunningSystem, local_runtime: Any) -> None:
    client = running_system.client
    account_id = new_account(client, prefix=POISON_EVERYWHERE)
    client.create_resource(account_id, "doomed")
    sqs = local_runtime.client("sqs")
    dlq2 = local_runtime.outputs["Dlq2Url"]

    def waiting() -> int:
        attributes = sqs.get_queue_attributes(QueueUrl=dlq2, AttributeNames=["ApproximateNumberOfMessages"])
        return int(attributes["Attributes"]["ApproximateNumberOfMessages"])

    poll(waiting, lambda count: count >= 1, timeout=90, interval=0.5)
    assert client.get_account(account_id).eventual == 0  # never applied, and never double counted


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("/accounts/ac%20me", 400, "ValidationError"),  # the function refuses an id outside the contract
        ("/nowhere", 404, "RouteNotFound"),  # the proxy resource passes any path to the function
    ],
)
def test_unknown_routes_and_bad_ids_get_a_4xx_in_the_envelope(
    running_system: RunningSystem, path: str, status: int, code: str
) -> None:
    # Raw HTTP for these and the methods below: paths and methods the client never sends.
    answer = running_system.api.request("GET", path)
    assert (answer.status, answer.body["error"]["code"]) == (status, code)


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("POST", "/accounts/acme", "DELETE, GET, PUT"),
        ("PATCH", "/accounts/acme", "DELETE, GET, PUT"),
        ("OPTIONS", "/accounts/acme", "DELETE, GET, PUT"),
        ("PUT", "/accounts/acme/resources", "GET, POST"),
        ("DELETE", "/accounts/acme/resources", "GET, POST"),
        ("POST", "/accounts/acme/resources/r1", "DELETE, GET, PATCH"),
        ("PUT", "/accounts/acme/resources/r1", "DELETE, GET, PATCH"),
    ],
)
def test_a_method_a_path_does_not_take_is_405_with_the_methods_it_does(
    running_system: RunningSystem, method: str, path: str, allowed: str
) -> None:
    """API Gateway's proxy resource (ANY on {proxy+}) passes every method it takes to the function,
    which answers a path it has with another method 405 and `Allow` (RFC 9110, 15.5.6), and a path it
    does not have 404 (above). A method API Gateway does not take at all is its own 403 (below)."""
    answer = running_system.api.request(method, path, {"limit": 1} if method in ("PUT", "POST", "PATCH") else None)
    assert answer.status == 405, answer.body
    assert answer.headers["Allow"] == allowed
    assert answer.body["error"]["code"] == "MethodNotAllowed"
    assert answer.body["error"]["requestId"]


def test_head_is_405_too_with_no_body(running_system: RunningSystem) -> None:
    head = running_system.api.request("HEAD", "/accounts/acme/resources/r1")
    assert (head.status, head.headers["Allow"], head.body) == (405, "DELETE, GET, PATCH", None)


def test_a_method_api_gateway_does_not_take_is_refused_before_the_function(running_system: RunningSystem) -> None:
    answer = running_system.api.request("TRACE", "/accounts/acme")
    assert (answer.status, answer.body["error"]["code"]) == (403, "MissingAuthenticationToken")


def test_the_scheduled_sweeper_runs(running_system: RunningSystem, local_runtime: Any) -> None:
    # Two runs, one period apart (the first a period after the system started), each taking a moment.
    timeout = 3 * SWEEP_PERIOD_SECONDS + 15
    poll(lambda: local_runtime.schedule_stats.invocations, lambda count: count >= 2, timeout=timeout, interval=0.2)
    assert local_runtime.schedule_stats.failed_invocations == 0


def test_200_concurrent_creates_are_all_answered_and_the_limit_holds_exactly(running_system: RunningSystem) -> None:
    """Every connection gets an HTTP answer: created, refused at the limit, or (beyond the API
    function's concurrency) the 503 to retry that the stack's INTEGRATION_FAILURE gateway response
    answers for a throttled invocation. Retried with their keys, the throttled ones fill the account
    to exactly its limit."""
    client = running_system.client
    limit = 50
    account_id = new_account(client, limit=limit)
    keys = [f"burst-{index}" for index in range(200)]

    def create(key: str) -> int | None:
        try:
            client.create_resource(account_id, key, idempotency_key=key)
            return 201  # or 200, a replay: the client reads both as the resource
        except HybridCounterError as error:
            return error.status

    with ThreadPoolExecutor(max_workers=200) as pool:
        first = list(pool.map(create, keys))
    assert set(first) <= {201, 409, 503}, sorted(set(first), key=str)
    statuses = dict(zip(keys, first, strict=True))
    for key in [key for key, status in statuses.items() if status == 503]:
        for _ in range(20):  # as a careful client retries a 503, with its key
            statuses[key] = create(key)
            if statuses[key] != 503:
                break
    created = [key for key, status in statuses.items() if status == 201]
    assert len(created) == limit
    assert sorted(set(statuses.values()) - {201}, key=str) == [409]
    assert len(client.list_resources_page(account_id, limit=100).items) == limit
    eventual_reaches(running_system, account_id, limit)

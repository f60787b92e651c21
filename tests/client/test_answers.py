"""What the client sends for each operation and what it makes of each answer: typed results,
exceptions named after the envelope's code with its request id, pages followed to the last."""

from __future__ import annotations

import json

import pytest
from hybrid_counter_client import (
    Account,
    AccountNotFound,
    ClientError,
    HybridCounterError,
    InvalidPathValue,
    LimitExceeded,
    RateLimit,
    Resource,
    RetryPolicy,
    ServerError,
    TooManyRequests,
    UnexpectedResponse,
)

from tests.client.conftest import ACCOUNT, RESOURCE, Reply, ScriptedServer, Waits, account_reply, client_of, envelope


def test_each_operation_sends_its_method_path_query_headers_and_body(server: ScriptedServer, waits: Waits) -> None:
    page = {"items": [RESOURCE], "nextCursor": None}
    server.answers(account_reply('"4"'), account_reply(), Reply(201, RESOURCE), Reply(200, RESOURCE))
    server.answers(Reply(200, page), Reply(204))
    client = client_of(server, waits)

    client.put_account("acme", limit=3, rate_limit=RateLimit(50, 2), if_match='"3"')
    client.get_account("acme")
    client.create_resource("acme", "vm-1", attributes={"size": 2}, idempotency_key="k-1")
    client.get_resource("acme", "r-1")
    client.list_resources_page("acme", limit=10, cursor="abc_-1")
    client.delete_resource("acme", "r-1")

    sent = [(request.method, request.path, request.query) for request in server.received]
    assert sent == [
        ("PUT", "/prod/accounts/acme", {}),
        ("GET", "/prod/accounts/acme", {}),
        ("POST", "/prod/accounts/acme/resources", {}),
        ("GET", "/prod/accounts/acme/resources/r-1", {}),
        ("GET", "/prod/accounts/acme/resources", {"limit": ["10"], "cursor": ["abc_-1"]}),
        ("DELETE", "/prod/accounts/acme/resources/r-1", {}),
    ]
    put, _, create, *_ = server.received
    assert json.loads(put.body) == {"limit": 3, "rateLimit": {"requestsPerSecond": 50, "burstSeconds": 2}}
    assert put.headers["if-match"] == '"3"'
    assert put.headers["content-type"] == "application/json"
    assert json.loads(create.body) == {"name": "vm-1", "attributes": {"size": 2}}
    assert create.headers["idempotency-key"] == "k-1"
    assert "if-match" not in server.received[1].headers


def test_results_are_typed(server: ScriptedServer, waits: Waits) -> None:
    server.answers(account_reply('"4"'), Reply(201, RESOURCE))
    client = client_of(server, waits)
    assert client.get_account("acme") == Account(
        account_id="acme",
        limit=3,
        best_effort=1,
        eventual=0,
        used=1,
        available=2,
        rate_limit=RateLimit(requests_per_second=1000, burst_seconds=2),
        etag='"4"',
    )
    assert client.create_resource("acme", "vm-1") == Resource("acme", "r-1", "vm-1", {"size": 2}, RESOURCE["createdAt"])


def test_a_put_without_a_rate_limit_leaves_it_out(server: ScriptedServer, waits: Waits) -> None:
    server.answers(account_reply())
    client_of(server, waits).put_account("acme", limit=0)
    assert json.loads(server.received[0].body) == {"limit": 0}


def test_a_path_value_cannot_reach_another_path(server: ScriptedServer, waits: Waits) -> None:
    """Quoting it into one segment was not enough: `..` stays `..`, which the gateway removes
    (test_path_values.py has every method): such a value is refused, with nothing sent."""
    with pytest.raises(InvalidPathValue, match="resource_id"):
        client_of(server, waits).get_resource("acme", "../../globex/resources/r-1")
    assert server.received == []


def test_list_resources_follows_next_cursor_to_the_last_page(server: ScriptedServer, waits: Waits) -> None:
    resources = [{**RESOURCE, "resourceId": f"r-{index}"} for index in range(5)]
    server.answers(
        Reply(200, {"items": resources[:2], "nextCursor": "c1"}),
        Reply(200, {"items": resources[2:4], "nextCursor": "c2"}),
        Reply(200, {"items": resources[4:], "nextCursor": None}),
    )
    listed = list(client_of(server, waits).list_resources("acme", page_size=2))
    assert [resource.resource_id for resource in listed] == [f"r-{index}" for index in range(5)]
    assert [request.query for request in server.received] == [
        {"limit": ["2"]},
        {"limit": ["2"], "cursor": ["c1"]},
        {"limit": ["2"], "cursor": ["c2"]},
    ]


def test_an_error_carries_its_status_code_message_and_request_id(server: ScriptedServer, waits: Waits) -> None:
    server.answers(envelope(409, "LimitExceeded", "account acme is at its limit of 3", request_id="r-42"))
    with pytest.raises(LimitExceeded) as raised:
        client_of(server, waits).create_resource("acme", "vm-1")
    error = raised.value
    assert (error.status, error.code, error.message, error.request_id) == (
        409,
        "LimitExceeded",
        "account acme is at its limit of 3",
        "r-42",
    )
    assert isinstance(error, ClientError)
    assert str(error) == "409 LimitExceeded: account acme is at its limit of 3 (request id r-42)"


def test_the_request_id_header_stands_in_for_the_envelopes(server: ScriptedServer, waits: Waits) -> None:
    server.answers(
        Reply(404, {"error": {"code": "AccountNotFound", "message": "no account"}}, {"x-amzn-RequestId": "h-7"})
    )
    with pytest.raises(AccountNotFound) as raised:
        client_of(server, waits).get_account("acme")
    assert raised.value.request_id == "h-7"


@pytest.mark.parametrize(
    ("status", "family"),
    [(418, ClientError), (429, TooManyRequests), (507, ServerError)],
)
def test_an_unknown_code_is_its_status_family(
    server: ScriptedServer, waits: Waits, status: int, family: type[HybridCounterError]
) -> None:
    server.answers(*[envelope(status, "SomethingNew")] * RetryPolicy().max_attempts)  # a retried one's every attempt
    with pytest.raises(family) as raised:
        client_of(server, waits).get_account("acme")
    assert type(raised.value) is family
    assert raised.value.code == "SomethingNew"


@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, {**ACCOUNT, "limit": "3"}, {"ETag": '"1"'}),
        Reply(200, {**ACCOUNT, "limit": True}, {"ETag": '"1"'}),
        Reply(200, {key: value for key, value in ACCOUNT.items() if key != "used"}, {"ETag": '"1"'}),
        Reply(200, ACCOUNT),  # no ETag
        Reply(200, {**ACCOUNT, "rateLimit": {"requestsPerSecond": 1}}, {"ETag": '"1"'}),
        Reply(200, [ACCOUNT], {"ETag": '"1"'}),
        Reply(202, ACCOUNT, {"ETag": '"1"'}),
    ],
    ids=["a string limit", "a boolean limit", "a missing field", "no ETag", "a nested field missing", "a list", "202"],
)
def test_an_answer_unlike_the_document_is_unexpected(server: ScriptedServer, waits: Waits, reply: Reply) -> None:
    server.answers(reply)
    with pytest.raises(UnexpectedResponse):
        client_of(server, waits).get_account("acme")


def test_a_page_s_items_are_checked_one_by_one(server: ScriptedServer, waits: Waits) -> None:
    server.answers(Reply(200, {"items": [RESOURCE, {**RESOURCE, "attributes": []}], "nextCursor": None}))
    with pytest.raises(UnexpectedResponse, match=r"items\[1\]\.attributes"):
        client_of(server, waits).list_resources_page("acme")


def test_thresholds_are_sent_only_when_given_and_read_back_when_answered(server: ScriptedServer, waits: Waits) -> None:
    own = {**ACCOUNT, "thresholds": [50, 90]}
    seats = {"accountId": "acme", "type": "seats", "limit": 5, "bestEffort": 0, "eventual": 0, "used": 0}
    seats |= {"available": 5, "thresholds": [25]}
    server.answers(Reply(200, own, {"ETag": '"2"'}), account_reply(), Reply(200, seats, {"ETag": '"1"'}))
    client = client_of(server, waits)
    assert client.put_account("acme", limit=3, thresholds=[90, 50]).thresholds == [50, 90]
    assert client.put_account("acme", limit=3).thresholds is None
    assert client.put_type_limit("acme", "seats", limit=5, thresholds=[25]).thresholds == [25]
    bodies = [json.loads(request.body) for request in server.received]
    assert bodies == [{"limit": 3, "thresholds": [90, 50]}, {"limit": 3}, {"limit": 5, "thresholds": [25]}]


def test_an_amount_is_sent_only_when_given_and_read_back_defaulting_to_1(server: ScriptedServer, waits: Waits) -> None:
    typed = {**RESOURCE, "type": "vcpus", "amount": 8}
    server.answers(Reply(201, {**RESOURCE, "amount": 64}), Reply(201, RESOURCE), Reply(201, typed))
    client = client_of(server, waits)
    big = client.create_resource("acme", "vm-1", amount=64)
    plain = client.create_resource("acme", "vm-1")
    vcpus = client.create_typed_resource("acme", "vcpus", "vm-1", amount=8)
    assert (big.amount, plain.amount, vcpus.amount) == (64, 1, 8)
    bodies = [json.loads(request.body) for request in server.received]
    assert bodies == [{"name": "vm-1", "amount": 64}, {"name": "vm-1"}, {"name": "vm-1", "amount": 8}]

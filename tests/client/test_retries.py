"""Which answers the client retries, how long it waits, and when it stops (docs/security.md's
"Retry" column; clients/python/README.md), against a scripted server and on the test's clock."""

from __future__ import annotations

import json
import uuid

import pytest
from hybrid_counter_client import (
    HybridCounterError,
    InternalError,
    NoResponse,
    ResourceNotFound,
    RetryPolicy,
    ServiceUnavailable,
    TenantThrottled,
)

from tests.client.conftest import (
    DROP,
    RESOURCE,
    Reply,
    ScriptedServer,
    Waits,
    account_reply,
    client_of,
    envelope,
)

RETRIED = {
    "503 ServiceUnavailable (the function: DynamoDB failed)": envelope(503, "ServiceUnavailable", Retry_After="1"),
    "503 ServiceUnavailable (API Gateway: INTEGRATION_FAILURE, a throttled invocation)": envelope(
        503, "ServiceUnavailable", "Internal server error", Retry_After="1"
    ),
    "429 TenantThrottled": envelope(429, "TenantThrottled", Retry_After="2"),
    "429 Throttled (the stage)": envelope(429, "Throttled", "Too Many Requests", Retry_After="1"),
    "429 QuotaExceeded": envelope(429, "QuotaExceeded", "Limit Exceeded", Retry_After="1"),
    "429 of a code this client does not know": envelope(429, "SlowDown", Retry_After="1"),
    "500 InternalError": envelope(500, "InternalError"),
    "502 InternalError": envelope(502, "InternalError"),
    "502 without the envelope (API Gateway's default)": Reply(502, {"message": "Internal server error"}),
    "504 IntegrationTimeout": envelope(504, "IntegrationTimeout", "Endpoint request timed out"),
    "no answer (the connection closed)": DROP,
}

NOT_RETRIED = {
    "400 ValidationError": envelope(400, "ValidationError"),
    "400 InvalidCursor": envelope(400, "InvalidCursor"),
    "401 Unauthorized": envelope(401, "Unauthorized"),
    "403 MissingAuthenticationToken": envelope(403, "MissingAuthenticationToken"),
    "403 InvalidSignature": envelope(403, "InvalidSignature"),
    "403 ExpiredToken": envelope(403, "ExpiredToken"),
    "403 AccessDenied": envelope(403, "AccessDenied"),
    "404 AccountNotFound": envelope(404, "AccountNotFound"),
    "404 ResourceNotFound": envelope(404, "ResourceNotFound"),
    "404 RouteNotFound": envelope(404, "RouteNotFound"),
    "405 MethodNotAllowed": envelope(405, "MethodNotAllowed", Allow="GET, PUT"),
    "409 LimitExceeded": envelope(409, "LimitExceeded"),
    "409 IdempotencyKeyReused": envelope(409, "IdempotencyKeyReused"),
    "412 PreconditionFailed": envelope(412, "PreconditionFailed"),
    "413 PayloadTooLarge": envelope(413, "PayloadTooLarge"),
    "422 IdempotencyKeyMismatch": envelope(422, "IdempotencyKeyMismatch"),
    "403 RequestRefused": envelope(403, "RequestRefused"),
    "418 of a code this client does not know": envelope(418, "Teapot"),
    "400 without the envelope": Reply(400, {"message": "Bad request"}),
}


@pytest.mark.parametrize("answer", RETRIED.values(), ids=RETRIED.keys())
def test_a_retryable_answer_is_retried_and_the_next_answer_returned(
    server: ScriptedServer, waits: Waits, answer: Reply
) -> None:
    server.answers(answer, account_reply())
    account = client_of(server, waits).get_account("acme")
    assert account.account_id == "acme"
    assert len(server.received) == 2
    assert len(waits.slept) == 1


@pytest.mark.parametrize("answer", NOT_RETRIED.values(), ids=NOT_RETRIED.keys())
def test_another_4xx_is_raised_at_once(server: ScriptedServer, waits: Waits, answer: Reply) -> None:
    server.answers(answer, account_reply())
    with pytest.raises(HybridCounterError) as raised:
        client_of(server, waits).get_account("acme")
    assert raised.value.status == answer.status
    assert not raised.value.retryable
    assert (len(server.received), waits.slept, raised.value.attempts) == (1, [], 1)


def test_retry_after_is_waited_and_the_backoff_added_to_it(server: ScriptedServer, waits: Waits) -> None:
    server.answers(envelope(429, "TenantThrottled", Retry_After="3"), envelope(429, "TenantThrottled", Retry_After="3"))
    server.answers(account_reply())
    client_of(server, waits, RetryPolicy(base_delay_seconds=0.2)).get_account("acme")
    # Retry-After, plus the full-jitter share (0.5 here) of Retry-After, then of twice it.
    assert waits.slept == pytest.approx([4.5, 6])


def test_the_backoff_doubles_up_to_its_cap_with_full_jitter(server: ScriptedServer, waits: Waits) -> None:
    server.answers(*[envelope(500, "InternalError")] * 6)
    policy = RetryPolicy(max_attempts=6, base_delay_seconds=1, max_delay_seconds=5)
    with pytest.raises(InternalError):
        client_of(server, waits, policy).get_account("acme")
    assert waits.slept == pytest.approx([0.5, 1, 2, 2.5, 2.5])  # half of 1, 2, 4, then of the cap, 5


def test_the_deadline_stops_the_retries(server: ScriptedServer, waits: Waits) -> None:
    server.answers(*[envelope(503, "ServiceUnavailable", Retry_After="5")] * 10)
    policy = RetryPolicy(max_attempts=10, deadline_seconds=20, max_delay_seconds=10)
    with pytest.raises(ServiceUnavailable) as raised:
        client_of(server, waits, policy).get_account("acme")
    # Waits of 5 + 2.5 and 5 + 5 end 17.5 s in; the next, 5 + 5 (half the cap), would end past 20 s.
    assert waits.slept == pytest.approx([7.5, 10])
    assert raised.value.attempts == len(server.received) == 3


def test_a_wait_drawn_past_the_deadline_is_drawn_again_within_it(server: ScriptedServer, waits: Waits) -> None:
    server.answers(*[envelope(503, "ServiceUnavailable", Retry_After="1")] * 10)
    policy = RetryPolicy(max_attempts=10, deadline_seconds=10, max_delay_seconds=10)
    with pytest.raises(ServiceUnavailable) as raised:
        client_of(server, waits, policy).get_account("acme")
    # 1 + half of 1, 2, 4 end 6.5 s in; 1 + half of 8 would end past 10 s, so 1 + half of the 3.5 s
    # left, then of the 0.25 s left; 0.125 s is less than Retry-After: the call stops.
    assert waits.slept == pytest.approx([1.5, 2, 3, 2.25, 1.125])
    assert raised.value.attempts == len(server.received) == 6


def test_by_default_a_throttled_call_keeps_trying_for_30_seconds(server: ScriptedServer, waits: Waits) -> None:
    """Room for a burst of a few hundred callers past the function's concurrency (retries.py)."""
    server.answers(*[envelope(503, "ServiceUnavailable", "Internal server error", Retry_After="1")] * 10)
    with pytest.raises(ServiceUnavailable) as raised:
        client_of(server, waits).get_account("acme")
    assert waits.slept == pytest.approx([1.5, 2, 3, 5, 6, 6, 6])  # 29.5 s; 1 s no longer fits in 30
    assert raised.value.attempts == 8


def test_max_attempts_stops_the_retries(server: ScriptedServer, waits: Waits) -> None:
    server.answers(*[envelope(429, "TenantThrottled", Retry_After="1")] * 5)
    with pytest.raises(TenantThrottled) as raised:
        client_of(server, waits, RetryPolicy(max_attempts=3)).get_account("acme")
    assert (raised.value.attempts, len(server.received), len(waits.slept)) == (3, 3, 2)
    assert raised.value.retry_after == 1


def test_no_answer_at_all_ends_as_no_response(waits: Waits) -> None:
    closed = ScriptedServer()
    closed.close()  # nothing listens on its port any more
    client = client_of(closed, waits, RetryPolicy(max_attempts=2))
    with pytest.raises(NoResponse) as raised:
        client.get_account("acme")
    assert raised.value.attempts == 2
    assert raised.value.__cause__ is not None
    assert str(raised.value).startswith("no answer: ")


def test_every_attempt_of_a_create_sends_one_idempotency_key_and_the_same_body(
    server: ScriptedServer, waits: Waits
) -> None:
    server.answers(DROP, envelope(503, "ServiceUnavailable", Retry_After="1"), Reply(201, RESOURCE))
    created = client_of(server, waits).create_resource("acme", "vm-1", attributes={"size": 2})
    assert created.resource_id == "r-1"
    keys = {request.headers["idempotency-key"] for request in server.received}
    assert len(server.received) == 3
    assert len(keys) == 1
    assert uuid.UUID(keys.pop()).version == 4
    assert {request.body for request in server.received} == {
        json.dumps({"name": "vm-1", "attributes": {"size": 2}}).encode()
    }


def test_a_callers_key_is_sent_as_given_on_every_attempt_and_each_call_has_its_own(
    server: ScriptedServer, waits: Waits
) -> None:
    server.answers(envelope(502, "InternalError"), Reply(200, RESOURCE), Reply(201, RESOURCE), Reply(201, RESOURCE))
    client = client_of(server, waits)
    client.create_resource("acme", "vm-1", idempotency_key="order-7")
    client.create_resource("acme", "vm-1")
    client.create_resource("acme", "vm-1")
    keys = [request.headers["idempotency-key"] for request in server.received]
    assert keys[:2] == ["order-7", "order-7"]
    assert len(set(keys[2:])) == 2
    assert "order-7" not in keys[2:]


TYPE_REPLY = Reply(
    200,
    {"accountId": "acme", "type": "seats", "limit": 5, "bestEffort": 0, "eventual": 0, "used": 0, "available": 5},
    {"ETag": '"1"'},
)


@pytest.mark.parametrize("operation", ["put_account", "put_type_limit"])
def test_every_attempt_of_a_put_sends_one_idempotency_key_and_each_call_has_its_own(
    server: ScriptedServer, waits: Waits, operation: str
) -> None:
    """The API takes a retry for its first attempt only when both send the same key: a PUT
    retried with another (or none) after another caller's PUT landed would undo that PUT."""
    answer = account_reply() if operation == "put_account" else TYPE_REPLY
    server.answers(DROP, envelope(503, "ServiceUnavailable", Retry_After="1"), answer, answer, answer, answer)
    client = client_of(server, waits)
    put = (
        (lambda **given: client.put_account("acme", limit=5, **given))
        if operation == "put_account"
        else (lambda **given: client.put_type_limit("acme", "seats", limit=5, **given))
    )
    put(if_match='"1"')
    put()
    put(idempotency_key="change-42")
    put(idempotency_key="change-42")
    keys = [request.headers["idempotency-key"] for request in server.received]
    assert len(set(keys[:3])) == 1
    assert uuid.UUID(keys[0]).version == 4
    assert [request.headers.get("if-match") for request in server.received[:3]] == ['"1"'] * 3
    assert keys[3] not in keys[:3]
    assert uuid.UUID(keys[3]).version == 4
    assert keys[4:] == ["change-42", "change-42"]
    assert len({request.body for request in server.received}) == 1


def test_a_delete_whose_lost_attempt_deleted_is_done(server: ScriptedServer, waits: Waits) -> None:
    server.answers(DROP, envelope(404, "ResourceNotFound"))
    assert client_of(server, waits).delete_resource("acme", "r-1") is None
    assert [request.method for request in server.received] == ["DELETE", "DELETE"]


def test_a_delete_answered_404_after_a_throttle_is_not_found(server: ScriptedServer, waits: Waits) -> None:
    """A 429 was refused before anything ran: the 404 after it is about the resource, not the retry."""
    server.answers(envelope(429, "TenantThrottled", Retry_After="1"), envelope(404, "ResourceNotFound"))
    with pytest.raises(ResourceNotFound):
        client_of(server, waits).delete_resource("acme", "r-1")


def test_a_delete_answered_404_at_once_is_not_found(server: ScriptedServer, waits: Waits) -> None:
    server.answers(envelope(404, "ResourceNotFound"))
    with pytest.raises(ResourceNotFound):
        client_of(server, waits).delete_resource("acme", "r-1")

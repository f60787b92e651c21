"""`resize_resource` and `resize_typed_resource`, sync and async, against a scripted server: what
each attempt sends (one Idempotency-Key and one If-Match for the whole call, the version the
caller gave or the one the client read), when the client reads again and sends again (a 412 to
attempts none of which may have landed), and when a 412 is the caller's (after an attempt that
may have landed, or with the caller's own If-Match). The same calls against the real handler are
in tests/handler/test_resize_client.py."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from hybrid_counter_client import (
    AsyncLimitsClient,
    LimitExceeded,
    PreconditionFailed,
    Resource,
    TypedResource,
)
from hybrid_counter_client.retries import RESIZE_READS

from tests.client.conftest import (
    DROP,
    RESOURCE,
    Received,
    Reply,
    ScriptedServer,
    Waits,
    client_of,
    envelope,
    static_session,
)

PATH = "/prod/accounts/acme/resources/r-1"
TYPED_PATH = "/prod/accounts/acme/types/seats/resources/r-1"


def at(version: int, amount: int = 4) -> Reply:
    """The resource as a read or a resize answers it: at `version`, holding `amount`."""
    return Reply(200, {**RESOURCE, "amount": amount}, {"ETag": f'"{version}"'})


def typed_at(version: int, amount: int = 4) -> Reply:
    return Reply(200, {**RESOURCE, "type": "seats", "amount": amount}, {"ETag": f'"{version}"'})


CHANGED = envelope(412, "PreconditionFailed", "resource 'r-1' is at ETag \"3\", not what If-Match asks for")


def sent(server: ScriptedServer) -> list[tuple[str, str | None]]:
    """Each request's method and If-Match."""
    return [(request.method, request.headers.get("if-match")) for request in server.received]


def patches(server: ScriptedServer) -> list[Received]:
    return [request for request in server.received if request.method == "PATCH"]


def one_key(server: ScriptedServer) -> str:
    keys = {request.headers["idempotency-key"] for request in patches(server)}
    assert len(keys) == 1, keys
    return keys.pop()


def test_without_if_match_it_reads_the_version_and_sends_it(server: ScriptedServer, waits: Waits) -> None:
    server.answers(at(2), at(3, amount=3200))
    resized = client_of(server, waits).resize_resource("acme", "r-1", 3200)
    assert (resized.amount, resized.etag, resized.resource_id) == (3200, '"3"', "r-1")
    assert sent(server) == [("GET", None), ("PATCH", '"2"')]
    assert [request.path for request in server.received] == [PATH, PATH]
    assert json.loads(patches(server)[0].body) == {"amount": 3200}
    assert uuid.UUID(one_key(server)).version == 4


def test_with_the_callers_if_match_it_reads_nothing(server: ScriptedServer, waits: Waits) -> None:
    server.answers(at(5, amount=1))
    resized = client_of(server, waits).resize_resource("acme", "r-1", 1, if_match='"4"', idempotency_key="settle-9")
    assert (resized.amount, resized.etag) == (1, '"5"')
    assert sent(server) == [("PATCH", '"4"')]
    assert one_key(server) == "settle-9"


def test_a_read_answers_the_resources_etag_and_a_create_none(server: ScriptedServer, waits: Waits) -> None:
    server.answers(Reply(201, RESOURCE), at(1, amount=1))
    client = client_of(server, waits)
    created = client.create_resource("acme", "vm-1")
    read = client.get_resource("acme", "r-1")
    assert (created.etag, read.etag) == (None, '"1"')
    assert created == read  # the version is not compared: the same resource


def test_every_attempt_sends_one_key_and_the_version_read(server: ScriptedServer, waits: Waits) -> None:
    """The answer to the first attempt is lost, the second is a 503: the third, sent with the same
    key and If-Match, is answered the resource as the first left it (the API's replay)."""
    server.answers(at(2), DROP, envelope(503, "ServiceUnavailable", Retry_After="1"), at(3, amount=7))
    resized = client_of(server, waits).resize_resource("acme", "r-1", 7)
    assert resized.amount == 7
    assert sent(server) == [("GET", None)] + [("PATCH", '"2"')] * 3
    one_key(server)
    assert len({request.body for request in patches(server)}) == 1


def test_a_412_to_its_first_attempt_is_read_again_and_sent_again_with_the_same_key(
    server: ScriptedServer, waits: Waits
) -> None:
    """Another caller's resize landed between the read and the PATCH, which changed nothing: the
    client reads the new version and sends again (a 429 on the way was refused before anything ran)."""
    server.answers(at(2), CHANGED, at(3, amount=9), envelope(429, "TenantThrottled", Retry_After="1"))
    server.answers(at(4, amount=5))
    resized = client_of(server, waits).resize_resource("acme", "r-1", 5)
    assert (resized.amount, resized.etag) == (5, '"4"')
    assert sent(server) == [("GET", None), ("PATCH", '"2"'), ("GET", None), ("PATCH", '"3"'), ("PATCH", '"3"')]
    one_key(server)


def test_a_412_after_an_attempt_that_may_have_landed_is_the_callers(server: ScriptedServer, waits: Waits) -> None:
    """The first attempt may have resized, and another caller after it: sending again with the
    version read now could apply this resize over theirs."""
    server.answers(at(2), DROP, CHANGED, at(9))
    with pytest.raises(PreconditionFailed) as raised:
        client_of(server, waits).resize_resource("acme", "r-1", 5)
    assert raised.value.attempts == 2
    assert sent(server) == [("GET", None), ("PATCH", '"2"'), ("PATCH", '"2"')]


def test_a_412_to_the_callers_if_match_is_the_callers(server: ScriptedServer, waits: Waits) -> None:
    server.answers(CHANGED, at(9))
    with pytest.raises(PreconditionFailed):
        client_of(server, waits).resize_resource("acme", "r-1", 5, if_match='"2"')
    assert sent(server) == [("PATCH", '"2"')]


def test_it_reads_again_a_few_times_then_gives_up(server: ScriptedServer, waits: Waits) -> None:
    for version in range(2, 2 + RESIZE_READS):
        server.answers(at(version), CHANGED)
    server.answers(at(99))
    with pytest.raises(PreconditionFailed):
        client_of(server, waits).resize_resource("acme", "r-1", 5)
    assert sent(server) == [
        request for version in range(2, 2 + RESIZE_READS) for request in (("GET", None), ("PATCH", f'"{version}"'))
    ]
    assert waits.slept == []


def test_a_refused_growth_is_raised_at_once(server: ScriptedServer, waits: Waits) -> None:
    server.answers(at(2), envelope(409, "LimitExceeded"), at(2))
    with pytest.raises(LimitExceeded):
        client_of(server, waits).resize_resource("acme", "r-1", 5000)
    assert sent(server) == [("GET", None), ("PATCH", '"2"')]


def test_each_call_has_its_own_key(server: ScriptedServer, waits: Waits) -> None:
    server.answers(at(1), at(2), at(2), at(3))
    client = client_of(server, waits)
    client.resize_resource("acme", "r-1", 2)
    client.resize_resource("acme", "r-1", 3)
    keys = [request.headers["idempotency-key"] for request in patches(server)]
    assert len(set(keys)) == 2


def test_a_typed_resize_reads_and_sends_on_its_types_path(server: ScriptedServer, waits: Waits) -> None:
    server.answers(typed_at(1), CHANGED, typed_at(2, amount=6), typed_at(3, amount=2))
    resized = client_of(server, waits).resize_typed_resource("acme", "seats", "r-1", 2)
    assert isinstance(resized, TypedResource)
    assert (resized.type, resized.amount, resized.etag) == ("seats", 2, '"3"')
    assert [request.path for request in server.received] == [TYPED_PATH] * 4
    assert sent(server) == [("GET", None), ("PATCH", '"1"'), ("GET", None), ("PATCH", '"2"')]
    one_key(server)


@pytest.mark.parametrize("typed", [False, True], ids=["default", "typed"])
def test_the_async_client_reads_again_as_the_sync_one(server: ScriptedServer, waits: Waits, typed: bool) -> None:
    reply = typed_at if typed else at
    server.answers(reply(2), CHANGED, reply(3), DROP, reply(4, amount=8))
    client = AsyncLimitsClient(
        server.url, static_session(), clock=waits.clock, sleep=waits.async_sleep, random=lambda: 0.5
    )

    async def resize() -> Resource | TypedResource:
        async with client:
            if typed:
                return await client.resize_typed_resource("acme", "seats", "r-1", 8)
            return await client.resize_resource("acme", "r-1", 8)

    resized = asyncio.run(resize())
    assert (resized.amount, resized.etag) == (8, '"4"')
    assert sent(server) == [("GET", None), ("PATCH", '"2"'), ("GET", None), ("PATCH", '"3"'), ("PATCH", '"3"')]
    one_key(server)
    assert len(waits.slept) == 1  # the lost answer's wait; a 412 read again at once

"""AsyncLimitsClient: the same calls, retries and errors as LimitsClient, awaited."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hybrid_counter_client import AsyncLimitsClient, LimitExceeded, RateLimit, RetryPolicy

from tests.client.conftest import (
    ACCOUNT,
    DROP,
    RESOURCE,
    Reply,
    ScriptedServer,
    Waits,
    account_reply,
    envelope,
    static_session,
)

SEATS = {"accountId": "acme", "type": "seats", "limit": 5, "bestEffort": 0, "eventual": 0, "used": 0, "available": 5}


def async_client(server: ScriptedServer, waits: Waits, retry: RetryPolicy | None = None) -> AsyncLimitsClient:
    return AsyncLimitsClient(
        server.url, static_session(), retry=retry, clock=waits.clock, sleep=waits.async_sleep, random=lambda: 0.5
    )


def test_every_operation_awaited(server: ScriptedServer, waits: Waits) -> None:
    server.answers(account_reply('"2"'), account_reply('"2"'), Reply(201, RESOURCE), Reply(200, RESOURCE))
    server.answers(Reply(200, {"items": [RESOURCE], "nextCursor": None}), Reply(204))

    async def calls() -> list[Any]:
        async with async_client(server, waits) as client:
            return [
                await client.put_account("acme", limit=3, rate_limit=RateLimit(5, 1)),
                await client.get_account("acme"),
                await client.create_resource("acme", "vm-1"),
                await client.get_resource("acme", "r-1"),
                await client.list_resources_page("acme", limit=5),
                await client.delete_resource("acme", "r-1"),
            ]

    put, got, created, read, page, deleted = asyncio.run(calls())
    assert put.etag == got.etag == '"2"'
    assert created == read
    assert [item.resource_id for item in page.items] == ["r-1"]
    assert deleted is None
    assert [request.method for request in server.received] == ["PUT", "GET", "POST", "GET", "GET", "DELETE"]


def test_retries_are_awaited_and_a_create_keeps_its_key(server: ScriptedServer, waits: Waits) -> None:
    server.answers(DROP, envelope(429, "TenantThrottled", Retry_After="2"), Reply(201, RESOURCE))
    resource = asyncio.run(async_client(server, waits).create_resource("acme", "vm-1"))
    assert resource.resource_id == "r-1"
    assert waits.slept == pytest.approx([0.1, 4])  # half of 0.2 s; Retry-After and half of twice it
    assert len({request.headers["idempotency-key"] for request in server.received}) == 1


def test_errors_are_raised_as_by_the_sync_client(server: ScriptedServer, waits: Waits) -> None:
    server.answers(envelope(409, "LimitExceeded", request_id="r-9"))
    with pytest.raises(LimitExceeded) as raised:
        asyncio.run(async_client(server, waits).create_resource("acme", "vm-1"))
    assert (raised.value.request_id, len(server.received)) == ("r-9", 1)


def test_list_resources_iterates_every_page(server: ScriptedServer, waits: Waits) -> None:
    server.answers(
        Reply(200, {"items": [{**RESOURCE, "resourceId": "a"}], "nextCursor": "c1"}),
        Reply(200, {"items": [{**RESOURCE, "resourceId": "b"}], "nextCursor": None}),
    )

    async def every() -> list[str]:
        return [resource.resource_id async for resource in async_client(server, waits).list_resources("acme")]

    assert asyncio.run(every()) == ["a", "b"]
    assert server.received[1].query == {"cursor": ["c1"]}


def test_thresholds_are_sent_when_given(server: ScriptedServer, waits: Waits) -> None:
    server.answers(Reply(200, {**ACCOUNT, "thresholds": [50]}, {"ETag": '"2"'}), Reply(200, SEATS, {"ETag": '"1"'}))

    async def calls() -> list[Any]:
        async with async_client(server, waits) as client:
            return [
                await client.put_account("acme", limit=3, thresholds=[50]),
                await client.put_type_limit("acme", "seats", limit=5, thresholds=[25]),
            ]

    account, seats = asyncio.run(calls())
    assert account.thresholds == [50]
    assert seats.thresholds is None
    bodies = [json.loads(request.body) for request in server.received]
    assert bodies == [{"limit": 3, "thresholds": [50]}, {"limit": 5, "thresholds": [25]}]

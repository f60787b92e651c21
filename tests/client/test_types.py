"""Resource types in the client: each typed operation's method sends its request to the type's
route and reads its answer as its model; an account's `types` are read when it has some and are
None when it has none; a 409 `TooManyResourceTypes` is its own exception, never retried."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hybrid_counter_client import (
    Account,
    AsyncLimitsClient,
    ClientError,
    RateLimit,
    ResourceType,
    TooManyResourceTypes,
    TypedResource,
    TypedResourcePage,
    TypeList,
    TypeUsage,
)

from tests.client.conftest import (
    ACCOUNT,
    RESOURCE,
    Reply,
    ScriptedServer,
    Waits,
    client_of,
    envelope,
    static_session,
)

SEATS = {"accountId": "acme", "type": "seats", "limit": 50, "bestEffort": 2, "eventual": 1, "used": 2, "available": 48}
SEAT = {**RESOURCE, "type": "seats"}
SEATS_USAGE = TypeUsage(account_id="acme", type="seats", limit=50, best_effort=2, eventual=1, used=2, available=48)


def test_each_typed_operation_sends_its_method_path_query_headers_and_body(
    server: ScriptedServer, waits: Waits
) -> None:
    server.answers(Reply(200, SEATS, {"ETag": '"2"'}), Reply(200, SEATS, {"ETag": '"2"'}))
    server.answers(Reply(200, {"items": [SEATS]}), Reply(201, SEAT), Reply(200, SEAT))
    server.answers(Reply(200, {"items": [SEAT], "nextCursor": None}), Reply(204))
    client = client_of(server, waits)

    assert client.put_type_limit("acme", "seats", limit=50, if_match='"1"') == ResourceType(
        **vars(SEATS_USAGE), etag='"2"'
    )
    assert client.get_type("acme", "seats").etag == '"2"'
    assert client.list_types("acme") == TypeList(items=[SEATS_USAGE])
    created = client.create_typed_resource("acme", "seats", "vm-1", attributes={"size": 2}, idempotency_key="k-1")
    assert created == TypedResource(
        account_id="acme",
        resource_id="r-1",
        name="vm-1",
        attributes={"size": 2},
        created_at="2026-11-25T13:37:11.250Z",
        type="seats",
    )
    assert client.get_typed_resource("acme", "seats", "r-1") == created
    assert client.list_typed_resources_page("acme", "seats", limit=10, cursor="c") == TypedResourcePage(
        items=[created], next_cursor=None
    )
    client.delete_typed_resource("acme", "seats", "r-1")

    sent = [(request.method, request.path, request.query) for request in server.received]
    assert sent == [
        ("PUT", "/prod/accounts/acme/types/seats", {}),
        ("GET", "/prod/accounts/acme/types/seats", {}),
        ("GET", "/prod/accounts/acme/types", {}),
        ("POST", "/prod/accounts/acme/types/seats/resources", {}),
        ("GET", "/prod/accounts/acme/types/seats/resources/r-1", {}),
        ("GET", "/prod/accounts/acme/types/seats/resources", {"limit": ["10"], "cursor": ["c"]}),
        ("DELETE", "/prod/accounts/acme/types/seats/resources/r-1", {}),
    ]
    put, _, _, create, *_ = server.received
    assert json.loads(put.body) == {"limit": 50}
    assert put.headers["if-match"] == '"1"'
    assert json.loads(create.body) == {"name": "vm-1", "attributes": {"size": 2}}
    assert create.headers["idempotency-key"] == "k-1"


def test_every_typed_resource_is_listed_page_after_page(server: ScriptedServer, waits: Waits) -> None:
    second = {**SEAT, "resourceId": "r-2"}
    server.answers(
        Reply(200, {"items": [SEAT], "nextCursor": "n"}), Reply(200, {"items": [second], "nextCursor": None})
    )
    client = client_of(server, waits)
    assert [each.resource_id for each in client.list_typed_resources("acme", "seats", page_size=1)] == ["r-1", "r-2"]
    assert [request.query for request in server.received] == [{"limit": ["1"]}, {"limit": ["1"], "cursor": ["n"]}]


def test_an_accounts_types_are_read_when_it_has_some_and_none_when_it_has_none(
    server: ScriptedServer, waits: Waits
) -> None:
    server.answers(Reply(200, ACCOUNT, {"ETag": '"1"'}), Reply(200, {**ACCOUNT, "types": [SEATS]}, {"ETag": '"1"'}))
    client = client_of(server, waits)
    plain = client.get_account("acme")
    assert plain.types is None
    assert client.get_account("acme") == Account(
        account_id="acme",
        limit=3,
        best_effort=1,
        eventual=0,
        used=1,
        available=2,
        rate_limit=RateLimit(1000, 2),
        etag='"1"',
        types=[SEATS_USAGE],
    )


def test_too_many_resource_types_is_its_own_client_error_and_not_retried(server: ScriptedServer, waits: Waits) -> None:
    server.answers(envelope(409, "TooManyResourceTypes"))
    client = client_of(server, waits)
    with pytest.raises(TooManyResourceTypes) as raised:
        client.put_type_limit("acme", "rooms", limit=1)
    assert isinstance(raised.value, ClientError)
    assert len(server.received) == 1


def test_every_typed_operation_awaited(server: ScriptedServer, waits: Waits) -> None:
    server.answers(Reply(200, SEATS, {"ETag": '"1"'}), Reply(200, SEATS, {"ETag": '"1"'}), Reply(200, {"items": []}))
    server.answers(Reply(201, SEAT), Reply(200, SEAT), Reply(200, {"items": [SEAT], "nextCursor": None}), Reply(204))

    async def calls() -> list[Any]:
        async with AsyncLimitsClient(
            server.url, static_session(), clock=waits.clock, sleep=waits.async_sleep, random=lambda: 0.5
        ) as client:
            return [
                await client.put_type_limit("acme", "seats", limit=50),
                await client.get_type("acme", "seats"),
                await client.list_types("acme"),
                await client.create_typed_resource("acme", "seats", "vm-1"),
                await client.get_typed_resource("acme", "seats", "r-1"),
                [each async for each in client.list_typed_resources("acme", "seats")],
                await client.delete_typed_resource("acme", "seats", "r-1"),
            ]

    put, got, listed, created, read, every, deleted = asyncio.run(calls())
    assert put == got == ResourceType(**vars(SEATS_USAGE), etag='"1"')
    assert listed == TypeList(items=[])
    assert created == read == every[0]
    assert deleted is None
    assert [(request.method, request.path) for request in server.received][-1] == (
        "DELETE",
        "/prod/accounts/acme/types/seats/resources/r-1",
    )

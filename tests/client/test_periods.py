"""Periodic quotas in the client (docs/periods.md): `period` and `anchor` are sent only when given
(a PUT without them is the one a client before periods sent), an answer's period fields are read
back, and are None in a holding's answer or an older API's; PeriodChangeRefused and PeriodClosed
are 409s of their own, never retried. The same calls against the real handler are in
tests/handler/test_periods_client.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from hybrid_counter_client import (
    AsyncLimitsClient,
    ClientError,
    LimitExceeded,
    PeriodChangeRefused,
    PeriodClosed,
    TypeUsage,
)

from tests.client.conftest import (
    ACCOUNT,
    Reply,
    ScriptedServer,
    Waits,
    account_reply,
    client_of,
    envelope,
    static_session,
)

DAY = {"period": "day", "periodStart": "2026-11-27T00:00:00Z", "periodEnd": "2026-11-28T00:00:00Z"}
BUILDS = {"accountId": "acme", "type": "builds", "limit": 100, "bestEffort": 3, "eventual": 2, "used": 3}
BUILDS |= {"available": 97, **DAY}
TOKENS = {"accountId": "acme", "type": "tokens", "limit": 1000, "bestEffort": 0, "eventual": 0, "used": 0}
TOKENS |= {"available": 1000, "period": "month", "anchor": "2026-01-15T00:00:00Z"}
TOKENS |= {"periodStart": "2026-11-15T00:00:00Z", "periodEnd": "2026-12-15T00:00:00Z"}


def bodies(server: ScriptedServer) -> list[Any]:
    return [json.loads(request.body) for request in server.received]


def test_period_and_anchor_are_sent_only_when_given(server: ScriptedServer, waits: Waits) -> None:
    server.answers(Reply(200, {**ACCOUNT, **DAY}, {"ETag": '"2"'}), account_reply())
    server.answers(Reply(200, TOKENS, {"ETag": '"1"'}), Reply(200, BUILDS, {"ETag": '"4"'}))
    client = client_of(server, waits)
    client.put_account("acme", limit=3, period="day")
    client.put_account("acme", limit=3)
    client.put_type_limit("acme", "tokens", limit=1000, period="month", anchor="2026-01-15T00:00:00Z")
    client.put_type_limit("acme", "builds", limit=100, thresholds=[90])
    assert bodies(server) == [
        {"limit": 3, "period": "day"},
        {"limit": 3},
        {"limit": 1000, "period": "month", "anchor": "2026-01-15T00:00:00Z"},
        {"limit": 100, "thresholds": [90]},
    ]


def test_the_period_is_read_back_from_every_answer_that_has_one(server: ScriptedServer, waits: Waits) -> None:
    server.answers(Reply(200, {**ACCOUNT, **DAY, "types": [BUILDS, TOKENS]}, {"ETag": '"2"'}))
    server.answers(Reply(200, TOKENS, {"ETag": '"1"'}), Reply(200, {"items": [BUILDS]}))
    client = client_of(server, waits)
    account = client.get_account("acme")
    assert (account.period, account.anchor, account.period_start, account.period_end) == (
        "day",
        None,
        "2026-11-27T00:00:00Z",
        "2026-11-28T00:00:00Z",
    )
    assert account.types is not None
    assert account.types[0] == TypeUsage(
        account_id="acme",
        type="builds",
        limit=100,
        best_effort=3,
        eventual=2,
        used=3,
        available=97,
        period="day",
        period_start="2026-11-27T00:00:00Z",
        period_end="2026-11-28T00:00:00Z",
    )
    tokens = client.get_type("acme", "tokens")
    assert (tokens.period, tokens.anchor, tokens.period_start, tokens.period_end, tokens.etag) == (
        "month",
        "2026-01-15T00:00:00Z",
        "2026-11-15T00:00:00Z",
        "2026-12-15T00:00:00Z",
        '"1"',
    )
    assert client.list_types("acme").items[0].period_end == "2026-11-28T00:00:00Z"


def test_a_holdings_answer_and_an_older_apis_have_no_period(server: ScriptedServer, waits: Waits) -> None:
    """The API leaves every period field out for a holding, as an API before periods did."""
    holding = {key: value for key, value in BUILDS.items() if key not in DAY}
    server.answers(account_reply(), Reply(200, holding, {"ETag": '"1"'}))
    client = client_of(server, waits)
    account = client.get_account("acme")
    builds = client.get_type("acme", "builds")
    for quota in (account, builds):
        assert (quota.period, quota.anchor, quota.period_start, quota.period_end) == (None, None, None, None)


@pytest.mark.parametrize("error", [PeriodChangeRefused, PeriodClosed])
def test_each_period_refusal_is_its_own_409_and_not_retried(
    server: ScriptedServer, waits: Waits, error: type[ClientError]
) -> None:
    server.answers(envelope(409, error.__name__, "refused"))
    client = client_of(server, waits)
    call: Callable[[], object] = (
        (lambda: client.delete_typed_resource("acme", "builds", "r-1"))
        if error is PeriodClosed
        else (lambda: client.put_type_limit("acme", "builds", limit=100, period="month"))
    )
    with pytest.raises(error) as raised:
        call()
    assert (raised.value.status, raised.value.code) == (409, error.__name__)
    assert isinstance(raised.value, ClientError)
    assert not isinstance(raised.value, LimitExceeded)
    assert len(server.received) == 1
    assert waits.slept == []


def test_period_and_anchor_awaited(server: ScriptedServer, waits: Waits) -> None:
    server.answers(Reply(200, {**ACCOUNT, **DAY}, {"ETag": '"2"'}), Reply(200, TOKENS, {"ETag": '"1"'}))
    server.answers(envelope(409, "PeriodClosed"))

    async def calls() -> list[Any]:
        async with AsyncLimitsClient(
            server.url, static_session(), clock=waits.clock, sleep=waits.async_sleep, random=lambda: 0.5
        ) as client:
            account = await client.put_account("acme", limit=3, period="day")
            tokens = await client.put_type_limit(
                "acme", "tokens", limit=1000, period="month", anchor="2026-01-15T00:00:00Z"
            )
            with pytest.raises(PeriodClosed):
                await client.resize_typed_resource("acme", "tokens", "r-1", 5, if_match='"1"')
            return [account, tokens]

    account, tokens = asyncio.run(calls())
    assert (account.period, account.period_end) == ("day", "2026-11-28T00:00:00Z")
    assert (tokens.period, tokens.anchor) == ("month", "2026-01-15T00:00:00Z")
    assert bodies(server)[:2] == [
        {"limit": 3, "period": "day"},
        {"limit": 1000, "period": "month", "anchor": "2026-01-15T00:00:00Z"},
    ]
    assert len(server.received) == 3

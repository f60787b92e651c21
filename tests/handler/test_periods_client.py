"""The Python client's periodic quotas through the real API handler (the bridge of
tests/handler/test_resize_client.py): a day quota set with `put_account(period="day")` or
`put_type_limit(period="day")` admits its limit, refuses the next create, and after the injected
clock passes midnight admits again from 0; the day's records are history (PeriodClosed) and the
quota keeps its period (PeriodChangeRefused). The client's own rules against a scripted server:
tests/client/test_periods.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hybrid_counter_client import (
    Account,
    LimitExceeded,
    LimitsClient,
    PeriodChangeRefused,
    PeriodClosed,
    PeriodHistory,
    PeriodTotal,
    QuotaNotPeriodic,
    Resource,
    ResourceType,
    TypedResource,
)

from tests.handler.client_bridge import Bridge
from tests.handler.conftest import Kind

# On this tier's backend, and the client's too (`make client`).
pytestmark = pytest.mark.client

EVENING = datetime(2026, 11, 27, 23, 59, 0, tzinfo=UTC)  # a minute before midnight (UTC)


def put_a_day(kind: Kind, client: LimitsClient, limit: int, period: str = "day") -> Account | ResourceType:
    if kind.resource_type is None:
        return client.put_account(Kind.ACCOUNT, limit=limit, period=period)
    if kind.harness.api.request("GET", f"/accounts/{Kind.ACCOUNT}").status == 404:
        assert kind.harness.api.put_account(Kind.ACCOUNT, 2).status == 200  # with its bystander, as Kind.put
        assert kind.harness.api.create(Kind.ACCOUNT, "bystander").status == 201
        kind.harness.pump()
    return client.put_type_limit(Kind.ACCOUNT, kind.resource_type, limit=limit, period=period)


def read(kind: Kind, client: LimitsClient) -> Account | ResourceType:
    if kind.resource_type is None:
        return client.get_account(Kind.ACCOUNT)
    return client.get_type(Kind.ACCOUNT, kind.resource_type)


def build(kind: Kind, client: LimitsClient) -> Resource | TypedResource:
    if kind.resource_type is None:
        return client.create_resource(Kind.ACCOUNT, "build")
    return client.create_typed_resource(Kind.ACCOUNT, kind.resource_type, "build")


def forget(kind: Kind, client: LimitsClient, resource_id: str) -> None:
    if kind.resource_type is None:
        client.delete_resource(Kind.ACCOUNT, resource_id)
    else:
        client.delete_typed_resource(Kind.ACCOUNT, kind.resource_type, resource_id)


def test_a_day_quota_at_its_limit_admits_again_after_midnight(kind: Kind, client: LimitsClient, bridge: Bridge) -> None:
    harness = kind.harness
    harness.clock.set(EVENING)
    quota = put_a_day(kind, client, 3)
    assert (quota.period, quota.anchor, quota.period_start, quota.period_end) == (
        "day",
        None,
        "2026-11-27T00:00:00Z",
        "2026-11-28T00:00:00Z",
    )
    made = [build(kind, client) for _ in range(3)]
    requests = len(bridge.seen)
    with pytest.raises(LimitExceeded):
        build(kind, client)
    assert len(bridge.seen) == requests + 1  # a 409: not retried
    harness.pump()
    today = read(kind, client)
    assert (today.eventual, today.used, today.available) == (3, 3, 0)

    harness.clock.advance(timedelta(minutes=2))  # past midnight
    tomorrow = read(kind, client)
    assert (tomorrow.period_start, tomorrow.period_end, tomorrow.used, tomorrow.available) == (
        "2026-11-28T00:00:00Z",
        "2026-11-29T00:00:00Z",
        0,
        3,
    )
    assert build(kind, client).resource_id not in {each.resource_id for each in made}
    with pytest.raises(PeriodClosed):  # yesterday's record is history, counted in its day
        forget(kind, client, made[0].resource_id)
    with pytest.raises(PeriodChangeRefused):
        put_a_day(kind, client, 3, period="month")
    harness.pump()
    after = read(kind, client)
    assert (after.period, after.eventual, after.used, after.available) == ("day", 1, 1, 2)
    harness.check_invariants()


def history(kind: Kind, client: LimitsClient, periods: int | None = None) -> PeriodHistory:
    if kind.resource_type is None:
        return client.period_history(Kind.ACCOUNT, periods)
    return client.typed_period_history(Kind.ACCOUNT, kind.resource_type, periods)


def test_a_day_quotas_history_reads_each_day_final_once_counted(kind: Kind, client: LimitsClient) -> None:
    harness = kind.harness
    harness.clock.set(EVENING)
    put_a_day(kind, client, 3)
    build(kind, client)
    build(kind, client)
    harness.clock.advance(timedelta(minutes=2))  # the 27th ended a minute ago
    harness.pump()
    read = history(kind, client)  # the API's default: this day and the one before
    assert (read.account_id, read.type, read.period, read.anchor) == (
        Kind.ACCOUNT,
        kind.resource_type or "default",
        "day",
        None,
    )
    assert read.periods == [
        PeriodTotal("2026-11-28T00:00:00Z", "2026-11-29T00:00:00Z", 3, 0, 0, 0, settled=False),
        PeriodTotal("2026-11-27T00:00:00Z", "2026-11-28T00:00:00Z", 3, 2, 2, 2, settled=True),
    ]
    assert len(history(kind, client, 13).periods) == 13


def test_a_holding_quotas_history_is_refused(kind: Kind, client: LimitsClient) -> None:
    kind.put(3)
    with pytest.raises(QuotaNotPeriodic):
        history(kind, client)

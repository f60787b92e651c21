"""A periodic quota's history (issue 39, docs/periods.md#history): `GET .../history?periods=N` answers
the exact totals of the current period and the N-1 before it, newest first, each settled (final)
once it ended a minute ago and nothing of it is pending; one BatchGetItem reads every period."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from benchmarks.capacity_meter import CapacityMeter
from functions.core import accounts
from functions.core.admission import Directory, ShardingSettings
from functions.core.errors import LimitExceeded
from functions.core.healing import HealOutcome, heal_account
from functions.core.model import NewResource, Quota
from tests.handler.conftest import Harness
from tests.support.faults import Faults
from tests.support.truth import read_truth

BUILDS = "/accounts/acme/types/builds"
BUILDS_QUOTA = Quota("acme", "builds")
EVENING = datetime(2026, 11, 27, 23, 59, 0, tzinfo=UTC)
TODAY = "20261127T000000Z"
QUIET = timedelta(seconds=60)


def build(harness: Harness, amount: int = 1) -> Any:
    body: dict[str, Any] = {"name": "build"}
    if amount != 1:
        body["amount"] = amount
    return harness.api.request("POST", f"{BUILDS}/resources", body)


def history(harness: Harness, path: str = BUILDS, periods: int | None = None) -> dict[str, Any]:
    query = "" if periods is None else f"?periods={periods}"
    answer = harness.api.request("GET", f"{path}/history{query}")
    assert answer.status == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def rows(view: dict[str, Any]) -> list[tuple[str, int, int, int, bool]]:
    """Each period's start, limit, used, eventual and settled."""
    return [(row["periodStart"], row["limit"], row["used"], row["eventual"], row["settled"]) for row in view["periods"]]


@pytest.fixture
def evening(harness: Harness) -> Harness:
    """acme, with builds limited to 3 a day, at 23:59 UTC."""
    harness.clock.set(EVENING)
    assert harness.api.put_account("acme", 10).status == 200
    assert harness.api.request("PUT", BUILDS, {"limit": 3, "period": "day"}).status == 200
    return harness


def test_the_history_is_each_periods_exact_total_newest_first_and_settled_once_counted(evening: Harness) -> None:
    harness = evening
    assert [build(harness).status for _ in range(2)] == [201, 201]
    harness.clock.advance(timedelta(minutes=2))  # 00:01 on the 28th: the 27th ended a minute ago
    assert build(harness, amount=2).status == 201

    view = history(harness, periods=3)
    assert (view["accountId"], view["type"], view["period"]) == ("acme", "builds", "day")
    assert "anchor" not in view
    assert view["periods"][0]["periodEnd"] == "2026-11-29T00:00:00Z"
    assert rows(view) == [
        ("2026-11-28T00:00:00Z", 3, 2, 0, False),  # the current period is never settled
        ("2026-11-27T00:00:00Z", 3, 2, 0, False),  # over, but its records are not counted yet
        ("2026-11-26T00:00:00Z", 3, 0, 0, True),  # nobody created in it: 0, final
    ]
    harness.pump()
    assert rows(history(harness, periods=3))[:2] == [
        ("2026-11-28T00:00:00Z", 3, 2, 2, False),
        ("2026-11-27T00:00:00Z", 3, 2, 2, True),
    ]
    harness.check_invariants()


def test_a_period_settles_no_sooner_than_a_minute_after_its_end(evening: Harness) -> None:
    harness = evening
    assert build(harness).status == 201
    harness.pump()
    harness.clock.set(datetime(2026, 11, 28, 0, 0, 59, tzinfo=UTC))  # a request begun in it may still write
    assert history(harness)["periods"][1]["settled"] is False
    harness.clock.advance(timedelta(seconds=1))
    assert rows(history(harness))[1] == ("2026-11-27T00:00:00Z", 3, 1, 1, True)


def test_a_refund_within_the_period_is_out_of_its_total(evening: Harness) -> None:
    harness = evening
    kept, refunded = (build(harness).json()["resourceId"] for _ in range(2))
    assert harness.api.delete("acme", refunded, "builds").status == 204
    harness.clock.advance(timedelta(minutes=2))
    assert history(harness)["periods"][1]["settled"] is False  # the refund is not counted yet
    harness.pump()
    assert rows(history(harness))[1] == ("2026-11-27T00:00:00Z", 3, 1, 1, True)
    assert kept


def test_each_period_answers_its_own_limit_and_one_never_opened_the_quotas_current_one(evening: Harness) -> None:
    harness = evening
    assert build(harness).status == 201
    harness.clock.advance(timedelta(minutes=2))
    assert harness.api.request("PUT", BUILDS, {"limit": 7}).status == 200
    harness.pump()
    assert [(start, limit) for start, limit, *_ in rows(history(harness, periods=3))] == [
        ("2026-11-28T00:00:00Z", 7),  # not opened yet: the quota's limit now
        ("2026-11-27T00:00:00Z", 3),  # as it stood when it ended
        ("2026-11-26T00:00:00Z", 7),
    ]


def test_a_create_that_died_in_its_period_keeps_it_unsettled_until_a_heal_frees_its_slot(
    evening: Harness, faults: Faults
) -> None:
    harness = evening
    assert build(harness).status == 201
    faults.crash_after_write("reserve")  # a slot held by a lease, no record
    with pytest.raises(faults.SimulatedCrash):
        build(harness)
    harness.clock.advance(timedelta(minutes=2))
    harness.pump()
    assert rows(history(harness))[1] == ("2026-11-27T00:00:00Z", 3, 1, 1, False)
    healed = heal_account(harness.wiring.healing_store, BUILDS_QUOTA.in_period(TODAY), harness.clock.now(), QUIET)
    assert healed.outcome is HealOutcome.HEALED, healed
    assert rows(history(harness))[1] == ("2026-11-27T00:00:00Z", 3, 1, 1, True)


def test_a_busy_periods_total_adds_up_its_counter_shards(evening: Harness) -> None:
    harness = evening
    assert harness.api.request("PUT", BUILDS, {"limit": 30}).status == 200
    ticks = [0.0]
    hot = Directory(ShardingSettings(grow_at=1, min_window=1), clock=lambda: ticks[0], rng=random.Random(3))
    created = 0
    for index in range(34):
        try:
            accounts.create_resource(
                harness.wiring.api_store,
                BUILDS_QUOTA,
                NewResource(name=f"b{index}"),
                None,
                harness.clock.timestamp,
                directory=hot,
            )
            created += 1
        except LimitExceeded:
            pass
        ticks[0] += 0.5  # two creates a second on one shard: past grow_at
    assert created == 30
    assert harness.wiring.api_store.read_shards(BUILDS_QUOTA.in_period(TODAY), [0])[0].span > 1
    harness.clock.advance(timedelta(minutes=2))
    harness.pump()
    assert rows(history(harness))[1] == ("2026-11-27T00:00:00Z", 30, 30, 30, True)


@pytest.mark.engine
def test_the_account_routes_read_the_default_types_history_of_a_month_with_its_anchor(harness: Harness) -> None:
    harness.clock.set(datetime(2026, 11, 27, 12, 0, tzinfo=UTC))
    body = {"limit": 5, "period": "month", "anchor": "2026-01-15T00:00:00Z"}
    assert harness.api.request("PUT", "/accounts/acme", body).status == 200
    assert harness.api.request("POST", "/accounts/acme/resources", {"name": "call"}).status == 201
    view = history(harness, "/accounts/acme", periods=13)
    assert (view["type"], view["period"], view["anchor"]) == ("default", "month", "2026-01-15T00:00:00Z")
    starts = [row["periodStart"] for row in view["periods"]]
    assert starts[:3] == ["2026-11-15T00:00:00Z", "2026-10-15T00:00:00Z", "2026-09-15T00:00:00Z"]
    assert (len(starts), starts[-1]) == (13, "2025-11-15T00:00:00Z")
    assert view["periods"][0]["used"] == 1


def test_one_batch_get_reads_every_period_of_a_quiet_quota(evening: Harness, backend: Any) -> None:
    harness = evening
    assert build(harness).status == 201
    harness.clock.advance(timedelta(minutes=2))
    assert build(harness).status == 201
    meter = CapacityMeter(harness.wiring.dynamodb, reader=boto3.client("dynamodb", endpoint_url=backend.endpoint_url))
    with meter.operation("history") as usage:
        history(harness, periods=13)
    # The type's account item (1 key), then each period's shard 0 and counter (26 keys), two opened.
    assert usage.calls["BatchGetItem"] == 2
    assert usage.total_rcu == 1 + 2 * 13
    # Besides, as every request: the tenant's rate window (functions/core/rate_limits.py).
    assert {name for name in usage.calls if name != "BatchGetItem"} <= {"UpdateItem"}
    assert all(partition.startswith("RATE#") for _, partition in usage.wcu), usage.wcu


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        (f"{BUILDS}/history?periods=0", 400, "ValidationError"),
        (f"{BUILDS}/history?periods=14", 400, "ValidationError"),
        (f"{BUILDS}/history?periods=two", 400, "ValidationError"),
        ("/accounts/acme/types/seats/history", 404, "AccountNotFound"),
        ("/accounts/nobody/history", 404, "AccountNotFound"),
        ("/accounts/acme/history", 409, "QuotaNotPeriodic"),  # the default type holds
    ],
)
def test_what_has_no_history_is_refused_with_nothing_written(
    evening: Harness, path: str, status: int, code: str
) -> None:
    harness = evening
    before = read_truth(harness.backend.dynamodb, harness.backend.table)
    answer = harness.api.request("GET", path)
    assert (answer.status, answer.json()["error"]["code"]) == (status, code), answer.text
    assert read_truth(harness.backend.dynamodb, harness.backend.table) == before


def test_a_history_is_a_get_only_path(evening: Harness) -> None:
    answer = evening.api.request("POST", f"{BUILDS}/history", {})
    assert (answer.status, answer.headers.get("Allow")) == (405, "GET")

"""Periodic quotas (issue 39): a quota limited per day or month counts the units created since its
period began, starts at 0 at each period's end with no write at the boundary, and admits exactly
within each period; its usage records live with the quota whatever their period, so a retry with
the same Idempotency-Key in the next period is the same record, counted in its first period
(docs/periods.md)."""

from __future__ import annotations

import os
import random
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from functions.adapters import keys
from functions.adapters.api_store import DynamoApiStore
from functions.core import accounts
from functions.core.admission import Directory, ShardingSettings
from functions.core.audit import audit
from functions.core.errors import LimitExceeded
from functions.core.healing import HealOutcome, heal_account
from functions.core.model import NewResource, Quota
from tests.handler.conftest import Harness
from tests.handler.patience import patient_stores
from tests.handler.test_healing import once
from tests.handler.test_invariants import run_together
from tests.handler.test_usage_thresholds import events as usage_events
from tests.support.truth import read_truth

BUILDS = "/accounts/acme/types/builds"
# Late on a day (UTC): a test moves the clock over midnight from here.
EVENING = datetime(2026, 11, 27, 23, 59, 0, tzinfo=UTC)
TODAY, TOMORROW = "20261127T000000Z", "20261128T000000Z"
BUILDS_QUOTA = Quota("acme", "builds")
QUIET = timedelta(minutes=6)


def put_builds(harness: Harness, limit: int, **period: Any) -> Any:
    body = {"limit": limit, "period": "day", **period}
    return harness.api.request("PUT", BUILDS, body)


def build(harness: Harness, key: str | None = None, amount: int = 1) -> Any:
    headers = {"Idempotency-Key": key} if key else None
    body: dict[str, Any] = {"name": "build"}
    if amount != 1:
        body["amount"] = amount
    return harness.api.request("POST", f"{BUILDS}/resources", body, headers)


def builds(harness: Harness) -> dict[str, Any]:
    response = harness.api.request("GET", BUILDS)
    assert response.status == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def period_truth(harness: Harness, period: str) -> Any:
    return harness.truth(Quota("acme", "builds", period))


@pytest.fixture
def evening(harness: Harness) -> Harness:
    harness.clock.set(EVENING)
    assert harness.api.put_account("acme", 10).status == 200
    return harness


def test_a_day_quota_admits_its_limit_each_day_and_starts_at_zero_with_no_write_at_midnight(evening: Harness) -> None:
    harness = evening
    answer = put_builds(harness, 3)
    assert answer.status == 200, answer.text
    view = answer.json()
    assert (view["period"], view["periodStart"], view["periodEnd"]) == (
        "day",
        "2026-11-27T00:00:00Z",
        "2026-11-28T00:00:00Z",
    )
    assert [build(harness).status for _ in range(4)] == [201, 201, 201, 409]
    assert builds(harness)["bestEffort"] == 3
    harness.pump()
    assert (builds(harness)["eventual"], builds(harness)["available"]) == (3, 0)
    harness.check_invariants()

    table_before = read_truth(harness.backend.dynamodb, harness.backend.table)
    harness.clock.advance(timedelta(minutes=2))  # past midnight
    view = builds(harness)
    assert (view["periodStart"], view["bestEffort"], view["eventual"], view["available"]) == (
        "2026-11-28T00:00:00Z",
        0,
        0,
        3,
    )
    # Nothing was written for the new day: its reads found no item of it.
    assert read_truth(harness.backend.dynamodb, harness.backend.table) == table_before
    assert keys.account_pk(Quota("acme", "builds", TOMORROW)) not in table_before

    assert [build(harness).status for _ in range(4)] == [201, 201, 201, 409]
    harness.pump()
    harness.check_invariants()
    assert (period_truth(harness, TODAY).eventual, period_truth(harness, TOMORROW).eventual) == (3, 3)
    assert builds(harness)["eventual"] == 3


def test_a_record_delivered_after_its_period_ended_counts_in_its_own_period(evening: Harness) -> None:
    harness = evening
    put_builds(harness, 5)
    assert build(harness, amount=2).status == 201
    harness.clock.advance(timedelta(minutes=2))
    assert build(harness).status == 201
    harness.pump()  # both records reach the consumer after midnight
    assert (period_truth(harness, TODAY).eventual, period_truth(harness, TOMORROW).eventual) == (2, 1)
    harness.check_invariants()


def test_a_retry_in_the_next_period_with_the_same_key_is_the_same_record_counted_once(evening: Harness) -> None:
    harness = evening
    put_builds(harness, 5)
    first = build(harness, key="build-42")
    assert first.status == 201
    harness.clock.advance(timedelta(minutes=2))
    again = build(harness, key="build-42")
    assert again.json()["resourceId"] == first.json()["resourceId"]
    harness.pump()
    assert (period_truth(harness, TODAY).eventual, period_truth(harness, TOMORROW).eventual) == (1, 0)
    assert builds(harness)["used"] == 0
    harness.check_invariants()


@pytest.mark.engine
def test_a_delete_within_the_period_refunds_and_after_it_is_refused_as_history(evening: Harness) -> None:
    harness = evening
    put_builds(harness, 2)
    kept, refunded = (build(harness).json()["resourceId"] for _ in range(2))
    assert build(harness).status == 409
    assert harness.api.delete("acme", refunded, "builds").status == 204
    assert build(harness).status == 201  # the refunded unit is free again today
    harness.pump()
    harness.clock.advance(timedelta(minutes=2))
    closed = harness.api.delete("acme", kept, "builds")
    assert (closed.status, closed.json()["error"]["code"]) == (409, "PeriodClosed")
    resize = harness.api.request("PATCH", f"{BUILDS}/resources/{kept}", {"amount": 2})
    assert (resize.status, resize.json()["error"]["code"]) == (409, "PeriodClosed")
    harness.pump()
    assert period_truth(harness, TODAY).eventual == 2
    harness.check_invariants()


def test_a_limit_changed_mid_period_applies_to_the_current_period_at_once(evening: Harness) -> None:
    harness = evening
    put_builds(harness, 2)
    assert [build(harness).status for _ in range(3)] == [201, 201, 409]
    assert put_builds(harness, 4).status == 200  # the period is open: its room grows by 2
    assert [build(harness).status for _ in range(3)] == [201, 201, 409]
    assert put_builds(harness, 1).status == 200  # lowered under its usage: nothing admits
    assert build(harness).status == 409
    assert builds(harness)["limit"] == 1
    harness.check_invariants()
    harness.clock.advance(timedelta(minutes=2))
    assert [build(harness).status for _ in range(2)] == [201, 409]  # the new day opens at 1
    harness.pump()
    harness.check_invariants()


@pytest.mark.engine
def test_a_holding_quota_becomes_periodic_only_while_empty_and_a_periodic_one_keeps_its_period(
    evening: Harness,
) -> None:
    harness = evening
    assert harness.api.put_type("acme", "builds", 2).status == 200
    resource = build(harness).json()["resourceId"]
    refused = put_builds(harness, 2)
    assert (refused.status, refused.json()["error"]["code"]) == (409, "PeriodChangeRefused")
    assert "period" not in builds(harness)
    assert harness.api.delete("acme", resource, "builds").status == 204
    harness.pump()
    assert put_builds(harness, 2).status == 200
    assert builds(harness)["period"] == "day"
    monthly = harness.api.request("PUT", BUILDS, {"limit": 2, "period": "month"})
    assert (monthly.status, monthly.json()["error"]["code"]) == (409, "PeriodChangeRefused")
    assert harness.api.put_type("acme", "builds", 3).status == 200  # no period: it keeps its own
    assert builds(harness)["period"] == "day"


@pytest.mark.engine
def test_a_month_anchored_on_the_31st_ends_on_the_last_day_of_a_shorter_month(harness: Harness) -> None:
    harness.clock.set(datetime(2027, 2, 27, 12, 0, tzinfo=UTC))
    assert harness.api.put_account("acme", 10).status == 200
    answer = harness.api.request("PUT", BUILDS, {"limit": 1, "period": "month", "anchor": "2027-01-31T00:00:00Z"})
    assert answer.status == 200, answer.text
    view = answer.json()
    assert (view["anchor"], view["periodStart"], view["periodEnd"]) == (
        "2027-01-31T00:00:00Z",
        "2027-01-31T00:00:00Z",
        "2027-02-28T00:00:00Z",
    )
    assert [build(harness).status for _ in range(2)] == [201, 409]
    harness.clock.set(datetime(2027, 2, 28, 0, 0, 1, tzinfo=UTC))
    assert builds(harness)["periodEnd"] == "2027-03-31T00:00:00Z"
    assert build(harness).status == 201


@pytest.mark.parametrize(
    "body",
    [
        {"limit": 1, "period": "week"},
        {"limit": 1, "period": None},
        {"limit": 1, "anchor": "2026-01-15T00:00:00Z"},
        {"limit": 1, "period": "month", "anchor": "2026-01-15"},
        {"limit": 1, "period": "month", "anchor": "2026-01-15T00:00:00.5Z"},
        {"limit": 1, "period": "month", "anchor": None},
        {"limit": 1, "period": "day", "anchor": 1700000000},
    ],
    ids=["unknown period", "null period", "anchor alone", "date only", "fraction", "null anchor", "number"],
)
def test_a_period_the_api_does_not_take_is_a_400_with_nothing_written(harness: Harness, body: dict[str, Any]) -> None:
    assert harness.api.put_account("acme", 10).status == 200
    answer = harness.api.request("PUT", BUILDS, body)
    assert (answer.status, answer.json()["error"]["code"]) == (400, "ValidationError"), answer.text
    assert harness.api.request("GET", BUILDS).status == 404


def crossings(harness: Harness, period: str) -> list[tuple[int, str, int, str]]:
    """The period's threshold crossings, in order: threshold, direction, usage, period start."""
    return [
        (event["threshold"], event["direction"], event["usage"], event["periodStart"])
        for event in usage_events(harness, Quota("acme", "builds", period))
    ]


def test_each_period_crosses_its_own_thresholds_and_a_rollover_announces_nothing(evening: Harness) -> None:
    harness = evening
    put_builds(harness, 5)  # boundaries: 4 (80%) and 5 (100%)
    for _ in range(5):
        assert build(harness).status == 201
        harness.pump()
    today = "2026-11-27T00:00:00Z"
    assert crossings(harness, TODAY) == [(80, "up", 4, today), (100, "up", 5, today)]

    harness.clock.advance(timedelta(minutes=2))
    assert build(harness).status == 201
    harness.pump()
    assert crossings(harness, TOMORROW) == []  # the new day starts below every threshold, silently
    assert put_builds(harness, 1).status == 200  # lowered mid-period: today's usage (1) is 100% of it
    harness.pump()
    tomorrow = "2026-11-28T00:00:00Z"
    assert crossings(harness, TOMORROW) == [(80, "up", 1, tomorrow), (100, "up", 1, tomorrow)]
    assert crossings(harness, TODAY) == [(80, "up", 4, today), (100, "up", 5, today)]  # history stands
    ids = [
        event["eventId"]
        for period in (TODAY, TOMORROW)
        for event in usage_events(harness, Quota("acme", "builds", period))
    ]
    assert len(set(ids)) == 4


def create_in(harness: Harness, index: int, directory: Directory, store: DynamoApiStore | None = None) -> Any:
    """A create of one build through the API's flow, by an execution environment (`directory`,
    and `store`: the harness's by default)."""
    return accounts.create_resource(
        store or harness.wiring.api_store,
        BUILDS_QUOTA,
        NewResource(name=f"b{index}"),
        None,
        harness.clock.timestamp,
        directory=directory,
    )


@pytest.mark.engine
def test_a_busy_period_spreads_over_shards_and_admits_exactly_its_limit_each_period(evening: Harness) -> None:
    harness = evening
    put_builds(harness, 30)
    ticks = [0.0]
    hot = Directory(ShardingSettings(grow_at=1, min_window=1), clock=lambda: ticks[0], rng=random.Random(3))
    outcomes = []
    for index in range(40):
        try:
            outcomes.append(create_in(harness, index, hot))
        except LimitExceeded as refused:
            outcomes.append(refused)
        ticks[0] += 0.5  # two creates a second on one shard: past grow_at
    assert sum(isinstance(outcome, accounts.Created) for outcome in outcomes) == 30
    today = harness.wiring.api_store.read_shards(BUILDS_QUOTA.in_period(TODAY), [0])[0]
    assert today.active > 1, today  # it grew within the period
    assert len({outcome.resource.shard for outcome in outcomes if isinstance(outcome, accounts.Created)}) > 1

    harness.clock.advance(timedelta(minutes=2))
    # Processes that never met the quota: each learns it is periodic from its first refused write.
    # Each with a store of its own that waits (45 at once on one emulator outlast the functions'
    # read timeout on a loaded machine: a run with four test workers failed so).
    stores = patient_stores(harness, 45)
    results = run_together(45, lambda i: create_in(harness, 100 + i, Directory(rng=random.Random(i)), stores[i]))
    assert sum(isinstance(result, accounts.Created) for result in results) == 30
    assert all(isinstance(result, (accounts.Created, LimitExceeded)) for result in results), results
    # The new day opened as spread as the last one ended, not on one shard to grow again.
    assert harness.wiring.api_store.read_shards(BUILDS_QUOTA.in_period(TOMORROW), [0])[0].span == today.active
    assert put_builds(harness, 5).status == 200  # lowered under the period's usage
    assert build(harness).status == 409
    harness.pump()
    harness.check_invariants()
    for period in (TODAY, TOMORROW):
        truth = period_truth(harness, period)
        assert (truth.live, truth.eventual) == (30, 30), (period, truth)
        healed = heal_account(harness.wiring.healing_store, BUILDS_QUOTA.in_period(period), harness.clock.now(), QUIET)
        assert healed.outcome in (HealOutcome.EXACT, HealOutcome.HEALED), healed
    harness.check_invariants()


@pytest.mark.engine
def test_the_audit_finds_each_period_exact_and_the_quota_itself_holding_nothing(evening: Harness) -> None:
    """A periodic quota's own account item admits nothing: its records are its periods', so an
    audit of it (the sweeper's slice, `ops audit`) must not count them as its own, and a heal of it
    has nothing to do."""
    harness = evening
    put_builds(harness, 5)
    for _ in range(3):
        assert build(harness, amount=2).status in {201, 409}
    harness.clock.advance(timedelta(minutes=2))
    assert build(harness).status == 201
    harness.pump()
    reads = harness.wiring.audit_reads
    for quota in (BUILDS_QUOTA, BUILDS_QUOTA.in_period(TODAY), BUILDS_QUOTA.in_period(TOMORROW)):
        finding = audit(partial(reads.recount, quota), quota)
        assert finding is not None, quota
        assert finding.verdict == "exact", (quota, finding)
    healed = heal_account(harness.wiring.healing_store, BUILDS_QUOTA, harness.clock.now(), QUIET)
    assert healed.outcome is HealOutcome.EXACT, healed


# A step of the property below: ("create", amount, key or None), ("refund", index), ("clock", 17-minute
# steps forward), ("limit", new limit). The clock only ever lands 3 s or more from a boundary
# (17 and 1,440 minutes share no factor), so a step's own running time never crosses one.
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("create"), st.integers(1, 3), st.sampled_from([None, None, "k1", "k2", "k3"])),
        st.tuples(st.just("refund"), st.integers(0, 30)),
        st.tuples(st.just("clock"), st.integers(1, 60)),  # 14 steps of 17 h at most: no record expires
        st.tuples(st.just("limit"), st.integers(0, 6)),
    ),
    min_size=1,
    max_size=14,
)
ACCOUNTS = iter(range(1_000_000))


@settings(
    max_examples=int(os.environ.get("PROPERTY_EXAMPLES", "12")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)
@pytest.mark.engine
@given(steps=STEPS, limit=st.integers(1, 6))
def test_any_sequence_of_creates_refunds_retries_limits_and_midnights_is_exact_per_period(
    harness: Harness, steps: list[tuple[Any, ...]], limit: int
) -> None:
    """Sequential calls, so the API must answer exactly what a model of the periods predicts: each
    create admitted iff its period's usage leaves room for its amount, a keyed retry the first
    record (in its first period, while its key lasts), a refund only within its period; and once
    counted, each period's eventual total is the sum of its records."""
    account = f"p{next(ACCOUNTS)}"
    quota, url = Quota(account, "builds"), f"/accounts/{account}/types/builds"
    harness.clock.set(EVENING - timedelta(hours=3, seconds=-3))
    start = harness.clock.now()
    assert harness.api.request("PUT", url, {"limit": limit, "period": "day"}).status == 200
    offset = timedelta(0)
    records: list[dict[str, Any]] = []  # the model: id, period, amount, refunded
    keyed: dict[str, dict[str, Any]] = {}
    limits = {"now": limit}

    def period_now() -> str:
        return (start + offset).strftime("%Y%m%dT000000Z")

    def used(period: str) -> int:
        return sum(r["amount"] for r in records if r["period"] == period and not r["refunded"])

    for step in steps:
        if step[0] == "clock":
            offset += timedelta(minutes=17 * step[1])
            harness.clock.set(start + offset)
        elif step[0] == "limit":
            limits["now"] = step[1]
            assert harness.api.request("PUT", url, {"limit": step[1]}).status == 200
        elif step[0] == "create":
            _, amount, key = step
            headers = {"Idempotency-Key": key} if key else None
            answer = harness.api.request("POST", f"{url}/resources", {"name": "b", "amount": amount}, headers)
            earlier = keyed.get(key) if key else None
            if earlier is not None and earlier["amount"] != amount:
                assert answer.status == 422, answer.text  # the key came with another body
            elif earlier is not None and not earlier["refunded"]:
                assert (answer.status, answer.json()["resourceId"]) == (200, earlier["id"]), answer.text
            elif earlier is not None:
                assert answer.status == 409, answer.text  # IdempotencyKeyReused: its record was refunded
            elif used(period_now()) + amount <= limits["now"]:
                assert answer.status == 201, answer.text
                made = {"id": answer.json()["resourceId"], "period": period_now(), "amount": amount, "refunded": False}
                records.append(made)
                if key:
                    keyed[key] = made
            else:
                assert (answer.status, answer.json()["error"]["code"]) == (409, "LimitExceeded"), answer.text
        elif records:
            record = records[step[1] % len(records)]
            answer = harness.api.request("DELETE", f"{url}/resources/{record['id']}")
            if record["refunded"]:
                assert answer.status == 404, answer.text
            elif record["period"] != period_now():
                assert (answer.status, answer.json()["error"]["code"]) == (409, "PeriodClosed"), answer.text
            else:
                assert answer.status == 204, answer.text
                record["refunded"] = True
    harness.pump()
    for period in {r["period"] for r in records}:
        truth = harness.truth(quota.in_period(period))
        assert (truth.live, truth.eventual) == (used(period), used(period)), period
    view = harness.api.request("GET", url).json()
    assert (view["eventual"], view["bestEffort"]) == (used(period_now()), used(period_now()))
    harness.check_invariants()


def test_a_record_and_its_key_outlive_its_period_by_the_dead_letter_queues_retention(evening: Harness) -> None:
    """A stream record may wait 14 days in a dead-letter queue: its usage record must still be
    there when it is replayed (TTL would remove it), and until then its key names it."""
    harness = evening
    put_builds(harness, 5)
    first = build(harness, key="nightly").json()["resourceId"]
    held_back = harness.tap.drain()  # its stream records wait, as in a dead-letter queue
    harness.clock.advance(timedelta(days=13))
    again = build(harness, key="nightly")
    assert (again.status, again.json()["resourceId"]) == (200, first)
    assert harness.deliver(held_back) == []  # replayed 13 days later: counted, in its own period
    harness.pump()
    assert period_truth(harness, TODAY).eventual == 1
    harness.clock.advance(timedelta(days=2))  # past its period's end and 14 days: a new record
    assert build(harness, key="nightly").status == 201


def test_the_admission_read_and_the_list_are_of_the_current_period(evening: Harness) -> None:
    harness = evening
    put_builds(harness, 5)

    def free() -> int:
        answer = harness.api.request("GET", f"{BUILDS}/admission?amount=2")
        assert answer.status == 200, answer.text
        return answer.json()["free"]  # type: ignore[no-any-return]

    def listed() -> set[str]:
        answer = harness.api.request("GET", f"{BUILDS}/resources")
        assert answer.status == 200, answer.text
        return {item["resourceId"] for item in answer.json()["items"]}

    assert free() == 5  # no period opened yet: all of the limit
    yesterday = {build(harness, amount=2).json()["resourceId"] for _ in range(2)}
    assert (free(), listed()) == (1, yesterday)
    harness.clock.advance(timedelta(minutes=2))
    assert (free(), listed()) == (5, set())
    today = {build(harness).json()["resourceId"]}
    assert (free(), listed()) == (4, today)


@pytest.mark.engine
def test_a_period_opened_while_a_limit_change_is_in_flight_gets_the_new_limit(evening: Harness) -> None:
    """The PUT read the period not opened yet; the period's first create opens it (from the old
    limit) before the PUT's write lands: the PUT must not land without changing that period."""
    harness = evening
    put_builds(harness, 1)

    def open_the_period_first() -> None:
        assert build(harness).status == 201  # opens today at limit 1, and takes it

    harness.faults.before_call(
        "TransactWriteItems", once(lambda params: "#limit = :limit" in str(params), open_the_period_first)
    )
    assert put_builds(harness, 3).status == 200
    assert [build(harness).status for _ in range(3)] == [201, 201, 409]
    assert builds(harness)["limit"] == 3
    harness.check_invariants()


def test_a_create_landing_while_a_holding_becomes_periodic_makes_the_change_refused(evening: Harness) -> None:
    """The PUT read the holding empty; a create lands before the PUT's write: the quota must not
    become periodic holding a resource its periods know nothing of."""
    harness = evening
    assert harness.api.put_type("acme", "builds", 2).status == 200

    def create_first() -> None:
        assert build(harness).status == 201

    harness.faults.before_call("UpdateItem", once(lambda params: ":period" in str(params), create_first))
    harness.faults.before_call("TransactWriteItems", once(lambda params: ":period" in str(params), create_first))
    refused = put_builds(harness, 2)
    assert (refused.status, refused.json()["error"]["code"]) == (409, "PeriodChangeRefused"), refused.text
    assert "period" not in builds(harness)
    harness.check_invariants()

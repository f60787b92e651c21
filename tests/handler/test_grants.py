"""Expiring grants (docs/plans.md, "Expiring grants"): an override with `expiresAt`, admitted up to
its limit before its end and never after it (even before anything reverts it), returned to the
plan's limit by the sweeper once with its Limit Changed event, and ordered with the PUTs around it
by when API Gateway received them. Through the real handler and the table's conditions."""

from __future__ import annotations

import itertools
import os
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from functions.core.model import Quota
from functions.core.periods import format_instant
from tests.handler.conftest import Harness
from tests.handler.test_limit_changes import limit_changes
from tests.support.api_events import ApiResponse
from tests.support.lambda_context import FakeLambdaContext

PLAN = {"quotas": {"seats": {"limit": 2}, "builds": {"limit": 100, "period": "month"}}}
SEATS = Quota("acme", "seats")
NOON = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def on_plan(harness: Harness) -> None:
    harness.clock.set(NOON)
    assert harness.api.request("PUT", "/plans/pro", PLAN).status == 200
    assert harness.api.request("PUT", "/accounts/acme", {"plan": "pro"}).status == 200


def grant(harness: Harness, limit: int, ends: datetime | str, resource_type: str = "seats") -> ApiResponse:
    expires = ends if isinstance(ends, str) else format_instant(ends)
    body = {"limit": limit, "expiresAt": expires}
    return harness.api.request("PUT", f"/accounts/acme/types/{resource_type}", body)


def create(harness: Harness, count: int = 1) -> list[int]:
    return [harness.api.create("acme", resource_type="seats").status for _ in range(count)]


def sweep(harness: Harness) -> dict[str, Any]:
    from functions.sweeper.handler import handler as sweeper

    return sweeper({}, FakeLambdaContext(function_name="sweeper"), wiring=harness.wiring)  # type: ignore[no-any-return]


def seats(harness: Harness) -> dict[str, Any]:
    answer = harness.api.request("GET", "/accounts/acme/types/seats")
    assert answer.status == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def everything(harness: Harness) -> list[dict[str, Any]]:
    backend = harness.backend
    items = backend.dynamodb.scan(TableName=backend.table, ConsistentRead=True)["Items"]
    return sorted(items, key=lambda item: (item["pk"]["S"], item["sk"]["S"]))


def test_a_grant_admits_to_its_limit_before_its_end_and_reads_say_when_it_ends(harness: Harness) -> None:
    on_plan(harness)
    ends = NOON + timedelta(hours=1)
    answer = grant(harness, 4, ends)
    assert answer.status == 200, answer.text
    assert (answer.json()["limit"], answer.json()["limitSource"], answer.json()["expiresAt"]) == (
        4,
        "override",
        "2026-12-01T13:00:00Z",
    )
    assert create(harness, 5) == [201, 201, 201, 201, 409]
    listed = harness.api.request("GET", "/accounts/acme/types").json()["items"]
    assert [t.get("expiresAt") for t in listed if t["type"] == "seats"] == ["2026-12-01T13:00:00Z"]
    account = harness.api.account("acme")
    assert {t["type"]: t.get("expiresAt") for t in account["types"]} == {
        "builds": None,
        "seats": "2026-12-01T13:00:00Z",
    }


def test_a_create_at_its_end_is_refused_by_the_plans_limit_before_any_sweep(harness: Harness) -> None:
    """Nothing has reverted the grant: the create's own reservation finds it ended, ends it (the
    plan's limit, one Limit Changed event) and is refused by the plan's limit of 2."""
    on_plan(harness)
    grant(harness, 4, NOON + timedelta(minutes=30))
    assert create(harness, 2) == [201, 201]
    harness.clock.set(NOON + timedelta(minutes=30))
    refused = harness.api.create("acme", resource_type="seats")
    assert (refused.status, refused.json()["error"]["code"]) == (409, "LimitExceeded"), refused.text
    assert "limit of 2" in refused.json()["error"]["message"]
    read = seats(harness)
    assert (read["limit"], read["limitSource"], "expiresAt" in read) == (2, "plan", False)
    assert [(c["oldLimit"], c["newLimit"]) for c in limit_changes(harness, SEATS)] == [(2, 4), (4, 2)]
    assert sweep(harness)["grants_ended"] == 0  # ended already: its entry is only forgotten


def test_a_create_just_before_its_end_is_admitted_by_the_grant(harness: Harness) -> None:
    on_plan(harness)
    grant(harness, 3, NOON + timedelta(minutes=30))
    assert create(harness, 2) == [201, 201]
    harness.clock.set(NOON + timedelta(minutes=30) - timedelta(seconds=1))
    assert create(harness, 2) == [201, 409]
    assert seats(harness)["limit"] == 3


def test_the_sweep_ends_a_grant_once_with_one_limit_changed_event(harness: Harness) -> None:
    on_plan(harness)
    grant(harness, 5, NOON + timedelta(minutes=10))
    assert create(harness, 3) == [201, 201, 201]
    harness.clock.set(NOON + timedelta(minutes=12))
    assert sweep(harness)["grants_ended"] == 1
    read = seats(harness)
    assert (read["limit"], read["limitSource"], "expiresAt" in read) == (2, "plan", False)
    assert create(harness) == [409]  # 3 held, the plan's 2
    etag = harness.api.request("GET", "/accounts/acme/types/seats").headers["ETag"]
    assert sweep(harness)["grants_ended"] == 0
    changes = limit_changes(harness, SEATS)
    assert [(c["oldLimit"], c["newLimit"]) for c in changes] == [(2, 5), (5, 2)]
    assert changes[-1]["changedBy"] == "grant-expiry"
    assert harness.api.request("GET", "/accounts/acme/types/seats").headers["ETag"] == etag


def test_a_put_received_after_the_grant_wins_over_its_ending_however_late_either_lands(harness: Harness) -> None:
    """A new override received before the end but landing after the sweep ended the grant still
    stands (the ending is ordered right after the grant's PUT); a removal before the end leaves
    the sweep nothing to do."""
    on_plan(harness)
    grant(harness, 5, NOON + timedelta(seconds=10))
    harness.clock.set(NOON + timedelta(seconds=12))
    assert sweep(harness)["grants_ended"] == 1
    received_before_the_end = int((NOON + timedelta(seconds=9)).timestamp() * 1000)
    late = harness.api.request("PUT", "/accounts/acme/types/seats", {"limit": 7}, None, received_before_the_end)
    assert late.status == 200, late.text
    assert (seats(harness)["limit"], seats(harness)["limitSource"]) == (7, "override")
    grant(harness, 6, NOON + timedelta(minutes=20))
    assert harness.api.request("DELETE", "/accounts/acme/types/seats/override").status == 200
    harness.clock.set(NOON + timedelta(minutes=25))
    assert sweep(harness)["grants_ended"] == 0
    assert (seats(harness)["limit"], seats(harness)["limitSource"]) == (2, "plan")


def test_an_override_landing_while_the_sweep_ends_the_grant_stands(harness: Harness) -> None:
    """The sweep reads the grant, then a new override (received after the grant, before its end)
    lands first: the ending's write fails its version condition, reads again, finds a PUT received
    after the grant and writes nothing. The later-received PUT is what stays."""
    on_plan(harness)
    grant(harness, 5, NOON + timedelta(seconds=10))
    harness.clock.set(NOON + timedelta(seconds=12))
    received = int((NOON + timedelta(seconds=9)).timestamp() * 1000)
    fired: list[int] = []

    def override_first(params: dict[str, Any]) -> None:
        if fired or "ACCOUNT#acme#seats" not in str(params):
            return
        fired.append(1)
        answer = harness.api.request("PUT", "/accounts/acme/types/seats", {"limit": 7}, None, received)
        assert answer.status == 200, answer.text

    harness.faults.before_call("TransactWriteItems", override_first)
    sweep(harness)
    assert fired == [1]
    read = seats(harness)
    assert (read["limit"], read["limitSource"], "expiresAt" in read) == (7, "override", False)
    assert [(c["oldLimit"], c["newLimit"]) for c in limit_changes(harness, SEATS)] == [(2, 5), (5, 7)]


def test_a_put_received_before_the_grant_never_overwrites_it_or_its_ending(harness: Harness) -> None:
    on_plan(harness)
    earlier = harness.clock.epoch_ms() - 1_000
    grant(harness, 5, NOON + timedelta(minutes=10))
    stale = harness.api.request("PUT", "/accounts/acme/types/seats", {"limit": 9}, None, earlier)
    assert stale.status == 200
    assert seats(harness)["limit"] == 5
    harness.clock.set(NOON + timedelta(minutes=11))
    sweep(harness)
    assert (seats(harness)["limit"], seats(harness)["limitSource"]) == (2, "plan")


@pytest.mark.parametrize(
    ("resource_type", "expires", "why"),
    [
        ("seats", "2026-12-01T11:59:59Z", "past"),
        ("seats", "2026-12-01T12:00:00Z", "now"),
        ("seats", "2027-12-03T12:00:00Z", "more than 366 days ahead"),
        ("seats", "tomorrow", "not a time"),
        ("seats", "2026-12-32T00:00:00Z", "no such day"),
        ("seats", "2026-12-01T13:00:00+01:00", "not UTC"),
        ("seats", 1765000000, "not a string"),
        ("seats", None, "null"),
        ("extra", "2026-12-01T13:00:00Z", "a type with no plan behind it"),
        ("newtype", "2026-12-01T13:00:00Z", "a type the account lacks"),
        ("builds", "2026-12-01T13:00:00Z", "a periodic quota"),
    ],
)
def test_a_hostile_expiry_is_a_400_with_nothing_written(
    harness: Harness, resource_type: str, expires: Any, why: str
) -> None:
    on_plan(harness)
    harness.api.put_type("acme", "extra", 3)
    harness.clock.set(NOON)
    before = everything(harness)
    answer = harness.api.request(
        "PUT", f"/accounts/acme/types/{resource_type}", {"limit": 4, "expiresAt": expires}, {"Idempotency-Key": "k1"}
    )
    assert (answer.status, answer.json()["error"]["code"]) == (400, "ValidationError"), (why, answer.text)
    assert everything(harness) == before, why


def test_the_default_type_never_expires(harness: Harness) -> None:
    on_plan(harness)
    answer = harness.api.request("PUT", "/accounts/acme", {"limit": 4, "expiresAt": "2026-12-01T13:00:00Z"})
    assert (answer.status, answer.json()["error"]["code"]) == (400, "ValidationError"), answer.text


@pytest.mark.engine
def test_a_grant_on_a_sharded_type_admits_on_shard_0_alone_and_never_past_its_end(harness: Harness) -> None:
    """A type grown to 4 shards: the grant retires the others (their room home), growth is refused
    while it stands, and a create at the end is refused by the plan's limit."""
    from functions.adapters.shards import ShardStore

    on_plan(harness)
    store = ShardStore(harness.wiring.table)
    grant(harness, 40, NOON + timedelta(hours=1))
    harness.api.request("DELETE", "/accounts/acme/types/seats/override")  # back to 2, then a big own override
    assert harness.api.put_type("acme", "seats", 40).status == 200
    assert store.set_active(SEATS, 1, 1, 4)
    assert create(harness, 3) == [201, 201, 201]
    assert grant(harness, 41, NOON + timedelta(hours=1)).status == 200
    first = store.read_shards(SEATS, [0])[0]
    assert (first.active, first.room) == (1, 38)
    assert not store.set_active(SEATS, 1, first.span, 2)  # no growth while the grant stands
    harness.clock.set(NOON + timedelta(hours=1))
    assert create(harness) == [409]
    assert seats(harness)["limit"] == 2


@pytest.mark.engine
def test_a_growth_after_the_end_of_a_resource_admitted_on_another_shard_is_refused_by_the_plans_limit(
    harness: Harness,
) -> None:
    """A type grown to 4 shards admits resources on shards 1 to 3; a grant then retires them. After
    its end, growing one of those resources (its shard retired: room must be brought to it) finds
    the grant ended, ends it and is refused by the plan's limit of 2, with 3 held."""
    on_plan(harness)
    store = harness.wiring.api_store
    assert harness.api.put_type("acme", "seats", 10).status == 200
    assert store.set_active(SEATS, 1, 1, 4)
    ids = [harness.api.create("acme", f"r{index}", resource_type="seats").json()["resourceId"] for index in range(3)]
    elsewhere = [rid for rid in ids if (found := store.get_resource(SEATS, rid)) is not None and found.shard > 0]
    assert elsewhere, "no resource admitted on a shard but 0"
    assert grant(harness, 10, NOON + timedelta(minutes=5)).status == 200
    harness.clock.set(NOON + timedelta(minutes=5))
    grown = harness.api.request("PATCH", f"/accounts/acme/types/seats/resources/{elsewhere[0]}", {"amount": 2})
    assert (grown.status, grown.json()["error"]["code"]) == (409, "LimitExceeded"), grown.text
    assert (seats(harness)["limit"], seats(harness)["limitSource"]) == (2, "plan")


_accounts = itertools.count()


@settings(
    max_examples=int(os.environ.get("PROPERTY_EXAMPLES", "6")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    limit=st.integers(min_value=0, max_value=5),
    offset=st.integers(min_value=-3, max_value=3),
    made=st.integers(min_value=3, max_value=6),
)
@pytest.mark.engine
def test_creates_never_exceed_the_limit_in_force_when_they_are_received(
    harness: Harness, limit: int, offset: int, made: int
) -> None:
    """Whatever the grant, and however many creates come just before or at and after its end
    (`offset` seconds from it), a create is admitted exactly while the limit in force then (the
    grant's before the end, the plan's 2 from it) has room."""
    account = f"prop{next(_accounts)}"
    harness.clock.set(NOON)
    assert harness.api.request("PUT", "/plans/pro", PLAN).status == 200
    assert harness.api.request("PUT", f"/accounts/{account}", {"plan": "pro"}).status == 200
    ends = NOON + timedelta(minutes=5)
    body = {"limit": limit, "expiresAt": format_instant(ends)}
    assert harness.api.request("PUT", f"/accounts/{account}/types/seats", body).status == 200
    harness.clock.set(ends + timedelta(seconds=offset))
    statuses = [harness.api.create(account, resource_type="seats").status for _ in range(made)]
    in_force = limit if offset < 0 else 2
    assert statuses == [201] * min(made, in_force) + [409] * (made - min(made, in_force))

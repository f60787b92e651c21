"""Deleting an account (docs/plans.md, "Lifecycle"): refused creates from the DELETE on (replays
too), an Account Deleted event once, and nothing of the account left in the table once the sweeper
has erased it, a bystander account byte-identical. Read from the table (a Scan in the test only),
through the API handler, the consumer and the sweeper, at the harness's clock."""

from __future__ import annotations

import contextlib
import json
from datetime import timedelta
from typing import Any

import pytest

from functions.core.offboarding import finish_deletions
from tests.handler.conftest import Harness
from tests.support.lambda_context import FakeLambdaContext

KEY = {"Idempotency-Key": "order-1"}


def table_items(harness: Harness) -> list[dict[str, Any]]:
    client, table = harness.backend.dynamodb, harness.backend.table
    pages = client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True)
    return sorted((item for page in pages for item in page["Items"]), key=lambda i: (i["pk"]["S"], i["sk"]["S"]))


def of(items: list[dict[str, Any]], account: str) -> list[dict[str, Any]]:
    """The items that name the account in a key (its partitions, shards, counters, grants' entries,
    rate windows, its deletion's entry)."""
    return [item for item in items if account in f"{item['pk']['S']}#{item['sk']['S']}".replace("#", " ").split()]


def pump_and_see(harness: Harness) -> list[dict[str, Any]]:
    """Deliver the stream's records to the consumer until it is quiet; every record delivered."""
    seen: list[dict[str, Any]] = []
    for _ in range(5):
        records = harness.tap.drain()
        if not records:
            return seen
        seen += records
        assert harness.deliver(records) == []
    raise AssertionError("stream still busy")


def account_deleted_inserts(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        json.loads(record["dynamodb"]["NewImage"]["detail"]["S"])
        for record in records
        if record["eventName"] == "INSERT"
        and record["dynamodb"]["NewImage"].get("detail_type", {}).get("S") == "Account Deleted"
    ]


def sweep(harness: Harness) -> dict[str, Any]:
    from functions.sweeper.handler import handler as sweeper

    return sweeper({}, FakeLambdaContext(function_name="sweeper"), wiring=harness.wiring)  # type: ignore[no-any-return]


@pytest.fixture
def acme(harness: Harness) -> Harness:
    """acme on a plan (seats, with a grant), with its own limit, a type of its own, a periodic type,
    resources (one keyed, one deleted), a keyed PUT's record; globex beside it."""
    api = harness.api
    assert api.request("PUT", "/plans/team", {"quotas": {"seats": {"limit": 2}}}).status == 200
    assert api.request("PUT", "/accounts/acme", {"plan": "team"}).status == 200
    assert api.request("PUT", "/accounts/acme", {"limit": 5}, {"Idempotency-Key": "put-1"}).status == 200
    ends = (harness.clock.now() + timedelta(days=2)).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    assert api.request("PUT", "/accounts/acme/types/seats", {"limit": 4, "expiresAt": ends}).status == 200
    assert api.put_type("acme", "projects", 3).status == 200
    assert api.request("PUT", "/accounts/acme/types/builds", {"limit": 9, "period": "month"}).status == 200
    assert api.create("acme", "r1", key="order-1").status == 201
    gone = api.create("acme", "r2").json()["resourceId"]
    assert api.delete("acme", gone).status == 204
    assert api.create("acme", "s1", resource_type="seats").status == 201
    assert api.create("acme", "p1", resource_type="projects").status == 201
    assert api.create("acme", "b1", resource_type="builds").status == 201
    assert api.put_account("globex", 3).status == 200
    assert api.create("globex", "g1").status == 201
    pump_and_see(harness)
    return harness


def test_a_deleted_account_refuses_every_create_and_is_erased_after_the_bound(acme: Harness) -> None:
    api = acme.api
    before = table_items(acme)
    bystander = [item for item in before if not of([item], "acme")]
    assert of(before, "acme")

    first = api.request("DELETE", "/accounts/acme")
    assert first.status == 202, first.text
    again = api.request("DELETE", "/accounts/acme")
    assert (again.status, again.json()) == (202, first.json())  # the same deletion

    # Every create is refused from now on: the default type, a type, a periodic type, a replay.
    for response in (
        api.create("acme", "late"),
        api.create("acme", "late", resource_type="seats"),
        api.create("acme", "late", resource_type="builds"),
        api.request("POST", "/accounts/acme/resources", {"name": "r1", "attributes": {}}, KEY),
    ):
        assert (response.status, response.json()["error"]["code"]) == (404, "AccountNotFound"), response.text
    recreate = api.put_account("acme", 5)
    assert (recreate.status, recreate.json()["error"]["code"]) == (409, "AccountBeingDeleted")
    assert api.request("GET", "/accounts/acme").status == 404

    events = account_deleted_inserts(pump_and_see(acme))
    assert len(events) == 1
    assert events[0]["accountId"] == "acme"
    assert events[0]["resourceTypes"] == ["default", "builds", "projects", "seats"]

    # Not erased before the fence has settled (no create that reserved before it can still land).
    assert finish_deletions(acme.wiring.offboarding_store, acme.clock.now(), timedelta(seconds=60)) == 0
    acme.clock.advance(timedelta(seconds=61))
    # The sweeper's erasure alone (a whole sweep would also heal globex, as it heals any quiet account).
    assert finish_deletions(acme.wiring.offboarding_store, acme.clock.now(), timedelta(seconds=60)) == 1
    after = table_items(acme)
    left = of(after, "acme")
    # Only the tenant's rate windows, each with its TTL within minutes (docs/plans.md).
    assert all(item["pk"]["S"].startswith("RATE#") for item in left), left
    now = acme.clock.now().timestamp()
    assert all(int(item["expires_at"]["N"]) < now + 600 for item in left)
    assert [item for item in after if not of([item], "acme")] == bystander
    assert pump_and_see(acme) is not None  # the erasure's records change nothing for the consumer
    assert [item for item in table_items(acme) if not of([item], "acme")] == bystander

    # Erased, its id is free again: a new account, nothing of the old one.
    assert api.put_account("acme", 1).status == 200
    replay = api.request("POST", "/accounts/acme/resources", {"name": "r1", "attributes": {}}, KEY)
    assert replay.status == 201  # a new resource: the old key's record is gone with the account


def test_deleting_an_account_that_does_not_exist_is_404_with_nothing_written(harness: Harness) -> None:
    before = table_items(harness)
    response = harness.api.request("DELETE", "/accounts/nobody")
    assert (response.status, response.json()["error"]["code"]) == (404, "AccountNotFound")
    assert table_items(harness) == before


def test_a_create_racing_the_deletion_is_deleted_with_the_rest(acme: Harness) -> None:
    """The create reserves its slot before the fence and lands its resource after it: the erasure,
    once the fence has settled, deletes it with the rest."""
    answers: list[int] = []

    def delete_the_account_first(params: dict[str, Any]) -> None:
        if answers or "ACCOUNT#acme#projects" not in str(params.get("Item", {}).get("pk")):
            return
        answers.append(acme.api.request("DELETE", "/accounts/acme").status)

    acme.faults.before_call("PutItem", delete_the_account_first)
    landed = acme.api.create("acme", "racer", resource_type="projects")
    assert answers == [202]
    assert landed.status in (201, 503), landed.text  # its count's settle finds no shard
    pump_and_see(acme)
    acme.clock.advance(timedelta(seconds=61))
    assert sweep(acme)["accounts_erased"] == 1
    left = of(table_items(acme), "acme")
    assert all(item["pk"]["S"].startswith("RATE#") for item in left), left


@pytest.mark.parametrize("code", ["TransactionConflict", "ThrottlingError"])
def test_a_deletion_whose_record_lost_a_race_is_refused_retryable_not_answered_unrecorded(
    acme: Harness, code: str
) -> None:
    """The transaction that records the deletion (its entry and its Account Deleted event) is
    cancelled by a conflict with another transaction, or throttled: nothing of it landed, and the
    account is not being deleted. The DELETE is a retryable 503 with nothing written (not a 202
    for a deletion nobody recorded, whose fenced account no sweep would ever erase nor any event
    announce); its retry records it, announces it once, and the erasure leaves nothing."""
    before = table_items(acme)
    acme.faults.answer_instead(
        "TransactWriteItems",
        lambda params: "DELETIONS" in str(params),
        acme.faults.transaction_cancelled(code, "None"),
    )
    first = acme.api.request("DELETE", "/accounts/acme")
    assert first.status == 503, first.text
    assert table_items(acme) == before  # not fenced, nothing recorded
    assert acme.api.create("acme", "still-here").status == 201

    assert acme.api.request("DELETE", "/accounts/acme").status == 202
    events = account_deleted_inserts(pump_and_see(acme))
    assert [event["accountId"] for event in events] == ["acme"]
    acme.clock.advance(timedelta(seconds=61))
    assert finish_deletions(acme.wiring.offboarding_store, acme.clock.now(), timedelta(seconds=60)) == 1
    left = of(table_items(acme), "acme")
    assert all(item["pk"]["S"].startswith("RATE#") for item in left), left


@pytest.mark.engine
def test_an_account_whose_period_spread_over_shards_is_erased_whole(harness: Harness) -> None:
    """A busy period spreads over admission shards of its own (and counter shards), which its
    quota's span does not say: the fence and the erasure take each period's own span."""
    from functions.core import accounts
    from functions.core.admission import Directory, ShardingSettings
    from functions.core.errors import LimitExceeded
    from functions.core.model import NewResource, Quota

    api = harness.api
    assert api.put_account("acme", 3).status == 200
    assert api.request("PUT", "/accounts/acme/types/builds", {"limit": 30, "period": "day"}).status == 200
    ticks = [0.0]
    hot = Directory(ShardingSettings(grow_at=1, min_window=1), clock=lambda: ticks[0])
    for index in range(6):
        with contextlib.suppress(LimitExceeded):
            accounts.create_resource(
                harness.wiring.api_store,
                Quota("acme", "builds"),
                NewResource(name=f"b{index}"),
                None,
                harness.clock.timestamp,
                directory=hot,
            )
        ticks[0] += 0.5  # two creates a second on one shard: past grow_at
    pump_and_see(harness)
    assert any(item["pk"]["S"].startswith("SHARD#acme#builds@") for item in table_items(harness))

    assert api.request("DELETE", "/accounts/acme").status == 202
    pump_and_see(harness)
    harness.clock.advance(timedelta(seconds=61))
    assert finish_deletions(harness.wiring.offboarding_store, harness.clock.now(), timedelta(seconds=60)) == 1
    left = [item for item in of(table_items(harness), "acme") if not item["pk"]["S"].startswith("RATE#")]
    assert left == []

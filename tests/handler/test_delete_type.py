"""Deleting a type (docs/api.md, "Delete a type"): refused while it holds resources unless asked to
delete them, each then deleted as its DELETE does and counted by the stream; once it holds nothing,
every item of the type is gone from the table and its name from its account, the default type's
items byte-identical. Read from the table, through the API handler and the consumer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from functions.adapters import keys
from functions.adapters.attributes import from_attributes
from functions.core.model import Quota
from tests.handler.conftest import Harness

SEATS = Quota("acme", "seats")
TYPE_URL = "/accounts/acme/types/seats"


def table_items(harness: Harness) -> list[dict[str, Any]]:
    """Every item of the test's table (a Scan in the test, never in the product)."""
    client, table = harness.backend.dynamodb, harness.backend.table
    paginator = client.get_paginator("scan")
    return [item for page in paginator.paginate(TableName=table, ConsistentRead=True) for item in page["Items"]]


def of_type(item: dict[str, Any], quota: Quota) -> bool:
    """Whether the item is the type's: its own, or one of its periods' (their shards' and counters' too)."""
    owner = keys.quota_of(item["pk"]["S"])
    return owner is not None and owner.whole == quota


def type_items(harness: Harness, quota: Quota = SEATS) -> list[dict[str, Any]]:
    return [item for item in table_items(harness) if of_type(item, quota)]


def not_of_the_type(harness: Harness, quota: Quota = SEATS) -> list[dict[str, Any]]:
    """Every item but the type's, and but the account's rate windows: those count each request,
    the DELETE's too, in a window of the clock's (a new item once the clock passes into the next)."""
    return sorted(
        (
            item
            for item in table_items(harness)
            if not of_type(item, quota) and not item["pk"]["S"].startswith(keys.RATE_PREFIX)
        ),
        key=lambda item: (item["pk"]["S"], item["sk"]["S"]),
    )


def deleted(response: Any) -> bool:
    """A DELETE of a type answered 200: whether it removed the type."""
    assert response.status == 200, response.text
    return bool(response.json()["removed"])


def registered_types(harness: Harness) -> set[str]:
    account = harness.backend.dynamodb.get_item(
        TableName=harness.backend.table,
        Key={"pk": {"S": "ACCOUNT#acme"}, "sk": {"S": "ACCOUNT"}},
        ConsistentRead=True,
    )["Item"]
    return set(from_attributes(account).get("resource_types", set()))


@pytest.fixture
def acme(harness: Harness) -> Harness:
    """acme: a default type holding a counted bystander resource, and a type `seats` with two resources."""
    api = harness.api
    assert api.put_account("acme", 3).status == 200
    assert api.create("acme", "bystander").status == 201
    assert api.put_type("acme", "seats", 5).status == 200
    assert api.put_type("acme", "projects", 2).status == 200
    for name in ("s1", "s2"):
        assert api.create("acme", name, resource_type="seats").status == 201
    harness.pump()
    return harness


def test_a_type_holding_resources_is_refused_and_nothing_is_written(acme: Harness) -> None:
    before = table_items(acme)
    response = acme.api.request("DELETE", TYPE_URL)
    assert response.status == 409, response.text
    assert response.json()["error"]["code"] == "TypeNotEmpty"
    assert table_items(acme) == before


@pytest.mark.parametrize("value", ["maybe", "", "2", "true%00"])
def test_hostile_delete_resources_values_are_400_with_nothing_written(acme: Harness, value: str) -> None:
    before = table_items(acme)
    response = acme.api.request("DELETE", f"{TYPE_URL}?deleteResources={value}")
    assert response.status == 400, response.text
    assert response.json()["error"]["code"] == "ValidationError"
    assert table_items(acme) == before


def test_the_default_type_is_400_and_a_type_the_account_lacks_404(acme: Harness) -> None:
    before = table_items(acme)
    default = acme.api.request("DELETE", "/accounts/acme/types/default?deleteResources=true")
    assert (default.status, default.json()["error"]["code"]) == (400, "DefaultTypeNotDeletable")
    missing = acme.api.request("DELETE", "/accounts/acme/types/vms")
    assert (missing.status, missing.json()["error"]["code"]) == (404, "AccountNotFound")
    no_account = acme.api.request("DELETE", "/accounts/nobody/types/seats")
    assert (no_account.status, no_account.json()["error"]["code"]) == (404, "AccountNotFound")
    assert table_items(acme) == before


def test_an_empty_type_is_removed_at_once_with_every_item_of_it(acme: Harness) -> None:
    acme.api.put_type("acme", "projects", 4)  # a limit change: an outbox item in its partition
    bystanders = not_of_the_type(acme, Quota("acme", "projects"))
    assert type_items(acme, Quota("acme", "projects"))
    response = acme.api.request("DELETE", "/accounts/acme/types/projects")
    assert response.json() == {"accountId": "acme", "resourceType": "projects", "removed": True}, response.text
    assert type_items(acme, Quota("acme", "projects")) == []
    assert registered_types(acme) == {"seats"}
    after = not_of_the_type(acme, Quota("acme", "projects"))
    # Only the registry changed on the account item; every other item byte-identical.
    for item in (*bystanders, *after):
        if item["sk"]["S"] == "ACCOUNT" and item["pk"]["S"] == "ACCOUNT#acme":
            item.pop("resource_types")
    assert after == bystanders
    assert acme.api.request("GET", "/accounts/acme/types/projects").status == 404
    assert acme.api.request("DELETE", "/accounts/acme/types/projects").status == 404


def test_delete_resources_deletes_and_counts_each_then_the_type_goes(acme: Harness) -> None:
    bystander_before = [item for item in not_of_the_type(acme) if item["pk"]["S"] != "ACCOUNT#acme"]
    first = acme.api.request("DELETE", f"{TYPE_URL}?deleteResources=true")
    assert not deleted(first)  # its resources deleted; the stream has yet to count the deletes
    # Every create from now on is refused: the type's limit is 0.
    refused = acme.api.create("acme", "late", resource_type="seats")
    assert (refused.status, refused.json()["error"]["code"]) == (409, "LimitExceeded")
    acme.pump()  # the consumer counts each delete
    truth = acme.truth(SEATS)
    assert (truth.live, truth.eventual, truth.admitted) == (0, 0, 0)
    assert deleted(acme.api.request("DELETE", f"{TYPE_URL}?deleteResources=true"))
    assert type_items(acme) == []
    assert registered_types(acme) == {"projects"}
    bystander_after = [item for item in not_of_the_type(acme) if item["pk"]["S"] != "ACCOUNT#acme"]
    assert bystander_after == bystander_before
    assert acme.truth("acme").live == 1  # the default type's bystander, untouched
    acme.check_invariants()


@pytest.mark.engine
def test_a_type_its_plan_gives_is_409_plan_type(harness: Harness) -> None:
    api = harness.api
    assert api.request("PUT", "/plans/team", {"quotas": {"seats": {"limit": 2}}}).status == 200
    assert api.request("PUT", "/accounts/acme", {"plan": "team"}).status == 200
    before = table_items(harness)
    response = api.request("DELETE", TYPE_URL)
    assert (response.status, response.json()["error"]["code"]) == (409, "PlanType")
    assert api.request("PUT", TYPE_URL, {"limit": 4}).status == 200  # an override of the plan's type
    before = table_items(harness)
    overridden = api.request("DELETE", f"{TYPE_URL}?deleteResources=true")
    assert (overridden.status, overridden.json()["error"]["code"]) == (409, "PlanType")
    assert table_items(harness) == before


@pytest.mark.engine
def test_a_create_admitted_before_the_limit_fell_is_deleted_by_the_next_delete(acme: Harness) -> None:
    """The create reserves its slot, then the DELETE runs before its resource lands: the DELETE
    lowers the limit, deletes what is there and answers removed false (the create's slot is in flight); the
    create lands; the next DELETE deletes it, and the one after the stream counted it removes the
    type. Nothing of it is left, and no count."""
    answers: list[int] = []

    def delete_the_type_first(params: dict[str, Any]) -> None:
        if answers or "ACCOUNT#acme#seats" not in str(params.get("Item", {}).get("pk")):
            return
        answers.append(deleted(acme.api.request("DELETE", f"{TYPE_URL}?deleteResources=true")))

    acme.faults.before_call("PutItem", delete_the_type_first)
    assert acme.api.create("acme", "racer", resource_type="seats").status == 201
    assert answers == [False]
    acme.pump()
    assert acme.truth(SEATS).live == 1  # the racer
    assert not deleted(acme.api.request("DELETE", f"{TYPE_URL}?deleteResources=true"))
    acme.pump()
    assert deleted(acme.api.request("DELETE", f"{TYPE_URL}?deleteResources=true"))
    assert type_items(acme) == []
    acme.check_invariants()


def test_a_create_landing_between_the_read_and_the_removal_cancels_it(acme: Harness) -> None:
    """An empty type's removal is conditional on its items as read: a create admitted in between
    cancels it, the type stays with the create counted, and the DELETE answers 409 TypeNotEmpty."""
    projects = Quota("acme", "projects")
    created: list[int] = []

    def create_first(params: dict[str, Any]) -> None:
        if created or "ACCOUNT#acme#projects" not in str(params):
            return
        created.append(acme.api.create("acme", "p1", resource_type="projects").status)

    acme.faults.before_call("TransactWriteItems", create_first)
    response = acme.api.request("DELETE", "/accounts/acme/types/projects")
    assert created == [201]
    assert (response.status, response.json()["error"]["code"]) == (409, "TypeNotEmpty"), response.text
    acme.pump()
    assert acme.truth(projects).live == 1
    assert registered_types(acme) == {"seats", "projects"}
    acme.check_invariants()


def test_a_create_landing_while_the_removal_reads_the_partition_is_never_deleted(acme: Harness) -> None:
    """The create lands after the DELETE read the type as empty and before the removal reads its
    partition: the removal writes nothing (no item of it deleted) and the DELETE answers 409."""
    projects = Quota("acme", "projects")
    created: list[int] = []
    queries: list[int] = []

    def create_before_the_second_read(params: dict[str, Any]) -> None:
        if created or "ACCOUNT#acme#projects" not in str(params.get("ExpressionAttributeValues")):
            return
        queries.append(1)
        if len(queries) == 2:  # the removal's read of the partition
            created.append(acme.api.create("acme", "p1", resource_type="projects").status)

    acme.faults.before_call("Query", create_before_the_second_read)
    response = acme.api.request("DELETE", "/accounts/acme/types/projects")
    assert created == [201]
    assert (response.status, response.json()["error"]["code"]) == (409, "TypeNotEmpty"), response.text
    acme.pump()
    assert acme.truth(projects).live == 1
    acme.check_invariants()


BUILDS, BUILDS_URL = Quota("acme", "builds"), "/accounts/acme/types/builds"


@pytest.fixture
def periodic(harness: Harness) -> Harness:
    """acme: a bystander on its default type, and `builds`, 5 a day, with a record of yesterday
    (counted: history) and two of today, counted."""
    api = harness.api
    harness.clock.set(datetime(2026, 11, 27, 15, 0, tzinfo=UTC))
    assert api.put_account("acme", 3).status == 200
    assert api.create("acme", "bystander").status == 201
    assert api.request("PUT", BUILDS_URL, {"limit": 5, "period": "day", "thresholds": [50]}).status == 200
    assert api.create("acme", "yesterday", resource_type="builds").status == 201
    harness.pump()
    harness.clock.advance(timedelta(days=1))
    for name in ("b1", "b2"):
        assert api.create("acme", name, resource_type="builds").status == 201
    harness.pump()
    return harness


def test_a_periodic_type_holding_records_is_refused_without_delete_resources(periodic: Harness) -> None:
    before = table_items(periodic)
    response = periodic.api.request("DELETE", BUILDS_URL)
    assert (response.status, response.json()["error"]["code"]) == (409, "TypeNotEmpty"), response.text
    assert table_items(periodic) == before


@pytest.mark.engine
def test_delete_resources_deletes_todays_records_then_the_type_goes_with_its_history(periodic: Harness) -> None:
    """Today's records are deleted as their DELETE does (refunded, each counted); once counted the
    type goes with every item of it, yesterday's record and every period's items among them, and
    every other item is byte-identical."""
    harness, api = periodic, periodic.api
    bystanders = [item for item in not_of_the_type(harness, BUILDS) if item["pk"]["S"] != "ACCOUNT#acme"]
    today = Quota("acme", "builds", "20261128T000000Z")
    assert harness.truth(today).live == 2
    assert not deleted(api.request("DELETE", f"{BUILDS_URL}?deleteResources=true"))  # the deletes to count
    refused = api.create("acme", "late", resource_type="builds")
    assert (refused.status, refused.json()["error"]["code"]) == (409, "LimitExceeded")
    assert api.request("DELETE", BUILDS_URL).status == 409  # history left: only deleteResources removes it
    harness.pump()
    assert (harness.truth(today).live, harness.truth(today).eventual) == (0, 0)
    assert deleted(api.request("DELETE", f"{BUILDS_URL}?deleteResources=true"))
    assert type_items(harness, BUILDS) == []
    assert registered_types(harness) == set()
    assert [item for item in not_of_the_type(harness, BUILDS) if item["pk"]["S"] != "ACCOUNT#acme"] == bystanders
    assert api.request("GET", BUILDS_URL).status == 404
    # The same name can start again, from nothing.
    assert api.request("PUT", BUILDS_URL, {"limit": 1, "period": "day"}).status == 200
    assert api.create("acme", "again", resource_type="builds").status == 201
    harness.pump()
    harness.check_invariants()


def test_an_empty_periodic_type_goes_with_its_periods_items(harness: Harness) -> None:
    """A periodic type whose records were all deleted within their period holds none: it is
    removed without deleteResources, its period's items (its shard, its counter, its crossings)
    with it."""
    api = harness.api
    assert api.put_account("acme", 3).status == 200
    assert api.request("PUT", BUILDS_URL, {"limit": 2, "period": "month", "thresholds": [50]}).status == 200
    created = api.create("acme", "b1", resource_type="builds")
    assert created.status == 201
    harness.pump()
    assert api.request("DELETE", f"{BUILDS_URL}/resources/{created.json()['resourceId']}").status == 204
    harness.pump()
    assert any("@" in item["pk"]["S"] for item in type_items(harness, BUILDS))  # the period's own items
    assert deleted(api.request("DELETE", BUILDS_URL))
    assert type_items(harness, BUILDS) == []
    harness.check_invariants()


@pytest.mark.engine
def test_a_record_still_to_count_keeps_the_type_until_the_stream_counts_it(periodic: Harness) -> None:
    """Yesterday's last record, created before midnight and not yet counted, is history the
    stream still owes its period: the DELETE answers removed false until it is counted."""
    harness, api = periodic, periodic.api
    harness.clock.set(datetime(2026, 11, 28, 23, 59, tzinfo=UTC))
    assert api.create("acme", "last", resource_type="builds").status == 201
    harness.clock.advance(timedelta(minutes=2))  # the 29th: the 28th's records are history
    assert not deleted(api.request("DELETE", f"{BUILDS_URL}?deleteResources=true"))
    assert type_items(harness, BUILDS)
    harness.pump()
    assert deleted(api.request("DELETE", f"{BUILDS_URL}?deleteResources=true"))
    assert type_items(harness, BUILDS) == []
    harness.check_invariants()


def test_a_record_admitted_before_the_limit_fell_is_deleted_by_the_next_delete(periodic: Harness) -> None:
    """The create reserves its slot in today's period, then the DELETE runs before its record
    lands: the DELETE answers removed false (a slot in flight); the record lands; the next DELETE
    deletes it (refunded); the one after the stream counted it removes the type with its history."""
    harness, api = periodic, periodic.api
    answers: list[bool] = []

    def delete_the_type_first(params: dict[str, Any]) -> None:
        if answers or "ACCOUNT#acme#builds" not in str(params.get("Item", {}).get("pk")):
            return
        answers.append(deleted(api.request("DELETE", f"{BUILDS_URL}?deleteResources=true")))

    harness.faults.before_call("PutItem", delete_the_type_first)
    assert api.create("acme", "racer", resource_type="builds").status == 201
    assert answers == [False]
    harness.pump()
    assert harness.truth(Quota("acme", "builds", "20261128T000000Z")).live == 1  # the racer
    assert not deleted(api.request("DELETE", f"{BUILDS_URL}?deleteResources=true"))
    harness.pump()
    assert deleted(api.request("DELETE", f"{BUILDS_URL}?deleteResources=true"))
    assert type_items(harness, BUILDS) == []
    harness.check_invariants()

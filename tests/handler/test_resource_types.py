"""Several limits per account (docs/api.md, "Resource types"): each type's limit is set
on its own, versioned on its own, and registered on the account item, which lists the account's
types and which its first type's PUT creates at limit 0. Through the real flows and conditions."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from functions.adapters.attributes import from_attributes
from functions.adapters.shards import account_key
from functions.core import accounts, leases
from functions.core.accounts import LimitChange
from functions.core.errors import PreconditionFailed, TooManyResourceTypes
from functions.core.model import MAX_RESOURCE_TYPES, Quota, Usage
from tests.handler.conftest import Harness
from tests.support.faults import Faults

ACME = Quota("acme")
SEATS = Quota("acme", "seats")
PROJECTS = Quota("acme", "projects")


def put(
    harness: Harness,
    quota: Quota,
    limit: int,
    received_ms: int | None = None,
    if_match: frozenset[int] | None = None,
    must_exist: bool = False,
) -> Usage:
    change = LimitChange(
        limit=limit,
        received_ms=harness.clock.epoch_ms() if received_ms is None else received_ms,
        token=leases.new_token(),
        if_match=if_match,
        must_exist=must_exist,
    )
    return accounts.put_limit(harness.wiring.api_store, quota, change, harness.clock.timestamp)


def stored(harness: Harness, quota: Quota) -> dict[str, Any]:
    """The quota's account item as the table holds it ({} if none)."""
    table, key = harness.backend.table, account_key(quota)
    item = harness.backend.dynamodb.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
    return from_attributes(item) if item else {}


def test_a_types_first_put_creates_its_account_at_limit_zero_carrying_the_type(harness: Harness) -> None:
    seats = put(harness, SEATS, 5)
    assert (seats.quota, seats.limit, seats.limit_version) == (SEATS, 5, 1)
    account = stored(harness, ACME)
    assert account["resource_types"] == {"seats"}
    assert (account["limit"], account["room"], account["limit_version"]) == (0, 0, 1)
    # Set by no PUT: a PUT of the account received at any time applies.
    assert put(harness, ACME, 3, received_ms=1).limit == 3
    assert accounts.get_usage(harness.wiring.api_store, SEATS).limit == 5


def test_a_types_put_adds_it_and_leaves_the_default_type_as_it_was(harness: Harness) -> None:
    put(harness, ACME, 3)
    harness.api.create("acme")
    before = stored(harness, ACME)
    put(harness, SEATS, 5)
    put(harness, PROJECTS, 7)
    after = stored(harness, ACME)
    assert after.pop("resource_types") == {"seats", "projects"}
    assert after == before  # no version, stamp or counter moved: a heal reading it is not disturbed
    assert accounts.get_usage(harness.wiring.api_store, ACME).limit == 3


def test_each_type_has_a_limit_version_of_its_own(harness: Harness) -> None:
    assert put(harness, ACME, 3).limit_version == 1
    assert put(harness, SEATS, 5).limit_version == 1
    assert put(harness, SEATS, 6).limit_version == 2
    assert put(harness, PROJECTS, 1).limit_version == 1
    assert accounts.get_usage(harness.wiring.api_store, ACME).limit_version == 1
    # If-Match names the type's own version: another type's changes never make it stale.
    assert put(harness, SEATS, 8, if_match=frozenset({2})).limit == 8
    with pytest.raises(PreconditionFailed):
        put(harness, PROJECTS, 9, if_match=frozenset({2}))
    assert accounts.get_usage(harness.wiring.api_store, PROJECTS).limit == 1


def test_an_older_put_of_a_type_never_overwrites_a_newer_one(harness: Harness) -> None:
    received = harness.clock.epoch_ms()
    put(harness, SEATS, 5, received_ms=received)
    late = put(harness, SEATS, 9, received_ms=received - 1)
    assert (late.limit, late.limit_version) == (5, 1)


@pytest.mark.parametrize("must_exist", [True, False])
def test_if_match_on_a_type_without_a_limit_writes_nothing(harness: Harness, must_exist: bool) -> None:
    put(harness, ACME, 3)
    with pytest.raises(PreconditionFailed):
        put(harness, SEATS, 5, if_match=None if must_exist else frozenset({1}), must_exist=must_exist)
    assert "resource_types" not in stored(harness, ACME)
    assert stored(harness, SEATS) == {}


def test_an_account_holds_at_most_the_documented_number_of_types(harness: Harness) -> None:
    names = [f"type-{number:02d}" for number in range(MAX_RESOURCE_TYPES)]
    for name in names:
        put(harness, Quota("acme", name), 1)
    with pytest.raises(TooManyResourceTypes):
        put(harness, SEATS, 5)
    assert stored(harness, SEATS) == {}
    assert put(harness, Quota("acme", names[7]), 4).limit == 4  # a type it has is changed as ever
    assert put(harness, ACME, 2).limit == 2
    assert len(stored(harness, ACME)["resource_types"]) == MAX_RESOURCE_TYPES


@pytest.mark.engine
def test_concurrent_first_puts_of_an_accounts_types_all_register(harness: Harness) -> None:
    names = ["seats", "projects", "keys", "users", "vms", "disks"]
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        usages = list(pool.map(lambda name: put(harness, Quota("acme", name), 2), names))
    assert [usage.limit for usage in usages] == [2] * len(names)
    account = stored(harness, ACME)
    assert account["resource_types"] == set(names)
    assert account["limit_version"] == 1  # created once


def test_reading_an_account_reads_every_type(harness: Harness) -> None:
    put(harness, ACME, 3)
    put(harness, SEATS, 5)
    put(harness, PROJECTS, 7)
    read = accounts.get_account(harness.wiring.api_store, "acme")
    assert read.default.limit == 3
    assert [(usage.quota, usage.limit) for usage in read.types] == [(PROJECTS, 7), (SEATS, 5)]


def test_an_account_without_types_is_read_with_the_one_call_it_always_was(harness: Harness, faults: Faults) -> None:
    put(harness, ACME, 3)
    calls: list[dict[str, Any]] = []
    faults.before_call("BatchGetItem", calls.append)
    read = accounts.get_account(harness.wiring.api_store, "acme")
    assert (read.default.limit, read.types) == (3, ())
    assert [len(call["RequestItems"][harness.backend.table]["Keys"]) for call in calls] == [2]


def test_an_account_with_types_reads_them_all_in_one_more_call(harness: Harness, faults: Faults) -> None:
    for name in ("seats", "projects", "keys"):
        put(harness, Quota("acme", name), 2)
    calls: list[dict[str, Any]] = []
    faults.before_call("BatchGetItem", calls.append)
    read = accounts.get_account(harness.wiring.api_store, "acme")
    assert len(read.types) == 3
    assert [len(call["RequestItems"][harness.backend.table]["Keys"]) for call in calls] == [2, 6]


def test_a_registered_type_whose_limit_never_landed_is_left_out(harness: Harness, faults: Faults) -> None:
    """The type is registered first: a PUT that dies before the type's own item leaves a name
    without a limit, which reads leave out and the PUT's retry completes."""
    put(harness, ACME, 3)

    def die_on_the_types_item(params: dict[str, Any]) -> None:
        if params["Key"] == account_key(SEATS):
            raise faults.SimulatedCrash("died before the type's limit")

    faults.before_call("UpdateItem", die_on_the_types_item)
    with pytest.raises(faults.SimulatedCrash):
        put(harness, SEATS, 5)
    assert stored(harness, ACME)["resource_types"] == {"seats"}
    assert accounts.get_account(harness.wiring.api_store, "acme").types == ()

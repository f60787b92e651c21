"""Sharded admission on the emulator: real conditional writes, grants and snapshots racing
(functions/core/admission.py, docs/admission.md "Admission shards")."""

from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from functions.adapters import keys
from functions.adapters.api_store import DynamoApiStore
from functions.core import accounts
from functions.core.admission import Directory, ShardingSettings
from functions.core.errors import LimitExceeded, StoreUnavailable
from functions.core.healing import HealOutcome, heal_account
from functions.core.model import NewResource, Quota
from tests.handler.conftest import Harness
from tests.handler.patience import patient_stores
from tests.handler.test_invariants import run_together
from tests.support.faults import Faults

ACME = Quota("acme")


def spread(harness: Harness, account_id: str, limit: int, shards: int) -> None:
    """An account with `shards` active shards, as growth leaves it (the others have no item yet)."""
    harness.api.put_account(account_id, limit)
    assert harness.wiring.api_store.set_active(Quota(account_id), 1, 1, shards)


def process(shards: int, seed: int, **settings: Any) -> Directory:
    """One API execution environment that has learnt the account's layout."""
    directory = Directory(ShardingSettings(**settings), rng=random.Random(seed))
    directory.learn(ACME, shards, shards)
    return directory


def create(harness: Harness, index: int, directory: Directory, store: DynamoApiStore | None = None) -> accounts.Created:
    """A create through the API's flow, on the harness's clock; `store`: the harness's by default."""
    return accounts.create_resource(
        store or harness.wiring.api_store,
        ACME,
        NewResource(name=f"r{index}"),
        None,
        harness.clock.timestamp,
        directory=directory,
    )


def create_carefully(harness: Harness, index: int, directory: Directory, store: DynamoApiStore) -> accounts.Created:
    """A create as a careful caller makes it: with an Idempotency-Key, and a 503 retried with it. A
    starved machine makes DynamoDB Local time writes out waiting for their lock (the SDK's attempts
    then run out: 3 of 200 creates in one clean-clone run, 2026-11-27); the API answers those 503,
    which the contract says to retry, and the retry is the same request, never a second create."""
    for attempt in range(5):
        try:
            return accounts.create_resource(
                store, ACME, NewResource(name=f"r{index}"), f"k{index}", harness.clock.timestamp, directory=directory
            )
        except StoreUnavailable:
            if attempt == 4:
                raise
    raise AssertionError("unreachable")


@pytest.mark.slow
# Six creates a shard at once, or four and a half slots: what the shards' routing and their race
# for the last slots need (100 at once took 21 and 32 s under make test's load, 2026-11-28).
@pytest.mark.engine
@pytest.mark.parametrize(("limit", "creates"), [(48, 48), (36, 48)])
def test_concurrent_creates_over_many_shards_fill_the_account_exactly(
    harness: Harness, limit: int, creates: int
) -> None:
    """With as many slots as creates, every create is admitted: none may be refused while room is
    left anywhere (each had a free slot until it took one). With fewer, exactly the limit is."""
    spread(harness, "acme", limit, shards=8)
    stores = patient_stores(harness, creates)
    results = run_together(creates, lambda i: create_carefully(harness, i, process(8, seed=i), stores[i]))
    admitted = [r for r in results if isinstance(r, accounts.Created)]
    refused = [r for r in results if isinstance(r, LimitExceeded)]
    assert len(admitted) == limit, [r for r in results if not isinstance(r, (accounts.Created, LimitExceeded))][:3]
    assert len(refused) == creates - limit
    spread_over = {created.resource.shard for created in admitted}
    assert len(spread_over) > 1, spread_over  # it did spread
    print("admitted on shards", sorted(Counter(created.resource.shard for created in admitted).items()))
    truth = harness.truth("acme")
    assert (truth.live, truth.admitted, truth.room) == (limit, limit, 0)
    harness.check_invariants()
    with pytest.raises(LimitExceeded):
        create(harness, creates, process(8, seed=creates))


def deliver_in_small_batches(harness: Harness) -> None:
    """As a trickle arrives: many transactions, so several counter shards are used."""
    records = harness.tap.drain()
    for start in range(0, len(records), 4):
        assert harness.deliver(records[start : start + 4]) == []
    harness.pump()


@pytest.mark.engine
def test_a_hot_account_grows_its_shards_and_a_quiet_heal_folds_them_back(harness: Harness) -> None:
    clock = [0.0]
    directory = Directory(ShardingSettings(grow_at=1, min_window=1), clock=lambda: clock[0], rng=random.Random(7))
    harness.api.put_account("acme", 100)
    ids = []
    for index in range(40):
        ids.append(create(harness, index, directory).resource)
        clock[0] += 0.5  # two creates a second, each two writes: four writes a second, past 1
    account = harness.truth("acme")
    active = harness.wiring.api_store.read_shards(ACME, [0])[0].active
    assert active >= 4, active
    assert account.shards > 1
    deliver_in_small_batches(harness)  # the creates are counted, on counter shards
    # Deletes release on the shard that admitted each resource.
    for resource in ids[:25]:
        accounts.delete_resource(harness.wiring.api_store, ACME, resource.resource_id, harness.clock.timestamp)
    deliver_in_small_batches(harness)
    truth = harness.truth("acme")
    assert (truth.live, truth.admitted, truth.best_effort_net, truth.eventual) == (15, 15, 15, 15)
    # Resources admitted above shard 0 are counted on counter shards, which every reader adds up.
    assert truth.counters > 1
    usage = harness.api.account("acme")
    assert (usage["eventual"], usage["bestEffort"]) == (15, 15)
    harness.check_invariants()
    # Quiet for longer than the heal's bound: the heal folds every shard into the account item.
    later = harness.clock.now() + timedelta(minutes=5)
    result = heal_account(harness.wiring.healing_store, ACME, later, timedelta(seconds=60))
    assert result.outcome in (HealOutcome.HEALED, HealOutcome.EXACT), result
    first = harness.wiring.api_store.read_shards(ACME, [0])[0]
    assert (first.active, first.admitted, first.best_effort, first.room) == (1, 15, 15, 85)
    others = harness.wiring.api_store.read_shards(ACME, range(1, first.span))
    assert all(shard.retired and shard.room == shard.admitted == shard.best_effort == 0 for shard in others)
    harness.check_invariants()
    # Folded, the account admits on its account item again, and deletes still release where admitted.
    fresh = create(harness, 99, Directory())
    assert fresh.resource.shard == 0
    accounts.delete_resource(harness.wiring.api_store, ACME, ids[30].resource_id, harness.clock.timestamp)
    harness.pump()
    truth = harness.truth("acme")
    assert (truth.live, truth.admitted, truth.room) == (15, 15, 85)
    harness.check_invariants()


def test_a_limit_lowered_below_the_usage_of_a_sharded_account_holds(harness: Harness) -> None:
    spread(harness, "acme", 20, shards=4)
    made = [create(harness, i, process(4, seed=i)).resource for i in range(10)]
    assert len({resource.shard for resource in made}) > 1
    assert harness.api.put_account("acme", 6).status == 200
    first = harness.wiring.api_store.read_shards(ACME, [0])[0]
    assert (first.active, first.limit) == (1, 6)
    harness.check_invariants()
    for attempt in range(3):  # a process that still believes in 4 shards is refused as well
        with pytest.raises(LimitExceeded):
            create(harness, 100 + attempt, process(4, seed=attempt))
    for resource in made[:4]:  # 10 -> 6 live: at the new limit
        accounts.delete_resource(harness.wiring.api_store, ACME, resource.resource_id, harness.clock.timestamp)
    with pytest.raises(LimitExceeded):
        create(harness, 200, Directory())
    accounts.delete_resource(harness.wiring.api_store, ACME, made[4].resource_id, harness.clock.timestamp)
    create(harness, 201, process(4, seed=3))  # 5 live: one slot, found on a retired shard and brought home
    with pytest.raises(LimitExceeded):
        create(harness, 202, Directory())
    harness.pump()
    truth = harness.truth("acme")
    assert (truth.live, truth.admitted, truth.limit) == (6, 6, 6)
    harness.check_invariants()


def test_an_account_item_written_before_shards_is_adopted_in_place(harness: Harness) -> None:
    """A table deployed with the one-item layout: its account items have no `room`. The first
    create that finds none gives the item its room (limit - admitted), conditionally, and admits."""
    harness.api.put_account("acme", 3)
    harness.api.create("acme")
    legacy = "REMOVE #room, #shards, #span SET admitted = :one"  # as the old layout left it
    harness.backend.dynamodb.update_item(
        TableName=harness.backend.table,
        Key={"pk": {"S": "ACCOUNT#acme"}, "sk": {"S": "ACCOUNT"}},
        UpdateExpression=legacy,
        ExpressionAttributeNames={"#room": "room", "#shards": "shards", "#span": "shard_span"},
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    assert harness.api.create("acme").status == 201
    assert harness.api.create("acme").status == 201
    assert harness.api.create("acme").status == 409
    first = harness.wiring.api_store.read_shards(ACME, [0])[0]
    assert (first.room, first.admitted, first.active, first.span) == (0, 3, 1, 1)
    harness.pump()
    harness.check_invariants()


@pytest.mark.engine
def test_an_adoption_whose_answer_is_lost_is_a_503_and_the_retry_admits(harness: Harness, faults: Faults) -> None:
    """The adoption's write lands and its answer times out: DynamoDB failed the caller like any
    other call (503, retry), and the retry finds the room the adoption gave."""
    harness.api.put_account("acme", 3)
    harness.backend.dynamodb.update_item(
        TableName=harness.backend.table,
        Key={"pk": {"S": "ACCOUNT#acme"}, "sk": {"S": "ACCOUNT"}},
        UpdateExpression="REMOVE #room, #shards, #span",  # as the one-item layout left it
        ExpressionAttributeNames={"#room": "room", "#shards": "shards", "#span": "shard_span"},
    )
    faults.time_out_after("UpdateItem", lambda params: "attribute_not_exists(room)" in params["ConditionExpression"])
    assert harness.api.create("acme").status == 503
    assert harness.api.create("acme").status == 201
    first = harness.wiring.api_store.read_shards(ACME, [0])[0]
    assert (first.room, first.admitted) == (2, 1)


def test_grants_move_room_between_shards_only_to_a_dry_shard_from_an_open_donor(harness: Harness) -> None:
    """The adapter's conditions on DynamoDB: a donor's grant to a shard with room is refused (two
    creates that found it dry take one grant), and a retired donor gives nothing."""
    spread(harness, "acme", 40, shards=4)
    store = harness.wiring.api_store
    assert store.grant(ACME, 1, 20)  # from shard 0, which creates the shard item
    assert store.grant(ACME, 3, 10, donor=1)
    assert not store.grant(ACME, 3, 2, donor=1)  # shard 3 has room now
    assert not store.grant(ACME, 2, 30, donor=1)  # more than the donor has
    rooms = {shard.shard: shard.room for shard in store.read_shards(ACME, range(4))}
    assert rooms == {0: 20, 1: 10, 3: 10}
    # A retired shard can hold room (its releases land there until shard 0 gathers them): it
    # gives none of it away.
    harness.backend.dynamodb.update_item(
        TableName=harness.backend.table,
        Key={"pk": {"S": "SHARD#acme#01"}, "sk": {"S": "SHARD"}},
        UpdateExpression="SET retired = :true",
        ExpressionAttributeValues={":true": {"BOOL": True}},
    )
    assert not store.grant(ACME, 2, 5, donor=1)
    assert store.read_shards(ACME, [1])[0].room == 10
    harness.check_invariants()


def items_of(harness: Harness, *quotas: Quota) -> list[dict[str, Any]]:
    """Every item of these quotas, as the table holds them (a scan: tests only)."""
    found, request = [], {"TableName": harness.backend.table, "ConsistentRead": True}
    while True:
        page = harness.backend.dynamodb.scan(**request)
        found += [item for item in page["Items"] if keys.quota_of(item["pk"]["S"]) in quotas]
        if "LastEvaluatedKey" not in page:
            return sorted(found, key=lambda item: (item["pk"]["S"], item["sk"]["S"]))
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def test_a_busy_type_grows_and_heals_without_touching_a_quiet_siblings_items(harness: Harness) -> None:
    """Creates and deletes of one type, fast enough to grow its shards, counted on counter shards
    and folded back by a heal: every item of the account's quiet types (the default one, whose
    account item holds the registry, and another) is exactly as it was, and their heals do not
    wait for the busy type's pending counting."""
    seats, projects = Quota("acme", "seats"), Quota("acme", "projects")
    api = harness.api
    api.put_account("acme", 5)
    api.put_type("acme", "projects", 5)
    api.put_type("acme", "seats", 100)
    api.create("acme")
    api.create("acme", resource_type="projects")
    harness.pump()
    quiet = items_of(harness, ACME, projects)
    clock = [0.0]
    directory = Directory(ShardingSettings(grow_at=1, min_window=1), clock=lambda: clock[0], rng=random.Random(7))
    made = []
    for index in range(40):
        made.append(
            accounts.create_resource(
                harness.wiring.api_store,
                seats,
                NewResource(name=f"s{index}"),
                None,
                harness.clock.timestamp,
                directory=directory,
            ).resource
        )
        clock[0] += 0.5
    assert harness.wiring.api_store.read_shards(seats, [0])[0].active >= 4
    # The busy type's counting is pending; its siblings' heals do not wait for it.
    later = harness.clock.now() + timedelta(minutes=5)
    for sibling in (ACME, projects):
        outcome = heal_account(harness.wiring.healing_store, sibling, later, timedelta(seconds=60)).outcome
        assert outcome is HealOutcome.EXACT, (sibling, outcome)
    deliver_in_small_batches(harness)
    for resource in made[:25]:
        accounts.delete_resource(harness.wiring.api_store, seats, resource.resource_id, harness.clock.timestamp)
    deliver_in_small_batches(harness)
    result = heal_account(harness.wiring.healing_store, seats, later, timedelta(seconds=60))
    assert result.outcome in (HealOutcome.HEALED, HealOutcome.EXACT), result
    truth = harness.truth(seats)
    assert (truth.live, truth.admitted, truth.eventual) == (15, 15, 15)
    assert truth.shards > 1
    assert truth.counters > 1
    assert items_of(harness, ACME, projects) == quiet
    harness.check_invariants()

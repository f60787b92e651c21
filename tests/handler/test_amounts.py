"""Amounts: a resource holds `amount` units of its quota (issue 38, step 1). Creates admit in units
on both route families, deletes free exactly their amount (quiet and sharded accounts), the
counters and the invariants are in units, and a client that never sends an amount is answered as
before, byte for byte (docs/admission.md, "Amounts")."""

from __future__ import annotations

import json
import os
import random
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from functions.adapters import keys
from functions.adapters.resources import AMOUNT
from functions.core import accounts
from functions.core.admission import Directory, ShardingSettings
from functions.core.errors import LimitExceeded
from functions.core.healing import HealOutcome, heal_account
from functions.core.model import MAX_AMOUNT, NewResource, Quota
from tests.handler.conftest import Harness, Kind
from tests.support.truth import read_truth


def create(kind: Kind, amount: Any = None, name: str = "r", key: str | None = None) -> Any:
    body: dict[str, Any] = {"name": name}
    if amount is not None:
        body["amount"] = amount
    headers = {"Idempotency-Key": key} if key else None
    return kind.harness.api.request("POST", kind.resources_url, body, headers)


@pytest.mark.engine
def test_creates_admit_up_to_the_limit_in_units_and_a_delete_frees_its_amount(kind: Kind) -> None:
    kind.put(10)
    first = create(kind, 4)
    assert first.status == 201, first.text
    assert first.json()["amount"] == 4
    assert create(kind, 6).status == 201
    refused = create(kind, 1)
    assert (refused.status, refused.json()["error"]["code"]) == (409, "LimitExceeded")
    assert kind.read()["bestEffort"] == 10
    kind.harness.check_invariants()

    assert kind.delete(first.json()["resourceId"]).status == 204  # a quiet account: the retake path
    truth = kind.truth()
    assert (truth.live, truth.admitted, truth.room, truth.best_effort_net, truth.leases) == (6, 6, 4, 6, 0)
    assert create(kind, 5).status == 409  # 4 free: refused, nothing taken
    assert create(kind, 4).status == 201
    kind.harness.pump()
    view = kind.read()
    assert (view["eventual"], view["used"], view["available"]) == (10, 10, 0)
    kind.harness.check_invariants()


def test_a_delete_of_amount_n_on_a_quiet_account_gives_back_the_one_it_took_and_takes_n(harness: Harness) -> None:
    harness.api.put_account("acme", 100)
    resource = harness.api.request("POST", "/accounts/acme/resources", {"name": "vm", "amount": 64}).json()
    harness.pump()
    assert harness.api.delete("acme", resource["resourceId"]).status == 204
    truth = harness.truth("acme")
    assert (truth.live, truth.admitted, truth.room, truth.best_effort_net, truth.leases) == (0, 0, 100, 0, 0)
    harness.pump()
    truth = harness.truth("acme")
    assert (truth.eventual, truth.processed, truth.tombstones) == (0, 0, 1)
    harness.check_invariants()


@pytest.mark.parametrize(
    "amount",
    [0, -1, MAX_AMOUNT + 1, 2**64, 1.5, 1e300, "3", True, None, [2], {"n": 2}],
    ids=["zero", "negative", "2^53", "2^64", "fraction", "huge float", "string", "true", "null", "list", "object"],
)
def test_an_amount_that_is_not_a_whole_number_from_1_to_2_53_minus_1_is_refused_with_nothing_written(
    harness: Harness, amount: object
) -> None:
    harness.api.put_account("acme", 5)
    before = read_truth(harness.backend.dynamodb, harness.backend.table)
    body = json.dumps({"name": "x", "amount": amount})
    response = harness.api.request("POST", "/accounts/acme/resources", body)
    assert response.status == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "ValidationError"
    assert error["message"].startswith("amount"), error["message"]
    assert read_truth(harness.backend.dynamodb, harness.backend.table) == before


def test_the_largest_amount_is_valid_and_an_amount_fills_the_largest_limit(harness: Harness) -> None:
    """A limit is in units, up to 2^53 - 1 as an amount is (a token budget); one more is a 400."""
    too_large = harness.api.put_account("acme", MAX_AMOUNT + 1)
    assert (too_large.status, too_large.json()["error"]["code"]) == (400, "ValidationError")
    harness.api.put_account("acme", MAX_AMOUNT - 1)
    refused = harness.api.request("POST", "/accounts/acme/resources", {"name": "x", "amount": MAX_AMOUNT})
    assert (refused.status, refused.json()["error"]["code"]) == (409, "LimitExceeded")
    largest_limit = MAX_AMOUNT
    assert harness.api.put_account("acme", largest_limit).status == 200
    # 5.0 is an integer as JSON Schema counts them (as for a limit): it is 5.
    created = harness.api.request("POST", "/accounts/acme/resources", {"name": "x", "amount": largest_limit - 5.0})
    assert created.status == 201, created.text
    assert created.json()["amount"] == largest_limit - 5
    assert harness.api.request("POST", "/accounts/acme/resources", {"name": "y", "amount": 5}).status == 201
    assert harness.api.account("acme")["available"] == 0
    harness.check_invariants()


def test_a_client_that_never_sends_an_amount_is_answered_and_stored_as_before(harness: Harness) -> None:
    harness.api.put_account("acme", 5)
    plain = harness.api.create("acme", "vm-1", key="k1", size=2)
    assert plain.status == 201
    assert list(plain.json()) == ["accountId", "resourceId", "name", "attributes", "createdAt"]
    url = f"/accounts/acme/resources/{plain.json()['resourceId']}"
    assert harness.api.request("GET", url).text == plain.text
    listed = harness.api.request("GET", "/accounts/acme/resources").json()["items"]
    assert listed == [plain.json()]
    item = harness.backend.dynamodb.get_item(
        TableName=harness.backend.table,
        Key={"pk": {"S": keys.account_pk(Quota("acme"))}, "sk": {"S": keys.resource_sk(plain.json()["resourceId"])}},
    )["Item"]
    assert AMOUNT not in item  # stored as before amounts: an amount of 1 is no attribute
    account = harness.backend.dynamodb.get_item(
        TableName=harness.backend.table, Key={"pk": {"S": "ACCOUNT#acme"}, "sk": {"S": "ACCOUNT"}}
    )["Item"]
    assert not [name for name in account if name.startswith("lease_")]

    # The amount is part of the fingerprint only when it is not 1: an explicit 1 replays.
    replay = harness.api.request(
        "POST",
        "/accounts/acme/resources",
        {"name": "vm-1", "attributes": {"size": 2}, "amount": 1},
        {"Idempotency-Key": "k1"},
    )
    assert (replay.status, replay.text) == (200, plain.text)
    other = harness.api.request(
        "POST",
        "/accounts/acme/resources",
        {"name": "vm-1", "attributes": {"size": 2}, "amount": 2},
        {"Idempotency-Key": "k1"},
    )
    assert (other.status, other.json()["error"]["code"]) == (422, "IdempotencyKeyMismatch")


def test_a_replay_with_another_amount_is_unprocessable(harness: Harness) -> None:
    harness.api.put_account("acme", 10)
    first = harness.api.request(
        "POST", "/accounts/acme/resources", {"name": "x", "amount": 3}, {"Idempotency-Key": "k"}
    )
    assert first.status == 201
    again = harness.api.request(
        "POST", "/accounts/acme/resources", {"name": "x", "amount": 3}, {"Idempotency-Key": "k"}
    )
    assert (again.status, again.text) == (200, first.text)
    for body in ({"name": "x"}, {"name": "x", "amount": 4}):
        other = harness.api.request("POST", "/accounts/acme/resources", body, {"Idempotency-Key": "k"})
        assert other.status == 422, other.text
    assert harness.truth("acme").live == 3


# --- a busy account ------------------------------------------------------------------------------

ACME = Quota("acme")


def spread_room(harness: Harness, rooms: list[int]) -> None:
    """An account whose shard i >= 1 holds rooms[i - 1] of room and shard 0 none: its limit is
    their sum, spread over len(rooms) + 1 active shards."""
    store = harness.wiring.api_store
    harness.api.put_account("acme", sum(rooms))
    assert store.set_active(ACME, 1, 1, len(rooms) + 1)
    for shard, room in enumerate(rooms, start=1):
        if room:
            assert store.grant(ACME, shard, room), shard


def busy(seed: int = 0) -> Directory:
    return Directory(ShardingSettings(), rng=random.Random(seed))


def create_on(harness: Harness, amount: int, directory: Directory) -> accounts.Created:
    return accounts.create_resource(
        harness.wiring.api_store,
        ACME,
        NewResource(name="r", amount=amount),
        None,
        harness.clock.timestamp,
        directory=directory,
    )


def test_a_create_is_not_refused_while_the_shards_hold_its_amount_between_them(harness: Harness) -> None:
    spread_room(harness, [3, 3])
    directory = busy()
    directory.learn(ACME, 3, 3)
    created = create_on(harness, 5, directory)
    assert created.resource.amount == 5
    truth = harness.truth(ACME)
    assert (truth.admitted, truth.room, truth.live) == (5, 1, 5)
    with pytest.raises(LimitExceeded):
        create_on(harness, 2, directory)  # one unit free, at one instant
    harness.check_invariants()


@pytest.mark.engine
def test_a_delete_on_a_busy_account_frees_exactly_its_amount(harness: Harness) -> None:
    spread_room(harness, [4, 4, 4])
    directory = busy(1)
    directory.learn(ACME, 4, 4)
    made = [create_on(harness, amount, directory).resource for amount in (3, 2, 4)]
    harness.pump()
    before = harness.truth(ACME)
    for resource in made:
        accounts.delete_resource(
            harness.wiring.api_store, ACME, resource.resource_id, harness.clock.timestamp, directory=directory
        )
        after = harness.truth(ACME)
        assert before.admitted - after.admitted == resource.amount
        assert before.best_effort_net - after.best_effort_net == resource.amount
        assert after.leases == 0
        before = after
    harness.pump()
    truth = harness.truth(ACME)
    assert (truth.live, truth.admitted, truth.eventual, truth.room) == (0, 0, 0, 12)
    harness.check_invariants()


def test_the_eventual_counter_and_a_heal_are_in_units(harness: Harness) -> None:
    harness.api.put_account("acme", 20)
    for amount in (5, 7):
        assert harness.api.request("POST", "/accounts/acme/resources", {"name": "x", "amount": amount}).status == 201
    harness.pump()
    assert harness.api.account("acme")["eventual"] == 12
    # best-effort lost (a create that died between its put and its count): a heal sets it to the
    # eventual count, in units.
    store = harness.wiring.api_store
    lost = store.read_shards(ACME, [0])[0]
    harness.backend.dynamodb.update_item(
        TableName=harness.backend.table,
        Key={"pk": {"S": "ACCOUNT#acme"}, "sk": {"S": "ACCOUNT"}},
        UpdateExpression="ADD best_effort :minus",
        ExpressionAttributeValues={":minus": {"N": "-7"}},
    )
    assert lost.best_effort == 12
    outcome = heal_account(harness.wiring.healing_store, ACME, harness.clock.now(), timedelta(0)).outcome
    assert outcome is HealOutcome.HEALED
    truth = harness.truth(ACME)
    assert (truth.best_effort_net, truth.eventual, truth.live) == (12, 12, 12)
    harness.check_invariants()


# --- a property: no false refusal across shards ---------------------------------------------------

_accounts = iter(range(1_000_000))


@pytest.mark.slow
@settings(
    max_examples=int(os.environ.get("PROPERTY_EXAMPLES", "15")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    home=st.integers(0, 4),
    rooms=st.lists(st.integers(0, 6), min_size=1, max_size=4),
    steps=st.lists(st.tuples(st.booleans(), st.integers(1, 9)), min_size=1, max_size=8),
    seed=st.integers(0, 2**16),
)
def test_a_create_is_refused_only_when_fewer_units_than_its_amount_are_free(
    harness: Harness, home: int, rooms: list[int], steps: list[tuple[bool, int]], seed: int
) -> None:
    """Random room spread over the shards (shard 0 keeps `home`), random creates and deletes of
    random amounts, one at a time: a create is refused exactly when the free units (the room of
    every shard, summed, as the truth reads them just before) are fewer than its amount, and no
    create is admitted past the limit."""
    quota = Quota(f"prop{next(_accounts)}")
    store = harness.wiring.api_store
    assert harness.api.put_account(quota.account_id, home + sum(rooms)).status == 200
    assert store.set_active(quota, 1, 1, len(rooms) + 1)
    for shard, room in enumerate(rooms, start=1):
        if room:
            assert store.grant(quota, shard, room), shard
    directory = Directory(ShardingSettings(), rng=random.Random(seed))
    directory.learn(quota, len(rooms) + 1, len(rooms) + 1)
    live: list[tuple[str, int]] = []
    for delete, amount in steps:
        if delete and live:
            resource_id, _ = live.pop(seed % len(live))
            accounts.delete_resource(store, quota, resource_id, harness.clock.timestamp, directory=directory)
            continue
        free = harness.truth(quota).room
        try:
            created = accounts.create_resource(
                store, quota, NewResource(name="r", amount=amount), None, harness.clock.timestamp, directory=directory
            )
        except LimitExceeded:
            assert free < amount, f"refused {amount} with {free} free"
        else:
            assert free >= amount, f"admitted {amount} with {free} free"
            live.append((created.resource.resource_id, amount))
        truth = harness.truth(quota)
        assert truth.live == sum(units for _, units in live) <= truth.limit
        assert truth.admitted == truth.live
        assert truth.room + truth.admitted == truth.limit


@pytest.mark.engine
def test_the_sweep_counts_and_removes_an_amount_the_pending_index_does_not_carry(harness: Harness) -> None:
    """The pending index projects the counting flags only: the sweep's count of a resource of
    amount 5 assumes 1, its condition refuses that, and the refusal's old item says 5."""
    from functions.core.counting import process_pending

    harness.api.put_account("acme", 10)
    created = harness.api.request("POST", "/accounts/acme/resources", {"name": "x", "amount": 5}).json()
    store = harness.wiring.counting_store
    harness.tap.drain()  # the stream's records are lost: only the sweep counts
    process_pending(store, store.pending_records(None))
    truth = harness.truth(ACME)
    assert (truth.eventual, truth.processed, truth.live) == (5, 5, 5)
    harness.check_invariants()
    assert harness.api.delete("acme", created["resourceId"]).status == 204
    harness.tap.drain()
    process_pending(store, store.pending_records(None))
    truth = harness.truth(ACME)
    assert (truth.eventual, truth.processed, truth.tombstones, truth.admitted) == (0, 0, 1, 0)
    harness.check_invariants()

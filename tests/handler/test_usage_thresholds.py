"""Usage threshold crossings on the emulator: decided by the consumer from the exact counter, in
its own transaction, one outbox item per crossing (functions/core/thresholds.py, docs/events.md)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from functions.adapters import keys
from functions.adapters.attributes import from_attributes
from functions.adapters.counters import ABOVE, DOWN_ROOM, UP_ROOM, counter_key
from functions.core.model import Quota
from functions.core.thresholds import UNBOUNDED
from tests.handler.conftest import Harness, Kind
from tests.support.stream import deliver

ACME = Quota("acme")


def events(harness: Harness, quota: Quota = ACME) -> list[dict[str, Any]]:
    """The quota's threshold crossings, in seq order (a consistent Query of its partition's outbox)."""
    found = harness.backend.dynamodb.query(
        TableName=harness.backend.table,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :events)",
        ExpressionAttributeValues={":pk": {"S": keys.account_pk(quota)}, ":events": {"S": "EVENT#"}},
        ConsistentRead=True,
    )["Items"]
    details = [from_attributes(item) for item in found]
    return [json.loads(item["detail"]) for item in details if item["detail_type"] == "Usage Threshold Crossed"]


def crossings(harness: Harness, quota: Quota = ACME) -> list[tuple[int, str, int]]:
    return [(event["threshold"], event["direction"], event["usage"]) for event in events(harness, quota)]


def counter(harness: Harness, shard: int = 0) -> dict[str, Any]:
    item = harness.backend.dynamodb.get_item(
        TableName=harness.backend.table, Key=counter_key(ACME, shard), ConsistentRead=True
    ).get("Item", {})
    return from_attributes(item)


def create(harness: Harness, count: int) -> list[str]:
    made = [harness.api.create("acme", f"r{index}") for index in range(count)]
    assert {response.status for response in made} == {201}
    return [response.json()["resourceId"] for response in made]


def test_an_account_driven_to_its_limit_down_to_half_and_back_crosses_each_threshold_once(harness: Harness) -> None:
    started = harness.clock.timestamp()
    harness.api.put_account("acme", 10)  # boundaries: 8 (80%) and 10 (100%)
    ids = []
    for _ in range(10):  # one record a batch: each crossing is decided by its own record
        ids += create(harness, 1)
        harness.pump()
    for resource_id in ids[:5]:
        assert harness.api.delete("acme", resource_id).status == 204
        harness.pump()
    ids = ids[5:] + create(harness, 5)
    harness.pump()  # five creates in one batch: through both boundaries at once
    assert crossings(harness) == [
        (80, "up", 8),
        (100, "up", 10),
        (100, "down", 9),
        (80, "down", 7),
        (80, "up", 10),
        (100, "up", 10),
    ]
    found = events(harness)
    assert [event["seq"] for event in found] == [1, 2, 3, 4, 5, 6]
    assert len({event["eventId"] for event in found}) == 6
    assert {(event["accountId"], event["resourceType"], event["limit"]) for event in found} == {("acme", "default", 10)}
    assert started <= found[0]["crossedAt"] <= found[-1]["crossedAt"] <= harness.clock.timestamp()
    harness.check_invariants()


def test_a_record_that_crosses_nothing_is_the_same_one_transaction_and_moves_the_headroom(harness: Harness) -> None:
    harness.api.put_account("acme", 100)
    create(harness, 1)
    harness.pump()  # the counter's first batch decides: it had no headroom
    assert (counter(harness)[UP_ROOM], counter(harness)[DOWN_ROOM], counter(harness)[ABOVE]) == (79, UNBOUNDED, [])
    create(harness, 1)
    calls: Counter[str] = Counter()
    items: list[int] = []

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        calls[model.name] += 1
        items.extend([len(params["TransactItems"])] if model.name == "TransactWriteItems" else [])

    harness.wiring.dynamodb.meta.events.register("before-parameter-build.dynamodb", record)
    harness.pump()
    assert calls == {"TransactWriteItems": 1}
    assert items == [2]  # the resource and its counter, as before
    # Unbounded room moves too: it is far beyond any count.
    assert (counter(harness)["count"], counter(harness)[UP_ROOM], counter(harness)[DOWN_ROOM]) == (2, 78, UNBOUNDED + 1)
    assert events(harness) == []


def test_replayed_and_duplicated_batches_add_no_crossing(harness: Harness) -> None:
    harness.api.put_account("acme", 5)
    create(harness, 4)
    records = harness.tap.drain()
    assert harness.deliver(records) == []
    assert harness.deliver(records) == []  # redelivered
    assert harness.deliver(records[::-1]) == []  # replayed out of order (a redriven range)
    harness.pump()
    assert crossings(harness) == [(80, "up", 4)]


def test_a_consumer_that_dies_after_its_transaction_landed_adds_no_crossing_when_retried(harness: Harness) -> None:
    harness.api.put_account("acme", 5)
    create(harness, 4)
    records = harness.tap.drain()
    harness.faults.crash_after("TransactWriteItems", lambda params: len(params["TransactItems"]) > 5)
    with pytest.raises(harness.faults.SimulatedCrash):
        deliver(harness.consumer, records)
    assert crossings(harness) == [(80, "up", 4)]  # the decision landed
    assert harness.deliver(records) == []  # Lambda retries the batch
    harness.pump()
    assert crossings(harness) == [(80, "up", 4)]


@pytest.mark.engine
def test_a_busy_accounts_crossings_are_decided_over_every_counter_shard(harness: Harness) -> None:
    """Resources admitted above admission shard 0 are counted on counter shards 1..7: the headroom
    is spread over all 8, and a crossing is decided with every shard's count known."""
    harness.api.put_account("acme", 40)  # boundaries 32 and 40
    assert harness.wiring.api_store.set_active(ACME, 1, 1, 8)
    ids = []
    for _ in range(8):
        ids += create(harness, 5)
        harness.pump()
    for resource_id in ids[:10]:
        assert harness.api.delete("acme", resource_id).status == 204
    harness.pump()
    assert crossings(harness) == [(80, "up", 35), (100, "up", 40), (100, "down", 30), (80, "down", 30)]
    shards = [counter(harness, shard) for shard in range(8)]
    assert sum(int(item.get("count", 0)) for item in shards) == 30
    assert sum(int(item[UP_ROOM]) for item in shards) == 2  # to 32
    assert {int(item[DOWN_ROOM]) for item in shards} == {UNBOUNDED}  # below 32: nothing to cross down
    assert harness.truth("acme").eventual == 30
    harness.check_invariants()


def test_a_resource_types_crossings_are_its_own_and_name_it(harness: Harness, kind: Kind) -> None:
    """Per quota: a type's limit, counter and events are its own; the default type's crossing is
    the bystander's business only."""
    kind.put(5)  # 80% at 4
    for index in range(4):
        assert kind.create(f"r{index}").status == 201
        harness.pump()
    found = events(harness, kind.quota)
    assert [(e["threshold"], e["direction"], e["usage"], e["seq"]) for e in found] == [(80, "up", 4, 1)]
    assert {(e["accountId"], e["resourceType"], e["limit"]) for e in found} == {("acme", kind.quota.resource_type, 5)}
    kind.check_bystander()

"""The eventual counter item family: an account's counter shards, read as their sum.

Shard 0 is `COUNTER` in the account's partition; a busy account's shards j >= 1 each have a
partition key of their own (functions/adapters/keys.py). The consumer writes shards >= 1 only for
resources an admission shard >= 1 admitted, so only an account whose `shard_span` is above 1 can
have them (functions/core/counting.py, counter_shard).

Each shard carries its headroom (`up_room`, `down_room`: functions/core/thresholds.py), and shard 0
the quota's last event number (`event_seq`), the thresholds its usage was last decided to be at
or above (`above`) and the number of decisions made (`decisions`), which every decision's
condition names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from functions.adapters import keys
from functions.adapters.attributes import from_attributes, to_attributes
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.errors import ConditionFailed
from functions.adapters.table_layout import PARTITION_KEY, item_key
from functions.core.counting import EVENTUAL_COUNTER_SHARDS
from functions.core.model import Quota
from functions.core.thresholds import CounterShard, CounterWrite, Decision

COUNT = "count"
UP_ROOM = "up_room"
DOWN_ROOM = "down_room"
EVENT_SEQ = "event_seq"
ABOVE = "above"
DECISIONS = "decisions"


def counter_key(quota: Quota, shard: int = 0) -> dict[str, Any]:
    """An eventual counter shard: 0 in the account's partition, j >= 1 on a key of its own."""
    pk = keys.account_pk(quota) if shard == 0 else keys.counter_pk(quota, shard)
    return item_key(pk, keys.COUNTER_SORT_KEY)


def other_counter_keys(quota: Quota, span: int) -> list[dict[str, Any]]:
    """The counter shards above 0 an account can have: none until its admission shards spread."""
    return [counter_key(quota, shard) for shard in range(1, EVENTUAL_COUNTER_SHARDS)] if span > 1 else []


def eventual_of(counters: Iterable[Mapping[str, Any]]) -> int:
    """The eventual count: the sum of the (decoded) counter shard items."""
    return sum(int(counter.get(COUNT, 0)) for counter in counters)


def counter_of(item: Mapping[str, Any]) -> int:
    """Which counter shard a decoded counter item is, from its partition key."""
    pk = str(item.get(PARTITION_KEY, ""))
    return int(pk.rsplit("#", 1)[1]) if pk.startswith(keys.COUNTER_PREFIX) else 0


def counter_state(item: Mapping[str, Any], shard: int) -> CounterShard:
    """A decoded counter shard item (empty: the shard has no item) as the thresholds core reads it."""
    if not item:
        return CounterShard(shard, exists=False)
    above = item.get(ABOVE)
    return CounterShard(
        shard,
        count=int(item.get(COUNT, 0)),
        up_room=None if item.get(UP_ROOM) is None else int(item[UP_ROOM]),
        down_room=None if item.get(DOWN_ROOM) is None else int(item[DOWN_ROOM]),
        seq=int(item.get(EVENT_SEQ, 0)),
        above=None if above is None else frozenset(int(p) for p in above),
        version=int(item.get(DECISIONS, 0)),
    )


def counter_addition(table: str, quota: Quota, delta: int, shard: int) -> dict[str, Any]:
    """A counting transaction's action on the eventual counter: add `delta` to counter shard
    `shard`, and move its headroom by as much, on condition that the headroom allows it (the
    change crosses no threshold). A shard without headroom fails the condition: its ALL_OLD then
    tells the consumer what to decide from."""
    return {
        "Update": {
            "TableName": table,
            "Key": counter_key(quota, shard),
            "UpdateExpression": "ADD #count :delta, #up :opposite, #down :delta SET account_id = :id",
            "ConditionExpression": "#up > :delta" if delta > 0 else "#down >= :opposite",
            "ExpressionAttributeNames": {"#count": COUNT, "#up": UP_ROOM, "#down": DOWN_ROOM},
            "ExpressionAttributeValues": to_attributes({":delta": delta, ":opposite": -delta, ":id": quota.account_id}),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    }


def counter_decision(table: str, quota: Quota, write: CounterWrite, decision: Decision) -> dict[str, Any]:
    """A decision's action on one counter shard: its new count and headroom (shard 0: and the
    quota's seq, above and decisions), on condition that the shard is as the decision read it."""
    read = write.read
    names = {"#count": COUNT, "#up": UP_ROOM, "#down": DOWN_ROOM}
    values: dict[str, Any] = {
        ":count": write.count,
        ":up": write.up_room,
        ":down": write.down_room,
        ":id": quota.account_id,
    }
    sets = ["#count = :count", "#up = :up", "#down = :down", "account_id = :id"]
    conditions = ["#count = :read" if read.exists else "attribute_not_exists(#count)"]
    if read.exists:
        values[":read"] = read.count
    if read.shard == 0:
        names |= {"#seq": EVENT_SEQ, "#above": ABOVE, "#decisions": DECISIONS}
        values |= {":seq": decision.seq, ":above": sorted(decision.above), ":decisions": decision.version}
        sets += ["#seq = :seq", "#above = :above", "#decisions = :decisions"]
        if read.version:
            conditions.append("#decisions = :decided")
            values[":decided"] = read.version
        else:
            conditions.append("attribute_not_exists(#decisions)")
    return {
        "Update": {
            "TableName": table,
            "Key": counter_key(quota, read.shard),
            "UpdateExpression": "SET " + ", ".join(sets),
            "ConditionExpression": " AND ".join(conditions),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": to_attributes(values),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    }


def read_counter(table: DynamoTable, quota: Quota) -> int | None:
    """Counter shard 0's count, strongly consistent; None when it has no item."""
    key = counter_key(quota)
    item = table.call("read counter", "get_item", TableName=table.name, Key=key, ConsistentRead=True).get("Item")
    return None if item is None else int(from_attributes(item).get(COUNT, 0))


def correct_counter(table: DynamoTable, quota: Quota, by: int, read: int | None) -> bool:
    """Add `by` to counter shard 0 if its count is still `read` (None: it had no item); False if it
    moved since. So a retry of a correction that landed is refused, not applied twice. The shard's
    headroom goes with it: the next batch on it decides, from the corrected count, what
    subscribers must be told (functions/core/thresholds.py)."""
    values = {":fix": by} if read is None else {":fix": by, ":current": read}
    try:
        table.call(
            "correct counter",
            "update_item",
            TableName=table.name,
            Key=counter_key(quota),
            UpdateExpression="ADD #count :fix REMOVE #up, #down",
            ConditionExpression="attribute_not_exists(#count)" if read is None else "#count = :current",
            ExpressionAttributeNames={"#count": COUNT, "#up": UP_ROOM, "#down": DOWN_ROOM},
            ExpressionAttributeValues=to_attributes(values),
        )
    except ConditionFailed:
        return False
    return True

"""The eventual counter item family: an account's counter shards, read as their sum.

Shard 0 is `COUNTER` in the account's partition; a busy account's shards j >= 1 each have a
partition key of their own (functions/adapters/keys.py). The consumer writes shards >= 1 only for
resources an admission shard >= 1 admitted, so only an account whose `shard_span` is above 1 can
have them (functions/core/counting.py, counter_shard).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from functions.adapters import keys
from functions.adapters.attributes import from_attributes, to_attributes
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.errors import ConditionFailed
from functions.adapters.table_layout import item_key
from functions.core.counting import EVENTUAL_COUNTER_SHARDS
from functions.core.model import Quota

COUNT = "count"


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


def counter_addition(table: str, quota: Quota, delta: int, shard: int) -> dict[str, Any]:
    """A counting transaction's action on the eventual counter: add `delta` to counter shard `shard`."""
    return {
        "Update": {
            "TableName": table,
            "Key": counter_key(quota, shard),
            "UpdateExpression": "ADD #count :delta SET account_id = :id",
            "ExpressionAttributeNames": {"#count": COUNT},
            "ExpressionAttributeValues": to_attributes({":delta": delta, ":id": quota.account_id}),
        }
    }


def read_counter(table: DynamoTable, quota: Quota) -> int | None:
    """Counter shard 0's count, strongly consistent; None when it has no item."""
    key = counter_key(quota)
    item = table.call("read counter", "get_item", TableName=table.name, Key=key, ConsistentRead=True).get("Item")
    return None if item is None else int(from_attributes(item).get(COUNT, 0))


def correct_counter(table: DynamoTable, quota: Quota, by: int, read: int | None) -> bool:
    """Add `by` to counter shard 0 if its count is still `read` (None: it had no item); False if it
    moved since. So a retry of a correction that landed is refused, not applied twice."""
    values = {":fix": by} if read is None else {":fix": by, ":current": read}
    try:
        table.call(
            "correct counter",
            "update_item",
            TableName=table.name,
            Key=counter_key(quota),
            UpdateExpression="ADD #count :fix",
            ConditionExpression="attribute_not_exists(#count)" if read is None else "#count = :current",
            ExpressionAttributeNames={"#count": COUNT},
            ExpressionAttributeValues=to_attributes(values),
        )
    except ConditionFailed:
        return False
    return True

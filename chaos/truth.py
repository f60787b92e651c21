"""What the table holds for an account, read from inside in one request.

All of an account's items share its partition (but the admission shards of a busy account, which
no chaos account is: the snapshot refuses one), so one strongly consistent Query returns the
account item, its eventual counter and its resources together. The emulator applies requests one
at a time, so that Query is a snapshot: a true instant to check the invariants at.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from functions.adapters.attributes import from_attributes
from functions.adapters.shards import shard_state
from functions.core import keys, schema
from functions.core.leases import Lease, leases_of


@dataclass
class Snapshot:
    account_id: str
    limit: int = 0
    best_effort_net: int = 0
    admitted: int = 0
    eventual: int = 0
    live: set[str] = field(default_factory=set)
    processed: int = 0  # existing resources with counter_processed=true
    existing: set[str] = field(default_factory=set)
    pending: int = 0  # uncounted or soft-deleted resources
    leases: tuple[Lease, ...] = ()  # on the account item: writes in flight, or dead and not yet settled
    tombstones: dict[str, dict[str, Any]] = field(default_factory=dict)  # counted deletes, by resource id
    items: dict[str, dict[str, Any]] = field(default_factory=dict)  # resource id -> its attributes

    @property
    def best_effort(self) -> int:
        return max(0, self.best_effort_net)


def snapshot(dynamodb: Any, table: str, account_id: str) -> Snapshot:
    shot = Snapshot(account_id)
    request: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "#pk = :pk",
        "ExpressionAttributeNames": {"#pk": schema.PARTITION_KEY},
        "ExpressionAttributeValues": {":pk": {"S": keys.account_pk(account_id)}},
        "ConsistentRead": True,
    }
    pages = 0
    while True:
        page = dynamodb.query(**request)
        pages += 1
        for item in map(from_attributes, page["Items"]):
            sort_key = item[schema.SORT_KEY]
            if sort_key == schema.ACCOUNT_SORT_KEY:
                if shard_state(item).span > 1:
                    raise RuntimeError(f"account {account_id} has admission shards: its partition is not all of it")
                shot.limit = int(item["limit"])
                shot.best_effort_net = int(item.get("best_effort", 0))
                shot.admitted = int(item.get("admitted", 0))
                shot.leases = leases_of(item)
            elif sort_key == schema.EVENTUAL_COUNTER_SORT_KEY:
                shot.eventual = int(item.get("count", 0))
            elif item.get(schema.ITEM_TYPE_ATTRIBUTE) == schema.TOMBSTONE_TYPE:
                shot.tombstones[keys.resource_id_from_sk(sort_key) or sort_key] = item
            else:
                resource_id = keys.resource_id_from_sk(sort_key) or sort_key
                shot.existing.add(resource_id)
                shot.items[resource_id] = item
                processed = bool(item.get(schema.COUNTER_PROCESSED_ATTRIBUTE))
                deleted = bool(item.get(schema.DELETED_ATTRIBUTE))
                shot.processed += processed
                if not deleted:
                    shot.live.add(resource_id)
                shot.pending += (not processed) or deleted
        if "LastEvaluatedKey" not in page:
            break
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    if pages > 1:
        raise RuntimeError(f"account {account_id} spans {pages} pages: not a snapshot any more")
    return shot

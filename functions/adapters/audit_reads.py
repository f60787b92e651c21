"""The audit's reads (functions/core/audit.py): an account's counters with one consistent
BatchGetItem and its resource items with a consistent Query of its partition, never a scan; the
accounts themselves from the activity index."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from functions.adapters import keys
from functions.adapters.attributes import from_attributes, to_attributes
from functions.adapters.pages import query_items
from functions.adapters.resources import TOMBSTONE
from functions.adapters.shards import (
    LIMIT_VERSION,
    ShardStore,
    held_leases,
    latest_write,
    read_account_items,
    shard_state,
)
from functions.adapters.table_layout import (
    ACTIVITY_BUCKET,
    ACTIVITY_INDEX,
    COUNTER_PROCESSED,
    DELETED,
    ITEM_TYPE,
    PARTITION_KEY,
    SORT_KEY,
)
from functions.core.audit import AccountView
from functions.core.leases import LeaseKind


def account_view(dynamodb: Any, table: str, account_id: str) -> AccountView | None:
    """The account's counters and the truth about its resources, from its own partition only.

    The counters are read with one consistent BatchGetItem, the resources with a consistent Query
    of the partition (never a scan). The two reads are not one snapshot: on a busy account, the
    numbers can disagree by the writes made in between.
    """
    read = read_account_items(ShardStore(dynamodb, table), account_id)
    if read is None:
        return None
    account = read.shards[0]

    items = live = counted = uncounted = soft_deleted = tombstones = 0
    for resource in _resource_states(dynamodb, table, account_id):
        if resource.get(ITEM_TYPE) == TOMBSTONE:
            tombstones += 1
            continue
        deleted = bool(resource.get(DELETED, False))
        processed = bool(resource.get(COUNTER_PROCESSED, False))
        items += 1
        live += not deleted
        counted += processed
        uncounted += not processed
        soft_deleted += deleted
    # The account item is admission shard 0; a busy account has more (functions/core/admission.py).
    shards = [shard_state(item) for item in read.shards]
    held = tuple(lease for item in read.shards for lease in held_leases(item))
    return AccountView(
        account_id=account_id,
        limit=int(account.get("limit", 0)),
        best_effort_net=sum(shard.best_effort for shard in shards),
        admitted=sum(shard.admitted for shard in shards),
        eventual=read.eventual,
        version=int(account.get("version", 0)),
        limit_version=int(account.get(LIMIT_VERSION, 0)),
        heal_epoch=int(account.get("heal_epoch", 0)),
        last_write_at=latest_write(read.shards) or "",
        healed_at=str(account.get("healed_at", "")),
        resource_items=items,
        live=live,
        counted=counted,
        uncounted=uncounted,
        soft_deleted=soft_deleted,
        deletes_in_flight=sum(lease.kind is LeaseKind.DELETION for lease in held),
        creates_in_flight=sum(lease.kind is LeaseKind.RESERVATION for lease in held),
        tombstones=tombstones,
    )


def _resource_states(dynamodb: Any, table: str, account_id: str) -> Iterator[dict[str, Any]]:
    """The counting attributes of every resource item of the account: a Query of its partition."""
    request: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
        "ProjectionExpression": "#deleted, #processed, #type",
        "ExpressionAttributeNames": {
            "#type": ITEM_TYPE,
            "#pk": PARTITION_KEY,
            "#sk": SORT_KEY,
            "#deleted": DELETED,
            "#processed": COUNTER_PROCESSED,
        },
        "ExpressionAttributeValues": to_attributes(
            {":pk": keys.account_pk(account_id), ":prefix": keys.RESOURCE_PREFIX}
        ),
        "ConsistentRead": True,
    }
    yield from map(from_attributes, query_items(dynamodb, request))


def all_accounts(dynamodb: Any, table: str) -> list[str]:
    """Every account, from the activity index (every account item and shard item has an entry):
    one query per bucket, never a scan."""
    found: set[str] = set()
    for index in range(keys.ACTIVITY_BUCKET_COUNT):
        found.update(accounts_in_bucket(dynamodb, table, index))
    return sorted(found)


def accounts_in_bucket(dynamodb: Any, table: str, index: int) -> set[str]:
    """The accounts with an entry in one activity bucket: a sweep audits one bucket."""
    request: dict[str, Any] = {
        "TableName": table,
        "IndexName": ACTIVITY_INDEX.name,
        "KeyConditionExpression": "#bucket = :bucket",
        "ExpressionAttributeNames": {"#bucket": ACTIVITY_BUCKET},
        "ExpressionAttributeValues": to_attributes({":bucket": keys.activity_bucket_name(index)}),
    }
    return {str(from_attributes(item)["account_id"]) for item in query_items(dynamodb, request)}

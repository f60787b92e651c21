"""A heal's reads and writes, and the activity index the sweeper reads heal candidates from."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from functions.adapters import account_item as schema
from functions.adapters import keys
from functions.adapters.account_item import (
    heal_epoch_of,
    healed_at_of,
    held_leases,
    latest_write,
    shard_state,
    updated_at_of,
)
from functions.adapters.attributes import from_attributes, to_attributes
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.errors import ConditionFailed, TransactionCancelled, TransactionConflict
from functions.adapters.resources import read_resources, resources_query
from functions.adapters.shards import ShardStore, shard_key
from functions.adapters.table_layout import (
    ACTIVITY_BUCKET,
    ACTIVITY_INDEX,
    COUNTER_PROCESSED,
    DELETED,
    LAST_WRITE,
    PARTITION_KEY,
)
from functions.core import leases
from functions.core.admission import ShardState
from functions.core.healing import AccountState, HealPlan
from functions.core.leases import Lease, Settlement
from functions.core.model import Quota, Resource


class DynamoHealingStore:
    """Reads and writes of a heal, and the activity index the sweeper reads heal candidates from."""

    def __init__(self, table: DynamoTable) -> None:
        self._table = table
        self._shards = ShardStore(table)

    def read_account_state(self, quota: Quota) -> tuple[AccountState, int] | None:
        read = self._shards.read_quota_items(quota)
        if read is None:
            return None
        account, shard_items = read.shards[0], read.shards
        shards = tuple(map(shard_state, shard_items))
        written = latest_write(shard_items)
        state = AccountState(
            version=shards[0].version,
            best_effort_net=sum(shard.best_effort for shard in shards),
            admitted=sum(shard.admitted for shard in shards),
            heal_epoch=heal_epoch_of(account),
            last_write_at=written if written is not None else updated_at_of(account),
            leases=leases.in_order(lease for item in shard_items for lease in held_leases(item)),
            shards=shards,
        )
        return state, read.eventual

    def has_pending_work(self, quota: Quota) -> bool:
        request = resources_query(
            self._table.name,
            quota,
            values={":false": False, ":true": True},
            FilterExpression=f"{COUNTER_PROCESSED} = :false OR {DELETED} = :true",
            Select="COUNT",
            ConsistentRead=True,
        )
        return any(page.get("Count", 0) > 0 for page in self._table.pages("find pending work", request))

    def get_resources(self, quota: Quota, resource_ids: Iterable[str]) -> dict[str, Resource]:
        return read_resources(self._table, quota, resource_ids)

    def settle_together(self, quota: Quota, shard: int, settlements: Mapping[Lease, Settlement]) -> int:
        return self._shards.settle_together(quota, shard, settlements)

    def apply_heal(self, quota: Quota, state: AccountState, plan: HealPlan, now: str) -> bool:
        shards = state.shards or (ShardState(0, room=0, admitted=state.admitted, version=state.version),)
        first, others = shards[0], shards[1:]
        room = sum(shard.room + shard.admitted for shard in shards)  # the limit, as the shards hold it
        assignments = schema.heal_assignments(plan.best_effort - sum(shard.best_effort for shard in others), None, None)
        if plan.admitted is not None:  # quiet: fold every shard into shard 0
            assignments = schema.heal_assignments(plan.best_effort, plan.admitted, room - plan.admitted)
            if others:
                assignments |= schema.ONE_ACTIVE
        writes = [self._heal_write(quota, first, assignments, now)]
        folded = schema.FOLDED if plan.admitted is not None else {}
        writes += [self._heal_write(quota, shard, folded, now) for shard in others]
        return self._heal_writes(quota, writes, now)

    def record_checked(self, quota: Quota, state: AccountState, now: str) -> bool:
        """Note that the account was found exact, so the sweeper skips it until its next write."""
        shards = state.shards or (ShardState(0, room=0, version=state.version),)
        writes = [self._heal_write(quota, shard, {}, now, epoch=False) for shard in shards]
        return self._heal_writes(quota, writes, now)

    def _heal_write(
        self, quota: Quota, shard: ShardState, assignments: Mapping[str, Any], now: str, epoch: bool = True
    ) -> dict[str, Any]:
        """One shard's part of a heal: its assignments and `healed_at`, and a new heal epoch,
        if its version is the one read."""
        values = {f":{name}": value for name, value in assignments.items()}
        return {
            "TableName": self._table.name,
            "Key": shard_key(quota, shard.shard),
            "UpdateExpression": schema.heal_update(assignments, epoch),
            "ConditionExpression": schema.VERSION_CONDITION,
            "ExpressionAttributeValues": to_attributes(
                {**values, ":now": now, ":version": shard.version, **({":one": 1} if epoch else {})}
            ),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def _heal_writes(self, quota: Quota, writes: list[dict[str, Any]], now: str) -> bool:
        """A heal's writes: one conditional update on a one-shard account, else one transaction
        (the SDK's ClientRequestToken makes its retry apply once). Each stamps `healed_at = :now`,
        so a retry of a single update that landed finds its own stamp."""
        operation = f"heal {quota}"
        try:
            if len(writes) > 1:
                self._table.call(operation, "transact_write_items", TransactItems=[{"Update": w} for w in writes])
            else:
                self._table.call(operation, "update_item", **writes[0])
        except ConditionFailed as failed:
            return bool(failed.item) and healed_at_of(failed.item) == now
        except (TransactionCancelled, TransactionConflict):
            return False  # an API write came between: the heal is busy
        return True

    def quotas_written_since(self, written_after: str) -> Iterator[Quota]:
        """Quotas last written at or after that time and not healed or checked since that write
        (each once, though the account item and each of its other shards have their own entry)."""
        seen: set[Quota] = set()
        for index in range(keys.ACTIVITY_BUCKET_COUNT):
            request: dict[str, Any] = {
                "TableName": self._table.name,
                "IndexName": ACTIVITY_INDEX.name,
                "KeyConditionExpression": "#bucket = :bucket AND #written >= :after",
                "ExpressionAttributeNames": {"#bucket": ACTIVITY_BUCKET, "#written": LAST_WRITE},
                "ExpressionAttributeValues": to_attributes(
                    {":bucket": keys.activity_bucket_name(index), ":after": written_after}
                ),
            }
            for page in self._table.pages("find written accounts", request):
                for item in map(from_attributes, page.get("Items", [])):
                    quota = keys.quota_of(str(item[PARTITION_KEY]))
                    if quota and healed_at_of(item) < str(item[LAST_WRITE]) and quota not in seen:
                        seen.add(quota)
                        yield quota

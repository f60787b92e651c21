"""A heal's reads and writes, and the activity index the sweeper reads heal candidates from."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from functions.adapters import keys
from functions.adapters.attributes import from_attributes, to_attributes
from functions.adapters.errors import condition_failed_item, error_code, transient_pages
from functions.adapters.resources import read_resources
from functions.adapters.shards import (
    ACTIVE,
    CCF,
    RETIRED,
    ROOM,
    ShardStore,
    held_leases,
    latest_write,
    read_account_items,
    settle_together,
    shard_key,
    shard_state,
)
from functions.adapters.table_layout import (
    ACTIVITY_BUCKET,
    ACTIVITY_INDEX,
    COUNTER_PROCESSED,
    DELETED,
    LAST_WRITE,
    PARTITION_KEY,
    SORT_KEY,
)
from functions.core import leases
from functions.core.admission import ShardState
from functions.core.audit import AccountView
from functions.core.counting import TransientStoreError
from functions.core.errors import StoreUnavailable
from functions.core.healing import AccountState, HealPlan
from functions.core.leases import Lease, Settlement
from functions.core.model import Resource


class DynamoHealingStore:
    """Reads and writes of a heal, and the activity index the sweeper reads heal candidates from."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name
        self._shards = ShardStore(client, table_name)

    def read_account_state(self, account_id: str) -> tuple[AccountState, int] | None:
        try:
            read = read_account_items(self._shards, account_id)
        except StoreUnavailable as error:
            raise TransientStoreError(str(error)) from error
        if read is None:
            return None
        account, shard_items = read.shards[0], read.shards
        shards = tuple(map(shard_state, shard_items))
        written = latest_write(shard_items)
        state = AccountState(
            version=shards[0].version,
            best_effort_net=sum(shard.best_effort for shard in shards),
            admitted=sum(shard.admitted for shard in shards),
            heal_epoch=int(account.get("heal_epoch", 0)),
            last_write_at=written if written is not None else str(account.get("updated_at", "")),
            leases=leases.in_order(lease for item in shard_items for lease in held_leases(item)),
            shards=shards,
        )
        return state, read.eventual

    def has_pending_work(self, account_id: str) -> bool:
        request: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "FilterExpression": f"{COUNTER_PROCESSED} = :false OR {DELETED} = :true",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY},
            "ExpressionAttributeValues": to_attributes(
                {
                    ":pk": keys.account_pk(account_id),
                    ":prefix": keys.RESOURCE_PREFIX,
                    ":false": False,
                    ":true": True,
                }
            ),
            "Select": "COUNT",
            "ConsistentRead": True,
        }
        return any(page.get("Count", 0) > 0 for page in transient_pages(self._client, request))

    def get_resources(self, account_id: str, resource_ids: Iterable[str]) -> dict[str, Resource]:
        try:
            return read_resources(self._shards, account_id, resource_ids)
        except StoreUnavailable as error:
            raise TransientStoreError(str(error)) from error

    def settle_together(self, account_id: str, shard: int, settlements: Mapping[Lease, Settlement]) -> int:
        try:
            return settle_together(self._client, self._table, account_id, shard, settlements)
        except StoreUnavailable as error:
            raise TransientStoreError(str(error)) from error

    def apply_heal(self, account_id: str, state: AccountState, plan: HealPlan, now: str) -> bool:
        shards = state.shards or (ShardState(0, room=0, admitted=state.admitted, version=state.version),)
        first, others = shards[0], shards[1:]
        room = sum(shard.room + shard.admitted for shard in shards)  # the limit, as the shards hold it
        assignments = {"best_effort": plan.best_effort - sum(shard.best_effort for shard in others)}
        if plan.admitted is not None:  # quiet: fold every shard into shard 0
            assignments = {"best_effort": plan.best_effort, "admitted": plan.admitted, ROOM: room - plan.admitted}
            if others:
                assignments[ACTIVE] = 1
        writes = [self._heal_write(account_id, first, assignments, now)]
        folded = {"best_effort": 0, "admitted": 0, ROOM: 0, RETIRED: True} if plan.admitted is not None else {}
        writes += [self._heal_write(account_id, shard, folded, now) for shard in others]
        return self._heal_writes(account_id, writes, now)

    def record_checked(self, account_id: str, state: AccountState, now: str) -> bool:
        """Note that the account was found exact, so the sweeper skips it until its next write."""
        shards = state.shards or (ShardState(0, room=0, version=state.version),)
        writes = [self._heal_write(account_id, shard, {}, now, epoch=False) for shard in shards]
        return self._heal_writes(account_id, writes, now)

    def _heal_write(
        self, account_id: str, shard: ShardState, assignments: Mapping[str, Any], now: str, epoch: bool = True
    ) -> dict[str, Any]:
        """One shard's part of a heal: its assignments and `healed_at`, and a new heal epoch,
        if its version is the one read."""
        values = {f":{name}": value for name, value in assignments.items()}
        sets = ", ".join([*(f"{name} = :{name}" for name in assignments), "healed_at = :now"])
        return {
            "TableName": self._table,
            "Key": shard_key(account_id, shard.shard),
            "UpdateExpression": f"SET {sets}" + (" ADD heal_epoch :one" if epoch else ""),
            "ConditionExpression": "version = :version",
            "ExpressionAttributeValues": to_attributes(
                {**values, ":now": now, ":version": shard.version, **({":one": 1} if epoch else {})}
            ),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def _heal_writes(self, account_id: str, writes: list[dict[str, Any]], now: str) -> bool:
        """A heal's writes: one conditional update on a one-shard account, else one transaction
        (the SDK's ClientRequestToken makes its retry apply once). Each stamps `healed_at = :now`,
        so a retry of a single update that landed finds its own stamp."""
        try:
            if len(writes) > 1:
                self._client.transact_write_items(TransactItems=[{"Update": write} for write in writes])
            else:
                self._client.update_item(**writes[0])
        except ClientError as error:
            if error_code(error) == CCF:
                return bool(from_attributes(condition_failed_item(error) or {}).get("healed_at") == now)
            if error_code(error) in ("TransactionCanceledException", "TransactionConflictException"):
                return False  # an API write came between: the heal is busy
            raise TransientStoreError(f"heal {account_id}: {error}") from error
        except BotoCoreError as error:
            raise TransientStoreError(f"heal {account_id}: {error}") from error
        return True

    # The audit's reads (the sweeper audits a slice of accounts); imported here because they build
    # on this module's readers.
    def accounts_in_slice(self, number: int) -> set[str]:
        """The accounts of one activity bucket: the slices are the buckets, in turn."""
        from functions.adapters.audit_reads import accounts_in_bucket

        return accounts_in_bucket(self._client, self._table, number % keys.ACTIVITY_BUCKET_COUNT)

    def account_view(self, account_id: str) -> AccountView | None:
        from functions.adapters.audit_reads import account_view

        return account_view(self._client, self._table, account_id)

    def accounts_written_since(self, written_after: str) -> Iterator[str]:
        """Accounts last written at or after that time and not healed or checked since that write
        (each once, though the account item and each of its other shards have their own entry)."""
        seen: set[str] = set()
        for index in range(keys.ACTIVITY_BUCKET_COUNT):
            request: dict[str, Any] = {
                "TableName": self._table,
                "IndexName": ACTIVITY_INDEX.name,
                "KeyConditionExpression": "#bucket = :bucket AND #written >= :after",
                "ExpressionAttributeNames": {"#bucket": ACTIVITY_BUCKET, "#written": LAST_WRITE},
                "ExpressionAttributeValues": to_attributes(
                    {":bucket": keys.activity_bucket_name(index), ":after": written_after}
                ),
            }
            for page in transient_pages(self._client, request):
                for item in map(from_attributes, page.get("Items", [])):
                    account_id = str(item["account_id"])
                    if str(item.get("healed_at", "")) < str(item[LAST_WRITE]) and account_id not in seen:
                        seen.add(account_id)
                        yield account_id

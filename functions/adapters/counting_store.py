"""The eventual counter's storage: the consumer's port (transactions) and the sweep's reads."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from functions.adapters.attributes import to_attributes
from functions.adapters.counters import COUNT, counter_key
from functions.adapters.errors import condition_failed_item, error_code, transient_pages
from functions.adapters.resource_records import pending_record
from functions.adapters.resources import TOMBSTONE, TOMBSTONE_REMOVES, resource_key, resource_state
from functions.adapters.shards import CCF
from functions.adapters.table_layout import (
    COUNTER_PROCESSED,
    DELETED,
    EXPIRES_AT,
    ITEM_TYPE,
    PARTITION_KEY,
    PENDING_BUCKET,
    PENDING_INDEX,
    PENDING_SINCE,
)
from functions.core.counting import (
    COMMITTED,
    CONDITIONAL_CHECK_FAILED,
    DELTAS,
    ActionKind,
    CancellationReason,
    ItemRecord,
    ResourceAction,
    TransactionResult,
    TransientStoreError,
    counter_shard,
)
from functions.core.leases import DEFAULT_TOMBSTONE_RETENTION
from functions.shared.clock import Clock


class DynamoCountingStore:
    """The eventual counter's storage: one transaction per batch of an account's counting actions,
    plus the sweep's reads.

    A counted delete turns the resource into a tombstone kept for `tombstone_retention`."""

    def __init__(
        self,
        client: Any,
        table_name: str,
        clock: Clock,
        tombstone_retention: timedelta = DEFAULT_TOMBSTONE_RETENTION,
    ) -> None:
        self._client = client
        self._table = table_name
        self._retention = tombstone_retention
        self._clock = clock

    def apply_actions(self, account_id: str, actions: Sequence[ResourceAction]) -> TransactionResult:
        delta = sum(DELTAS[action.kind] for action in actions)
        if delta == 0 and len(actions) == 1:
            return self._update_alone(self._action(account_id, actions[0]))  # 1 WCU, not a transaction's 2
        items = [{"Update": self._action(account_id, action)} for action in actions]
        counter = [self._counter_update(account_id, delta, counter_shard(actions))] if delta else []
        return self._transact(items + counter)

    def _action(self, account_id: str, action: ResourceAction) -> dict[str, Any]:
        if action.kind is ActionKind.COUNT_CREATE:
            return {
                "TableName": self._table,
                "Key": resource_key(account_id, action.resource_id),
                "UpdateExpression": f"SET {COUNTER_PROCESSED} = :true REMOVE {PENDING_BUCKET}, {PENDING_SINCE}",
                "ConditionExpression": (
                    f"attribute_exists(#pk) AND {COUNTER_PROCESSED} = :false AND {DELETED} = :false"
                ),
                "ExpressionAttributeNames": {"#pk": PARTITION_KEY},
                "ExpressionAttributeValues": to_attributes({":true": True, ":false": False}),
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        return self._to_tombstone(account_id, action.resource_id, counted=action.kind is ActionKind.REMOVE_COUNTED)

    def _update_alone(self, update: dict[str, Any]) -> TransactionResult:
        """One conditional update, its outcome told as a one-action transaction's would be."""
        try:
            self._client.update_item(**update)
        except ClientError as error:
            if error_code(error) != CCF:
                raise TransientStoreError(f"update {update['Key']}: {error}") from error
            return TransactionResult(
                (CancellationReason(CONDITIONAL_CHECK_FAILED, resource_state(condition_failed_item(error))),)
            )
        except BotoCoreError as error:
            raise TransientStoreError(f"update {update['Key']}: {error}") from error
        return COMMITTED

    def pending_records(self, older_than: str | None) -> Iterator[ItemRecord]:
        """Every resource in the sparse pending index (pending since before `older_than`, if given),
        by key.

        A Scan of the index, not a Query per bucket: the index holds only resources with counting
        work left, so a Scan reads (and is billed for) those entries alone, in one call when little
        is pending, however many buckets spread the index's writes; a Query per bucket would cost
        a call per bucket, empty or not. Entries younger than `older_than` are read and filtered
        out: at most the stream's lag times the table's write rate (docs/scaling.md)."""
        request: dict[str, Any] = {"TableName": self._table, "IndexName": PENDING_INDEX.name}
        if older_than is not None:
            request["FilterExpression"] = "#since < :cutoff"
            request["ExpressionAttributeNames"] = {"#since": PENDING_SINCE}
            request["ExpressionAttributeValues"] = to_attributes({":cutoff": older_than})
        for page in transient_pages(self._client, request, "scan pending index: ", operation="scan"):
            yield from map(pending_record, page.get("Items", []))

    def _to_tombstone(self, account_id: str, resource_id: str, *, counted: bool) -> dict[str, Any]:
        """A soft-deleted resource becomes its tombstone (the removal of the resource)."""
        return {
            "TableName": self._table,
            "Key": resource_key(account_id, resource_id),
            "UpdateExpression": f"SET #type = :tombstone, {EXPIRES_AT} = :expires REMOVE {TOMBSTONE_REMOVES}",
            "ConditionExpression": f"{DELETED} = :true AND {COUNTER_PROCESSED} = :counted",
            "ExpressionAttributeNames": {"#type": ITEM_TYPE},
            "ExpressionAttributeValues": to_attributes(
                {
                    ":true": True,
                    ":counted": counted,
                    ":tombstone": TOMBSTONE,
                    ":expires": int((self._clock.now() + self._retention).timestamp()),
                }
            ),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def _counter_update(self, account_id: str, delta: int, shard: int) -> dict[str, Any]:
        return {
            "Update": {
                "TableName": self._table,
                "Key": counter_key(account_id, shard),
                "UpdateExpression": "ADD #count :delta SET account_id = :id",
                "ExpressionAttributeNames": {"#count": COUNT},
                "ExpressionAttributeValues": to_attributes({":delta": delta, ":id": account_id}),
            }
        }

    def _transact(self, actions: list[dict[str, Any]]) -> TransactionResult:
        try:
            self._client.transact_write_items(TransactItems=actions)
        except ClientError as error:
            if error_code(error) != "TransactionCanceledException":
                raise TransientStoreError(f"transaction failed: {error}") from error
            reasons = error.response.get("CancellationReasons") or []
            if len(reasons) != len(actions):
                raise TransientStoreError("transaction cancelled without a reason per action") from error
            return TransactionResult(
                tuple(
                    CancellationReason(code=str(reason.get("Code", "")), item=resource_state(reason.get("Item")))
                    for reason in reasons
                )
            )
        except BotoCoreError as error:
            raise TransientStoreError(f"transaction failed: {error}") from error
        return COMMITTED

"""The usage events' outbox item family: one item per event, written in the transaction that
decides it (functions/core/counting.py), in the quota's partition (`EVENT#<seq>`), and read back
from the table's stream by the publisher (functions/event_publisher/handler.py).

An item holds the event as the bus carries it: its detail-type and its detail (the model's JSON,
functions/usage_events/models.py). It expires (TTL) after OUTBOX_RETENTION: long after the stream's 24 h
and the events' dead-letter queue's 14 days, so an operator's replay can still find it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import (
    DynamoDBRecord,
    DynamoDBRecordEventName,
)

from functions.adapters import keys
from functions.adapters.attributes import to_attributes
from functions.adapters.table_layout import (
    EXPIRES_AT,
    ITEM_TYPE,
    PARTITION_KEY,
    PENDING_BUCKET,
    PENDING_SINCE,
    SORT_KEY,
    item_key,
)
from functions.core.accounts import LimitChange
from functions.core.admission import ShardState
from functions.core.leases import iso_timestamp, parse_timestamp
from functions.core.model import Quota, QuotaMode
from functions.core.offboarding import AccountDeletion
from functions.core.publishing import BusEvent, OutboxRecord
from functions.core.thresholds import Crossing, limit_change_id, thresholds_or_default
from functions.usage_events.models import AccountDeleted, LimitChanged, UsageThresholdCrossed

USAGE_EVENT = "usage_event"  # the item type
DETAIL_TYPE = "detail_type"
DETAIL = "detail"
OUTBOX_RETENTION = timedelta(days=15)


def crossing_item(table: str, crossing: Crossing, now: datetime) -> dict[str, Any]:
    """A decision's action writing one crossing's outbox item: an Update that creates it (so the
    consumer needs no PutItem), on condition that its key is new."""
    event = UsageThresholdCrossed.of(crossing, iso_timestamp(now))
    return {
        "Update": {
            "TableName": table,
            "Key": item_key(keys.account_pk(crossing.quota), keys.event_sk(crossing.seq)),
            "UpdateExpression": "SET #type = :type, #detail_type = :detail_type, #detail = :detail, "
            "#expires = :expires, account_id = :id",
            "ConditionExpression": "attribute_not_exists(#pk)",
            "ExpressionAttributeNames": {
                "#type": ITEM_TYPE,
                "#detail_type": DETAIL_TYPE,
                "#detail": DETAIL,
                "#expires": EXPIRES_AT,
                "#pk": PARTITION_KEY,
            },
            "ExpressionAttributeValues": to_attributes(
                {
                    ":type": USAGE_EVENT,
                    ":detail_type": event.DETAIL_TYPE,
                    ":detail": event.model_dump_json(exclude_none=True),  # a holding's: as before periods
                    ":expires": int((now + OUTBOX_RETENTION).timestamp()),
                    ":id": crossing.quota.account_id,
                }
            ),
        }
    }


def limit_change_item(table: str, quota: Quota, account: ShardState, change: LimitChange, now: str) -> dict[str, Any]:
    """A limit change's outbox item, a Put for the PUT's transaction: the account item as the PUT
    read it (`account`) to `change` (its limit, its thresholds or both), at the limit version that
    change makes."""
    version = account.limit_version + 1
    event = LimitChanged(
        eventId=limit_change_id(quota, version),
        accountId=quota.account_id,
        resourceType=quota.resource_type,
        oldLimit=account.limit,
        newLimit=change.limit,
        usage=account.admitted,
        oldThresholds=list(thresholds_or_default(account.thresholds)),
        newThresholds=list(change.new_thresholds(account)),
        changedBy=change.changed_by,
        changedAt=now,
        limitVersion=version,
    )
    new_mode = change.new_mode(account)
    if QuotaMode.SHADOW in (account.mode, new_mode):  # absent for a quota that was and stays enforced
        event = event.model_copy(update={"oldMode": account.mode, "newMode": new_mode})
    sort_key = keys.limit_change_sk(version)
    values = {
        PARTITION_KEY: keys.account_pk(quota),
        SORT_KEY: sort_key,
        # In the pending index until the consumer has decided the crossings the change makes
        # (CountingStore.settle_limit_change), so a change whose stream records are lost is
        # decided by the sweep that finds it there.
        PENDING_BUCKET: keys.pending_bucket(quota, sort_key),
        PENDING_SINCE: now,
        ITEM_TYPE: USAGE_EVENT,
        DETAIL_TYPE: event.DETAIL_TYPE,
        DETAIL: event.model_dump_json(exclude_none=True),
        EXPIRES_AT: int((parse_timestamp(now) + OUTBOX_RETENTION).timestamp()),
        "account_id": quota.account_id,
    }
    return _put_new(table, values)


def account_deleted_item(table: str, deletion: AccountDeletion) -> dict[str, Any]:
    """An account deletion's outbox item, a Put for the transaction that records the deletion, in
    the account's partition (erased with it, long after the stream has published it)."""
    received = datetime.fromtimestamp(deletion.requested_ms / 1000, UTC)
    event = AccountDeleted(
        eventId=f"account-deleted:{deletion.account_id}:{deletion.requested_ms}",
        accountId=deletion.account_id,
        resourceTypes=[place.resource_type for place in deletion.quotas],
        deletedBy=deletion.deleted_by,
        deletedAt=iso_timestamp(received),
    )
    values = {
        PARTITION_KEY: keys.account_pk(Quota(deletion.account_id)),
        SORT_KEY: keys.ACCOUNT_DELETED_SK,
        ITEM_TYPE: USAGE_EVENT,
        DETAIL_TYPE: event.DETAIL_TYPE,
        DETAIL: event.model_dump_json(),
        EXPIRES_AT: int((received + OUTBOX_RETENTION).timestamp()),
        "account_id": deletion.account_id,
    }
    return _put_new(table, values)


def _put_new(table: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """A transaction's Put of an outbox item, on condition that its key is new: an event is written once."""
    return {
        "Put": {
            "TableName": table,
            "Item": to_attributes(values),
            "ConditionExpression": "attribute_not_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY},
        }
    }


def outbox_event(values: Mapping[str, Any]) -> BusEvent | None:
    """The event an item's plain values hold; None if the item is not an outbox item."""
    sort_key = values.get(SORT_KEY)
    if not isinstance(sort_key, str) or not sort_key.startswith(keys.EVENT_PREFIX):
        return None
    detail_type, detail = values.get(DETAIL_TYPE), values.get(DETAIL)
    if not isinstance(detail_type, str) or not isinstance(detail, str):
        return None
    return BusEvent(detail_type, detail)


def inserted_events(records: Iterable[DynamoDBRecord]) -> list[OutboxRecord]:
    """Each stream record by its sequence number, with the event it inserted (None: the record is
    not an outbox item's insert). Lambda's records and GetRecords' share the fields read here."""
    found: list[OutboxRecord] = []
    for record in records:
        data = record.dynamodb
        sequence = str(data.sequence_number if data else "")
        inserted = data is not None and record.event_name is DynamoDBRecordEventName.INSERT
        found.append((sequence, outbox_event({**data.new_image, **data.keys}) if inserted and data else None))
    return found

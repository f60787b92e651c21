"""The codec of resource records: what a stream record or a pending-index entry says of a resource,
as the counting core reads it (functions/core/counting.py's `ResourceRecord`).

Every source is decoded by a library first (Powertools' DynamoDBRecord for a stream record, the
consumer's and the redrive's; boto3's TypeDeserializer for a pending-index entry) and read here as
plain values, so the three sources cannot disagree on what a record says.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import (
    DynamoDBRecord,
    DynamoDBRecordEventName,
)

from functions.adapters import keys
from functions.adapters.attributes import from_attributes
from functions.adapters.resources import ADMITTED_BY, AMOUNT, PERIOD
from functions.adapters.table_layout import COUNTED_UNITS, COUNTER_PROCESSED, DELETED, PARTITION_KEY, SORT_KEY
from functions.core.counting import ItemRecord, LimitChangedRecord, ResourceRecord
from functions.core.model import Quota

# A stream record's new image is a resource's state only for these: a REMOVE record has none.
_WRITES = (DynamoDBRecordEventName.INSERT, DynamoDBRecordEventName.MODIFY)


def resource_ids(values: Mapping[str, Any]) -> tuple[Quota, str] | None:
    """The quota and resource a key names, or None if it is not a resource's key."""
    pk, sk = values.get(PARTITION_KEY), values.get(SORT_KEY)
    if not isinstance(pk, str) or not isinstance(sk, str) or not pk.startswith(keys.ACCOUNT_PREFIX):
        return None
    quota, resource_id = keys.quota_of(pk), keys.resource_id_from_sk(sk)
    if quota is None or not resource_id:
        return None
    period = values.get(PERIOD)  # a usage record counts in its period
    return (quota.in_period(period) if isinstance(period, str) and period else quota), resource_id


def from_values(values: Mapping[str, Any], flags_only: bool = False) -> ResourceRecord | None:
    """A resource's record from its item's plain (deserialized) values, keys included; None if
    the item is not a resource. `flags_only`: the values are a pending-index entry's, which
    carries the counting flags and not the amount nor `counted_units`."""
    ids = resource_ids(values)
    if ids is None:
        return None
    created_at = values.get("created_at")
    return ResourceRecord(
        *ids,
        deleted=_flag(values.get(DELETED)),
        counter_processed=_flag(values.get(COUNTER_PROCESSED)),
        shard=_shard(values.get(ADMITTED_BY)),
        created_at=created_at if isinstance(created_at, str) else None,
        amount=_amount(values.get(AMOUNT)),
        counted=_counted(values.get(COUNTED_UNITS)),
        flags_only=flags_only,
    )


def sequence_number(record: DynamoDBRecord) -> str:
    """A stream record's id, as the partial batch response and the on-failure range name it."""
    return str(record.dynamodb.sequence_number if record.dynamodb else "")


def from_stream_record(record: DynamoDBRecord) -> ResourceRecord | LimitChangedRecord | None:
    """What a stream record's new image says of a resource, or the limit change whose outbox item
    it inserted: Lambda's records and GetRecords' share the fields read here (eventName,
    dynamodb.Keys, dynamodb.NewImage)."""
    data = record.dynamodb
    if data is None or record.event_name not in _WRITES:
        return None
    values = {**data.new_image, **data.keys}
    change = _limit_change(values)
    if change is not None:  # only its insert: a MODIFY is its settling (it leaves the pending index)
        return change if record.event_name is DynamoDBRecordEventName.INSERT else None
    return from_values(values)


def _limit_change(values: Mapping[str, Any]) -> LimitChangedRecord | None:
    """The limit change whose outbox item these plain values are, or None for any other item."""
    pk, sk = values.get(PARTITION_KEY), values.get(SORT_KEY)
    if not isinstance(pk, str) or not isinstance(sk, str):
        return None
    quota, version = keys.quota_of(pk), keys.limit_version_from_sk(sk)
    return None if quota is None or version is None else LimitChangedRecord(quota, version)


def stream_records(records: Iterable[DynamoDBRecord]) -> list[ItemRecord]:
    """Each stream record by its sequence number."""
    return [(sequence_number(record), from_stream_record(record)) for record in records]


def pending_record(item: Mapping[str, Any], period: str | None = None) -> ItemRecord:
    """A pending-index entry (DynamoDB's typed attributes) by its key, `pk/sk`: a resource's, or a
    limit change's outbox item not yet decided; `period`: the period a resource's item says it
    counts in (the index does not carry it), if any."""
    values = from_attributes(item)
    if period:
        values[PERIOD] = period
    record = _limit_change(values) or from_values(values, flags_only=True)
    return f"{values.get(PARTITION_KEY)}/{values.get(SORT_KEY)}", record


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _amount(value: Any) -> int:
    """A resource's amount (an int, or a Decimal as Powertools decodes numbers); absent: 1."""
    if isinstance(value, int | Decimal) and not isinstance(value, bool) and value >= 1 and value == int(value):
        return int(value)
    return 1


def _counted(value: Any) -> int | None:
    """A resource's `counted_units` (an int, or a Decimal as Powertools decodes numbers); absent: None."""
    if isinstance(value, int | Decimal) and not isinstance(value, bool) and value >= 0 and value == int(value):
        return int(value)
    return None


def _shard(value: Any) -> int:
    """A shard number (an int, or a Decimal as Powertools decodes numbers); else 0, the account item."""
    if isinstance(value, int | Decimal) and not isinstance(value, bool) and value >= 0 and value == int(value):
        return int(value)
    return 0

"""Refused windows (functions/core/refusals.py) in the table, and the queue that has them announced.

A window is an item in its quota's partition (`REFUSED#<minute>`): `refused` (the count),
`extra_units` (the units its refusals asked for beyond one each: absent on a window of lines from
before amounts, which all asked for one), `batches`
(a string set of the batch ids counted into it, so a retried invocation adds nothing), the last
refusal's `limit`, and `announced_at` once announced; it expires (TTL) 16 days after its minute. The
announcement writes, in one transaction with `announced_at`, the Limit Refused event's outbox item
(`EVENT#REFUSED#<minute>`), which the publisher puts on the bus as it does every `EVENT#` item.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from functions.adapters import keys
from functions.adapters.attributes import to_attributes
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.errors import ConditionFailed, TransactionCancelled
from functions.adapters.outbox import DETAIL, DETAIL_TYPE, OUTBOX_RETENTION, USAGE_EVENT
from functions.adapters.table_layout import EXPIRES_AT, ITEM_TYPE, PARTITION_KEY, SORT_KEY, item_key
from functions.core.leases import iso_timestamp
from functions.core.refusals import Counted, Window, WindowCount, WindowState, window_message
from functions.usage_events.models import LimitRefused

REFUSED_WINDOW = "refused_window"  # the item type
REFUSED = "refused"
EXTRA_UNITS = "extra_units"
BATCHES = "batches"
LIMIT = "limit"
ANNOUNCED_AT = "announced_at"
# A window outlives its event's outbox item (OUTBOX_RETENTION), and so every message of the refusals'
# dead-letter queue (14 days): a line replayed from there finds its minute announced and is counted
# in no event, rather than opening the minute again and announcing it a second time.
WINDOW_RETENTION = OUTBOX_RETENTION + timedelta(days=1)


def _key(window: Window) -> dict[str, Any]:
    return item_key(keys.account_pk(window.quota), keys.refused_window_sk(window.key_name))


class DynamoRefusedWindows:
    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def add(self, count: WindowCount, now: datetime) -> Counted:
        window = count.window
        try:
            response = self.table.call(
                "count refused creates",
                "update_item",
                TableName=self.table.name,
                Key=_key(window),
                UpdateExpression="ADD #refused :refused, #extra :extra, #batches :batches SET #type = :type, "
                "account_id = :account, "
                "resource_type = :resource_type, #limit = :limit, window_start = :start, "
                "#expires = if_not_exists(#expires, :expires)",
                ConditionExpression="NOT contains(#batches, :batch) AND attribute_not_exists(#announced)",
                ExpressionAttributeNames={
                    "#refused": REFUSED,
                    "#extra": EXTRA_UNITS,
                    "#batches": BATCHES,
                    "#type": ITEM_TYPE,
                    "#limit": LIMIT,
                    "#expires": EXPIRES_AT,
                    "#announced": ANNOUNCED_AT,
                },
                ExpressionAttributeValues={
                    **to_attributes(
                        {
                            ":refused": count.refused,
                            ":extra": count.refused_units - count.refused,
                            ":type": REFUSED_WINDOW,
                            ":account": window.quota.account_id,
                            ":resource_type": window.quota.resource_type,
                            ":limit": count.limit,
                            ":start": iso_timestamp(window.start),
                            ":expires": int((window.end + WINDOW_RETENTION).timestamp()),
                            ":batch": count.batch_id,
                        }
                    ),
                    ":batches": {"SS": [count.batch_id]},
                },
                ReturnValues="UPDATED_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailed as failed:
            if count.batch_id in failed.item.get(BATCHES, set()):
                return Counted.REPEATED if ANNOUNCED_AT not in failed.item else Counted.ANNOUNCED
            return Counted.LATE
        return Counted.ADDED if REFUSED in response.get("Attributes", {}) else Counted.OPENED

    def read(self, window: Window) -> WindowState | None:
        response = self.table.call(
            "read a refused window", "get_item", TableName=self.table.name, Key=_key(window), ConsistentRead=True
        )
        item = response.get("Item")
        if item is None:
            return None
        refused = int(item[REFUSED]["N"])
        extra = int(item[EXTRA_UNITS]["N"]) if EXTRA_UNITS in item else 0
        return WindowState(refused, int(item[LIMIT]["N"]), ANNOUNCED_AT in item, refused_units=refused + extra)

    def announce(self, window: Window, state: WindowState, now: datetime) -> bool:
        event = LimitRefused(
            eventId=window.event_id,
            accountId=window.quota.account_id,
            resourceType=window.quota.resource_type,
            refused=state.refused,
            refusedUnits=state.units,
            limit=state.limit,
            windowStart=iso_timestamp(window.start),
            windowEnd=iso_timestamp(window.end),
            shadow=True if window.shadow else None,
        )
        outbox = {
            PARTITION_KEY: keys.account_pk(window.quota),
            SORT_KEY: keys.limit_refused_sk(window.key_name),
            ITEM_TYPE: USAGE_EVENT,
            DETAIL_TYPE: event.DETAIL_TYPE,
            DETAIL: event.model_dump_json(exclude_none=True),
            EXPIRES_AT: int((now + OUTBOX_RETENTION).timestamp()),
            "account_id": window.quota.account_id,
        }
        try:
            self.table.call(
                "announce a refused window",
                "transact_write_items",
                TransactItems=[
                    {
                        "Update": {
                            "TableName": self.table.name,
                            "Key": _key(window),
                            "UpdateExpression": "SET #announced = :now",
                            "ConditionExpression": "#refused = :refused AND attribute_not_exists(#announced)",
                            "ExpressionAttributeNames": {"#announced": ANNOUNCED_AT, "#refused": REFUSED},
                            "ExpressionAttributeValues": to_attributes(
                                {":now": iso_timestamp(now), ":refused": state.refused}
                            ),
                        }
                    },
                    {
                        "Put": {
                            "TableName": self.table.name,
                            "Item": to_attributes(outbox),
                            "ConditionExpression": "attribute_not_exists(#pk)",
                            "ExpressionAttributeNames": {"#pk": PARTITION_KEY},
                        }
                    },
                ],
            )
        except TransactionCancelled:
            return False
        return True


class SqsAnnouncementQueue:
    """The queue the emitter reads: a window's message, delayed until it is to be announced."""

    def __init__(self, sqs: Any, queue_url: str) -> None:
        self.sqs = sqs
        self.queue_url = queue_url

    def schedule(self, window: Window, delay: timedelta) -> None:
        self.sqs.send_message(
            QueueUrl=self.queue_url, MessageBody=window_message(window), DelaySeconds=math.ceil(delay.total_seconds())
        )

"""Where one quota's items are, found without a Scan: its partition (a Query of it), its admission
and counter shards above 0, and for a periodic quota the same of each of its periods whose items may
still be in the table. An account's erasure (offboarding_store.py) and a type's removal
(api_store.py) delete what these name."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from functions.adapters import keys
from functions.adapters.account_item import SPAN
from functions.adapters.attributes import to_attributes
from functions.adapters.counters import counter_key
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.shards import shard_key
from functions.adapters.table_layout import PARTITION_KEY, SORT_KEY
from functions.core.accounts import HISTORY_RETENTION
from functions.core.counting import EVENTUAL_COUNTER_SHARDS
from functions.core.model import Quota
from functions.core.periods import Period, PeriodWindow


def kept_windows(period: Period, now: datetime) -> Iterator[PeriodWindow]:
    """Every window whose items may still be in the table at `now`: the next one, the current one,
    and those that ended within the history's retention (TTL removes older ones)."""
    window = period.window_at(now)
    yield period.following(window)
    while window.end + HISTORY_RETENTION > now:
        yield window
        window = period.preceding(window)


def period_partitions(quota: Quota, period: Period | None, now: datetime) -> list[Quota]:
    """The periods of `quota` whose items may be in the table at `now` (none for a holding)."""
    return [] if period is None else [quota.in_period(window.id) for window in kept_windows(period, now)]


def quota_keys(table: DynamoTable, partition: Quota, span: int = 1) -> list[dict[str, Any]]:
    """The key of every item of `partition` (a quota, or one period of one): those of its partition
    (one Query, by pages) and those it spreads to, over the span its shard 0 records or `span`,
    whichever is wider (its shard 0 may be gone: an account's fence deletes it)."""
    request = {
        "TableName": table.name,
        "KeyConditionExpression": "#pk = :pk",
        "ProjectionExpression": "#pk, #sk, #span",
        "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY, "#span": SPAN},
        "ExpressionAttributeValues": to_attributes({":pk": keys.account_pk(partition)}),
        "ConsistentRead": True,
    }
    items = [item for page in table.pages("read a quota's partition", request) for item in page.get("Items", [])]
    recorded = [int(item[SPAN]["N"]) for item in items if item[SORT_KEY]["S"] == keys.ACCOUNT_SORT_KEY and SPAN in item]
    return [
        *({PARTITION_KEY: item[PARTITION_KEY], SORT_KEY: item[SORT_KEY]} for item in items),
        *spread_keys(partition, max([span, *recorded])),
    ]


def spread_keys(partition: Quota, span: int) -> list[dict[str, Any]]:
    """The keys a busy quota (or period) spreads to: its admission shards 1 .. span-1 and, when its
    span is above 1, its eventual counter shards above 0 (absent ones are deleted as nothing)."""
    shards = [shard_key(partition, shard) for shard in range(1, span)]
    counters = [counter_key(partition, shard) for shard in range(1, EVENTUAL_COUNTER_SHARDS)] if span > 1 else []
    return [*shards, *counters]

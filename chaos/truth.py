"""What the table holds for one limit of an account (a quota: the account and a type), read from
inside at one instant.

A quota's resources, account item and first counter share its partition; a busy quota's
admission shards and counter shards have partitions of their own. The embedded emulator reads them
all in one request inside its one-request-at-a-time lock (local/partition_reads.py): a true instant
to check the invariants at, however the account is spread.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from functions.adapters import keys, outbox, resources, table_layout
from functions.adapters.account_item import held_leases, shard_state
from functions.adapters.attributes import from_attributes
from functions.core.admission import MAX_SHARDS
from functions.core.counting import EVENTUAL_COUNTER_SHARDS
from functions.core.leases import Lease
from functions.core.model import Quota
from functions.usage_events.models import LimitChanged, LimitRefused, UsageThresholdCrossed
from local.partition_reads import read_partitions


@dataclass
class Snapshot:
    quota: Quota
    limit: int = 0
    best_effort_net: int = 0  # over every admission shard
    admitted: int = 0  # over every admission shard
    admitted_by_shard: dict[int, int] = field(default_factory=dict)  # each admission shard item's own
    room: int = 0  # over every admission shard: room + admitted = limit, always
    shards: int = 0  # admission shard items
    eventual: int = 0  # over every counter shard
    live: set[str] = field(default_factory=set)
    live_units: int = 0  # the sum of the live resources' amounts: what the limit bounds
    # Units the eventual counter holds for the existing resources with counter_processed=true: each
    # one's amount, or its `counted_units` while a resize of it is not counted yet.
    processed: int = 0
    existing: set[str] = field(default_factory=set)
    pending: int = 0  # uncounted or soft-deleted resources
    leases: tuple[Lease, ...] = ()  # on the shard items: writes in flight, or dead and not yet settled
    tombstones: dict[str, dict[str, Any]] = field(default_factory=dict)  # counted deletes, by resource id
    items: dict[str, dict[str, Any]] = field(default_factory=dict)  # resource id -> its attributes
    events: list[dict[str, Any]] = field(default_factory=list)  # its threshold crossings' details, by seq
    limit_changes: list[dict[str, Any]] = field(default_factory=list)  # its limit changes', by limit version
    refusals: list[dict[str, Any]] = field(default_factory=list)  # its Limit Refused events', by minute
    limit_version: int = 0

    @property
    def best_effort(self) -> int:
        return max(0, self.best_effort_net)


def quota_partitions(quota: Quota) -> list[str]:
    """Every partition key a quota's items can have; a period's, with its quota's records' partition."""
    shards = [keys.shard_pk(quota, shard) for shard in range(1, MAX_SHARDS)]
    counters = [keys.counter_pk(quota, shard) for shard in range(1, EVENTUAL_COUNTER_SHARDS)]
    records = [keys.resources_pk(quota)] if quota.period else []
    return [keys.account_pk(quota), *shards, *counters, *records]


def snapshot(dynamodb: Any, table: str, quota: Quota) -> Snapshot:
    """The quota at one instant, read through `dynamodb`'s endpoint: the embedded emulator. A period
    of a periodic quota (docs/periods.md) is its shards and counters, and the records of its
    quota's partition whose `period_id` is that period."""
    shot = Snapshot(quota)
    items = read_partitions(dynamodb.meta.endpoint_url, table, quota_partitions(quota))
    leases: list[Lease] = []
    records = keys.resources_pk(quota) if quota.period else None
    for item in map(from_attributes, items):
        sort_key = item[table_layout.SORT_KEY]
        if item[table_layout.PARTITION_KEY] == records and item.get(resources.PERIOD) != quota.period:
            continue  # the quota's own item and other periods' records
        if sort_key in (keys.ACCOUNT_SORT_KEY, keys.SHARD_SORT_KEY):
            state = shard_state(item)
            if sort_key == keys.ACCOUNT_SORT_KEY:
                shot.limit, shot.limit_version = state.limit, state.limit_version
            shot.best_effort_net += state.best_effort
            shot.admitted += state.admitted
            shot.admitted_by_shard[state.shard] = state.admitted
            shot.room += state.room
            shot.shards += 1
            leases += held_leases(item)
        elif sort_key == keys.COUNTER_SORT_KEY:
            shot.eventual += int(item.get("count", 0))
        elif sort_key.startswith(keys.REFUSED_WINDOW_PREFIX):
            continue  # a minute's refused creates, counted from the API's logs (functions/core/refusals.py)
        elif sort_key.startswith(keys.PUT_REQUEST_PREFIX):
            continue  # a keyed PUT's record (functions/core/accounts.py, put_account): no count
        elif sort_key.startswith(keys.EVENT_PREFIX):  # an outbox item: by its event type, in key order
            kinds = {
                UsageThresholdCrossed.DETAIL_TYPE: shot.events,
                LimitChanged.DETAIL_TYPE: shot.limit_changes,
                LimitRefused.DETAIL_TYPE: shot.refusals,
            }
            kinds[str(item[outbox.DETAIL_TYPE])].append(json.loads(item[outbox.DETAIL]))
        elif item.get(table_layout.ITEM_TYPE) == resources.TOMBSTONE:
            shot.tombstones[keys.resource_id_from_sk(sort_key) or sort_key] = item
        else:
            resource_id = keys.resource_id_from_sk(sort_key) or sort_key
            shot.existing.add(resource_id)
            shot.items[resource_id] = item
            processed = bool(item.get(table_layout.COUNTER_PROCESSED))
            deleted = bool(item.get(table_layout.DELETED))
            units = resources.amount_of(item)  # an item without `amount` (every older one) holds 1
            held = resources.counted_units_of(item)
            shot.processed += (units if held is None else held) if processed else 0
            if not deleted:
                shot.live.add(resource_id)
                shot.live_units += units
            shot.pending += (not processed) or deleted
    shot.leases = tuple(leases)
    return shot

"""The eventual counter's storage: the consumer's port (transactions) and the sweep's reads."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from datetime import timedelta
from typing import Any

from functions.adapters import keys
from functions.adapters.account_item import period_of, shard_state
from functions.adapters.attributes import to_attributes
from functions.adapters.counters import counter_addition, counter_decision, counter_key, counter_of, counter_state
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.errors import ConditionFailed, TransactionCancelled
from functions.adapters.outbox import crossing_item
from functions.adapters.resource_records import pending_record
from functions.adapters.resources import (
    PERIOD,
    counted_update,
    resize_counted_update,
    resource_state,
    tombstone_update,
)
from functions.adapters.shards import account_key
from functions.adapters.table_layout import (
    PARTITION_KEY,
    PENDING_BUCKET,
    PENDING_INDEX,
    PENDING_SINCE,
    SORT_KEY,
    item_key,
)
from functions.core.counting import (
    COMMITTED,
    CONDITIONAL_CHECK_FAILED,
    EVENTUAL_COUNTER_SHARDS,
    ActionKind,
    CancellationReason,
    ItemRecord,
    ResourceAction,
    TransactionResult,
    counter_shard,
    net_change,
)
from functions.core.errors import StoreUnavailable
from functions.core.leases import DEFAULT_TOMBSTONE_RETENTION
from functions.core.model import Quota
from functions.core.thresholds import Bands, CounterShard, Decision, thresholds_or_default
from functions.shared.clock import Clock


class DynamoCountingStore:
    """The eventual counter's storage: one transaction per batch of an account's counting actions,
    the reads and the transaction of a decision on usage thresholds, plus the sweep's reads.

    A counted delete turns the resource into a tombstone kept for `tombstone_retention`."""

    def __init__(
        self, table: DynamoTable, clock: Clock, tombstone_retention: timedelta = DEFAULT_TOMBSTONE_RETENTION
    ) -> None:
        self._table = table
        self._retention = tombstone_retention
        self._clock = clock

    def apply_actions(self, quota: Quota, actions: Sequence[ResourceAction]) -> TransactionResult:
        delta = net_change(actions)
        if delta == 0 and len(actions) == 1:
            return self._update_alone(self._action(quota, actions[0]))  # 1 WCU, not a transaction's 2
        items = [{"Update": self._action(quota, action)} for action in actions]
        if not delta:
            return self._transact(items, len(actions), [])
        shard = counter_shard(actions)
        return self._transact([*items, counter_addition(self._table.name, quota, delta, shard)], len(actions), [shard])

    def read_for_decision(
        self, quota: Quota, seen: CounterShard | None, target: int
    ) -> tuple[Bands, list[CounterShard]]:
        spread = (seen is not None and seen.shard > 0) or target > 0
        counters = [counter_key(quota, shard) for shard in range(EVENTUAL_COUNTER_SHARDS)]
        to_read = counters if spread else counters[:1] if seen is None else []
        found = self._table.read_keys("read for a decision", [account_key(quota), *to_read])
        account = shard_state(next((item for item in found if item[SORT_KEY] == keys.ACCOUNT_SORT_KEY), {}))
        if not spread and account.span > 1:  # a busy quota: its total is every shard's
            spread = True
            found += self._table.read_keys("read for a decision", counters[len(to_read) :])
        bands = Bands(account.limit, thresholds_or_default(account.thresholds))
        read = {counter_of(item): item for item in found if item[SORT_KEY] == keys.COUNTER_SORT_KEY}
        if not spread:
            return bands, [seen if seen is not None else counter_state(read.get(0, {}), 0)]
        return bands, [counter_state(read.get(shard, {}), shard) for shard in range(EVENTUAL_COUNTER_SHARDS)]

    def decided_on(self, quota: Quota) -> Quota | None:
        found = self._table.read_keys("read limit for a decision", [account_key(quota)])
        period = period_of(found[0]) if found else None
        if period is None:
            return quota
        current = quota.in_period(period.window_at(self._clock.now()).id)
        return current if self._table.read_keys("read period for a decision", [account_key(current)]) else None

    def apply_decision(self, quota: Quota, actions: Sequence[ResourceAction], decision: Decision) -> TransactionResult:
        now = self._clock.now()
        items = [{"Update": self._action(quota, action)} for action in actions]
        items += [counter_decision(self._table.name, quota, write, decision) for write in decision.writes]
        items += [crossing_item(self._table.name, crossing, now) for crossing in decision.crossings]
        return self._transact(items, len(actions), [write.read.shard for write in decision.writes])

    def settle_limit_change(self, quota: Quota, limit_version: int) -> None:
        with contextlib.suppress(ConditionFailed):  # expired (TTL): nothing to settle
            self._table.call(
                "settle limit change",
                "update_item",
                TableName=self._table.name,
                Key=item_key(keys.account_pk(quota), keys.limit_change_sk(limit_version)),
                UpdateExpression="REMOVE #bucket, #since",
                ConditionExpression="attribute_exists(#pk)",
                ExpressionAttributeNames={"#bucket": PENDING_BUCKET, "#since": PENDING_SINCE, "#pk": PARTITION_KEY},
            )

    def _action(self, quota: Quota, action: ResourceAction) -> dict[str, Any]:
        if action.kind is ActionKind.COUNT_CREATE:
            return counted_update(self._table.name, quota, action.resource_id, action.amount)
        if action.kind is ActionKind.COUNT_RESIZE:
            return resize_counted_update(self._table.name, quota, action.resource_id, action.amount, action.held)
        expires_at = int((self._clock.now() + self._retention).timestamp())
        counted = action.kind is ActionKind.REMOVE_COUNTED
        return tombstone_update(
            self._table.name, quota, action.resource_id, counted, expires_at, action.amount, action.counted
        )

    def _update_alone(self, update: dict[str, Any]) -> TransactionResult:
        """One conditional update, its outcome told as a one-action transaction's would be."""
        try:
            self._table.call("count resource", "update_item", **update)
        except ConditionFailed as failed:
            return TransactionResult((CancellationReason(CONDITIONAL_CHECK_FAILED, resource_state(failed.item)),))
        return COMMITTED

    def pending_records(self, older_than: str | None) -> Iterator[ItemRecord]:
        """Every resource in the sparse pending index (pending since before `older_than`, if given),
        by key.

        A Scan of the index, not a Query per bucket: the index holds only resources with counting
        work left, so a Scan reads (and is billed for) those entries alone, in one call when little
        is pending, however many buckets spread the index's writes; a Query per bucket would cost
        a call per bucket, empty or not. Entries younger than `older_than` are read and filtered
        out: at most the stream's lag times the table's write rate (docs/scaling.md)."""
        request: dict[str, Any] = {"TableName": self._table.name, "IndexName": PENDING_INDEX.name}
        if older_than is not None:
            request["FilterExpression"] = "#since < :cutoff"
            request["ExpressionAttributeNames"] = {"#since": PENDING_SINCE}
            request["ExpressionAttributeValues"] = to_attributes({":cutoff": older_than})
        for page in self._table.pages("scan pending index", request, "scan"):
            entries = page.get("Items", [])
            periods = self._periods_of(entries)
            for entry in entries:
                yield pending_record(entry, periods.get((entry[PARTITION_KEY]["S"], entry[SORT_KEY]["S"])))

    def _periods_of(self, entries: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], str]:
        """The period of each usage record among pending-index entries, by key: the index does not
        project it (an index's projection cannot change in place), so it is read, a key's `pk`,
        `sk` and `period` only (about 0.5 RCU per entry, for entries the stream left to the sweep)."""
        wanted = [{PARTITION_KEY: entry[PARTITION_KEY], SORT_KEY: entry[SORT_KEY]} for entry in entries]
        found = self._table.read_keys("read periods of pending records", wanted, (PARTITION_KEY, SORT_KEY, PERIOD))
        return {(str(item[PARTITION_KEY]), str(item[SORT_KEY])): str(item[PERIOD]) for item in found if PERIOD in item}

    def _transact(self, actions: list[dict[str, Any]], resources: int, counters: Sequence[int]) -> TransactionResult:
        """One transaction: `resources` resource actions first, then one action on each counter
        shard of `counters`, then any others (outbox items)."""
        try:
            self._table.call("count resources", "transact_write_items", TransactItems=actions)
        except TransactionCancelled as cancelled:
            reasons = cancelled.reasons
            if len(reasons) != len(actions):
                raise StoreUnavailable(
                    "transaction cancelled without a reason per action", may_have_landed=False
                ) from cancelled
            counter = next(
                (
                    counter_state(item, shard)
                    for shard, (code, item) in zip(counters, reasons[resources:], strict=False)
                    if code == CONDITIONAL_CHECK_FAILED
                ),
                None,
            )
            own = reasons[:resources]
            return TransactionResult(
                tuple(CancellationReason(code, resource_state(item)) for code, item in own), counter, cancelled=True
            )
        return COMMITTED

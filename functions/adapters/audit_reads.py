"""The audit's reads (functions/core/audit.py): an account's counters with one consistent
BatchGetItem and its resource items with a consistent Query of its partition, never a scan; the
accounts themselves from the activity index."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

from functions.adapters import account_item as schema
from functions.adapters import keys
from functions.adapters.account_item import heal_epoch_of, healed_at_of, held_leases, latest_write, shard_state
from functions.adapters.attributes import from_attributes, to_attributes
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.resources import AMOUNT, TOMBSTONE, amount_of, counted_units_of, resources_query
from functions.adapters.shards import ShardStore, account_key
from functions.adapters.table_layout import (
    ACTIVITY_BUCKET,
    ACTIVITY_INDEX,
    COUNTED_UNITS,
    COUNTER_PROCESSED,
    DELETED,
    ITEM_TYPE,
    PARTITION_KEY,
)
from functions.core.accounts import RECORD_RETENTION
from functions.core.admission import ShardState
from functions.core.audit import COUNTERS, PERIODS, RECORDS, Recount
from functions.core.model import DEFAULT_RESOURCE_TYPE, Quota
from functions.core.periods import PeriodWindow


class DynamoAuditReads:
    """What an audit reads of a quota, and which quotas there are (functions/core/sweeper.py's
    AuditSource: a slice is one activity bucket's quotas).

    `clock` tells which periods of a periodic quota still have all their records: a usage record
    outlives its period by RECORD_RETENTION, or by the Idempotency-Key's window (the tombstone
    retention) if longer (functions/core/accounts.py, `_record_end`). Without a clock, every
    period is recounted from its records."""

    def __init__(
        self,
        table: DynamoTable,
        clock: Callable[[], datetime] | None = None,
        tombstone_retention: timedelta = timedelta(0),
    ) -> None:
        self._table = table
        self._shards = ShardStore(table)
        self._clock = clock
        self._records_kept = max(RECORD_RETENTION, tombstone_retention)

    def recount(self, quota: Quota) -> Recount | None:
        """The account's counters and the truth about its resources, from its own partition only.

        The counters are read with one consistent BatchGetItem, the resources with a consistent
        Query of the partition (never a scan). The two reads are not one snapshot: on a busy
        account, the numbers can disagree by the writes made in between.
        """
        read = self._shards.read_quota_items(quota)
        if read is None:
            return None
        account = shard_state(read.shards[0])
        basis, window = self._basis(quota, account)

        items = live = counted = uncounted = soft_deleted = tombstones = 0
        # Only a recount against the records reads them (a periodic quota's own partition holds
        # every period's: none of them is its own item's).
        for resource in self._resource_states(quota) if basis == RECORDS else ():
            if resource.get(ITEM_TYPE) == TOMBSTONE:
                tombstones += 1
                continue
            deleted = bool(resource.get(DELETED, False))
            processed = bool(resource.get(COUNTER_PROCESSED, False))
            units = amount_of(resource)
            resized_from = counted_units_of(resource)  # a resize the counter has not applied yet
            items += 1
            live += 0 if deleted else units
            counted += (units if resized_from is None else resized_from) if processed else 0
            uncounted += not processed or resized_from is not None
            soft_deleted += deleted
        # The account item is admission shard 0; a busy account has more (functions/core/admission.py).
        shards = [shard_state(item) for item in read.shards]
        held = tuple(lease for item in read.shards for lease in held_leases(item))
        return Recount(
            quota=quota,
            limit=account.limit,
            best_effort_net=sum(shard.best_effort for shard in shards),
            admitted=sum(shard.admitted for shard in shards),
            eventual=read.eventual,
            version=account.version,
            limit_version=account.limit_version,
            heal_epoch=heal_epoch_of(read.shards[0]),
            last_write_at=latest_write(read.shards) or "",
            healed_at=healed_at_of(read.shards[0]),
            resource_items=items,
            live=live,
            counted=counted,
            uncounted=uncounted,
            soft_deleted=soft_deleted,
            deletes_in_flight=sum(lease.units for lease in held if lease.kind.takes_best_effort),
            creates_in_flight=sum(lease.units for lease in held if not lease.kind.takes_best_effort),
            tombstones=tombstones,
            basis=basis,
            period=account.period,
            window=window,
        )

    def _basis(self, quota: Quota, account: ShardState) -> tuple[str, PeriodWindow | None]:
        """What the quota's counters are judged against (functions/core/audit.py), and a period's
        window: a period's end is its quota's period's (one read of the quota's account item)."""
        if account.period is not None:
            return PERIODS, None
        if not quota.period:
            return RECORDS, None
        found = self._shards.read_shards(quota.whole, [0])
        period = found[0].period if found else None
        if period is None:
            return RECORDS, None
        try:
            window = period.window_with_id(quota.period)
        except ValueError:  # not a window of the quota's period: judged on what it holds
            return RECORDS, None
        if self._clock is None or self._clock() < window.end + self._records_kept:
            return RECORDS, window
        return COUNTERS, window

    def _resource_states(self, quota: Quota) -> Iterator[dict[str, Any]]:
        """The counting attributes of every resource item of the account: a Query of its partition."""
        request = resources_query(
            self._table.name,
            quota,
            names={
                "#type": ITEM_TYPE,
                "#deleted": DELETED,
                "#processed": COUNTER_PROCESSED,
                "#amount": AMOUNT,
                "#held": COUNTED_UNITS,
            },
            ProjectionExpression="#deleted, #processed, #type, #amount, #held",
            ConsistentRead=True,
        )
        for page in self._table.pages("recount resources", request):
            yield from map(from_attributes, page.get("Items", []))

    def account_types(self, account_id: str) -> list[str] | None:
        """The types an account has limits of, as the API lists them: the default first, then its
        registry (on its default type's account item) by name. None: no such account."""
        found = self._table.call(
            "read resource types",
            "get_item",
            TableName=self._table.name,
            Key=account_key(Quota(account_id)),
            ProjectionExpression="#types, #pk",
            ExpressionAttributeNames={"#types": schema.TYPES_NAME, "#pk": PARTITION_KEY},
            ConsistentRead=True,
        ).get("Item")
        if found is None:
            return None
        return [DEFAULT_RESOURCE_TYPE, *schema.resource_types_of(from_attributes(found))]

    def all_quotas(self) -> list[Quota]:
        """Every quota, from the activity index (every account item and shard item has an entry):
        one query per bucket, never a scan."""
        found: set[Quota] = set()
        for index in range(keys.ACTIVITY_BUCKET_COUNT):
            found.update(self._quotas_in_bucket(index))
        return sorted(found)

    def quotas_in_slice(self, number: int) -> set[Quota]:
        """The quotas of one activity bucket: the slices are the buckets, in turn."""
        return self._quotas_in_bucket(number % keys.ACTIVITY_BUCKET_COUNT)

    def _quotas_in_bucket(self, index: int) -> set[Quota]:
        request: dict[str, Any] = {
            "TableName": self._table.name,
            "IndexName": ACTIVITY_INDEX.name,
            "KeyConditionExpression": "#bucket = :bucket",
            "ExpressionAttributeNames": {"#bucket": ACTIVITY_BUCKET},
            "ExpressionAttributeValues": to_attributes({":bucket": keys.activity_bucket_name(index)}),
        }
        pages = self._table.pages("list accounts", request)
        entries = (from_attributes(item) for page in pages for item in page.get("Items", []))
        return {quota for entry in entries if (quota := keys.quota_of(str(entry[PARTITION_KEY])))}

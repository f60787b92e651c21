"""The ground truth of the table, read from outside the system (a scan: fine in tests only)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from functions.adapters import keys, resources, table_layout
from functions.adapters.account_item import held_leases, shard_state
from functions.adapters.attributes import from_attributes


@dataclass
class AccountTruth:
    live: int = 0  # units of the resources that exist and are not soft-deleted (the sum of their amounts)
    # Units the eventual counter should hold for the existing resources with counter_processed=true:
    # their amounts, or their `counted_units` while a resize of theirs is not counted yet.
    processed: int = 0
    existing: int = 0  # resource items of any state, tombstones aside
    tombstones: int = 0
    leases: int = 0  # leases held on the account's shards (writes in flight, or dead and unsettled)
    best_effort_net: int = 0  # summed over the account's admission shards, as `admitted` and `room`
    admitted: int = 0
    room: int = 0
    eventual: int = 0
    limit: int = 0
    shards: int = 0  # admission shard items, the account item included
    counters: int = 0  # eventual counter shard items

    @property
    def best_effort(self) -> int:
        return max(0, self.best_effort_net)


def read_truth(client: Any, table: str) -> dict[str, AccountTruth]:
    """Each quota's truth, by its partition key (`ACCOUNT#acme`, `ACCOUNT#acme#seats`); each period
    of a periodic quota's, by its period's (`ACCOUNT#acme#builds@20261127T000000Z`)."""
    accounts: dict[str, AccountTruth] = defaultdict(AccountTruth)
    request: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = client.scan(**request)
        for raw in page["Items"]:
            item = from_attributes(raw)
            sort_key = item[table_layout.SORT_KEY]
            if sort_key == keys.RATE_SORT_KEY:
                continue  # a rate window counts requests, not the account's resources
            if item[table_layout.PARTITION_KEY] == keys.PLANS_PK:
                continue  # a plan is no quota's (tests/handler/test_plans.py reads plans through the API)
            # Summed per quota, under its partition key (`ACCOUNT#acme`, `ACCOUNT#acme#seats`): a
            # quota's shards and counter shards have keys of their own, which name it.
            quota = keys.quota_of(item[table_layout.PARTITION_KEY])
            assert quota is not None, f"an item of no quota: {item[table_layout.PARTITION_KEY]}"
            if item.get(resources.PERIOD):  # a usage record: its period's (`ACCOUNT#acme#builds@<id>`)
                quota = quota.in_period(item[resources.PERIOD])
            truth = accounts[keys.account_pk(quota)]
            if sort_key in (keys.ACCOUNT_SORT_KEY, keys.SHARD_SORT_KEY):
                shard = shard_state(item)
                truth.best_effort_net += shard.best_effort
                truth.admitted += shard.admitted
                truth.room += shard.room
                truth.limit = max(truth.limit, shard.limit)
                truth.leases += len(held_leases(item))
                truth.shards += 1
            elif sort_key == keys.COUNTER_SORT_KEY:
                truth.eventual += item.get("count", 0)
                truth.counters += 1
            elif item.get(table_layout.ITEM_TYPE) == resources.TOMBSTONE:
                truth.tombstones += 1
            elif sort_key.startswith(keys.RESOURCE_PREFIX):
                units = resources.amount_of(item)  # an item without `amount` (every older one) holds 1
                truth.existing += 1
                truth.live += 0 if item[table_layout.DELETED] else units
                held = resources.counted_units_of(item)
                counted = units if held is None else held
                truth.processed += counted if item[table_layout.COUNTER_PROCESSED] else 0
        if "LastEvaluatedKey" not in page:
            return dict(accounts)
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def assert_invariants(client: Any, table: str) -> dict[str, AccountTruth]:
    """The invariants that hold at every instant (docs/guarantees.md: 1, 2 and 5, the admission
    bound), for each quota: each type of an account on its own, in units (a resource counts its
    amount)."""
    accounts = read_truth(client, table)
    for key, truth in accounts.items():
        assert truth.eventual == truth.processed, f"{key}: eventual {truth.eventual} != processed {truth.processed}"
        assert truth.best_effort <= truth.live, f"{key}: best-effort {truth.best_effort} > live {truth.live}"
        assert truth.admitted >= truth.live, f"{key}: admitted {truth.admitted} < live {truth.live}"
        # Every write moves a slot between `room` and `admitted` or between two shards' room: the
        # shards always hold exactly the limit (functions/core/admission.py).
        assert truth.room + truth.admitted == truth.limit, f"{key}: room {truth.room} + admitted {truth.admitted}"
    return accounts

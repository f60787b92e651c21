"""The admission shard item family: its keys and every read and write on it.

Shard 0 is the account item (`ACCOUNT#<id>` / `ACCOUNT`); shard i >= 1 is `SHARD#<id>#<i>` / `SHARD`,
a partition key of its own (functions/core/admission.py). Both carry the same counters, the leases
and the last-write stamps (with the activity bucket, so the sweeper finds an account written only
on its other shards). Their attributes, their reader and the clauses written here are
functions/adapters/account_item.py's.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from functions.adapters import account_item as schema
from functions.adapters import keys
from functions.adapters.account_item import (
    EXPRESSION_NAMES,
    has_room,
    holds,
    lease_attribute,
    lease_value,
    shard_index,
    shard_state,
)
from functions.adapters.attributes import from_attributes, to_attributes
from functions.adapters.counters import counter_key, eventual_of, other_counter_keys
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.errors import ConditionFailed, TransactionCancelled, TransactionConflict
from functions.adapters.table_layout import ITEM_TYPE, PARTITION_KEY, SORT_KEY, item_key
from functions.core.admission import ShardState
from functions.core.errors import AccountNotFound, GrantEnded, QuotaIsPeriodic, StoreUnavailable
from functions.core.healing import last_write_stamp
from functions.core.leases import Lease, Settled, Settlement, epoch_ms, in_order
from functions.core.model import Quota

# A single write on an item that a transaction (a grant, a heal) is changing is refused with a
# TransactionConflict, which the SDK does not retry: every shard write is safe to repeat, so we
# do, briefly.
CONFLICT_ATTEMPTS = 4
# Dead leases settled by one write: its condition and REMOVE name each one, and an expression is
# at most 4 KB (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html).
LEASES_PER_SETTLING_WRITE = 50
SETTLING_ATTEMPTS = 3  # a lost race leaves fewer leases to settle each time


def shard_key(quota: Quota, shard: int) -> dict[str, Any]:
    if shard == 0:
        return item_key(keys.account_pk(quota), keys.ACCOUNT_SORT_KEY)
    return item_key(keys.shard_pk(quota, shard), keys.SHARD_SORT_KEY)


def account_key(quota: Quota) -> dict[str, Any]:
    """The account item: admission shard 0, which also holds the account's limit and shard layout."""
    return shard_key(quota, 0)


def retry_conflicts(call: Callable[[], Any], sleep: Callable[[float], None] = time.sleep) -> Any:
    for attempt in range(CONFLICT_ATTEMPTS):
        try:
            return call()
        except TransactionConflict:
            if attempt == CONFLICT_ATTEMPTS - 1:
                raise
        sleep(random.uniform(0.005, 0.02) * 2**attempt)  # noqa: S311 - jitter
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class AccountItems:
    """An account's admission shard items (the account item first) and eventual counter items."""

    shards: list[dict[str, Any]]
    counters: list[dict[str, Any]]

    @property
    def eventual(self) -> int:
        return eventual_of(self.counters)


def _has_account_item(items: Iterable[Mapping[str, Any]]) -> bool:
    return any(item[SORT_KEY] == keys.ACCOUNT_SORT_KEY for item in items)


def _span_of(items: Iterable[Mapping[str, Any]]) -> int:
    """The shard span its account item (among `items`) records."""
    return next(shard_state(item).span for item in items if item[SORT_KEY] == keys.ACCOUNT_SORT_KEY)


def _other_shard_keys(quota: Quota, span: int) -> list[dict[str, Any]]:
    """A busy quota's admission and counter shards above 0: none while its span is 1."""
    return [*(shard_key(quota, shard) for shard in range(1, span)), *other_counter_keys(quota, span)]


def _account_items(found: list[dict[str, Any]]) -> AccountItems:
    """One quota's items, read: its account item first, then its other shards in order."""
    account = next(item for item in found if item[SORT_KEY] == keys.ACCOUNT_SORT_KEY)
    shards = sorted((item for item in found if item[SORT_KEY] == keys.SHARD_SORT_KEY), key=shard_index)
    counters = [item for item in found if item[SORT_KEY] == keys.COUNTER_SORT_KEY]
    return AccountItems([account, *shards], counters)


def _lease_values(lease: Lease, changes: Mapping[str, int]) -> dict[str, Any]:
    """The values of `schema.lease_update(changes)`: the changes, the version's step, the write's
    stamps and the lease."""
    return {
        ":one": 1,
        ":stamp": last_write_stamp(lease.taken_at),
        ":now": lease.taken_at,
        ":lease": lease_value(lease),
        **{f":{name}": delta for name, delta in changes.items()},
    }


class ShardStore:
    """Every read and write of an account's admission shards (functions/core/admission.py): the
    leases the API's writes take and settle on them, and the moves of room between them. The API's
    store (functions/adapters/api_store.py) extends it; the heal's and the audit's hold one."""

    def __init__(self, table: DynamoTable) -> None:
        self._table = table

    # reads ---------------------------------------------------------------------------------

    def read_items(self, quota: Quota, shards: Sequence[int], snapshot: bool = False) -> list[dict[str, Any]]:
        """The shard items that exist among `shards`, decoded, strongly consistent."""
        wanted = [shard_key(quota, shard) for shard in shards]
        if snapshot:
            response = self._table.call(
                "snapshot shards",
                "transact_get_items",
                TransactItems=[{"Get": {"TableName": self._table.name, "Key": k}} for k in wanted],
            )
            return [from_attributes(got["Item"]) for got in response.get("Responses", []) if got.get("Item")]
        return sorted(self._table.read_keys("read shards", wanted), key=shard_index)

    def read_shards(self, quota: Quota, shards: Sequence[int], snapshot: bool = False) -> list[ShardState]:
        items = self.read_items(quota, shards, snapshot)
        if any(shard_index(item) == 0 and not has_room(item) for item in items):
            self._adopt(quota, next(item for item in items if shard_index(item) == 0))
            items = self.read_items(quota, shards, snapshot)
        return [shard_state(item) for item in items]

    def read_quota_items(self, quota: Quota) -> AccountItems | None:
        """The account item and its eventual counter in one BatchGetItem, and for a busy account its
        other admission and counter shards in one more; None if there is no such account."""
        return self.read_quotas_items([quota]).get(quota)

    def read_quotas_items(self, quotas: Sequence[Quota]) -> dict[Quota, AccountItems]:
        """Each quota's account item and eventual counter, in one BatchGetItem (per 100 keys), and
        the busy ones' other admission and counter shards in one more; a quota without an account
        item is left out."""
        wanted = [key for quota in quotas for key in (account_key(quota), counter_key(quota))]
        found = self._by_quota(self._table.read_keys("read shards", wanted))
        accounts = {quota: items for quota, items in found.items() if _has_account_item(items)}
        others = [key for quota, items in accounts.items() for key in _other_shard_keys(quota, _span_of(items))]
        if others:
            for quota, items in self._by_quota(self._table.read_keys("read shards", others)).items():
                accounts[quota] += items
        return {quota: _account_items(items) for quota, items in accounts.items()}

    @staticmethod
    def _by_quota(items: Iterable[dict[str, Any]]) -> dict[Quota, list[dict[str, Any]]]:
        grouped: dict[Quota, list[dict[str, Any]]] = {}
        for item in items:
            quota = keys.quota_of(str(item[PARTITION_KEY]))
            if quota is not None:
                grouped.setdefault(quota, []).append(item)
        return grouped

    def _adopt(self, quota: Quota, account: Mapping[str, Any]) -> None:
        """Give an account item written before shards existed its room, in place: its limit less
        what it has admitted. Conditional on both being as read; a lost race re-reads."""
        state = shard_state(account)
        with contextlib.suppress(ConditionFailed):  # another request adopted it first: re-read
            self._table.call(
                "adopt account",
                "update_item",
                TableName=self._table.name,
                Key=shard_key(quota, 0),
                UpdateExpression=schema.ADOPT_UPDATE,
                ConditionExpression=schema.ADOPT_CONDITION,
                ExpressionAttributeNames=EXPRESSION_NAMES,
                ExpressionAttributeValues=to_attributes(
                    {":room": state.room, ":one": 1, ":limit": state.limit, ":admitted": state.admitted}
                ),
            )

    # leases --------------------------------------------------------------------------------

    def take_lease(
        self,
        quota: Quota,
        lease: Lease,
        changes: Mapping[str, int],
        condition: str | None = None,
        before_grant_ends: bool = False,
    ) -> dict[str, Any] | None:
        """Apply `changes` (ADDs) to the shard `lease.shard` and take `lease` in the same update, if
        `condition` holds and the lease is not held yet. Returns the item as it is with the lease
        held, or None if the condition failed (or the shard has no item yet). A retry of a take that
        landed finds its own lease in the old item, and returns that item: it is applied once.
        Raises AccountNotFound when shard 0 is missing, QuotaIsPeriodic when shard 0 is a periodic
        quota's own (whose periods admit, not it). `before_grant_ends`: only before the end of an
        expiring override the shard carries, GrantEnded (nothing written) at or after it."""
        conditions = ["attribute_exists(#pk)", "attribute_not_exists(#lease)", *([condition] if condition else [])]
        holding = not quota.period and lease.shard == 0
        if holding:
            conditions.append(schema.HOLDING_CONDITION)
        values = _lease_values(lease, changes)
        at_ms = epoch_ms(lease.taken_at)
        if before_grant_ends:
            conditions.append(schema.BEFORE_GRANT_ENDS_CONDITION)
            values[":at_ms"] = at_ms
        request = {
            "TableName": self._table.name,
            "Key": shard_key(quota, lease.shard),
            "UpdateExpression": schema.lease_update(changes),
            "ConditionExpression": " AND ".join(conditions),
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#lease": lease_attribute(lease)},
            "ExpressionAttributeValues": to_attributes(values),
            "ReturnValues": "ALL_NEW",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        operation = f"take {lease.kind.value} lease"
        try:
            response = retry_conflicts(lambda: self._table.call(operation, "update_item", **request))
        except ConditionFailed as failed:
            old = failed.item
            if not old and lease.shard == 0:
                raise AccountNotFound(quota) from failed
            period = schema.period_of(old) if holding and not holds(old, lease) else None
            if period is not None:
                raise QuotaIsPeriodic(quota, period) from failed
            ends = schema.grant_ends_of(old) if before_grant_ends and not holds(old, lease) else None
            if ends is not None and ends <= at_ms:
                raise GrantEnded(quota, ends) from failed
            return old if holds(old, lease) else None
        return from_attributes(response["Attributes"])

    def settle(self, quota: Quota, lease: Lease, settlement: Settlement, now: str | None) -> Settled:
        """Remove `lease` from its shard and apply `settlement` in the same update, once.

        Conditional on the lease being held, so a retry of a settle that landed changes nothing.
        Every shard write bumps `version`; an API write (`now` given) also stamps `last_write_at`.
        A released slot (`admitted - 1`) goes back to the shard's room."""
        values: dict[str, Any] = {":lease": lease_value(lease)}
        expression = f"ADD {schema.settled_adds(settlement.admitted, settlement.best_effort, values)} REMOVE #lease"
        if now is not None:
            expression += schema.SETTLE_STAMPS
            values[":stamp"], values[":now"] = last_write_stamp(now), now
        condition = "#lease = :lease"
        if settlement.expected_heal_epoch is not None:
            condition += schema.EPOCH_CONDITION
            values[":epoch"] = settlement.expected_heal_epoch
        request = {
            "TableName": self._table.name,
            "Key": shard_key(quota, lease.shard),
            "UpdateExpression": expression,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {"#lease": lease_attribute(lease)},
            "ExpressionAttributeValues": to_attributes(values),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        try:
            retry_conflicts(lambda: self._table.call("settle lease", "update_item", **request))
        except ConditionFailed as failed:
            if holds(failed.item, lease):
                return Settled.EPOCH_MOVED  # the lease is held, so only the epoch can have failed
            return Settled.ALREADY
        return Settled.APPLIED

    def settle_together(self, quota: Quota, shard: int, settlements: Mapping[Lease, Settlement]) -> int:
        """Remove the leases of one shard and apply the sum of their settlements in one update per
        LEASES_PER_SETTLING_WRITE, conditional on every one of them being held, so the write is
        applied once. When another writer settled some first (a heal, a request that saw them too),
        the failed condition's item says which are still held, and those are tried again. Returns
        how many this call settled. Settlements that name a heal epoch are not accepted: dead
        leases' never do."""
        if any(settlement.expected_heal_epoch is not None for settlement in settlements.values()):
            raise ValueError("settle_together applies settlements without an expected heal epoch only")
        pending = [lease for lease in in_order(settlements) if lease.shard == shard]
        settled = 0
        for start in range(0, len(pending), LEASES_PER_SETTLING_WRITE):
            chunk = pending[start : start + LEASES_PER_SETTLING_WRITE]
            for _ in range(SETTLING_ATTEMPTS):
                held = self._settle_chunk(quota, shard, {lease: settlements[lease] for lease in chunk})
                if held is None:
                    settled += len(chunk)
                    break
                chunk = [lease for lease in chunk if holds(held, lease)]
                if not chunk:
                    break
        return settled

    def _settle_chunk(self, quota: Quota, shard: int, settlements: Mapping[Lease, Settlement]) -> dict[str, Any] | None:
        """One conditional update settling `settlements`; None if it landed, else the item as it was
        (empty when the shard item is gone)."""
        names = {f"#l{i}": lease_attribute(lease) for i, lease in enumerate(settlements)}
        values: dict[str, Any] = {f":l{i}": lease_value(lease) for i, lease in enumerate(settlements)}
        admitted = sum(settlement.admitted for settlement in settlements.values())
        best_effort = sum(settlement.best_effort for settlement in settlements.values())
        request = {
            "TableName": self._table.name,
            "Key": shard_key(quota, shard),
            "UpdateExpression": f"ADD {schema.settled_adds(admitted, best_effort, values)} REMOVE {', '.join(names)}",
            "ConditionExpression": " AND ".join(f"{name} = :{name[1:]}" for name in names),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": to_attributes(values),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        try:
            retry_conflicts(lambda: self._table.call("settle dead leases", "update_item", **request))
        except ConditionFailed as failed:
            return failed.item
        return None

    # room ----------------------------------------------------------------------------------

    def grant(self, quota: Quota, shard: int, slots: int, donor: int = 0) -> bool:
        # Shard 0 is never retired; any other donor gives only while it is open.
        open_donor = "" if donor == 0 else schema.OPEN_CONDITION
        return self.transact(
            "grant room",
            [
                {
                    "Update": {
                        "TableName": self._table.name,
                        "Key": shard_key(quota, donor),
                        "UpdateExpression": schema.ROOM_OUT_UPDATE,
                        "ConditionExpression": schema.GIVE_CONDITION + open_donor,
                        "ExpressionAttributeValues": to_attributes({":minus": -slots, ":slots": slots, ":one": 1}),
                    }
                },
                {
                    "Update": {
                        "TableName": self._table.name,
                        "Key": shard_key(quota, shard),
                        "UpdateExpression": schema.RECEIVE_UPDATE,
                        # Only to a dry shard: two creates that found it dry take one grant, not two.
                        "ConditionExpression": schema.RECEIVE_CONDITION,
                        "ExpressionAttributeNames": {"#type": ITEM_TYPE, **schema.SHARD_NAME},
                        "ExpressionAttributeValues": to_attributes(
                            {
                                ":slots": slots,
                                ":one": 1,
                                ":id": quota.account_id,
                                ":type": schema.SHARD_TYPE,
                                ":shard": shard,
                                ":bucket": keys.activity_bucket(quota, shard),
                                ":zero": 0,
                                ":true": True,
                            }
                        ),
                    }
                },
            ],
        )

    def reserve_past_limit_on(self, quota: Quota, lease: Lease) -> dict[str, Any] | None:
        """A shadow quota's reservation past its limit on shard `lease.shard` (not 0): shard 0 gives
        the units whatever its room (only while the quota is in shadow mode and before a grant's
        end), and the shard takes the lease and admits them, its room untouched, in one
        transaction: so no shard but shard 0 goes below zero room. Returns the shard's item with
        the lease held (a retry of one that landed finds it), or None."""
        at_ms = epoch_ms(lease.taken_at)
        admitted = {schema.ADMITTED: lease.units}
        conditions = [
            schema.SHADOW_RESERVE_CONDITION,
            schema.HOLDING_CONDITION,
            schema.BEFORE_GRANT_ENDS_CONDITION,
        ]
        self.transact(
            "reserve past a shadow quota's limit",
            [
                {
                    "Update": {
                        "TableName": self._table.name,
                        "Key": shard_key(quota, 0),
                        "UpdateExpression": schema.ROOM_OUT_UPDATE,
                        "ConditionExpression": " AND ".join(conditions),
                        "ExpressionAttributeValues": to_attributes(
                            {":minus": -lease.units, ":one": 1, ":at_ms": at_ms}
                        ),
                    }
                },
                {
                    "Update": {
                        "TableName": self._table.name,
                        "Key": shard_key(quota, lease.shard),
                        "UpdateExpression": schema.lease_update(admitted),
                        "ConditionExpression": "attribute_exists(#pk) AND attribute_not_exists(#lease)"
                        + schema.OPEN_CONDITION,
                        "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#lease": lease_attribute(lease)},
                        "ExpressionAttributeValues": to_attributes(_lease_values(lease, admitted)),
                    }
                },
            ],
        )
        # Read whether it landed or not: a cancelled retry of a transaction that landed (its
        # answer lost) finds the lease. The shard's stamp keeps a quiet heal off it meanwhile.
        found = self.read_items(quota, [lease.shard])
        return found[0] if found and holds(found[0], lease) else None

    def gather(self, quota: Quota, shard: ShardState, retire: bool) -> bool:
        retiring = schema.RETIRING_SETS if retire else ""
        flags = {":true": True} if retire else {}
        if shard.room == 0:
            return self._update_if(
                shard_key(quota, shard.shard),
                schema.BUMP_VERSION + retiring,
                "attribute_exists(#pk)",
                {":one": 1, **flags},
            )
        return self.transact(
            "gather room",
            [
                {
                    "Update": {
                        "TableName": self._table.name,
                        "Key": shard_key(quota, shard.shard),
                        "UpdateExpression": schema.ROOM_OUT_UPDATE + retiring,
                        "ConditionExpression": schema.ROOM_CONDITION,
                        "ExpressionAttributeValues": to_attributes(
                            {":minus": -shard.room, ":room": shard.room, ":one": 1, **flags}
                        ),
                    }
                },
                {
                    "Update": {
                        "TableName": self._table.name,
                        "Key": shard_key(quota, 0),
                        "UpdateExpression": schema.RETURN_ROOM_UPDATE,
                        "ConditionExpression": "attribute_exists(#pk)",
                        "ExpressionAttributeNames": {"#pk": PARTITION_KEY},
                        "ExpressionAttributeValues": to_attributes({":room": shard.room, ":one": 1}),
                    }
                },
            ],
        )

    def set_active(self, quota: Quota, active: int, span: int, to: int) -> bool:
        # An account with an expiring override admits on shard 0 alone, which checks its end.
        growing = schema.NO_GRANT_CONDITION if to > active else ""
        return self._update_if(
            shard_key(quota, 0),
            schema.LAYOUT_UPDATE,
            schema.LAYOUT_CONDITION + growing,
            {":to": to, ":new_span": max(span, to), ":active": active, ":span": span, ":one": 1},
        )

    def _update_if(self, item_key: dict[str, Any], expression: str, condition: str, values: dict[str, Any]) -> bool:
        request: dict[str, Any] = {
            "TableName": self._table.name,
            "Key": item_key,
            "UpdateExpression": expression,
            "ConditionExpression": condition,
            "ExpressionAttributeValues": to_attributes(values),
        }
        if "#pk" in condition:  # DynamoDB refuses an empty ExpressionAttributeNames (ValidationException)
            request["ExpressionAttributeNames"] = {"#pk": PARTITION_KEY}
        try:
            self._table.call("update shard", "update_item", **request)
        except (ConditionFailed, TransactionConflict):
            return False
        return True

    def transact(self, operation: str, items: list[dict[str, Any]]) -> bool:
        """One transaction (the SDK adds a ClientRequestToken, so its retries apply it once);
        False when it was cancelled: a condition failed or it lost a race. Cancelled because an item
        had no capacity left, it raises a throttled StoreUnavailable: the caller spreads elsewhere."""
        try:
            self._table.call(operation, "transact_write_items", TransactItems=items)
        except TransactionCancelled as cancelled:
            if cancelled.throttled_action:
                raise StoreUnavailable(f"{operation}: throttled", may_have_landed=False, throttled=True) from cancelled
            return False
        except TransactionConflict:
            return False
        return True

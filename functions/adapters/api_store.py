"""The API's port on DynamoDB: single-item writes; transactions only to move room between a busy
account's admission shards (functions/adapters/shards.py). What it writes on an account item is
put together from functions/adapters/account_item.py's clauses."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from functions.adapters import account_item as schema
from functions.adapters import grant_index, keys
from functions.adapters.account_item import (
    EXPRESSION_NAMES,
    heal_epoch_of,
    held_leases,
    resource_types_of,
    shard_index,
    shard_state,
)
from functions.adapters.attributes import from_attributes, to_attributes
from functions.adapters.counters import COUNT
from functions.adapters.errors import ConditionFailed
from functions.adapters.outbox import limit_change_item
from functions.adapters.plan_item import PlanItems
from functions.adapters.quota_partitions import period_partitions, quota_keys
from functions.adapters.registry import AccountRegistry
from functions.adapters.resources import (
    ADMITTED_BY,
    AMOUNT,
    DELETE_TOKEN,
    PERIOD,
    RESIZE_TOKEN,
    RESOURCE_TYPE,
    RESOURCE_VERSION,
    TOMBSTONE,
    read_resource,
    read_resources,
    resize_update,
    resource_from_item,
    resource_from_values,
    resource_item,
    resource_key,
    resources_query,
)
from functions.adapters.shards import AccountItems, ShardStore, account_key, retry_conflicts, shard_key
from functions.adapters.table_layout import (
    DELETED,
    EXPIRES_AT,
    ITEM_TYPE,
    PARTITION_KEY,
    PENDING_BUCKET,
    PENDING_SINCE,
    SORT_KEY,
    item_key,
)
from functions.core.accounts import FirstAttempt, LimitChange, PeriodLimit, Registered, epoch_seconds
from functions.core.admission import Reserved, ShardState
from functions.core.errors import (
    AccountBeingDeleted,
    AmountDiffers,
    InvalidCursor,
    ResourceAlreadyExists,
    StoreUnavailable,
)
from functions.core.healing import last_write_stamp
from functions.core.history import PeriodCounts
from functions.core.leases import Lease
from functions.core.lifecycle import TypeContents
from functions.core.model import AccountUsage, LimitSource, Page, PageBudget, Quota, QuotaMode, Resource, Usage
from functions.core.plans import AccountEntry, AccountPage, Plan, PlanPage

# A list page reads at most this many DynamoDB pages while skipping soft-deleted items.
MAX_QUERY_PAGES_PER_LIST = 5
# A keyed PUT's record (its item type) and what it holds of the PUT's first attempt.
PUT_REQUEST = "put_request"
FINGERPRINT, RECEIVED_MS, TOKEN = "request_fingerprint", "received_ms", "request_token"


class DynamoApiStore(ShardStore):
    """The API's storage: single-item calls, each safe to retry (docs/admission.md), so the table's
    client keeps the SDK's standard retries. Transactions run only to move room between a busy
    account's shards, and their cancellations never reach a caller. It is a ShardStore: the admission
    shards' reads and writes (the AdmissionStore port: leases, settling, moving room) are written
    there, once."""

    # accounts ------------------------------------------------------------------------------

    def create_account(self, quota: Quota, change: LimitChange, now: str, resource_types: Sequence[str] = ()) -> bool:
        # An account being deleted is not created again until it is erased (its entry gone).
        if self._table.read_keys("read an account's deletion", [item_key(keys.DELETIONS_PK, quota.account_id)]):
            raise AccountBeingDeleted(quota.account_id)
        values: dict[str, Any] = {
            ":limit": change.limit,
            ":zero": 0,
            ":one": 1,
            ":id": quota.account_id,
            ":type": schema.ACCOUNT_TYPE,
            ":now": now,
            ":bucket": keys.activity_bucket(quota),
            ":stamp": last_write_stamp(now),
            ":received": change.received_ms,
            ":token": change.token,
        }
        try:
            self._table.call(
                "create account",
                "update_item",
                TableName=self._table.name,
                Key=account_key(quota),
                UpdateExpression=(
                    "SET "
                    + schema.create_sets()
                    + schema.change_sets(change, values)
                    + schema.types_sets(resource_types, values)
                    + schema.source_clauses(change.source_on(None), LimitSource.ACCOUNT, values)[0]
                    + schema.registry_sets(quota, values)
                    + schema.mode_clauses(change.mode, QuotaMode.ENFORCE, values)[0]
                ),
                ConditionExpression="attribute_not_exists(#pk)",
                ExpressionAttributeNames={**EXPRESSION_NAMES, "#type": ITEM_TYPE, "#pk": PARTITION_KEY},
                ExpressionAttributeValues=to_attributes(values),
            )
        except ConditionFailed:
            return False  # it exists (perhaps our own retried write): the caller re-reads
        return True

    def set_limit(
        self,
        quota: Quota,
        account: ShardState,
        change: LimitChange,
        now: str,
        retired_span: int,
        periods: Sequence[PeriodLimit] = (),
    ) -> bool:
        values: dict[str, Any] = {
            ":limit": change.limit,
            ":change": change.limit - account.limit,
            ":now": now,
            ":stamp": last_write_stamp(now),
            ":one": 1,
            ":next": account.limit_version + 1,
            ":received": change.received_ms,
            ":token": change.token,
        }
        unchanged = schema.limit_version_condition(account.limit_version, values)
        source_sets, removes = schema.source_clauses(change.source_on(account), account.limit_source, values)
        grant_sets, grant_removed = schema.grant_clauses(change.grant_ends, account.grant_ends is not None, values)
        if grant_removed:
            removes += f", {grant_removed}" if removes else f" REMOVE {grant_removed}"
        mode_sets, mode_removed = schema.mode_clauses(change.mode, account.mode, values)
        if mode_removed:
            removes += f", {mode_removed}" if removes else f" REMOVE {mode_removed}"
        if change.period is not None and account.period is None:
            # Becoming periodic: only while it still holds what it held when read (nothing), so no
            # create, delete or lease lands in between (every one of them bumps the version).
            unchanged += schema.HOLDS_AS_READ_CONDITION
            values[":version_read"] = account.version
        update: dict[str, Any] = {
            "TableName": self._table.name,
            "Key": account_key(quota),
            "UpdateExpression": schema.set_limit_update(
                schema.change_sets(change, values) + source_sets + grant_sets + mode_sets
            )
            + removes,
            "ConditionExpression": unchanged,
            "ExpressionAttributeNames": dict(EXPRESSION_NAMES),
            "ExpressionAttributeValues": to_attributes(values),
        }
        # A change's event is written with it, never by a second, separately failing write.
        announced = change.announced(account)
        with_it = [limit_change_item(self._table.name, quota, account, change, now)] if announced else []
        # A periodic quota's periods change with it, in the same transaction.
        with_it += [item for period in periods for item in self._period_limit(period, account, change, now)]
        # A grant's entry in the index the sweeper reads, with it (functions/adapters/grant_index.py).
        if change.grant_ends is not None:
            with_it.append(grant_index.entry_put(self._table.name, quota, change.grant_ends))
        if not retired_span and not with_it:
            try:
                self._table.call("set limit", "update_item", **update)
            except ConditionFailed:
                return False  # another change came first (or ours, retried): the caller re-reads
            return True
        if not retired_span:
            return self.transact("set limit", [{"Update": update}, *with_it])
        # Lowered below shard 0's room: only once every other shard admits nothing and holds no room.
        update["ConditionExpression"] += schema.SINGLE_SHARD_CONDITION
        update["ExpressionAttributeValues"][":single"] = {"N": "1"}
        return self.transact("set limit", [{"Update": update}, *with_it, *self._retired_checks(quota, retired_span)])

    def _retired_checks(self, quota: Quota, retired_span: int) -> list[dict[str, Any]]:
        """That each shard of `quota` from 1 below `retired_span` is retired and empty (or absent)."""
        return [
            {
                "ConditionCheck": {
                    "TableName": self._table.name,
                    "Key": shard_key(quota, shard),
                    "ConditionExpression": schema.RETIRED_EMPTY_CONDITION,
                    "ExpressionAttributeNames": {"#pk": PARTITION_KEY},
                    "ExpressionAttributeValues": to_attributes({":true": True, ":zero": 0}),
                }
            }
            for shard in range(1, retired_span)
        ]

    def _period_limit(
        self, period: PeriodLimit, account: ShardState, change: LimitChange, now: str
    ) -> list[dict[str, Any]]:
        """A limit change's writes on one open period: its shard 0 takes the new limit (the
        difference into its room), the thresholds if the change gives them and the account
        item's new limit version, if it is still at the version read (the account item's, as
        opened); lowered below its room, only once its other shards are retired and empty. A
        period read not open: a check that it still is not."""
        shard = period.shard
        if shard is None:
            unopened = {
                "TableName": self._table.name,
                "Key": account_key(period.quota),
                "ConditionExpression": "attribute_not_exists(#pk)",
                "ExpressionAttributeNames": {"#pk": PARTITION_KEY},
            }
            return [{"ConditionCheck": unopened}]
        values: dict[str, Any] = {
            ":limit": change.limit,
            ":change": change.limit - shard.limit,
            ":now": now,
            ":stamp": last_write_stamp(now),
            ":one": 1,
            ":next": account.limit_version + 1,
        }
        condition = schema.limit_version_condition(shard.limit_version, values)
        if period.retired_span:
            condition += schema.SINGLE_SHARD_CONDITION
            values[":single"] = 1
        update = {
            "TableName": self._table.name,
            "Key": account_key(period.quota),
            "UpdateExpression": schema.period_limit_update(schema.thresholds_sets(change.thresholds, values)),
            "ConditionExpression": condition,
            "ExpressionAttributeNames": dict(EXPRESSION_NAMES),
            "ExpressionAttributeValues": to_attributes(values),
        }
        return [{"Update": update}, *self._retired_checks(period.quota, period.retired_span)]

    def open_period(self, period: Quota, account: ShardState, now: str, expires_at: int, active: int = 1) -> bool:
        values: dict[str, Any] = {
            ":active": active,
            ":limit": account.limit,
            ":zero": 0,
            ":one": 1,
            ":id": period.account_id,
            ":type": schema.ACCOUNT_TYPE,
            ":now": now,
            ":bucket": keys.activity_bucket(period),
            ":stamp": last_write_stamp(now),
            ":version": account.limit_version,
            ":expires": expires_at,
        }
        sets = schema.open_period_sets() + schema.thresholds_sets(account.thresholds, values)
        account_values: dict[str, Any] = {}
        unchanged: dict[str, Any] = {
            "TableName": self._table.name,
            "Key": account_key(period.whole),
            "ConditionExpression": schema.limit_version_condition(account.limit_version, account_values),
        }
        if account_values:
            unchanged["ExpressionAttributeValues"] = to_attributes(account_values)
        return self.transact(
            "open period",
            [
                {"ConditionCheck": unchanged},
                {
                    "Update": {
                        "TableName": self._table.name,
                        "Key": account_key(period),
                        "UpdateExpression": f"SET {sets}, #expires = :expires",
                        "ConditionExpression": "attribute_not_exists(#pk)",
                        "ExpressionAttributeNames": {
                            **EXPRESSION_NAMES,
                            "#type": ITEM_TYPE,
                            "#pk": PARTITION_KEY,
                            "#expires": EXPIRES_AT,
                        },
                        "ExpressionAttributeValues": to_attributes(values),
                    }
                },
            ],
        )

    # plans (functions/adapters/plan_item.py) and accounts' membership ------------------------

    def read_plan(self, name: str) -> Plan | None:
        return PlanItems(self._table).read_plan(name)

    def write_plan(self, plan: Plan, read_version: int) -> bool:
        return PlanItems(self._table).write_plan(plan, read_version)

    def list_plans(self, limit: int, cursor: str | None) -> PlanPage:
        return PlanItems(self._table).list_plans(limit, cursor)

    def list_accounts(self, plan: str | None, limit: int, cursor: str | None) -> AccountPage:
        return AccountRegistry(self._table).list_accounts(plan, limit, cursor)

    def registry_page(self, plan: str, limit: int, after: str | None) -> tuple[list[AccountEntry], str | None]:
        return AccountRegistry(self._table).accounts_of(plan, limit, after)

    def set_membership(self, account_id: str, plan: str, version: int, received_ms: int) -> bool:
        try:
            self._table.call(
                "record plan",
                "update_item",
                TableName=self._table.name,
                Key=account_key(Quota(account_id)),
                UpdateExpression=schema.MEMBERSHIP_UPDATE,
                ConditionExpression=schema.MEMBERSHIP_CONDITION,
                ExpressionAttributeNames={"#pk": PARTITION_KEY, **schema.MEMBERSHIP_NAMES},
                ExpressionAttributeValues=to_attributes(
                    {":plan": plan, ":plan_version": version, ":received": received_ms, ":registry": plan}
                ),
            )
        except ConditionFailed:
            return False  # a PUT received later gave it its plan (or ours, retried by the SDK)
        return True

    def follow_plan(self, account_id: str, plan: str, received_ms: int) -> bool:
        try:
            self._table.call(
                "date plan",
                "update_item",
                TableName=self._table.name,
                Key=account_key(Quota(account_id)),
                UpdateExpression=schema.FOLLOW_PLAN_UPDATE,
                ConditionExpression=schema.FOLLOW_PLAN_CONDITION,
                ExpressionAttributeNames=schema.MEMBERSHIP_NAMES,
                ExpressionAttributeValues=to_attributes({":plan": plan, ":received": received_ms}),
            )
        except ConditionFailed:
            return False  # on another plan (or none), or dated so already
        return True

    def claim_put(self, quota: Quota, put_id: str, first: FirstAttempt, now: int, expires_at: int) -> FirstAttempt:
        values = {
            PARTITION_KEY: keys.account_pk(quota),
            SORT_KEY: keys.put_request_sk(put_id),
            ITEM_TYPE: PUT_REQUEST,
            FINGERPRINT: first.fingerprint,
            RECEIVED_MS: first.received_ms,
            TOKEN: first.token,
            EXPIRES_AT: expires_at,
            "account_id": quota.account_id,
        }
        try:
            self._table.call(
                "record keyed put",
                "put_item",
                TableName=self._table.name,
                Item=to_attributes(values),
                # A new key, or one whose record outlived its window (TTL removes it within days,
                # not at once), as a create's key (put_resource).
                ConditionExpression="attribute_not_exists(#pk) OR #expires <= :now",
                ExpressionAttributeNames={"#pk": PARTITION_KEY, "#expires": EXPIRES_AT},
                ExpressionAttributeValues=to_attributes({":now": now}),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailed as failed:
            held = failed.item
            return FirstAttempt(str(held[FINGERPRINT]), int(held[RECEIVED_MS]), str(held[TOKEN]))
        return first

    def add_type(self, quota: Quota, most: int) -> Registered:
        try:
            retry_conflicts(
                lambda: self._table.call(
                    "register resource type",
                    "update_item",
                    TableName=self._table.name,
                    Key=account_key(quota.default_quota),
                    # Neither `version` nor a stamp: no counter moves, so a heal's reads stand.
                    UpdateExpression="ADD #types :type",
                    ConditionExpression=(
                        "attribute_exists(#pk) AND (attribute_not_exists(#types) OR contains(#types, :name) "
                        "OR size(#types) < :most)"
                    ),
                    ExpressionAttributeNames={"#pk": PARTITION_KEY, "#types": schema.TYPES_NAME},
                    ExpressionAttributeValues=to_attributes(
                        {":type": {quota.resource_type}, ":name": quota.resource_type, ":most": most}
                    ),
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            )
        except ConditionFailed as failed:
            return Registered.FULL if failed.item else Registered.NO_ACCOUNT
        return Registered.ADDED

    def read_usage(self, quota: Quota) -> Usage | None:
        read = self.read_quota_items(quota)
        return None if read is None else _usage(quota, read)

    def read_period_counts(self, periods: Sequence[Quota]) -> dict[Quota, PeriodCounts]:
        return {period: _period_counts(read) for period, read in self.read_quotas_items(periods).items()}

    def read_account(self, account_id: str) -> AccountUsage | None:
        account = Quota(account_id)
        read = self.read_quota_items(account)
        if read is None:
            return None
        types = [Quota(account_id, name) for name in resource_types_of(read.shards[0])]
        found = self.read_quotas_items(types) if types else {}
        return AccountUsage(
            default=_usage(account, read), types=tuple(_usage(quota, found[quota]) for quota in types if quota in found)
        )

    def reserve_on(self, quota: Quota, lease: Lease) -> Reserved | None:
        changes = schema.reserve_changes(lease.units)
        taken = self.take_lease(quota, lease, changes, schema.RESERVE_CONDITION, before_grant_ends=lease.shard == 0)
        if taken is None:
            return None
        state = shard_state(taken)
        layout = (state.active, state.span) if lease.shard == 0 else None
        return Reserved(heal_epoch=heal_epoch_of(taken), version=state.version, layout=layout, leases=state.leases)

    def reserve_shadow(self, quota: Quota, lease: Lease) -> Reserved | None:
        if lease.shard != 0:
            taken = self.reserve_past_limit_on(quota, lease)
        else:
            changes = schema.reserve_changes(lease.units)
            taken = self.take_lease(quota, lease, changes, schema.SHADOW_RESERVE_CONDITION, before_grant_ends=True)
        if taken is None:
            return None
        state = shard_state(taken)
        return Reserved(
            heal_epoch=heal_epoch_of(taken),
            version=state.version,
            layout=(state.active, state.span) if lease.shard == 0 else None,
            leases=state.leases,
        )

    def take_deletion(self, quota: Quota, lease: Lease, only_unsharded: bool = False) -> tuple[Lease, ...] | None:
        # Signed on purpose: a decrement may land before the increment it cancels (a delete
        # racing a create that is still in flight). Clamping at zero here would lose it, and the
        # late increment would then overcount. Readers clamp instead (Usage.best_effort).
        condition = schema.UNSHARDED_CONDITION if only_unsharded else None
        taken = self.take_lease(quota, lease, schema.deletion_changes(lease.units), condition)
        return None if taken is None else held_leases(taken)

    def get_resources(self, quota: Quota, resource_ids: Iterable[str]) -> dict[str, Resource]:
        return read_resources(self._table, quota, resource_ids)

    # a type's removal (functions/core/lifecycle.py) --------------------------------------------

    def read_type_contents(self, quota: Quota, now: datetime) -> TypeContents | None:
        read = self.read_quota_items(quota)
        if read is None:
            return None
        partition = self._partition(quota)
        period = shard_state(read.shards[0]).period
        current = None if period is None else quota.in_period(period.window_at(now).id)
        opened = None if current is None else self.read_quota_items(current)
        return TypeContents(
            shards=tuple(shard_state(item) for item in read.shards),
            eventual=read.eventual,
            resource_items=sum(1 for item in partition if _is_resource(item)),
            period_shards=() if opened is None else tuple(shard_state(item) for item in opened.shards),
            period_eventual=0 if opened is None else opened.eventual,
            records_to_count=sum(1 for item in partition if _is_resource(item) and PENDING_BUCKET in item),
            read=_TypeRead(read, now, current, opened),
        )

    def remove_type(self, quota: Quota, contents: TypeContents) -> bool:
        read = contents.read
        if not isinstance(read, _TypeRead):
            raise TypeError("contents not read by this store")
        transacted = [*read.whole.shards, *read.whole.counters]
        if read.opened is not None:
            transacted += [*read.opened.shards, *read.opened.counters]
        kept = {_key_of(item) for item in transacted}
        partition = self._partition(quota)
        if any(read.still_to_settle(item) for item in partition):
            return False  # a create landed since the read: nothing written, the caller reads again
        rest = [item_key(str(item[PARTITION_KEY]), str(item[SORT_KEY])) for item in partition]
        whole = shard_state(read.whole.shards[0])
        for period in period_partitions(quota, whole.period, read.now):  # a periodic type's history
            rest += quota_keys(self._table, period, whole.span)
        doomed = [key for key in rest if _key_of(key) not in kept and not read.in_current_period(key)]
        self._table.delete_keys("delete a type's items", doomed)
        actions: list[dict[str, Any]] = []
        for owner, items in ((quota, read.whole), (read.current, read.opened)):
            if owner is None or items is None:
                continue
            for item in items.shards:
                actions.append(self._delete_if_as_read(shard_key(owner, shard_index(item)), schema.VERSION, item))
            for item in items.counters:
                key = item_key(str(item[PARTITION_KEY]), str(item[SORT_KEY]))
                actions.append(self._delete_if_as_read(key, COUNT, item))
        if read.current is not None and read.opened is None:
            actions.append(self._absent(shard_key(read.current, 0)))  # not opened by a create since the read
        actions.append(
            {
                "Update": {
                    "TableName": self._table.name,
                    "Key": account_key(quota.default_quota),
                    "UpdateExpression": "DELETE #types :type",
                    "ConditionExpression": "attribute_exists(#pk)",
                    "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#types": schema.TYPES_NAME},
                    "ExpressionAttributeValues": to_attributes({":type": {quota.resource_type}}),
                }
            }
        )
        return self.transact("remove a type", actions)

    def _absent(self, key: dict[str, Any]) -> dict[str, Any]:
        """A transaction's check that no item is at `key`."""
        return {
            "ConditionCheck": {
                "TableName": self._table.name,
                "Key": key,
                "ConditionExpression": "attribute_not_exists(#pk)",
                "ExpressionAttributeNames": {"#pk": PARTITION_KEY},
            }
        }

    def _delete_if_as_read(self, key: dict[str, Any], name: str, item: Mapping[str, Any]) -> dict[str, Any]:
        """A transaction's Delete of the item at `key`, conditional on its `name` being as read."""
        if name in item:
            condition, values = "#n = :n", {"ExpressionAttributeValues": to_attributes({":n": item[name]})}
        else:
            condition, values = "attribute_exists(#pk) AND attribute_not_exists(#n)", {}
        return {
            "Delete": {
                "TableName": self._table.name,
                "Key": key,
                "ConditionExpression": condition,
                "ExpressionAttributeNames": {"#n": name, **({"#pk": PARTITION_KEY} if "#pk" in condition else {})},
                **values,
            }
        }

    def _partition(self, quota: Quota) -> list[dict[str, Any]]:
        """Every item of the quota's partition (its account item, counter shard 0, resources and
        tombstones, outbox items, keyed PUTs' records, refusal windows), decoded: key attributes,
        item type, and a resource's pending index key (counting work left) and period."""
        request = {
            "TableName": self._table.name,
            "KeyConditionExpression": "#pk = :pk",
            "ProjectionExpression": "#pk, #sk, #type, #pending, #period",
            "ExpressionAttributeNames": {
                "#pk": PARTITION_KEY,
                "#sk": SORT_KEY,
                "#type": ITEM_TYPE,
                "#pending": PENDING_BUCKET,
                "#period": PERIOD,
            },
            "ExpressionAttributeValues": to_attributes({":pk": keys.account_pk(quota)}),
            "ConsistentRead": True,
        }
        return [
            from_attributes(item)
            for page in self._table.pages("read a type's items", request)
            for item in page.get("Items", [])
        ]

    # resources ------------------------------------------------------------------------------

    def put_resource(self, resource: Resource) -> None:
        try:
            self._table.call(
                "create resource",
                "put_item",
                TableName=self._table.name,
                Item=resource_item(resource),
                # A new key, or one whose tombstone outlived its retention (TTL removes it within
                # days, not at once): the Idempotency-Key's window is over. Over at the request's
                # time, the one the create flow judged a replay by (Resource.expired).
                # So is a usage record's once its period and the key's window are over.
                ConditionExpression=(
                    "attribute_not_exists(#pk) OR "
                    "((#type = :tombstone OR attribute_exists(#period)) AND #expires <= :now)"
                ),
                ExpressionAttributeNames={
                    "#pk": PARTITION_KEY,
                    "#type": ITEM_TYPE,
                    "#expires": EXPIRES_AT,
                    "#period": PERIOD,
                },
                ExpressionAttributeValues=to_attributes(
                    {":tombstone": TOMBSTONE, ":now": epoch_seconds(resource.created_at)}
                ),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailed as failed:
            existing = resource_from_values(failed.item)
            if existing.request_token != resource.request_token:
                raise ResourceAlreadyExists(existing) from failed
            # Our own write landed and the SDK retried it: that is success.

    def get_resource(self, quota: Quota, resource_id: str) -> Resource | None:
        return read_resource(self._table, quota, resource_id)

    def resize(self, resource: Resource, amount: int, token: str, key: str, now: str) -> Resource | None:
        counted = resource.counter_processed
        for _ in range(2):  # its create may be counted between our read and our write, once
            try:
                update = resize_update(self._table.name, resource, amount, token, key, now, counted)
                response = self._table.call("resize resource", "update_item", **update)
            except ConditionFailed as failed:
                old = failed.item
                if old.get(RESIZE_TOKEN) == token:
                    return resource_from_values(old)  # our own landed write, retried by the SDK
                if failed.may_have_landed and (not old or int(old.get(RESOURCE_VERSION, 1)) > resource.version + 1):
                    # An earlier attempt may have made the next version and a later resize the one
                    # after (or the item is gone): which write made ours is hidden, so the lease
                    # must stay (given back, it would free units the resource holds, or give back
                    # a decrement of units already freed). A version one past ours with another
                    # token was made by another resize: ours never landed.
                    raise StoreUnavailable(
                        f"resize {resource.resource_id}: whether it landed is hidden by a later change",
                        may_have_landed=True,
                    ) from failed
                live = old.get(ITEM_TYPE) == RESOURCE_TYPE and old.get(DELETED) is False
                found = resource_from_values(old) if live else None
                if found is None or found.version != resource.version or found.counter_processed == counted:
                    return None  # deleted, gone or resized since we read it
                counted = found.counter_processed
                continue
            return resource_from_item(response["Attributes"])
        return None

    def soft_delete(self, quota: Quota, resource_id: str, now: str, token: str, shard: int, units: int = 1) -> bool:
        # A resource written before admission shards has no `shard`: the account item admitted it.
        admitted_by = "(attribute_not_exists(#shard) OR #shard = :shard)" if shard == 0 else "#shard = :shard"
        # The amount the delete took from best-effort: a resource of amount 1 has no `amount`.
        amount = f"attribute_not_exists({AMOUNT})" if units == 1 else f"{AMOUNT} = :units"
        units_value = {} if units == 1 else {":units": units}
        # Admitted by this period (a usage record), or by no period (a holding's resource).
        period = "#period = :period" if quota.period else "attribute_not_exists(#period)"
        period_value = {":period": quota.period} if quota.period else {}
        try:
            self._table.call(
                "delete resource",
                "update_item",
                TableName=self._table.name,
                Key=resource_key(quota, resource_id),
                UpdateExpression=(
                    f"SET {DELETED} = :true, deleted_at = :now, {DELETE_TOKEN} = :token, "
                    f"{PENDING_BUCKET} = :bucket, {PENDING_SINCE} = :now"
                ),
                ConditionExpression=(
                    f"attribute_exists(#pk) AND {DELETED} = :false AND {admitted_by} AND {amount} AND {period}"
                ),
                ExpressionAttributeNames={"#pk": PARTITION_KEY, "#shard": ADMITTED_BY, "#period": PERIOD},
                ExpressionAttributeValues=to_attributes(
                    {
                        ":true": True,
                        ":false": False,
                        ":now": now,
                        ":token": token,
                        ":bucket": keys.pending_bucket(quota, resource_id),
                        ":shard": shard,
                        **units_value,
                        **period_value,
                    }
                ),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailed as failed:
            # Our own landed write, retried: the item, or the tombstone it became, has our token.
            if failed.item.get(DELETE_TOKEN) == token:
                return True
            live = failed.item.get(ITEM_TYPE) == RESOURCE_TYPE and failed.item.get(DELETED) is False
            found = resource_from_values(failed.item) if live else None
            if found is not None and found.shard == shard and found.amount != units:
                raise AmountDiffers(found) from failed
            return False
        return True

    def list_resources(self, quota: Quota, limit: int, cursor: str | None, budget: PageBudget | None = None) -> Page:
        # By hand, not a paginator: the page ends at `limit` live items and its LastEvaluatedKey
        # becomes the API's own cursor.
        start_key = _decode_cursor(quota, cursor) if cursor else None
        items: list[Resource] = []
        for _ in range(MAX_QUERY_PAGES_PER_LIST):
            request = resources_query(
                self._table.name,
                quota,
                values={":false": False},
                FilterExpression=f"{DELETED} = :false",
                Limit=limit - len(items),
                ConsistentRead=True,
            )
            if start_key:
                request["ExclusiveStartKey"] = start_key
            response = self._table.call("list resources", "query", **request)
            items.extend(resource_from_item(item) for item in response.get("Items", []))
            start_key = response.get("LastEvaluatedKey")
            if not start_key or len(items) >= limit:
                break
        fitting = budget.fitting(items) if budget else items
        if len(fitting) < len(items):  # the next page starts right after the last item that fits
            return Page(items=fitting, next_cursor=_encode_cursor(resource_key(quota, fitting[-1].resource_id)))
        return Page(items=items, next_cursor=_encode_cursor(start_key) if start_key else None)


def _is_resource(item: Mapping[str, Any]) -> bool:
    """A resource item that is not a tombstone: live, or deleted and not yet counted."""
    return str(item[SORT_KEY]).startswith(keys.RESOURCE_PREFIX) and item.get(ITEM_TYPE) != TOMBSTONE


def _key_of(key: Mapping[str, Any]) -> tuple[str, str]:
    """A key's (or a decoded item's) partition and sort key, as text."""
    pk, sk = key[PARTITION_KEY], key[SORT_KEY]
    return (str(pk["S"] if isinstance(pk, Mapping) else pk), str(sk["S"] if isinstance(sk, Mapping) else sk))


@dataclass(frozen=True)
class _TypeRead:
    """A type's items as its removal read them at `now`: its own, and for a periodic type its
    current period (`current`) and that period's items if a create opened it (`opened`)."""

    whole: AccountItems
    now: datetime
    current: Quota | None = None
    opened: AccountItems | None = None

    def in_current_period(self, key: Mapping[str, Any]) -> bool:
        """Whether `key` is one of the current period's admission or counter shards (read or not):
        the transaction's, so one a create opened since the read stays, to cancel it."""
        pk, sk = _key_of(key)
        shard_family = (keys.ACCOUNT_SORT_KEY, keys.SHARD_SORT_KEY, keys.COUNTER_SORT_KEY)
        return self.current is not None and sk in shard_family and keys.quota_of(pk) == self.current

    def still_to_settle(self, item: Mapping[str, Any]) -> bool:
        """Whether a partition's item stops the removal: for a holding, any resource that is not a
        tombstone; for a periodic type, a record with counting work left or live in its current
        period (a closed period's records are history, removed with it)."""
        if not _is_resource(item):
            return False
        if self.current is None:
            return True
        return PENDING_BUCKET in item or item.get(PERIOD) == self.current.period


def _usage(quota: Quota, read: AccountItems) -> Usage:
    return schema.usage_of(quota, read.shards, read.eventual)


def _period_counts(read: AccountItems) -> PeriodCounts:
    shards = [shard_state(item) for item in read.shards]
    return PeriodCounts(
        limit=shards[0].limit,
        admitted=sum(shard.admitted for shard in shards),
        best_effort_net=sum(shard.best_effort for shard in shards),
        eventual=read.eventual,
        leases_held=sum(len(shard.leases) for shard in shards),
    )


def _encode_cursor(last_key: Mapping[str, Any]) -> str:
    raw = json.dumps({"sk": last_key[SORT_KEY]["S"]}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(quota: Quota, cursor: str) -> dict[str, Any]:
    """Only a resource sort key of this quota can come back in: no key injection."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        sort_key = json.loads(raw)["sk"]
    except (binascii.Error, ValueError, KeyError, TypeError) as error:
        raise InvalidCursor() from error
    resource_id = keys.resource_id_from_sk(sort_key) if isinstance(sort_key, str) else None
    if resource_id is None:
        raise InvalidCursor()
    return resource_key(quota, resource_id)

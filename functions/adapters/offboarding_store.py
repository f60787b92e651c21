"""The offboarding port on DynamoDB (functions/core/offboarding.py): the deletions' entries, the
fence and the erasure. No Scan: every item of an account is found from its entry, by key or by a
Query of one of its partitions.

A deletion's entry (`DELETIONS` / `<account id>`) names the account's quotas, each with its shard
span, its period and its grant's end, so that the erasure finds every partition the account wrote
after its account items are gone. Deletes are BatchWriteItem calls of 25 keys
(DynamoTable.delete_keys asks again for the items one leaves unprocessed).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from functions.adapters import grant_index, keys
from functions.adapters.account_item import resource_types_of, shard_state
from functions.adapters.attributes import from_attributes, to_attributes
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.errors import ConditionFailed, TransactionCancelled
from functions.adapters.outbox import account_deleted_item
from functions.adapters.quota_partitions import period_partitions, quota_keys
from functions.adapters.shards import ShardStore, shard_key
from functions.adapters.table_layout import ITEM_TYPE, PARTITION_KEY, SORT_KEY, item_key
from functions.core.counting import CONDITIONAL_CHECK_FAILED
from functions.core.errors import StoreUnavailable
from functions.core.model import Quota
from functions.core.offboarding import AccountDeletion, QuotaPlace
from functions.core.periods import format_instant, parse_period

DELETION = "account_deletion"  # the entry's item type
REQUESTED_MS, DELETED_BY, QUOTAS, FENCED_MS = "requested_ms", "deleted_by", "quotas", "fenced_ms"


def deletion_key(account_id: str) -> dict[str, Any]:
    return item_key(keys.DELETIONS_PK, account_id)


class DynamoOffboardingStore:
    def __init__(self, table: DynamoTable) -> None:
        self._table = table
        self._shards = ShardStore(table)

    # the request's part ----------------------------------------------------------------------

    def read_places(self, account_id: str) -> tuple[QuotaPlace, ...] | None:
        account = Quota(account_id)
        read = self._shards.read_quota_items(account)
        if read is None:
            return None
        names = sorted(resource_types_of(read.shards[0]))
        found = self._shards.read_quotas_items([Quota(account_id, name) for name in names]) if names else {}
        places = [_place(account, read.shards[0])]
        for name in names:
            items = found.get(Quota(account_id, name))
            places.append(_place(Quota(account_id, name), items.shards[0]) if items else QuotaPlace(name))
        return tuple(places)

    def read_deletion(self, account_id: str) -> AccountDeletion | None:
        found = self._table.read_keys("read an account's deletion", [deletion_key(account_id)])
        return _deletion_of(found[0]) if found else None

    def begin_deletion(self, deletion: AccountDeletion) -> bool:
        values = {
            PARTITION_KEY: keys.DELETIONS_PK,
            SORT_KEY: deletion.account_id,
            ITEM_TYPE: DELETION,
            REQUESTED_MS: deletion.requested_ms,
            DELETED_BY: deletion.deleted_by,
            QUOTAS: json.dumps([_place_json(place) for place in deletion.quotas]),
            FENCED_MS: 0,
            # No TTL: the entry is the erasure's work, which deletes it last; a TTL that ran first
            # (a sweeper down for a day) would leave the account's items with nothing to find them.
        }
        entry = {
            "Put": {
                "TableName": self._table.name,
                "Item": to_attributes(values),
                "ConditionExpression": "attribute_not_exists(#pk)",
                "ExpressionAttributeNames": {"#pk": PARTITION_KEY},
            }
        }
        try:
            self._table.call(
                "record an account's deletion",
                "transact_write_items",
                TransactItems=[entry, account_deleted_item(self._table.name, deletion)],
            )
        except TransactionCancelled as cancelled:
            # A condition failed: being deleted already (or its event's item is there: the same
            # deletion). Cancelled otherwise (a conflict with another transaction, throttling),
            # nothing landed and the account is not being deleted: the request must not go on to
            # fence it with no entry to erase it by nor event to announce it; it is retried.
            if any(code == CONDITIONAL_CHECK_FAILED for code, _ in cancelled.reasons):
                return False
            codes = ", ".join(code for code, _ in cancelled.reasons)
            raise StoreUnavailable(
                f"record an account's deletion: cancelled ({codes})",
                may_have_landed=False,
                throttled=cancelled.throttled_action,
            ) from cancelled
        return True

    def fence(self, deletion: AccountDeletion, now: datetime) -> AccountDeletion:
        deletion = self._with_periods_spread(deletion, now)
        doomed: list[dict[str, Any]] = []
        for quota, place in _quotas(deletion):
            for partition in [quota, *_open_periods(quota, place, now)]:
                doomed += [shard_key(partition, shard) for shard in range(place.span)]
        self._table.delete_keys("fence an account", doomed)
        fenced_ms = int(now.timestamp() * 1000)
        self._record(deletion, "SET #fenced = :fenced", {"#fenced": FENCED_MS}, {":fenced": fenced_ms})
        return AccountDeletion(
            deletion.account_id, deletion.requested_ms, deletion.deleted_by, deletion.quotas, fenced_ms
        )

    def _with_periods_spread(self, deletion: AccountDeletion, now: datetime) -> AccountDeletion:
        """The deletion with each periodic quota's span widened to what its open periods' shard 0
        record (a busy period spreads over shards of its own), recorded on its entry before the
        fence deletes those shard 0 items: the erasure then finds every shard and counter shard."""
        periods = {
            period: place.resource_type
            for quota, place in _quotas(deletion)
            for period in _open_periods(quota, place, now)
        }
        if not periods:
            return deletion
        spans: dict[str, int] = {}
        for item in self._table.read_keys("read an account's open periods", [shard_key(p, 0) for p in periods]):
            period = keys.quota_of(str(item[PARTITION_KEY]))
            if period in periods:
                resource_type = periods[period]
                spans[resource_type] = max(spans.get(resource_type, 1), shard_state(item).span)
        places = tuple(
            replace(place, span=max(place.span, spans.get(place.resource_type, 1))) for place in deletion.quotas
        )
        if places == deletion.quotas:
            return deletion
        quotas = json.dumps([_place_json(place) for place in places])
        self._record(deletion, "SET #quotas = :quotas", {"#quotas": QUOTAS}, {":quotas": quotas})
        return replace(deletion, quotas=places)

    def _record(self, deletion: AccountDeletion, update: str, names: dict[str, str], values: dict[str, Any]) -> None:
        """Write to the deletion's entry, if it is still there (erased meanwhile: nothing left to fence)."""
        with contextlib.suppress(ConditionFailed):
            self._table.call(
                "record an account's fence",
                "update_item",
                TableName=self._table.name,
                Key=deletion_key(deletion.account_id),
                UpdateExpression=update,
                ConditionExpression="attribute_exists(#pk)",
                ExpressionAttributeNames={**names, "#pk": PARTITION_KEY},
                ExpressionAttributeValues=to_attributes(values),
            )

    # the sweeper's part ----------------------------------------------------------------------

    def pending_deletions(self) -> list[AccountDeletion]:
        request = {
            "TableName": self._table.name,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY},
            "ExpressionAttributeValues": to_attributes({":pk": keys.DELETIONS_PK}),
            "ConsistentRead": True,
        }
        pages = self._table.pages("read the deletions", request)
        return [_deletion_of(from_attributes(item)) for page in pages for item in page.get("Items", [])]

    def erase(self, deletion: AccountDeletion, now: datetime) -> None:
        # An account created again by a PUT that raced the deletion's start is erased with the rest.
        again = self.read_places(deletion.account_id) or ()
        known = {place.resource_type for place in deletion.quotas}
        places = [*deletion.quotas, *(place for place in again if place.resource_type not in known)]
        widest = AccountDeletion(deletion.account_id, deletion.requested_ms, deletion.deleted_by, tuple(places))
        doomed: list[dict[str, Any]] = []
        for quota, place in _quotas(widest):
            for partition in [quota, *period_partitions(quota, place.period, now)]:
                doomed += quota_keys(self._table, partition, place.span)
            if place.grant_ends is not None:
                doomed.append(grant_index.entry_key(quota, place.grant_ends))
        self._table.delete_keys("erase an account", doomed)
        self._table.delete_keys("erase an account's entry", [deletion_key(deletion.account_id)])


def _place(quota: Quota, account_item: Mapping[str, Any]) -> QuotaPlace:
    state = shard_state(account_item)
    return QuotaPlace(quota.resource_type, state.span, state.period, state.grant_ends)


def _quotas(deletion: AccountDeletion) -> Iterator[tuple[Quota, QuotaPlace]]:
    for place in deletion.quotas:
        yield Quota(deletion.account_id, place.resource_type), place


def _open_periods(quota: Quota, place: QuotaPlace, now: datetime) -> list[Quota]:
    """A periodic quota's periods a create may be admitted in at `now`: the current one and the next."""
    if place.period is None:
        return []
    window = place.period.window_at(now)
    return [quota.in_period(window.id), quota.in_period(place.period.following(window).id)]


def _place_json(place: QuotaPlace) -> dict[str, Any]:
    period = place.period
    return {
        "type": place.resource_type,
        "span": place.span,
        "every": None if period is None else period.kind.value,
        "anchor": None if period is None or period.anchor is None else format_instant(period.anchor),
        "grantEnds": place.grant_ends,
    }


def _deletion_of(item: Mapping[str, Any]) -> AccountDeletion:
    places = tuple(
        QuotaPlace(
            entry["type"],
            int(entry["span"]),
            None if entry["every"] is None else parse_period(entry["every"], entry["anchor"]),
            entry["grantEnds"],
        )
        for entry in json.loads(str(item[QUOTAS]))
    )
    return AccountDeletion(
        str(item[SORT_KEY]), int(item[REQUESTED_MS]), str(item[DELETED_BY]), places, int(item.get(FENCED_MS, 0))
    )

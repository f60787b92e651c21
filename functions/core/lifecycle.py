"""A type's end (docs/api.md, "Delete a type"; docs/plans.md, "Lifecycle"): `DELETE
/accounts/{id}/types/{type}`. Pure orchestration over the `TypeRemovalStore` port.

A type is removed only once it holds nothing: no slot admitted or in flight on any of its admission
shards, an eventual count of 0, and no resource item that is not a tombstone (a soft-deleted one is
the stream's work still to count). Its removal is then one transaction, conditional on every shard
and counter item being as read (a create or a count in between cancels it), which deletes them and
takes the type off its account's registry; the rest of its partition (tombstones, keyed PUTs'
records, outbox items, refusal windows) is deleted first, so a removal cut short is finished by the
same DELETE again.

Asked to delete its resources, the request first lowers the type's limit to 0 (a Limit Changed
event), so that every create from then on is refused (409 LimitExceeded, as at any full limit),
then deletes each live resource as its DELETE does (each counted as a delete by the stream), and
removes the type if the stream has counted them already; if not, it answers `removed: false`,
and the same DELETE again removes the type once the stream has (within the stream's lag). A create
racing the delete is refused by the limit, or admitted before it and deleted with the rest; the
removal's conditions make sure no resource is ever left counted against a type that is gone.

A periodic type's records are its periods' history: without `deleteResources` it is removed only
while it holds none. With it, the records of its current period are deleted as above (refunded,
each counted), and once nothing is in flight and the stream has counted every record of every
period, the removal deletes its closed periods' records and every period's items with the rest
(history goes with the type: no delete is counted for them).
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from functions.core import accounts, leases
from functions.core.accounts import ApiStore, Clock, Deadline, LimitChange
from functions.core.admission import Directory, ShardState
from functions.core.errors import (
    AccountNotFound,
    CallerGaveUp,
    DefaultTypeNotDeletable,
    PeriodClosed,
    PlanType,
    ResourceNotFound,
    StoreUnavailable,
    TypeNotEmpty,
)
from functions.core.leases import parse_timestamp
from functions.core.model import LimitSource, Quota


@dataclass(frozen=True)
class TypeContents:
    """What a type holds, as read for its removal: its shards (shard 0 first), its eventual count,
    and how many of its resource items are not tombstones (live, or deleted but not yet counted).
    A periodic type's admissions and counts are its periods': its current period's shards and
    eventual count, and how many of its records (of any period) have counting work left."""

    shards: tuple[ShardState, ...]
    eventual: int
    resource_items: int
    period_shards: tuple[ShardState, ...] = ()
    period_eventual: int = 0
    records_to_count: int = 0
    read: object = field(default=None, compare=False, repr=False)  # the store's own, for its removal

    @property
    def periodic(self) -> bool:
        return self.shards[0].period is not None

    @property
    def settled(self) -> bool:
        """Nothing admitted nor in flight on its shards (its current period's too) and every count
        the stream owes it made: for a holding, no resource item but tombstones; for a periodic
        type, no record with counting work left (its closed periods' records may stay)."""
        shards = (*self.shards, *self.period_shards)
        if any(shard.admitted or shard.leases for shard in shards) or self.eventual or self.period_eventual:
            return False
        return self.records_to_count == 0 if self.periodic else self.resource_items == 0

    @property
    def empty(self) -> bool:
        """Settled and without a record: a periodic type's closed periods' records are its history,
        which only a DELETE asked to delete its resources removes."""
        return self.settled and self.resource_items == 0


class TypeRemovalStore(ApiStore, Protocol):
    def read_type_contents(self, quota: Quota, now: datetime) -> TypeContents | None:
        """What the type holds (a periodic type's current period: the one at `now`); None if it has
        no account item."""
        ...

    def remove_type(self, quota: Quota, contents: TypeContents) -> bool:
        """Delete the rest of the type's items (a periodic type's records and every period's items
        with them), then (one transaction, conditional on each shard and counter item being as
        `contents` read it, its current period's too) its shards and counters, and take it off its
        account's registry. False if anything changed since the read (nothing of the
        transaction written): a resource landed, or a record to count."""
        ...


class TypeDeletion(enum.Enum):
    REMOVED = "removed"  # the type is gone
    ACCEPTED = "accepted"  # its resources are deleted; the stream has yet to count them


# Reads and removals of a type whose items keep changing (a count landing in between) before the
# request gives up with a retryable 503.
REMOVAL_ATTEMPTS = 4


def delete_type(
    store: TypeRemovalStore,
    quota: Quota,
    delete_resources: bool,
    received_ms: int,
    clock: Clock,
    in_time: Deadline,
    directory: Directory | None = None,
    changed_by: str = "",
    token: Callable[[], str] = leases.new_token,
) -> TypeDeletion:
    """Remove `quota`'s type from its account (see the module's doc). 400 for the default type, 404
    for a type the account does not have, 409 PlanType for one its plan gives, 409 TypeNotEmpty for
    one that holds resources (a periodic type: records, of any period) unless `delete_resources`."""
    if quota.is_default:
        raise DefaultTypeNotDeletable(quota)
    contents = _read(store, quota, clock)
    if contents.empty:
        return _remove(store, quota, contents, clock)
    if not delete_resources:
        raise TypeNotEmpty(quota)
    if contents.shards[0].limit != 0:
        close = LimitChange(limit=0, received_ms=received_ms, token=token(), changed_by=changed_by)
        accounts.put_limit(store, quota, close, clock, in_time)
    _delete_live_resources(store, quota, contents, clock, in_time, directory or Directory())
    contents = _read(store, quota, clock)
    if not contents.settled:
        return TypeDeletion.ACCEPTED
    return _remove(store, quota, contents, clock)


def _read(store: TypeRemovalStore, quota: Quota, clock: Clock) -> TypeContents:
    contents = store.read_type_contents(quota, parse_timestamp(clock()))
    if contents is None:
        raise AccountNotFound(quota)
    if contents.shards[0].limit_source in (LimitSource.PLAN, LimitSource.OVERRIDE):
        raise PlanType(quota)  # the plan's type (overridden or not): its next rollout would give it back
    return contents


def _remove(store: TypeRemovalStore, quota: Quota, contents: TypeContents, clock: Clock) -> TypeDeletion:
    """Remove the type as read; read again and retry while its items keep changing. A removal asked of
    a type read empty stays one: a resource (a record) landing meanwhile is 409 TypeNotEmpty."""
    asked_empty = contents.empty
    for _ in range(REMOVAL_ATTEMPTS):
        if store.remove_type(quota, contents):
            return TypeDeletion.REMOVED
        read = store.read_type_contents(quota, parse_timestamp(clock()))
        if read is None:
            return TypeDeletion.REMOVED  # removed by another request meanwhile
        if not (read.empty if asked_empty else read.settled):
            raise TypeNotEmpty(quota)  # a create landed before the limit refused it: the caller deletes again
        contents = read
    raise StoreUnavailable(f"remove {quota}: its items kept changing", may_have_landed=False)


def _delete_live_resources(
    store: ApiStore, quota: Quota, contents: TypeContents, clock: Clock, in_time: Deadline, directory: Directory
) -> None:
    """Each live resource of the type (a periodic type's records of its current period: a closed
    period's are history, removed with the type) deleted as its DELETE deletes it, a page at a time.
    One pass: a create admitted before the limit went to 0 that lands behind it is found by the next
    DELETE."""
    period = contents.shards[0].period
    listed = quota if period is None else quota.in_period(period.window_at(parse_timestamp(clock())).id)
    cursor: str | None = None
    while True:
        if not in_time():
            raise CallerGaveUp()
        page = store.list_resources(listed, RESOURCES_PER_PAGE, cursor)
        for resource in page.items:
            with contextlib.suppress(ResourceNotFound, PeriodClosed):  # deleted meanwhile, or its period ended
                accounts.delete_resource(
                    store, quota, resource.resource_id, clock, in_time=in_time, directory=directory
                )
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


RESOURCES_PER_PAGE = 100

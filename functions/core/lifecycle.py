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
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from functions.core import accounts, leases
from functions.core.accounts import ApiStore, Clock, Deadline, LimitChange
from functions.core.admission import Directory, ShardState
from functions.core.errors import (
    AccountNotFound,
    CallerGaveUp,
    DefaultTypeNotDeletable,
    PlanType,
    ResourceNotFound,
    StoreUnavailable,
    TypeNotEmpty,
)
from functions.core.model import LimitSource, Quota


@dataclass(frozen=True)
class TypeContents:
    """What a type holds, as read for its removal: its shards (shard 0 first), its eventual count,
    and how many of its resource items are not tombstones (live, or deleted but not yet counted)."""

    shards: tuple[ShardState, ...]
    eventual: int
    resource_items: int
    read: object = field(default=None, compare=False, repr=False)  # the store's own, for its removal

    @property
    def empty(self) -> bool:
        unsettled = any(shard.admitted or shard.leases for shard in self.shards)
        return not unsettled and self.eventual == 0 and self.resource_items == 0


class TypeRemovalStore(ApiStore, Protocol):
    def read_type_contents(self, quota: Quota) -> TypeContents | None:
        """What the type holds; None if it has no account item."""
        ...

    def remove_type(self, quota: Quota, contents: TypeContents) -> bool:
        """Delete the rest of the type's partition, then (one transaction, conditional on each shard
        and counter item being as `contents` read it) its shards and counters, and take it off its
        account's registry. False if anything changed since the read (nothing of the
        transaction written)."""
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
    one that holds resources unless `delete_resources` (and for a periodic type that holds records,
    whose closed periods' records are history that no DELETE changes: not deleted this way)."""
    if quota.is_default:
        raise DefaultTypeNotDeletable(quota)
    contents = _read(store, quota)
    if contents.empty:
        return _remove(store, quota, contents)
    if not delete_resources or contents.shards[0].period is not None:
        raise TypeNotEmpty(quota)  # a periodic type's records are its periods' history: not deleted here
    if contents.shards[0].limit != 0:
        close = LimitChange(limit=0, received_ms=received_ms, token=token(), changed_by=changed_by)
        accounts.put_limit(store, quota, close, clock, in_time)
    _delete_live_resources(store, quota, clock, in_time, directory or Directory())
    contents = _read(store, quota)
    if not contents.empty:
        return TypeDeletion.ACCEPTED
    return _remove(store, quota, contents)


def _read(store: TypeRemovalStore, quota: Quota) -> TypeContents:
    contents = store.read_type_contents(quota)
    if contents is None:
        raise AccountNotFound(quota)
    if contents.shards[0].limit_source in (LimitSource.PLAN, LimitSource.OVERRIDE):
        raise PlanType(quota)  # the plan's type (overridden or not): its next rollout would give it back
    return contents


def _remove(store: TypeRemovalStore, quota: Quota, contents: TypeContents) -> TypeDeletion:
    for _ in range(REMOVAL_ATTEMPTS):
        if store.remove_type(quota, contents):
            return TypeDeletion.REMOVED
        read = store.read_type_contents(quota)
        if read is None:
            return TypeDeletion.REMOVED  # removed by another request meanwhile
        if not read.empty:
            raise TypeNotEmpty(quota)  # a create landed before the limit refused it: the caller deletes again
        contents = read
    raise StoreUnavailable(f"remove {quota}: its items kept changing", may_have_landed=False)


def _delete_live_resources(
    store: ApiStore, quota: Quota, clock: Clock, in_time: Deadline, directory: Directory
) -> None:
    """Each live resource of the type deleted as its DELETE deletes it, a page at a time. One pass:
    a create admitted before the limit went to 0 that lands behind it is found by the next DELETE."""
    cursor: str | None = None
    while True:
        if not in_time():
            raise CallerGaveUp()
        page = store.list_resources(quota, RESOURCES_PER_PAGE, cursor)
        for resource in page.items:
            with contextlib.suppress(ResourceNotFound):  # deleted by another request meanwhile
                accounts.delete_resource(
                    store, quota, resource.resource_id, clock, in_time=in_time, directory=directory
                )
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


RESOURCES_PER_PAGE = 100

"""Leases: how an API write on an admission shard recognises itself when it is retried.

A create and a delete each move the account's counters twice: once before the resource changes
(the create reserves a slot, the delete takes one from `best_effort`) and once after (the create
adds to `best_effort`, the delete frees its slot). The first write also *takes a lease*: an
attribute on the admission shard that admitted the resource (the account item, or another shard
of a busy account: functions/core/admission.py), named by the request's token. The second *settles* it, removing
the attribute in the same update. Each write is conditional on the lease:

* take:   `attribute_not_exists(lease)`. A retry of a take that landed fails its condition and
  finds its own lease in the old item: it landed, and is not applied twice.
* settle: `lease = value`. A retry of a settle that landed fails its condition: the lease is gone,
  so the change was applied once.

So every one of these writes can be retried by the SDK (a 500, a read timeout) and still be
applied exactly once. A lease that is never settled (the invocation died) is resolved by a heal
once it is older than any invocation can run (functions/core/healing.py): the resource item,
which keeps the request's token even as a tombstone, says what happened.

docs/admission.md lists every write with its condition and how its retry recognises itself.
"""

from __future__ import annotations

import enum
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Protocol

from functions.core.model import Quota, Resource

# How long a counted delete's tombstone keeps its request's token. A tombstone outlives every lease
# it may have to answer for by far (24 h against a minute); a lease older than the retention (a heal
# that could not run for a day) is forgotten on the safe side: its slot stays held and best-effort
# low, until a quiet heal (functions/core/healing.py).
DEFAULT_TOMBSTONE_RETENTION = timedelta(hours=24)


class LeaseKind(enum.Enum):
    RESERVATION = "reservation"  # a create's slot, taken before its resource exists
    DELETION = "deletion"  # a delete's best-effort decrement, taken before the soft delete
    GROWTH = "growth"  # a resize's added units, reserved before the resource grows
    SHRINK = "shrink"  # a resize's freed units, taken from best-effort before the resource shrinks

    @property
    def takes_best_effort(self) -> bool:
        """Its first write took from best-effort, which its resource's write may still give back."""
        return self in (LeaseKind.DELETION, LeaseKind.SHRINK)


@dataclass(frozen=True)
class Lease:
    kind: LeaseKind
    token: str  # the request's token: the resource's request_token or delete_token
    resource_id: str
    taken_at: str  # ISO 8601, UTC
    shard: int = 0  # the admission shard whose item holds it (functions/core/admission.py)
    units: int = 1  # the units its change moves: the resource's amount (a lease says its own)
    # A resize's: the resource version it changes (its write is conditional on it, and makes the next).
    from_version: int = 0


def new_token() -> str:
    """A request's token: 64 random bits, short because it is part of an attribute name."""
    return secrets.token_hex(8)


def in_order(held: Iterable[Lease]) -> tuple[Lease, ...]:
    """Leases oldest first (ties: deletions first, then by token, then by shard), as every reader
    lists them."""
    return tuple(
        sorted(held, key=lambda lease: (lease.taken_at, lease.kind is LeaseKind.RESERVATION, lease.token, lease.shard))
    )


class Settled(enum.Enum):
    APPLIED = "applied"  # this call removed the lease and applied its change
    ALREADY = "already"  # the lease was gone: an earlier attempt of the same write applied it
    EPOCH_MOVED = "epoch_moved"  # a heal came between: the lease is still held, nothing applied


@dataclass(frozen=True)
class Settlement:
    """The change a settle applies with the lease's removal."""

    admitted: int = 0
    best_effort: int = 0
    expected_heal_epoch: int | None = None  # apply only if no heal came since


COMMIT_RESERVATION = Settlement(best_effort=+1)  # the resource exists: count it (epoch set per call)
RELEASE_RESERVATION = Settlement(admitted=-1)  # the resource was never created: free the slot
DROP = Settlement()  # the lease's work is done or void: forget it, change nothing
FINISH_DELETION = Settlement(admitted=-1)  # the resource stopped being live: free its slot
UNDO_DELETION = Settlement(best_effort=+1)  # the soft delete did not land: give back the decrement


def in_units(settlement: Settlement, units: int) -> Settlement:
    """`settlement` (written for one unit) for a lease of `units`: every change scaled by them."""
    if units == 1:
        return settlement
    return replace(settlement, admitted=settlement.admitted * units, best_effort=settlement.best_effort * units)


def parse_timestamp(timestamp: str) -> datetime:
    """An ISO 8601 UTC timestamp of the flows' clock (a lease's `taken_at`, a write's stamp)."""
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))


def epoch_ms(timestamp: str) -> int:
    """An ISO 8601 UTC timestamp of the flows' clock, as epoch milliseconds."""
    return (parse_timestamp(timestamp) - _EPOCH) // timedelta(milliseconds=1)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso_timestamp(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def taken_before(leases: Iterable[Lease], moment: str) -> list[Lease]:
    """The leases taken before `moment` (ISO 8601): older than any request still running, they are dead."""
    return [lease for lease in leases if lease.taken_at < moment]


# --- dead leases ------------------------------------------------------------------------------


def resolution(lease: Lease, resource: Resource | None, expired: bool) -> Settlement:
    """How to settle a dead lease, from the resource item as it is now (or None), in the lease's
    own units (the amount it reserved or took).

    `expired`: the lease is older than the tombstone retention, so a missing item proves nothing."""
    return in_units(_resolution(lease, resource, expired), lease.units)


def _resolution(lease: Lease, resource: Resource | None, expired: bool) -> Settlement:
    if lease.kind in (LeaseKind.GROWTH, LeaseKind.SHRINK):
        return _resize_resolution(lease, resource)
    if lease.kind is LeaseKind.RESERVATION:
        if resource is not None and resource.request_token == lease.token:
            return DROP  # the put landed: the resource holds the slot (and the stream counts it)
        return DROP if expired else RELEASE_RESERVATION  # the put never landed: free the slot
    if resource is not None and resource.delete_token == lease.token:
        return FINISH_DELETION  # the soft delete landed: the slot is free
    if resource is None or expired:
        return DROP
    return UNDO_DELETION  # the soft delete never landed: the resource is still live, or another delete won


def _resize_resolution(lease: Lease, resource: Resource | None) -> Settlement:
    """A resize's write is conditional on the resource being at `from_version` and makes the next
    version with its token. A resource still at that version (or before it) was never resized by
    it; one whose latest resize is this lease's landed. A later resize hides which resize made the
    version after `from_version`: that lease is forgotten on the safe side (a growth's units stay
    held, a shrink's stay out of best-effort) until a quiet heal sets the counters to the truth."""
    grew = lease.kind is LeaseKind.GROWTH
    if resource is not None and resource.resize_token == lease.token:
        return DROP if grew else FINISH_DELETION  # landed: a growth's units are held, a shrink's are free
    if resource is not None and resource.version <= lease.from_version:
        return RELEASE_RESERVATION if grew else UNDO_DELETION  # never landed
    return DROP


class DeadLeaseStore(Protocol):
    def get_resources(self, quota: Quota, resource_ids: Iterable[str]) -> Mapping[str, Resource]:
        """The resources or tombstones that exist among `resource_ids`, by id (strongly consistent)."""
        ...

    def settle_together(self, quota: Quota, shard: int, settlements: Mapping[Lease, Settlement]) -> int:
        """Remove the shard's leases and apply their settlements in one write, once (those another
        writer settled first are left out); returns how many this call settled."""
        ...


def settle_dead_leases(store: DeadLeaseStore, quota: Quota, dead: Sequence[Lease], expired_before: str) -> int:
    """Settle `dead` leases (taken longer ago than any request runs), each as its resource item
    says: one read of every resource, and one write per shard for all of that shard's leases, so
    a shard carrying many costs one write of its size, not one per lease. A lease taken before
    `expired_before` (the tombstone retention) may have outlived its tombstone. Returns how many
    this call settled (another writer may have settled some first)."""
    if not dead:
        return 0
    resources = store.get_resources(quota, {lease.resource_id for lease in dead})
    by_shard: dict[int, dict[Lease, Settlement]] = {}
    for lease in dead:
        settlement = resolution(lease, resources.get(lease.resource_id), expired=lease.taken_at < expired_before)
        by_shard.setdefault(lease.shard, {})[lease] = settlement
    return sum(store.settle_together(quota, shard, found) for shard, found in sorted(by_shard.items()))

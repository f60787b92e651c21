"""Healing an account's API-path counters back to the truth (docs/healing.md).

First, a heal resolves the account's dead leases: those taken longer ago than `quiet`, longer than
any API invocation can run, so their request is over. The resource item (or its tombstone) says
what happened: `resolution` (functions/core/leases.py) frees the slot of a create that never put
its resource, gives back the decrement of a delete that never landed, frees the slot of a delete
that landed, or just forgets a lease whose work was done. A shard's dead leases are settled by one
conditional write, applied once. The API settles them the same way when a write sees many on its
shard, and when a create finds its account full (functions/core/admission.py, `settle_dead_seen`).

Then, faults may have left `best_effort` too low (a crash before the count). When an account has no
counting work left, the eventual counter is exact: it equals the live resources. A heal sets the
counters to it. Each counter gets the guard its invariant needs:

* `best_effort := eventual`, conditional on the account's `version`: no API write came between our
  reads and our write. No resource of the account is pending (uncounted or soft-deleted) and no
  delete is in flight (a deletion lease). The heal bumps `heal_epoch`, so a create that reserved
  before the heal skips its count. Its resource is either already in `eventual` or not yet live.
* `admitted := eventual` as well, only if the account has had no API write for `quiet`. A create
  that reserved before the heal may put its resource after it, and lowering `admitted` under such a
  create could let the limit be exceeded.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from functions.core.admission import ShardState
from functions.core.leases import (
    DEFAULT_TOMBSTONE_RETENTION,
    DeadLeaseStore,
    Lease,
    iso_timestamp,
    parse_timestamp,
    settle_dead_leases,
    taken_before,
)
from functions.core.model import Quota

logger = logging.getLogger(__name__)


class HealOutcome(enum.Enum):
    HEALED = "healed"
    EXACT = "exact"  # nothing to change
    PENDING_WORK = "pending_work"  # counting not finished, or a delete in flight: try later
    BUSY = "busy"  # an API write came between our reads and our write: try later
    NOT_FOUND = "not_found"


@dataclass(frozen=True)
class AccountState:
    """The account's shards as a heal reads them (strongly consistent), summed."""

    version: int  # shard 0's (the account item's); every shard's is in `shards`
    best_effort_net: int
    admitted: int
    heal_epoch: int
    last_write_at: str  # ISO 8601, UTC: the latest over the shards
    leases: tuple[Lease, ...] = ()
    shards: tuple[ShardState, ...] = ()  # every shard item, shard 0 first: a heal writes each

    @property
    def spread(self) -> bool:
        """More than the account item admits, or holds anything (functions/core/admission.py)."""
        others = self.shards[1:]
        held = any(s.room or s.admitted or s.best_effort or not s.retired for s in others)
        return bool(self.shards) and (self.shards[0].active > 1 or held)


@dataclass(frozen=True)
class HealPlan:
    best_effort: int
    admitted: int | None  # None: leave `admitted` alone (the account is not quiet long enough)


@dataclass(frozen=True)
class HealResult:
    outcome: HealOutcome
    before: AccountState | None = None
    eventual: int | None = None
    plan: HealPlan | None = None


class HealingStore(DeadLeaseStore, Protocol):
    def read_account_state(self, quota: Quota) -> tuple[AccountState, int] | None:
        """The account item and the eventual counter; None if there is no such account."""
        ...

    def has_pending_work(self, quota: Quota) -> bool:
        """Any resource uncounted or soft-deleted."""
        ...

    def apply_heal(self, quota: Quota, state: AccountState, plan: HealPlan, now: str) -> bool:
        """Write the plan if no shard's `version` moved since `state` was read; False otherwise.
        Setting `admitted` folds the shards back into shard 0 (the account is quiet)."""
        ...


def plan_heal(state: AccountState, eventual: int, now: datetime, quiet: timedelta) -> HealPlan | None:
    """What to write, or None when the counters already hold the truth."""
    # Leases left here are in flight (dead ones were settled first): their slots are not free.
    quiet_enough = now - parse_timestamp(state.last_write_at) >= quiet and not state.leases
    # A quiet account also folds its admission shards back into its account item.
    admitted = eventual if quiet_enough and (state.admitted != eventual or state.spread) else None
    if state.best_effort_net == eventual and admitted is None:
        return None
    return HealPlan(best_effort=eventual, admitted=admitted)


def resolve_dead_leases(
    store: DeadLeaseStore, quota: Quota, state: AccountState, now: datetime, quiet: timedelta, retention: timedelta
) -> int:
    """Settle every lease older than `quiet`; returns how many there were (settled now, or by an
    earlier attempt of the same write whose answer was lost)."""
    dead = taken_before(state.leases, iso_timestamp(now - quiet))
    settled = settle_dead_leases(store, quota, dead, expired_before=iso_timestamp(now - retention))
    if settled:
        logger.info("settled %d dead leases of %d on %s", settled, len(dead), quota)
    return len(dead)


def heal_account(
    store: HealingStore,
    quota: Quota,
    now: datetime,
    quiet: timedelta,
    retention: timedelta = DEFAULT_TOMBSTONE_RETENTION,
    first_read: tuple[AccountState, int] | None = None,
) -> HealResult:
    """Heal one account; `first_read` is its state if the caller has just read it (the sweeper)."""
    read = first_read if first_read is not None else store.read_account_state(quota)
    if read is None:
        return HealResult(HealOutcome.NOT_FOUND)
    before = read[0]  # what the heal found, reported as it was before any lease was settled
    settled = resolve_dead_leases(store, quota, before, now, quiet, retention)
    if settled:
        read = store.read_account_state(quota)
        if read is None:
            return HealResult(HealOutcome.NOT_FOUND)
    state, eventual = read
    if state.shards and state.shards[0].period is not None:
        # A periodic quota's own account item admits and counts nothing (its periods do, each
        # healed as a quota): no read of its records, which are its periods'.
        return HealResult(HealOutcome.EXACT, before, eventual)
    # A delete (or shrink) in flight has decremented best-effort and may still land or give it back.
    deleting = any(lease.kind.takes_best_effort for lease in state.leases)
    if deleting or store.has_pending_work(quota):
        return HealResult(HealOutcome.PENDING_WORK, before, eventual)
    # Read again: the eventual counter read first may still have counted a soft-deleted resource
    # that the consumer removed before the pending check. Unchanged reads on both sides of the
    # check mean nothing moved while we looked.
    if store.read_account_state(quota) != read:
        return HealResult(HealOutcome.BUSY, before, eventual)
    plan = plan_heal(state, eventual, now, quiet)
    if plan is None:
        return HealResult(HealOutcome.HEALED if settled else HealOutcome.EXACT, before, eventual)
    if not store.apply_heal(quota, state, plan, iso_timestamp(now)):
        return HealResult(HealOutcome.BUSY, before, eventual, plan)
    return HealResult(HealOutcome.HEALED, before, eventual, plan)


# How far an API write's `last_write_at` stamp may be ahead of the write (last_write_stamp).
STAMP_ROUNDING = timedelta(minutes=1)


def last_write_stamp(now: str) -> str:
    """The `last_write_at` an API write stamps: its time rounded up to the minute.

    The activity index is sorted by it, and DynamoDB writes an index only when an item's index key
    or projection changes: so a busy account moves its index entry once a minute, not twice per
    write (docs/healing.md, "What it costs"). The exact time goes in `last_write_exact`, for the
    quiet check and the sweeper's choice between a heal and settling dead leases."""
    moment = parse_timestamp(now)
    floor = moment.replace(second=0, microsecond=0)
    return iso_timestamp(floor if floor == moment else floor + STAMP_ROUNDING)

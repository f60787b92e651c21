"""Healing an account's API-path counters back to the truth once it is quiet (SPEC invariant 6).

Faults leave `best_effort` too low (a lost increment, a doubled decrement) and `admitted` too
high (a slot held by a create or delete that died). When an account has no counting work left,
the eventual counter is exact: it equals the live resources. A heal sets the counters to it. Each
counter gets the guard its invariant needs (docs/healing.md has the argument):

* `best_effort := eventual`, conditional on the account's `version`: no API write came between our
  reads and our write. No resource of the account is pending (uncounted, soft-deleted, or marked
  by a delete in flight). The heal bumps `heal_epoch`, so a create that reserved before the heal
  skips its increment. Its resource is either already in `eventual` or not yet live.
* `admitted := eventual` as well, only if the account has had no API write for `quiet` (longer
  than any API invocation can run). A create that reserved before the heal may put its resource
  after it, and lowering `admitted` under such a create could let the limit be exceeded.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol


class HealOutcome(enum.Enum):
    HEALED = "healed"
    EXACT = "exact"  # nothing to change
    PENDING_WORK = "pending_work"  # counting not finished, or a delete in flight: try later
    BUSY = "busy"  # an API write came between our reads and our write: try later
    NOT_FOUND = "not_found"


@dataclass(frozen=True)
class AccountState:
    """The account item as a heal reads it (strongly consistent)."""

    version: int
    best_effort_net: int
    admitted: int
    heal_epoch: int
    last_write_at: str  # ISO 8601, UTC


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


class HealingStore(Protocol):
    def read_account_state(self, account_id: str) -> tuple[AccountState, int] | None:
        """The account item and the eventual counter; None if there is no such account."""
        ...

    def has_pending_work(self, account_id: str, deletes_marked_after: str) -> bool:
        """Any resource uncounted, soft-deleted, or marked by a delete after that time."""
        ...

    def apply_heal(self, account_id: str, expected_version: int, plan: HealPlan, now: str) -> bool:
        """Write the plan if `version` is still `expected_version`; False otherwise."""
        ...


def plan_heal(state: AccountState, eventual: int, now: datetime, quiet: timedelta) -> HealPlan | None:
    """What to write, or None when the counters already hold the truth."""
    quiet_enough = now - _parse(state.last_write_at) >= quiet
    admitted = eventual if quiet_enough and state.admitted != eventual else None
    if state.best_effort_net == eventual and admitted is None:
        return None
    return HealPlan(best_effort=eventual, admitted=admitted)


def heal_account(store: HealingStore, account_id: str, now: datetime, quiet: timedelta) -> HealResult:
    read = store.read_account_state(account_id)
    if read is None:
        return HealResult(HealOutcome.NOT_FOUND)
    state, eventual = read
    # Delete markers older than `quiet` belong to deletes that died: they change nothing any more.
    if store.has_pending_work(account_id, deletes_marked_after=iso_timestamp(now - quiet)):
        return HealResult(HealOutcome.PENDING_WORK, state, eventual)
    # Read again: the eventual counter read first may still have counted a soft-deleted resource
    # that the consumer removed before the pending check. Unchanged reads on both sides of the
    # check mean nothing moved while we looked.
    if store.read_account_state(account_id) != read:
        return HealResult(HealOutcome.BUSY, state, eventual)
    plan = plan_heal(state, eventual, now, quiet)
    if plan is None:
        return HealResult(HealOutcome.EXACT, state, eventual)
    if not store.apply_heal(account_id, state.version, plan, iso_timestamp(now)):
        return HealResult(HealOutcome.BUSY, state, eventual, plan)
    return HealResult(HealOutcome.HEALED, state, eventual, plan)


def _parse(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))


def iso_timestamp(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")

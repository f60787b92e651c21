"""An account's end (docs/plans.md, "Lifecycle"): `DELETE /accounts/{id}`. Pure orchestration over
the `OffboardingStore` port.

The request, synchronously:

1. records the deletion: one transaction puts the account's entry in the deletions' partition (its
   tombstone, which names every quota of the account and where its items are) and the Account
   Deleted event's outbox item, both on condition that they are new, so the event is written once
   however often the DELETE is repeated;
2. fences the account: deletes every admission shard item of every quota (its account items, a busy
   quota's other shards, a periodic quota's current and next periods'). From then on every create
   is refused 404 AccountNotFound (its reservation finds no shard), and so is a replay of an
   Idempotency-Key (the replay checks that its quota still has its account item); a PUT that would
   create the account again is refused 409 AccountBeingDeleted while the tombstone stands.

The sweeper then erases the rest, once the fence is older than the heal's quiet time (six times the
API function's timeout): by then no create that reserved its slot before the fence can still land
its resource. It deletes every item of every partition of the account (resources, tombstones,
counters, outbox items, keyed PUTs' records, refusal windows, periods' items), the busy quotas'
counter shards, the expiring grants' entries, and last the tombstone. The account is gone within
the fence's settling time plus the sweeper's period (docs/plans.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from functions.core.errors import AccountNotFound
from functions.core.model import Quota
from functions.core.periods import Period


@dataclass(frozen=True)
class QuotaPlace:
    """Where one quota of the account has items: its type, its shard span (its admission shards
    1 .. span-1, and its counter shards when above 1), its period if periodic, and the end of its
    expiring grant, if any (its entry in the grants' index)."""

    resource_type: str
    span: int = 1
    period: Period | None = None
    grant_ends: int | None = None


@dataclass(frozen=True)
class AccountDeletion:
    """An account being deleted: when it was asked (epoch ms), by whom, its quotas, and when its
    shards were fenced (epoch ms; 0: not yet)."""

    account_id: str
    requested_ms: int
    deleted_by: str
    quotas: tuple[QuotaPlace, ...]
    fenced_ms: int = 0


class OffboardingStore(Protocol):
    def read_places(self, account_id: str) -> tuple[QuotaPlace, ...] | None:
        """Every quota of the account (its default type first); None if it has no account item."""
        ...

    def read_deletion(self, account_id: str) -> AccountDeletion | None: ...

    def begin_deletion(self, deletion: AccountDeletion) -> bool:
        """Put the deletion's entry and its Account Deleted event's outbox item, on condition that
        neither exists; False if the account is being deleted already (nothing written)."""
        ...

    def fence(self, deletion: AccountDeletion, now: datetime) -> AccountDeletion:
        """Delete every admission shard item of the account's quotas (a periodic quota's periods
        around `now`), and record when on the entry: the deletion as fenced."""
        ...

    def pending_deletions(self) -> list[AccountDeletion]: ...

    def erase(self, deletion: AccountDeletion, now: datetime) -> None:
        """Delete every item of the account, then its entry."""
        ...


def delete_account(
    store: OffboardingStore, account_id: str, received_ms: int, deleted_by: str, now: datetime
) -> AccountDeletion:
    """Record and fence the account's deletion (see the module's doc); AccountNotFound if there is
    no such account. A repeat of the DELETE while it is being deleted answers the same deletion."""
    deletion = store.read_deletion(account_id)
    if deletion is None:
        places = store.read_places(account_id)
        if places is None:
            raise AccountNotFound(Quota(account_id))
        deletion = AccountDeletion(account_id, received_ms, deleted_by, places)
        if not store.begin_deletion(deletion):
            deletion = store.read_deletion(account_id) or deletion
    if not deletion.fenced_ms:
        deletion = store.fence(deletion, now)
    return deletion


def finish_deletions(store: OffboardingStore, now: datetime, settle: timedelta) -> int:
    """The sweeper's part: fence any deletion whose request died before it did, and erase each one
    fenced longer than `settle` ago. Returns how many accounts it erased."""
    erased = 0
    now_ms = int(now.timestamp() * 1000)
    for deletion in store.pending_deletions():
        if not deletion.fenced_ms:
            deletion = store.fence(deletion, now)
        if now_ms - deletion.fenced_ms < settle.total_seconds() * 1000:
            continue
        store.erase(deletion, now)
        erased += 1
    return erased

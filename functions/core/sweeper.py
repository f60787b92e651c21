"""The scheduled sweeper: a safety net under the stream, both queues and the API's failures.

1. It applies every resource that has been pending longer than a threshold, reading the sparse
   pending index and using the consumer's own rules. So the counters converge even if the
   stream and both dead-letter queues lost work.
2. It heals the accounts that went quiet since their last heal or check (functions/core/healing.py).
3. It settles the dead leases of busy accounts, which never go quiet: a create that died between
   reserving its slot and putting its resource gets its slot back within `quiet` plus one sweep
   period, however busy the account (docs/healing.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from functions.core.counting import BatchReport, CountingStore, process_pending_items
from functions.core.healing import (
    DEFAULT_TOMBSTONE_RETENTION,
    STAMP_ROUNDING,
    AccountState,
    HealingStore,
    HealOutcome,
    heal_account,
    iso_timestamp,
    resolve_dead_leases,
)
from functions.core.redrive import PendingSource


class ActivitySource(Protocol):
    def accounts_written_between(self, written_after: str, written_before: str) -> Iterable[str]:
        """Accounts whose last API write (rounded up to the minute) is in that window, and not
        healed or checked since."""
        ...

    def record_checked(self, account_id: str, state: AccountState, now: str) -> bool: ...


@dataclass(frozen=True)
class SweepSettings:
    pending_older_than: timedelta = timedelta(minutes=5)
    quiet: timedelta = timedelta(seconds=60)  # much longer than the API function's 10 s timeout
    lookback: timedelta = timedelta(hours=6)  # how far back to look for accounts never healed


@dataclass
class SweepReport:
    pending: BatchReport = field(default_factory=BatchReport)
    heals: Counter[HealOutcome] = field(default_factory=Counter)
    busy_accounts: int = 0  # written within `quiet`: only their dead leases were settled
    dead_leases: int = 0  # of busy accounts, settled


def sweep(
    counting: CountingStore,
    pending: PendingSource,
    healing: HealingStore,
    activity: ActivitySource,
    now: datetime,
    settings: SweepSettings,
    tombstone_retention: timedelta = DEFAULT_TOMBSTONE_RETENTION,
) -> SweepReport:
    report = SweepReport()
    report.pending = process_pending_items(
        counting, pending.pending_items(iso_timestamp(now - settings.pending_older_than))
    )
    # Stamps are rounded up to the minute: an account written before now - quiet may carry a
    # stamp up to STAMP_ROUNDING later. heal_account checks the exact time.
    visited: set[str] = set()
    for account_id in activity.accounts_written_between(
        iso_timestamp(now - settings.lookback), iso_timestamp(now - settings.quiet + STAMP_ROUNDING)
    ):
        visited.add(account_id)
        result = heal_account(healing, account_id, now, settings.quiet, tombstone_retention)
        if result.outcome is HealOutcome.EXACT and result.before is not None:
            activity.record_checked(account_id, result.before, iso_timestamp(now))
        report.heals[result.outcome] += 1
    # Busy accounts: settling a dead lease is one conditional write on its shard, as its own
    # request's settle would have been, so it needs no quiet period; the rest of a heal does.
    for account_id in activity.accounts_written_between(
        iso_timestamp(now - settings.quiet), iso_timestamp(now + STAMP_ROUNDING)
    ):
        if account_id in visited:
            continue
        visited.add(account_id)
        read = healing.read_account_state(account_id)
        if read is not None:
            report.busy_accounts += 1
            report.dead_leases += resolve_dead_leases(
                healing, account_id, read[0], now, settings.quiet, tombstone_retention
            )
    return report

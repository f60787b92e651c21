"""The scheduled sweeper: a safety net under the stream, both queues and the API's failures.

1. It applies every resource that has been pending longer than a threshold, reading the sparse
   pending index and using the consumer's own rules. So the counters converge even if the
   stream and both dead-letter queues lost work.
2. It heals the accounts that went quiet since their last heal or check (functions/core/healing.py).
3. It settles the dead leases of busy accounts, which never go quiet: a create that died between
   reserving its slot and putting its resource gets its slot back within `quiet` plus one sweep
   period, however busy the account (docs/healing.md).
4. It audits one slice of the accounts (functions/core/audit.py; a slice is an activity bucket's
   accounts), the next slice at the next sweep: every account about twice a day, and drift from
   its items shows as a metric and an alarm.
5. It ends the expiring grants whose end has passed and that still stand (functions/core/grants.py),
   so a grant returns to its plan's limit within one sweep period of its end.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Protocol

from functions.core.audit import AuditFinding, Recount, audit
from functions.core.counting import BatchReport, CountingStore, process_pending
from functions.core.healing import (
    AccountState,
    HealingStore,
    HealOutcome,
    heal_account,
    resolve_dead_leases,
)
from functions.core.leases import DEFAULT_TOMBSTONE_RETENTION, iso_timestamp, parse_timestamp
from functions.core.model import Quota
from functions.core.redrive import PendingSource


class AuditSource(Protocol):
    def quotas_in_slice(self, number: int) -> Iterable[Quota]:
        """The quotas of audit slice `number`: every quota is in one slice, and the slices repeat
        (slice n + the number of slices is slice n again)."""
        ...

    def recount(self, quota: Quota) -> Recount | None: ...


# Each sweep audits the accounts of one slice, the next slice at the next sweep.
AUDIT_SLICE = timedelta(minutes=5)


class ActivitySource(Protocol):
    def quotas_written_since(self, written_after: str) -> Iterable[Quota]:
        """Quotas whose last API write (rounded up to the minute) is at or after that time, and
        not healed or checked since."""
        ...

    def record_checked(self, quota: Quota, state: AccountState, now: str) -> bool: ...


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
    audits: Counter[str] = field(default_factory=Counter)  # verdicts of this sweep's audit slice
    drifted: list[AuditFinding] = field(default_factory=list)
    grants_ended: int = 0  # expiring grants whose end had passed, ended (docs/plans.md)


def sweep(
    *,
    counting: CountingStore,
    pending: PendingSource,
    healing: HealingStore,
    activity: ActivitySource,
    now: datetime,
    settings: SweepSettings,
    tombstone_retention: timedelta = DEFAULT_TOMBSTONE_RETENTION,
    audits: AuditSource | None = None,
    end_grants: Callable[[datetime, timedelta], int] | None = None,
) -> SweepReport:
    """One sweep at `now`: `counting` applies what `pending` finds, `healing` heals the accounts
    `activity` finds, and, given `audits`, one slice of the accounts is audited; given
    `end_grants`, the expiring grants that ended within `lookback` and still stand are ended
    (functions/core/grants.py), first: a grant returns to its plan's limit within one sweep."""
    report = SweepReport()
    if end_grants is not None:
        report.grants_ended = end_grants(now, settings.lookback)
    cutoff = iso_timestamp(now - settings.pending_older_than)
    report.pending = process_pending(counting, pending.pending_records(cutoff))
    # One pass over the accounts written since `lookback`, with no upper bound: a write that lands
    # while the sweep runs may stamp an account up to two minutes past `now` (stamps are rounded up
    # to the minute), and that account is busy, not gone. Each account's exact last write, read
    # with its leases, tells a quiet account (healed) from a busy one (only its dead leases settled:
    # each is one conditional write on its shard, as its own request's settle would have been, so
    # it needs no quiet period; the rest of a heal does).
    for quota in activity.quotas_written_since(iso_timestamp(now - settings.lookback)):
        read = healing.read_account_state(quota)
        if read is None:
            report.heals[HealOutcome.NOT_FOUND] += 1
            continue
        if now - parse_timestamp(read[0].last_write_at) < settings.quiet:
            report.busy_accounts += 1
            report.dead_leases += resolve_dead_leases(healing, quota, read[0], now, settings.quiet, tombstone_retention)
            continue
        result = heal_account(healing, quota, now, settings.quiet, tombstone_retention, read)
        if result.outcome is HealOutcome.EXACT and result.before is not None:
            activity.record_checked(quota, result.before, iso_timestamp(now))
        report.heals[result.outcome] += 1
    if audits is not None:
        audit_slice(audits, now, report)
    return report


def audit_slice(audits: AuditSource, now: datetime, report: SweepReport) -> None:
    """Audit the accounts of this sweep's slice (read-only: `ops audit --repair` repairs)."""
    for quota in sorted(audits.quotas_in_slice(int(now.timestamp() // AUDIT_SLICE.total_seconds()))):
        finding = audit(partial(audits.recount, quota), quota)
        if finding is None:
            continue
        report.audits[finding.verdict] += 1
        if finding.verdict == "drift":
            report.drifted.append(finding)

"""The audit: an account's counters against a recount of its own items (`ops audit`, and a slice
of the accounts at every sweep). Pure: the reading is functions/adapters/audit_reads.py.

`eventual` must equal the counted units (the amounts of the counted resource items); `best_effort`
may lag the live units by the writes in flight, never exceed them; `admitted` may exceed them by the
writes in flight, never lag.
An account is judged only on two identical consecutive recounts: no write landed between them.

A periodic quota (docs/periods.md) is judged period by period, each period a quota of its own
against its own records (`RECORDS`), as long as they are kept: a period's records expire once it
and the Idempotency-Key window are over, and a period older than that is judged on its counters
alone (`COUNTERS`: they must agree with each other, as its history's `settled` says). The
periodic quota's own account item holds its limit and period and admits nothing (`PERIODS`): its
counters must stay at 0, whatever records its partition holds (they are its periods').
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from functions.core.model import Quota
from functions.core.periods import Period, PeriodWindow, format_instant

# What a recount judges the counters against (Recount.basis).
RECORDS = "records"  # the quota's resource items (a holding, or a period whose records are kept)
PERIODS = "periods"  # nothing: a periodic quota's own item, which admits nothing (its periods do)
COUNTERS = "counters"  # each other: a period past its records' retention


@dataclass(frozen=True)
class Recount:
    """An account's counters as stored, beside a recount of its resource items: one read of what
    the audit judges (and what `ops account` shows)."""

    quota: Quota
    limit: int
    best_effort_net: int  # signed, as stored
    admitted: int  # slots held by the admission check
    eventual: int
    version: int  # the account item's writes: every admission, heal and limit change bumps it
    limit_version: int  # the limit's version: the API's ETag (`"3"`), what If-Match names
    heal_epoch: int
    last_write_at: str
    healed_at: str
    resource_items: int  # every resource item, whatever its state, tombstones aside
    live: int  # units of the resources not soft-deleted (the sum of their amounts)
    # Units the counter holds for the resources with counter_processed=true: their amounts, or, while
    # a resize is uncounted, their `counted_units` (invariant 1: equals `eventual`).
    counted: int
    # Resources with counter_processed=false, or a resize not counted yet: the consumer has not
    # applied their create or resize yet.
    uncounted: int
    soft_deleted: int  # resources with deleted=true: the consumer has not applied their delete yet
    # Units of the deletion and shrink leases: a delete or shrink between its decrement and its
    # release, or one that died.
    deletes_in_flight: int
    # Units of the reservation and growth leases: a create or growth between its reservation and
    # its count, or one that died.
    creates_in_flight: int
    tombstones: int  # counted deletes, kept for the retention so retries recognise themselves
    basis: str = RECORDS  # what the counters are judged against (RECORDS, PERIODS, COUNTERS)
    # A periodic quota's period (on its own recount, and on its current period's in `ops account`),
    # and the window of the period recounted, when known.
    period: Period | None = None
    window: PeriodWindow | None = None

    @property
    def best_effort(self) -> int:
        return max(0, self.best_effort_net)

    @property
    def pending(self) -> int:
        return self.uncounted + self.soft_deleted + self.deletes_in_flight

    @property
    def best_effort_drift(self) -> int:
        """best_effort (signed) - live: negative when increments were lost, never positive."""
        return self.best_effort_net - self.live

    @property
    def admitted_drift(self) -> int:
        """admitted - live: positive when slots are held by creates or deletes that died."""
        return self.admitted - self.live

    def to_json(self) -> dict[str, Any]:
        return {
            **quota_fields(self.quota),
            "limit": self.limit,
            "best_effort": {"net": self.best_effort_net, "clamped": self.best_effort},
            "admitted": self.admitted,
            "eventual": self.eventual,
            "live": self.live,
            "counted": self.counted,
            "resource_items": self.resource_items,
            "pending": {
                "uncounted": self.uncounted,
                "soft_deleted": self.soft_deleted,
                "deletes_in_flight": self.deletes_in_flight,
            },
            "creates_in_flight": self.creates_in_flight,
            "tombstones": self.tombstones,
            "drift": {"best_effort": self.best_effort_drift, "admitted": self.admitted_drift},
            "version": self.version,
            "limit_version": self.limit_version,
            "heal_epoch": self.heal_epoch,
            "last_write_at": self.last_write_at,
            "healed_at": self.healed_at,
            **self._period_fields(),
        }

    def _period_fields(self) -> dict[str, Any]:
        """A periodic quota's period and what it was judged against; nothing for a holding."""
        fields: dict[str, Any] = {} if self.basis == RECORDS else {"basis": self.basis}
        if self.period is not None:
            fields["period"] = self.period.to_json()
        if self.window is not None:
            fields["period_start"] = format_instant(self.window.start)
            fields["period_end"] = format_instant(self.window.end)
        return fields


def quota_fields(quota: Quota) -> dict[str, str]:
    """How findings name a quota: its account, its type unless it is the default (the routes
    without a type, whose findings name the account alone), and one period of a periodic quota its
    period's id."""
    named = {"account_id": quota.account_id} | ({} if quota.is_default else {"resource_type": quota.resource_type})
    return named | ({"period_id": quota.period} if quota.period else {})


@dataclass(frozen=True)
class AuditFinding:
    quota: Quota
    # "exact", "drift", or "inconclusive" (written between every pair of reads: try again later)
    verdict: str
    problems: tuple[str, ...] = ()
    recount: Recount | None = None

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            **quota_fields(self.quota),
            "verdict": self.verdict,
            "problems": list(self.problems),
        }
        if self.recount is not None:
            found["account"] = self.recount.to_json()
        return found


def audit_problems(recount: Recount) -> list[str]:
    """What an unchanged recount of an account says is wrong, allowing for the writes in flight.

    `eventual` must equal the counted units (each counting transaction flips a flag and moves the
    counter by the amount together). `best_effort` may lag the live units by the writes in flight (a
    create counts after its put, a delete decrements before its soft delete), never exceed them;
    `admitted` may exceed them by the writes in flight, never lag. A periodic quota's own item and
    a period whose records have expired are judged as the module says."""
    if recount.basis == PERIODS:
        return [
            f"{name} {value} on a periodic quota's own item, which admits and counts nothing (its periods do)"
            for name, value in (
                ("admitted", recount.admitted),
                ("best effort", recount.best_effort_net),
                ("eventual", recount.eventual),
            )
            if value
        ]
    in_flight = recount.creates_in_flight + recount.deletes_in_flight
    if recount.basis == COUNTERS:
        if in_flight or not recount.admitted == recount.best_effort_net == recount.eventual:
            return [
                f"admitted {recount.admitted}, best effort {recount.best_effort_net} and eventual "
                f"{recount.eventual} disagree ({in_flight} unit(s) held by leases) in a period whose records "
                "have expired: its total is not final"
            ]
        return []
    problems = []
    if recount.eventual != recount.counted:
        problems.append(f"eventual {recount.eventual} but {recount.counted} counted units")
    if recount.best_effort_net > recount.live:
        problems.append(f"best effort {recount.best_effort_net} above {recount.live} live units (overcount)")
    elif recount.best_effort_net < recount.live - in_flight:
        lost = recount.live - in_flight - recount.best_effort_net
        problems.append(f"best effort {lost} below the live units beyond the writes in flight (a heal fixes it)")
    if recount.admitted < recount.live:
        problems.append(f"admitted {recount.admitted} below {recount.live} live units (the limit could be passed)")
    elif recount.admitted > recount.live + in_flight:
        held = recount.admitted - recount.live - in_flight
        problems.append(f"{held} slot(s) held beyond the writes in flight (a heal frees them)")
    return problems


def audit(read_recount: Callable[[], Recount | None], quota: Quota, attempts: int = 3) -> AuditFinding | None:
    """Judge one quota on two identical consecutive recounts (`read_recount` reads one); None if
    the account does not exist. One written between every pair of reads is inconclusive."""
    before = read_recount()
    if before is None:
        return None
    for _ in range(attempts):
        after = read_recount()
        if after is None:
            return None
        if after == before:
            problems = tuple(audit_problems(after))
            return AuditFinding(quota, "drift" if problems else "exact", problems, after)
        before = after
    return AuditFinding(quota, "inconclusive", (), before)

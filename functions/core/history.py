"""A periodic quota's history: the exact totals of its current period and of the ones before it
(`GET .../history`, docs/periods.md#history). Pure orchestration over the `HistoryStore` port.

Each period is a quota of its own (functions/core/model.py, `Quota.period`): its limit and
admission counters on its shard 0 (and its other shards when its admission spread), its exact
count on its counter shards. So a period's total is a read of its own items, never a query of its
records, and every period of the history is read in the same BatchGetItem.

A period's total is **settled** (final: a bill can be cut from it) once

* it ended at least `SETTLING_DELAY` ago: every create or refund of a period begins before the
  period's end (its flow's time is its admission's, functions/core/accounts.py) and lands its
  writes within the API function's timeout (10 s, infra/function_settings.py), so after a minute
  no write of a request can reach the period any more; and
* nothing of it is pending: no lease held on its shards (no create, resize or refund between its
  first write and its last, nor one that died and waits for a heal), and the units it admitted,
  its best-effort count and its exact count are equal (every record created in it, or refunded,
  is counted: the stream consumer has caught up with it, a late record included).

A period never opened (nobody created in it) counted nothing: 0 at the quota's current limit,
settled once it is over by the delay.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from functions.core.admission import ShardState
from functions.core.errors import AccountNotFound, QuotaNotPeriodic
from functions.core.model import Quota
from functions.core.periods import Period, PeriodWindow

# The periods a history may ask for: a period's items are kept 397 days after its end
# (functions/core/accounts.py, HISTORY_RETENTION), 13 months: a year of months and the current one.
MAX_HISTORY_PERIODS = 13
# What a history answers without `periods`: the current period and the one before it, the last
# one a bill is cut from.
DEFAULT_HISTORY_PERIODS = 2
# How long after its end a period may still be written by a request that began in it: much longer
# than the API function's 10 s timeout, as the sweeper's quiet period is (functions/core/sweeper.py).
SETTLING_DELAY = timedelta(seconds=60)


@dataclass(frozen=True)
class PeriodCounts:
    """One opened period's items as read: its limit (shard 0's), the units its shards admitted,
    its best-effort count (signed, as stored), its exact count, and the leases its shards hold."""

    limit: int
    admitted: int
    best_effort_net: int
    eventual: int
    leases_held: int

    @property
    def pending(self) -> bool:
        """Whether anything of the period is still in flight or uncounted."""
        return bool(self.leases_held) or not self.admitted == self.best_effort_net == self.eventual


class HistoryStore(Protocol):
    def read_shards(self, quota: Quota, shards: Sequence[int], snapshot: bool = False) -> list[ShardState]:
        """The shards that exist among `shards`, strongly consistent."""
        ...

    def read_period_counts(self, periods: Sequence[Quota]) -> dict[Quota, PeriodCounts]:
        """Each opened period's counts, in one BatchGetItem (per 100 keys: its shard 0 and counter
        shard 0), and one more for the periods whose admission spread over more shards; a period
        never opened is left out."""
        ...


@dataclass(frozen=True)
class PeriodTotal:
    """One period of a history: its window, its limit, its counts and whether they are final."""

    window: PeriodWindow
    limit: int
    best_effort_net: int
    eventual: int
    settled: bool
    opened: bool = True  # False: nobody created in it, and it has no item

    @property
    def best_effort(self) -> int:
        return max(0, self.best_effort_net)

    @property
    def used(self) -> int:
        """As a quota's GET says it (Usage.used): what the period took, counted or not yet."""
        return max(self.best_effort, self.eventual)


@dataclass(frozen=True)
class History:
    quota: Quota
    period: Period
    totals: tuple[PeriodTotal, ...]  # the current period first, then the ones before it


def period_history(store: HistoryStore, quota: Quota, count: int, now: datetime) -> History:
    """The totals of the quota's period at `now` and of the `count - 1` periods before it, newest
    first: one read of the quota's account item, then one BatchGetItem of every period's shard 0
    and counter (and one more for those whose admission spread). AccountNotFound for no such
    quota, QuotaNotPeriodic for a holding quota."""
    if not 1 <= count <= MAX_HISTORY_PERIODS:
        raise ValueError(f"periods must be 1 to {MAX_HISTORY_PERIODS}")
    found = store.read_shards(quota, [0])
    if not found:
        raise AccountNotFound(quota)
    account = found[0]
    if account.period is None:
        raise QuotaNotPeriodic(quota)
    windows = account.period.last(now, count)
    read = store.read_period_counts([quota.in_period(window.id) for window in windows])
    totals = []
    for window in windows:
        over = window.end + SETTLING_DELAY <= now
        counts = read.get(quota.in_period(window.id))
        if counts is None:  # never opened: nothing was created in it
            totals.append(PeriodTotal(window, account.limit, 0, 0, settled=over, opened=False))
        else:
            totals.append(
                PeriodTotal(window, counts.limit, counts.best_effort_net, counts.eventual, over and not counts.pending)
            )
    return History(quota, account.period, tuple(totals))

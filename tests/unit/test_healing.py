"""Healing decisions: when to write, what, and when to wait."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from functions.core.healing import AccountState, HealOutcome, HealPlan, heal_account, plan_heal

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
QUIET = timedelta(seconds=60)


def state(best_effort: int = 3, admitted: int = 5, written_seconds_ago: int = 120, version: int = 7) -> AccountState:
    written = (NOW - timedelta(seconds=written_seconds_ago)).isoformat().replace("+00:00", "Z")
    return AccountState(
        version=version, best_effort_net=best_effort, admitted=admitted, heal_epoch=0, last_write_at=written
    )


def test_a_quiet_account_gets_both_counters_set_to_the_eventual_count() -> None:
    assert plan_heal(state(), eventual=4, now=NOW, quiet=QUIET) == HealPlan(best_effort=4, admitted=4)


def test_a_recently_written_account_gets_only_best_effort_healed() -> None:
    assert plan_heal(state(written_seconds_ago=10), eventual=4, now=NOW, quiet=QUIET) == HealPlan(4, None)


def test_exact_counters_need_no_write() -> None:
    assert plan_heal(state(best_effort=4, admitted=4), eventual=4, now=NOW, quiet=QUIET) is None
    assert plan_heal(state(best_effort=4, admitted=9, written_seconds_ago=1), eventual=4, now=NOW, quiet=QUIET) is None


@dataclass
class Store:
    reads: list[tuple[AccountState, int] | None]
    pending: bool = False
    accept: bool = True
    calls: list[str] = field(default_factory=list)
    written: list[HealPlan] = field(default_factory=list)

    def read_account_state(self, account_id: str) -> tuple[AccountState, int] | None:
        self.calls.append("read")
        return self.reads.pop(0) if len(self.reads) > 1 else self.reads[0]

    def has_pending_work(self, account_id: str, deletes_marked_after: str) -> bool:
        self.calls.append(f"pending after {deletes_marked_after}")
        return self.pending

    def apply_heal(self, account_id: str, expected_version: int, plan: HealPlan, now: str) -> bool:
        self.calls.append(f"write if version {expected_version}")
        self.written.append(plan)
        return self.accept


def test_heal_reads_checks_reads_again_then_writes_conditionally() -> None:
    store = Store([(state(), 4)])
    assert heal_account(store, "a", NOW, QUIET).outcome is HealOutcome.HEALED
    assert store.calls == ["read", "pending after 2026-11-22T11:59:00.000Z", "read", "write if version 7"]
    assert store.written == [HealPlan(4, 4)]


@pytest.mark.parametrize(
    ("store", "outcome", "attempted"),
    [
        (Store([None]), HealOutcome.NOT_FOUND, []),
        (Store([(state(), 4)], pending=True), HealOutcome.PENDING_WORK, []),
        (Store([(state(), 5), (state(), 4)]), HealOutcome.BUSY, []),  # the count moved during the check
        (Store([(state(version=7), 4), (state(version=8), 4)]), HealOutcome.BUSY, []),  # an API write
        (Store([(state(), 4)], accept=False), HealOutcome.BUSY, [HealPlan(4, 4)]),  # refused: a write came first
        (Store([(state(best_effort=4, admitted=4), 4)]), HealOutcome.EXACT, []),
    ],
)
def test_heal_waits_or_stops_when_it_must(store: Store, outcome: HealOutcome, attempted: list[HealPlan]) -> None:
    assert heal_account(store, "a", NOW, QUIET).outcome is outcome
    assert store.written == attempted

"""Healing decisions: when to write, what, and when to wait."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import pytest

from functions.core.healing import (
    AccountState,
    HealOutcome,
    HealPlan,
    heal_account,
    last_write_stamp,
    plan_heal,
    resolve_dead_leases,
)
from functions.core.leases import (
    DROP,
    FINISH_DELETION,
    RELEASE_RESERVATION,
    UNDO_DELETION,
    Lease,
    LeaseKind,
    Settlement,
    in_order,
    resolution,
)
from functions.core.model import Quota, Resource

A = Quota("a")

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
QUIET = timedelta(seconds=60)


def ago(seconds: int) -> str:
    return (NOW - timedelta(seconds=seconds)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def state(
    best_effort: int = 3,
    admitted: int = 5,
    written_seconds_ago: int = 120,
    version: int = 7,
    leases: tuple[Lease, ...] = (),
) -> AccountState:
    return AccountState(
        version=version,
        best_effort_net=best_effort,
        admitted=admitted,
        heal_epoch=0,
        last_write_at=ago(written_seconds_ago),
        leases=leases,
    )


def lease(kind: LeaseKind, seconds_ago: int, token: str = "t1") -> Lease:
    return Lease(kind, token, "r1", ago(seconds_ago))


def resource(request_token: str = "t0", deleted: bool = False, delete_token: str = "") -> Resource:
    return Resource(A, "r1", "n", {}, ago(500), "f", request_token, deleted, delete_token=delete_token)


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

    resource: Resource | None = None
    settled: list[tuple[Lease, Settlement]] = field(default_factory=list)

    def has_pending_work(self, account_id: str) -> bool:
        self.calls.append("pending")
        return self.pending

    def get_resources(self, account_id: str, resource_ids: Iterable[str]) -> dict[str, Resource]:
        self.calls.append(f"get {' '.join(sorted(resource_ids))}")
        return {} if self.resource is None else {self.resource.resource_id: self.resource}

    def settle_together(self, account_id: str, shard: int, settlements: Mapping[Lease, Settlement]) -> int:
        self.calls.append(f"settle shard {shard}: {' '.join(lease.token for lease in settlements)}")
        self.settled.extend(settlements.items())
        return len(settlements)

    def apply_heal(self, account_id: str, state: AccountState, plan: HealPlan, now: str) -> bool:
        self.calls.append(f"write if version {state.version}")
        self.written.append(plan)
        return self.accept


def test_heal_reads_checks_reads_again_then_writes_conditionally() -> None:
    store = Store([(state(), 4)])
    assert heal_account(store, A, NOW, QUIET).outcome is HealOutcome.HEALED
    assert store.calls == ["read", "pending", "read", "write if version 7"]
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
    assert heal_account(store, A, NOW, QUIET).outcome is outcome
    assert store.written == attempted


RESERVATION, DELETION = LeaseKind.RESERVATION, LeaseKind.DELETION


@pytest.mark.parametrize(
    ("dead", "found", "expired", "settlement"),
    [
        # A create: did its put land? The item (or its tombstone) carries its request token.
        (lease(RESERVATION, 90), resource(request_token="t1"), False, DROP),
        (lease(RESERVATION, 90), resource(request_token="t1", deleted=True), False, DROP),
        (lease(RESERVATION, 90), None, False, RELEASE_RESERVATION),
        (lease(RESERVATION, 90), resource(request_token="twin"), False, RELEASE_RESERVATION),
        (lease(RESERVATION, 90), None, True, DROP),  # past the retention a missing item proves nothing
        # A delete: did its soft delete land? The item (or its tombstone) carries its delete token.
        (lease(DELETION, 90), resource(deleted=True, delete_token="t1"), False, FINISH_DELETION),
        (lease(DELETION, 90), resource(), False, UNDO_DELETION),
        (lease(DELETION, 90), resource(deleted=True, delete_token="other"), False, UNDO_DELETION),
        (lease(DELETION, 90), None, False, DROP),
        (lease(DELETION, 90), resource(), True, DROP),
    ],
)
def test_a_dead_lease_is_settled_by_what_the_resource_item_says(
    dead: Lease, found: Resource | None, expired: bool, settlement: Settlement
) -> None:
    assert resolution(dead, found, expired) == settlement


def test_dead_leases_are_settled_before_the_heal_reads_again() -> None:
    dead = lease(RESERVATION, 90)
    fresh = lease(RESERVATION, 5, token="t2")
    store = Store([(state(leases=(dead, fresh)), 4), (state(leases=(fresh,), version=8), 4)])
    assert heal_account(store, A, NOW, QUIET).outcome is HealOutcome.HEALED
    assert store.calls[:3] == ["read", "get r1", "settle shard 0: t1"]
    assert store.settled == [(dead, RELEASE_RESERVATION)]
    # The fresh reservation's slot is not free, so only best-effort is healed.
    assert store.written == [HealPlan(4, None)]


def test_a_delete_in_flight_makes_the_heal_wait() -> None:
    store = Store([(state(leases=(lease(DELETION, 5),)), 4)])
    assert heal_account(store, A, NOW, QUIET).outcome is HealOutcome.PENDING_WORK
    assert store.settled == []
    assert store.written == []


@pytest.mark.parametrize(
    ("now", "stamp"),
    [
        ("2026-11-23T12:00:40.123Z", "2026-11-23T12:01:00.000Z"),
        ("2026-11-23T12:00:00.001Z", "2026-11-23T12:01:00.000Z"),
        ("2026-11-23T12:01:00.000Z", "2026-11-23T12:01:00.000Z"),  # on the minute: itself
        ("2026-12-31T23:59:30.000Z", "2027-01-01T00:00:00.000Z"),
    ],
)
def test_the_last_write_stamp_is_the_write_rounded_up_to_the_minute(now: str, stamp: str) -> None:
    assert last_write_stamp(now) == stamp


def test_dead_leases_are_read_once_and_settled_with_one_write_per_shard() -> None:
    on_0 = [replace(lease(RESERVATION, 90, token=f"a{i}"), resource_id=f"r{i}") for i in range(3)]
    on_5 = [replace(lease(DELETION, 120, token="b"), resource_id="r9", shard=5)]
    account = state(leases=in_order([*on_0, *on_5]))
    store = Store([(account, 4)])
    assert resolve_dead_leases(store, A, account, NOW, QUIET, timedelta(hours=24)) == 4
    assert store.calls == ["get r0 r1 r2 r9", "settle shard 0: a0 a1 a2", "settle shard 5: b"]

"""Sharded admission (functions/core/admission.py): where a create admits, when room moves, when an
account grows, and that a refusal is proved by a snapshot. The store is a faithful in-memory model
of the shard items; the emulator tier (tests/handler/test_sharded_admission.py) races real writes.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta

import pytest

from functions.core import accounts
from functions.core.accounts import LimitChange, PeriodLimit
from functions.core.admission import (
    MAX_SHARDS,
    Directory,
    Reserved,
    ShardingSettings,
    ShardState,
    reserve,
)
from functions.core.errors import LimitExceeded, StoreUnavailable
from functions.core.leases import Lease, LeaseKind, Settled, Settlement, iso_timestamp, parse_timestamp
from functions.core.model import Page, PageBudget, Quota, Resource, Usage
from local.product import scaled_environment

A1 = Quota("a1")

NOW = "2026-11-23T12:00:00.000Z"
NOW_MS = 1_795_435_200_000  # NOW in epoch ms: when API Gateway received a PUT


@dataclass
class Shards:
    """An account's shard items, with the conditions the DynamoDB adapter writes."""

    items: dict[int, ShardState]
    calls: list[str] = field(default_factory=list)
    # What a strongly consistent read shows of a shard while a snapshot shows the truth: a move
    # between two shards can fall between a BatchGetItem's reads.
    stale: dict[int, ShardState] = field(default_factory=dict)
    resources: dict[str, Resource] = field(default_factory=dict)  # what get_resources finds

    @classmethod
    def of(cls, limit: int, rooms: Sequence[int], active: int | None = None) -> Shards:
        """Shards with these rooms; the slots held are on shard 0."""
        items = {i: ShardState(i, room=room) for i, room in enumerate(rooms)}
        admitted = limit - sum(rooms)
        items[0] = replace(items[0], admitted=admitted, limit=limit, active=active or len(rooms), span=len(rooms))
        return cls(items)

    @property
    def admitted(self) -> int:
        return sum(shard.admitted for shard in self.items.values())

    def held(self) -> int:
        """The limit as the shards hold it: it must never change but by a limit change."""
        return sum(shard.room + shard.admitted for shard in self.items.values())

    def reserve_on(self, account_id: str, lease: Lease) -> Reserved | None:
        self.calls.append(f"reserve {lease.shard}")
        shard = self.items.get(lease.shard)
        if shard is None or shard.room < 1 or shard.retired:
            return None
        self.items[lease.shard] = replace(
            shard, room=shard.room - 1, admitted=shard.admitted + 1, version=shard.version + 1
        )
        first = self.items[0]
        return Reserved(0, shard.version + 1, (first.active, first.span) if lease.shard == 0 else None)

    def read_shards(self, account_id: str, shards: Sequence[int], snapshot: bool = False) -> list[ShardState]:
        self.calls.append(f"{'snapshot' if snapshot else 'read'} {list(shards)}")
        source = self.items if snapshot else {**self.items, **self.stale}
        return [source[i] for i in shards if i in source]

    def grant(self, account_id: str, shard: int, slots: int, donor: int = 0) -> bool:
        self.calls.append(f"grant {slots} to {shard}" + (f" from {donor}" if donor else ""))
        giver = self.items[donor]
        target = self.items.get(shard, ShardState(shard, room=0))
        if giver.room < slots or giver.retired or (target.room >= 1 and not target.retired):
            return False
        self.items[donor] = replace(giver, room=giver.room - slots, version=giver.version + 1)
        self.items[shard] = replace(target, room=target.room + slots, retired=False, version=target.version + 1)
        return True

    def gather(self, account_id: str, shard: ShardState, retire: bool) -> bool:
        self.calls.append(f"gather {shard.shard}")
        now = self.items[shard.shard]
        if now.room != shard.room:
            return False
        first = self.items[0]
        self.items[shard.shard] = replace(now, room=0, retired=now.retired or retire, version=now.version + 1)
        self.items[0] = replace(first, room=first.room + shard.room, version=first.version + 1)
        return True

    def set_active(self, account_id: str, active: int, span: int, to: int) -> bool:
        self.calls.append(f"active {active} -> {to}")
        first = self.items[0]
        if (first.active, first.span) != (active, span):
            return False
        self.items[0] = replace(first, active=to, span=max(span, to), version=first.version + 1)
        return True

    # dead leases: what a full account settles before it refuses -----------------------------

    def hold_dead(self, shard: int, *leases: Lease) -> None:
        """Slots admitted on `shard` by requests that died: their leases stay on it."""
        item = self.items[shard]
        self.items[shard] = replace(
            item, room=item.room - len(leases), admitted=item.admitted + len(leases), leases=item.leases + leases
        )

    def get_resources(self, account_id: str, resource_ids: Iterable[str]) -> dict[str, Resource]:
        self.calls.append(f"get resources {sorted(resource_ids)}")
        return {rid: self.resources[rid] for rid in resource_ids if rid in self.resources}

    def settle_together(self, account_id: str, shard: int, settlements: Mapping[Lease, Settlement]) -> int:
        self.calls.append(f"settle {shard}: {' '.join(lease.token for lease in settlements)}")
        item = self.items[shard]
        held = {lease: s for lease, s in settlements.items() if lease in item.leases}
        freed = -sum(s.admitted for s in held.values())
        self.items[shard] = replace(
            item,
            room=item.room + freed,
            admitted=item.admitted - freed,
            leases=tuple(lease for lease in item.leases if lease not in held),
            version=item.version + 1,
        )
        return len(held)

    def release(self, shard: int) -> None:
        """A delete's release on the shard that admitted the resource (a settle: room + 1)."""
        item = self.items[shard]
        self.items[shard] = replace(item, room=item.room + 1, admitted=item.admitted - 1)

    # the rest of the API's port, for put_account ---------------------------------------------

    def create_account(self, account_id: str, change: LimitChange, now: str) -> bool:
        raise AssertionError("the account exists")

    def set_limit(
        self,
        account_id: str,
        account: ShardState,
        change: LimitChange,
        now: str,
        retired_span: int,
        periods: Sequence[PeriodLimit] = (),
    ) -> bool:
        limit = change.limit
        self.calls.append(f"limit {account.limit} -> {limit}")
        first = self.items[0]
        if first.limit_version != account.limit_version:
            return False
        if retired_span and any(
            not self.items[i].retired or self.items[i].room for i in range(1, retired_span) if i in self.items
        ):
            return False
        self.items[0] = replace(
            first,
            limit=limit,
            room=first.room + limit - account.limit,
            limit_version=first.limit_version + 1,
            limit_set_at=change.received_ms,
            limit_request=change.token,
        )
        return True

    def read_usage(self, account_id: str) -> Usage | None:
        return Usage(account_id, self.items[0].limit, 0, 0)

    def take_deletion(self, account_id: str, lease: Lease) -> None:
        raise AssertionError("not used")

    def settle(self, account_id: str, lease: Lease, settlement: Settlement, now: str | None) -> Settled:
        raise AssertionError("not used")

    def put_resource(self, resource: Resource) -> None:
        raise AssertionError("not used")

    def get_resource(self, account_id: str, resource_id: str) -> Resource | None:
        raise AssertionError("not used")

    def soft_delete(self, account_id: str, resource_id: str, now: str, token: str) -> bool:
        raise AssertionError("not used")

    def list_resources(self, account_id: str, limit: int, cursor: str | None, budget: PageBudget | None = None) -> Page:
        raise AssertionError("not used")


_STUB_IS_AN_API_STORE: accounts.ApiStore = Shards({})


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def lease() -> Lease:
    return Lease(LeaseKind.RESERVATION, "t0", "r1", NOW)


def directory(store: Shards, clock: Clock | None = None, seed: int = 1, **settings: float) -> Directory:
    """A process that already knows the account's layout (it learnt it from shard 0)."""
    known = Directory(ShardingSettings(**settings), clock or Clock(), random.Random(seed))  # type: ignore[arg-type]
    first = store.items[0]
    known.learn(A1, first.active, first.span)
    return known


def shard_picked(known: Directory, shard: int) -> Directory:
    known.pick = lambda account_id: shard  # type: ignore[method-assign]
    return known


# --- where a create admits --------------------------------------------------------------------


def test_a_quiet_account_admits_on_its_account_item_with_one_write() -> None:
    store = Shards.of(limit=5, rooms=[5])
    placed, reserved = reserve(store, Directory(), A1, lease())
    assert (placed.shard, reserved.heal_epoch, store.calls) == (0, 0, ["reserve 0"])
    assert store.admitted == 1
    assert store.held() == 5


def test_a_process_that_does_not_know_the_layout_starts_on_shard_0_and_learns_it() -> None:
    store = Shards.of(limit=40, rooms=[10, 10, 10, 10])
    known = Directory()
    reserve(store, known, A1, lease())
    assert store.calls == ["reserve 0"]
    assert known.layout(A1) == (4, 4)


def test_a_process_knows_each_type_of_an_account_by_its_own_layout() -> None:
    """A busy type's shards are its own: the account's other types still start on shard 0."""
    known = Directory()
    seats, projects = Quota(A1.account_id, "seats"), Quota(A1.account_id, "projects")
    reserve(Shards.of(limit=40, rooms=[10, 10, 10, 10]), known, seats, lease())
    assert known.layout(seats) == (4, 4)
    assert known.layout(A1) is None
    assert known.layout(projects) is None
    store = Shards.of(limit=5, rooms=[5])
    reserve(store, known, projects, lease())
    assert (store.calls, known.layout(projects)) == (["reserve 0"], (1, 1))


def test_a_process_with_an_older_layout_learns_the_newer_one_when_its_shards_run_hot() -> None:
    """Another process grew the account to 8 shards; this one still spreads over 2. When it sees
    one of them hot, its own growth loses the race, and it learns the layout from shard 0."""
    clock = Clock()
    store = Shards.of(limit=80, rooms=[10] * 8)
    known = Directory(ShardingSettings(grow_at=250), clock, random.Random(1))
    known.learn(A1, 2, 2)
    known.pick = lambda account_id: 1  # type: ignore[method-assign]
    reserve(store, known, A1, lease())
    clock.now += 1
    store.items[1] = replace(store.items[1], version=store.items[1].version + 300)  # others' writes
    reserve(store, known, A1, lease())
    # Its growth lost (the account has 8): it reads the layout, and does not fall back to shard 0.
    assert store.calls == ["reserve 1", "reserve 1", "active 2 -> 4", "read [0]"]
    assert known.layout(A1) == (8, 8)


def test_a_dry_shard_whose_donor_is_shard_0_gets_half_its_room_and_admits() -> None:
    store = Shards.of(limit=40, rooms=[32, 8, 0, 0])
    placed, _ = reserve(store, shard_picked(directory(store), 2), A1, lease())
    assert store.calls == ["reserve 2", "read [0]", "grant 16 to 2", "reserve 2"]
    assert placed.shard == 2
    assert (store.items[0].room, store.items[2].room) == (16, 15)
    assert store.held() == 40


def test_a_dry_shard_takes_half_its_donors_room_without_touching_shard_0() -> None:
    store = Shards.of(limit=40, rooms=[20, 10, 10, 0])
    placed, _ = reserve(store, shard_picked(directory(store), 3), A1, lease())
    assert store.calls == ["reserve 3", "read [1]", "grant 5 to 3 from 1", "reserve 3"]
    assert (placed.shard, store.items[1].room, store.items[3].room, store.held()) == (3, 5, 4, 40)


def test_a_shard_whose_donor_has_not_opened_takes_from_the_nearest_ancestor_that_has() -> None:
    store = Shards.of(limit=100, rooms=[60, 40], active=16)
    store.items[0] = replace(store.items[0], span=16)
    placed, _ = reserve(store, shard_picked(directory(store), 13), A1, lease())  # 13 -> 5 -> 1
    assert store.calls == ["reserve 13", "read [5, 1]", "grant 20 to 13 from 1", "reserve 13"]
    assert (placed.shard, store.items[0].room, store.held()) == (13, 60, 100)


def test_a_donor_without_room_sends_the_shard_to_shard_0_for_a_share() -> None:
    store = Shards.of(limit=40, rooms=[8, 1, 0, 0])
    placed, _ = reserve(store, shard_picked(directory(store), 3), A1, lease())
    assert store.calls == ["reserve 3", "read [1]", "read [0]", "grant 2 to 3", "reserve 3"]
    assert (placed.shard, store.items[1].room, store.held()) == (3, 1, 40)


def test_with_less_room_than_shards_a_dry_shard_still_gets_one_slot_while_shard_0_keeps_one() -> None:
    store = Shards.of(limit=100, rooms=[3, 1] + [0] * 62)
    placed, _ = reserve(store, shard_picked(directory(store), 5), A1, lease())
    assert store.calls == ["reserve 5", "read [1]", "read [0]", "grant 1 to 5", "reserve 5"]
    assert (placed.shard, store.items[0].room) == (5, 2)
    store.items[0] = replace(store.items[0], room=1)
    placed, _ = reserve(store, shard_picked(directory(store), 7), A1, lease())
    assert (placed.shard, store.items[0].room) == (0, 0)  # its last slot: admitted on shard 0


def test_a_retired_donor_gives_nothing() -> None:
    store = Shards.of(limit=40, rooms=[8, 6, 0, 0])
    store.items[1] = replace(store.items[1], retired=True)
    reserve(store, shard_picked(directory(store), 3), A1, lease())
    assert "grant 3 to 3 from 1" not in store.calls
    assert store.items[1].room == 6


def test_growing_to_64_shards_takes_6_grants_from_shard_0_and_spreads_the_room_evenly() -> None:
    """Each doubling: every shard gives half its room to one new shard (its donee)."""
    store = Shards.of(limit=6400, rooms=[6400], active=MAX_SHARDS)
    store.items[0] = replace(store.items[0], span=MAX_SHARDS)
    for shard in range(1, MAX_SHARDS):  # the first create on each new shard, in the order they open
        reserve(store, shard_picked(directory(store), shard), A1, lease())
    from_shard_0 = [call for call in store.calls if call.startswith("grant") and " from " not in call]
    assert from_shard_0 == [f"grant {6400 >> k} to {1 << (k - 1)}" for k in range(1, 7)]  # 3200 to 1 ... 100 to 32
    rooms = [store.items[i].room for i in range(MAX_SHARDS)]
    assert min(rooms) >= 97, rooms  # 100 each, less the slots the creates took (one per shard)
    assert max(rooms) <= 100, rooms
    assert store.held() == 6400


def test_two_creates_that_found_a_shard_dry_take_one_grant() -> None:
    store = Shards.of(limit=40, rooms=[20, 10, 10, 0])
    assert store.grant(A1, 3, 5, donor=1)
    assert not store.grant(A1, 3, 2, donor=1)  # it has room now
    assert (store.items[1].room, store.items[3].room) == (5, 5)


def test_with_no_room_on_shard_0_a_create_admits_where_room_is_left() -> None:
    store = Shards.of(limit=40, rooms=[0, 0, 0, 3])
    placed, _ = reserve(store, shard_picked(directory(store), 1), A1, lease())
    assert store.calls == ["reserve 1", "read [0]", "read [1, 2, 3]", "reserve 3"]
    assert placed.shard == 3


def test_room_on_a_retired_shard_is_gathered_home_and_admitted_there() -> None:
    store = Shards.of(limit=40, rooms=[0, 2], active=1)
    store.items[1] = replace(store.items[1], retired=True)
    placed, _ = reserve(store, Directory(), A1, lease())
    assert store.calls == ["reserve 0", "read [0]", "read [1]", "gather 1", "reserve 0"]
    assert placed.shard == 0
    assert (store.items[0].room, store.items[1].room, store.held()) == (1, 0, 40)


def test_a_refusal_is_proved_by_a_snapshot_of_every_shard() -> None:
    store = Shards.of(limit=40, rooms=[0, 0, 0, 0])
    with pytest.raises(LimitExceeded) as refused:
        reserve(store, shard_picked(directory(store), 1), A1, lease())
    assert store.calls == ["reserve 1", "read [0]", "read [1, 2, 3]", "snapshot [0, 1, 2, 3]"]
    assert refused.value.limit == 40


def test_a_one_shard_account_is_refused_on_its_one_read() -> None:
    store = Shards.of(limit=5, rooms=[0])
    with pytest.raises(LimitExceeded):
        reserve(store, Directory(), A1, lease())
    assert store.calls == ["reserve 0", "read [0]"]


def died(token: str, seconds_ago: int, shard: int = 0, resource_id: str | None = None) -> Lease:
    """The reservation lease of a create that died `seconds_ago` (60 s is the dead-lease age)."""
    taken = iso_timestamp(parse_timestamp(NOW) - timedelta(seconds=seconds_ago))
    return Lease(LeaseKind.RESERVATION, token, resource_id or f"never-{token}", taken, shard)


def test_a_full_account_settles_the_dead_leases_holding_its_slots_and_admits() -> None:
    """Two of five slots held by creates that died before their put: the refusal's own read shows
    their leases, one read of their resources says they never put, one write frees both."""
    store = Shards.of(limit=5, rooms=[2])
    store.hold_dead(0, died("d1", 90), died("d2", 61))
    placed, _ = reserve(store, Directory(), A1, lease())
    assert store.calls == [
        "reserve 0",
        "read [0]",
        "get resources ['never-d1', 'never-d2']",
        "settle 0: d1 d2",
        "reserve 0",
    ]
    assert (placed.shard, store.admitted, store.items[0].leases, store.held()) == (0, 4, (), 5)


def test_leases_younger_than_the_dead_lease_age_keep_their_slots() -> None:
    store = Shards.of(limit=5, rooms=[2])
    store.hold_dead(0, died("d1", 59), died("d2", 30))  # their requests may still be running
    with pytest.raises(LimitExceeded):
        reserve(store, Directory(), A1, lease())
    assert store.calls == ["reserve 0", "read [0]"]


def test_a_dead_lease_whose_resource_exists_frees_nothing_and_the_account_is_looked_at_once_more() -> None:
    store = Shards.of(limit=5, rooms=[1])
    landed = died("d1", 90, resource_id="r-landed")
    store.hold_dead(0, landed)
    store.resources["r-landed"] = Resource(A1, "r-landed", "vm", {}, NOW, "f", request_token="d1")
    with pytest.raises(LimitExceeded):
        reserve(store, Directory(), A1, lease())
    assert store.calls == [
        "reserve 0",
        "read [0]",
        "get resources ['r-landed']",
        "settle 0: d1",
        "reserve 0",
        "read [0]",
    ]
    assert (store.items[0].leases, store.admitted) == ((), 5)  # forgotten: the resource holds its slot


def test_a_sharded_account_settles_dead_leases_the_snapshot_shows_and_admits_where_they_were() -> None:
    store = Shards.of(limit=40, rooms=[0, 0, 1, 0])
    store.hold_dead(2, died("d1", 120, shard=2))
    placed, _ = reserve(store, shard_picked(directory(store), 1), A1, lease())
    assert store.calls[-3:] == ["get resources ['never-d1']", "settle 2: d1", "reserve 2"]
    assert (placed.shard, store.admitted, store.held()) == (2, 40, 40)


def test_room_the_reads_missed_is_found_by_the_snapshot_and_used() -> None:
    """A strongly consistent BatchGetItem is not an instant: room moved between two of its reads
    shows nowhere. The snapshot sees it, so the create is not refused."""
    store = Shards.of(limit=40, rooms=[0, 0, 1, 0])
    store.stale = {2: ShardState(2, room=0)}
    placed, _ = reserve(store, shard_picked(directory(store), 1), A1, lease())
    assert store.calls[-2:] == ["snapshot [0, 1, 2, 3]", "reserve 2"]
    assert (placed.shard, store.admitted) == (2, 40)


def test_shard_0_in_debt_refuses_even_with_room_on_retired_shards_short_of_the_debt() -> None:
    store = Shards.of(limit=10, rooms=[-2, 1], active=1)
    store.items[1] = replace(store.items[1], retired=True)
    with pytest.raises(LimitExceeded):
        reserve(store, Directory(), A1, lease())
    assert store.items[0].room == -1  # the retired shard's room paid back part of the debt


# --- growing ------------------------------------------------------------------------------------


def hot(store: Shards, known: Directory, clock: Clock, writes_between: int) -> None:
    """Two reservations on shard 0 a second apart, with other processes' writes in between."""
    reserve(store, known, A1, lease())
    clock.now += 1
    store.items[0] = replace(store.items[0], version=store.items[0].version + writes_between)
    reserve(store, known, A1, lease())


def test_a_shard_past_the_threshold_doubles_the_accounts_shards() -> None:
    clock = Clock()
    store = Shards.of(limit=1000, rooms=[1000])
    known = Directory(ShardingSettings(grow_at=250), clock)
    hot(store, known, clock, writes_between=300)
    assert store.calls[-1] == "active 1 -> 2"
    assert (store.items[0].active, store.items[0].span) == (2, 2)
    assert known.layout(A1) == (2, 2)


def test_a_quiet_account_keeps_one_shard() -> None:
    clock = Clock()
    store = Shards.of(limit=1000, rooms=[1000])
    known = Directory(ShardingSettings(grow_at=250), clock)
    hot(store, known, clock, writes_between=200)
    assert not any(call.startswith("active") for call in store.calls)
    assert store.items[0].active == 1


def test_rates_are_measured_over_at_least_a_window() -> None:
    """Two writes a millisecond apart are not 2,000 writes a second."""
    clock = Clock()
    known = Directory(ShardingSettings(min_window=1.0), clock)
    assert known.observe(A1, 0, 10) is None
    clock.now += 0.001
    assert known.observe(A1, 0, 12) is None
    clock.now += 1
    assert known.observe(A1, 0, 512) == pytest.approx(502 / 1.001)


def test_growth_stops_at_the_largest_layout() -> None:
    clock = Clock()
    store = Shards.of(limit=1000, rooms=[1000])
    store.items[0] = replace(store.items[0], active=MAX_SHARDS, span=MAX_SHARDS)
    known = Directory(ShardingSettings(grow_at=1), clock)
    known.pick = lambda account_id: 0  # type: ignore[method-assign]
    hot(store, known, clock, writes_between=10_000)
    assert not any(call.startswith("active") for call in store.calls)


# --- lowering the limit -----------------------------------------------------------------------


def test_a_limit_lowered_within_shard_0s_room_moves_nothing_else() -> None:
    store = Shards.of(limit=40, rooms=[20, 5, 5])
    accounts.put_account(store, A1, accounts.limit_change(30, NOW_MS), lambda: NOW)
    assert store.calls == ["read [0]", "limit 40 -> 30"]
    assert (store.items[0].room, store.held()) == (10, 30)


def test_a_limit_lowered_below_the_usage_retires_the_other_shards_and_refuses_until_paid_back() -> None:
    store = Shards.of(limit=10, rooms=[1, 3])  # 6 slots held, all on shard 0
    accounts.put_account(store, A1, accounts.limit_change(5, NOW_MS), lambda: NOW)
    assert store.calls == ["read [0]", "active 2 -> 1", "read [1]", "gather 1", "limit 10 -> 5"]
    assert (store.items[0].room, store.items[0].active, store.items[1].retired, store.held()) == (-1, 1, True, 5)
    store.items[0] = replace(store.items[0], admitted=4)
    store.items[1] = replace(store.items[1], admitted=2)  # say two of the six were on shard 1
    with pytest.raises(LimitExceeded):
        reserve(store, Directory(), A1, lease())
    store.release(1)  # 5 held: at the new limit, still full
    with pytest.raises(LimitExceeded):
        reserve(store, Directory(), A1, lease())
    store.release(1)  # 4 held
    placed, _ = reserve(store, Directory(), A1, lease())
    assert (placed.shard, store.admitted, store.held()) == (0, 5, 5)


def test_the_local_runtime_scales_shard_growth_with_its_partition_limits() -> None:
    """At 1/2000 of a partition's capacity, a shard must grow at 1/2000 of the rate it grows at on
    AWS, or a scaled load run would throttle before any account grows."""
    assert scaled_environment("1/2000") == {
        "SHARD_GROW_AT_WRITES_PER_SECOND": "0.125",
        "RATE_WINDOW_PART_REQUESTS_PER_SECOND": "0.5",  # tests/unit/test_rate_limits.py
    }
    assert scaled_environment(None) == {}


def test_a_throttled_shard_grows_the_account_at_once_and_the_create_goes_on() -> None:
    """A shard that takes more than a partition can refuses writes; the writes that would show its
    rate no longer land. So a throttle is itself the signal to grow."""
    store = Shards.of(limit=100, rooms=[100])
    refusals = iter([True])

    def throttled_once(account_id: str, placed: Lease) -> Reserved | None:
        if next(refusals, False):
            store.calls.append(f"reserve {placed.shard} throttled")
            raise StoreUnavailable("throttled", may_have_landed=False, throttled=True)
        return Shards.reserve_on(store, account_id, placed)

    store.reserve_on = throttled_once  # type: ignore[method-assign]
    placed, _ = reserve(store, Directory(rng=random.Random(3)), A1, lease())
    assert store.calls[:3] == ["reserve 0 throttled", "read [0]", "active 1 -> 2"]
    assert store.items[0].active == 2
    assert store.admitted == 1
    assert placed.shard in (0, 1)


def test_a_throttled_reserve_that_may_have_landed_stays_on_its_shard() -> None:
    """A 500, then throttles: the take may hold a slot on its shard, and only another take there
    tells (it finds its own lease). One on another shard would hold a second slot for the same
    resource (chaos, seed 1: admitted one above the live resources and their leases). It stays
    even when its next call's throttles alone say nothing landed, and the account still grows, once."""
    store = Shards.of(limit=400, rooms=[100, 100, 100, 100])
    landed_maybe = iter([True, False])

    def throttled_twice(account_id: str, placed: Lease) -> Reserved | None:
        may_have_landed = next(landed_maybe, None)
        if may_have_landed is None:
            return Shards.reserve_on(store, account_id, placed)
        store.calls.append(f"reserve {placed.shard} throttled")
        raise StoreUnavailable("throttled", may_have_landed=may_have_landed, throttled=True)

    store.reserve_on = throttled_twice  # type: ignore[method-assign]
    placed, _ = reserve(store, directory(store, seed=4), A1, lease())
    reserves = [call for call in store.calls if call.startswith("reserve")]
    assert reserves == [f"reserve {placed.shard} throttled"] * 2 + [f"reserve {placed.shard}"]
    assert [call for call in store.calls if call.startswith("active")] == ["active 4 -> 8"]  # grown once
    assert store.admitted == 1


def test_other_failures_are_not_taken_for_heat() -> None:
    store = Shards.of(limit=100, rooms=[100])

    def failing(account_id: str, placed: Lease) -> Reserved | None:
        raise StoreUnavailable("timeout", may_have_landed=True)

    store.reserve_on = failing  # type: ignore[method-assign]
    with pytest.raises(StoreUnavailable):
        reserve(store, Directory(), A1, lease())
    assert store.items[0].active == 1


def test_a_process_throttled_on_shard_0_of_a_grown_account_spreads_at_once() -> None:
    """It did not know the layout (its first create), shard 0 throttled it, and the account already
    has all its shards: it learns them instead of trying shard 0 again and again."""
    store = Shards.of(limit=6400, rooms=[100] * MAX_SHARDS)

    def shard_0_throttled(account_id: str, placed: Lease) -> Reserved | None:
        if placed.shard == 0:
            store.calls.append("reserve 0 throttled")
            raise StoreUnavailable("throttled", may_have_landed=False, throttled=True)
        return Shards.reserve_on(store, account_id, placed)

    store.reserve_on = shard_0_throttled  # type: ignore[method-assign]
    known = Directory(rng=random.Random(5))
    placed, _ = reserve(store, known, A1, lease())
    assert store.calls[:2] == ["reserve 0 throttled", "read [0]"]
    assert known.layout(A1) == (MAX_SHARDS, MAX_SHARDS)
    assert placed.shard != 0


def test_a_grant_refused_for_capacity_sends_the_create_to_another_shard_not_to_shard_0() -> None:
    """Shard 0 of a hot account is short of writes: a shard waiting for its grant must not add its
    create to shard 0's load (the old fallback), but try another shard."""
    store = Shards.of(limit=400, rooms=[100, 0, 100, 100, 100], active=MAX_SHARDS)
    store.items[0] = replace(store.items[0], span=MAX_SHARDS)
    del store.items[1]  # not opened yet; its donor is shard 0

    def shard_0_short(account_id: str, shard: int, slots: int, donor: int = 0) -> bool:
        if donor == 0:
            store.calls.append(f"grant to {shard} throttled")
            raise StoreUnavailable("throttled", may_have_landed=False, throttled=True)
        return Shards.grant(store, account_id, shard, slots, donor)

    store.grant = shard_0_short  # type: ignore[method-assign]
    known = directory(store, seed=2)
    picks = iter([1, 3])
    known.pick = lambda account_id: next(picks)  # type: ignore[method-assign]
    placed, _ = reserve(store, known, A1, lease())
    assert store.calls == ["reserve 1", "read [0]", "grant to 1 throttled", "reserve 3"]
    assert placed.shard == 3

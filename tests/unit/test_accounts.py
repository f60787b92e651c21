"""The API flows: the order of writes that keeps best-effort low and admission high, and every branch."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

from functions.core import accounts
from functions.core.accounts import LimitChange, PeriodLimit
from functions.core.admission import Directory, Reserved, ShardState
from functions.core.errors import (
    AccountNotFound,
    CallerGaveUp,
    IdempotencyKeyMismatch,
    IdempotencyKeyReused,
    LimitExceeded,
    ResourceAlreadyExists,
    ResourceNotFound,
    StoreUnavailable,
)
from functions.core.leases import Lease, LeaseKind, Settled, Settlement, iso_timestamp, parse_timestamp
from functions.core.model import NewResource, Page, PageBudget, Quota, Resource, Usage, idempotent_resource_id

A1, A2 = Quota("a1"), Quota("a2")


def clock() -> str:
    return "2026-11-22T00:00:00.000Z"


RECEIVED_MS = 1_795_305_600_000  # clock()'s time in epoch ms: when API Gateway received a PUT


REQUEST = NewResource(name="vm", attributes={"size": 2})


def stored(
    resource_id: str = "r1", request: NewResource = REQUEST, deleted: bool = False, token: str = "t0", **more: Any
) -> Resource:
    return Resource(
        A1, resource_id, request.name, request.attributes, clock(), request.fingerprint(), token, deleted, **more
    )


SETTLEMENT_NAMES = {
    (LeaseKind.RESERVATION, 0, 1): "commit",
    (LeaseKind.RESERVATION, -1, 0): "release",
    (LeaseKind.RESERVATION, 0, 0): "drop",
    (LeaseKind.DELETION, -1, 0): "finish",
    (LeaseKind.DELETION, 0, 1): "undo",
    (LeaseKind.DELETION, 0, 0): "drop",
}


@dataclass
class RecordingStore:
    """Scripted answers; `writes` lists every write in order (a settle by what it does)."""

    usage: Usage | None = field(default_factory=lambda: Usage(A1, limit=5, best_effort_net=1, eventual=1))
    account: ShardState | None = field(default_factory=lambda: ShardState(0, room=0, admitted=5, limit=5))
    resource: Resource | None = None
    reserve: bool = True
    put_error: Exception | None = None
    commit_error: Exception | None = None
    commit_result: Settled = Settled.APPLIED
    finish_error: Exception | None = None
    soft_delete_error: Exception | None = None
    soft_deleted: bool = True
    writes: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    leases: list[Lease] = field(default_factory=list)
    held: tuple[Lease, ...] = ()  # other leases on the shard, returned by its first write
    resources: dict[str, Resource] = field(default_factory=dict)  # what get_resources finds
    settle_dead_error: Exception | None = None
    settled_dead: list[dict[Lease, Settlement]] = field(default_factory=list)

    def create_account(self, account_id: str, change: LimitChange, now: str) -> bool:
        self.writes.append("put_account")
        return True

    def set_limit(
        self,
        account_id: str,
        account: ShardState,
        change: LimitChange,
        now: str,
        retired_span: int,
        periods: Sequence[PeriodLimit] = (),
    ) -> bool:
        self.writes.append("put_account")
        return True

    def read_usage(self, account_id: str) -> Usage | None:
        return self.usage

    def reserve_on(self, account_id: str, lease: Lease) -> Reserved | None:
        if self.account is None:
            raise AccountNotFound(account_id)  # its condition failed: nothing written
        self.writes.append("reserve")
        self.leases.append(lease)
        return Reserved(heal_epoch=0, version=1, leases=(*self.held, lease)) if self.reserve else None

    def read_shards(self, account_id: str, shards: Sequence[int], snapshot: bool = False) -> list[ShardState]:
        return [self.account] if self.account is not None and 0 in shards else []

    def grant(self, account_id: str, shard: int, slots: int, donor: int = 0) -> bool:
        raise AssertionError("a one-shard account never grants")

    def gather(self, account_id: str, shard: ShardState, retire: bool) -> bool:
        raise AssertionError("a one-shard account never gathers")

    def set_active(self, account_id: str, active: int, span: int, to: int) -> bool:
        raise AssertionError("a one-shard account at this rate never grows")

    def take_deletion(self, account_id: str, lease: Lease, only_unsharded: bool = False) -> tuple[Lease, ...] | None:
        if self.account is None:
            raise AccountNotFound(account_id)  # its condition failed: nothing written
        if only_unsharded and self.account.span > 1:
            return None  # refused: nothing written
        self.writes.append("take_deletion")
        self.leases.append(lease)
        return (*self.held, lease)

    def get_resources(self, account_id: str, resource_ids: Iterable[str]) -> dict[str, Resource]:
        self.reads.append("get_resources")
        return {rid: self.resources[rid] for rid in resource_ids if rid in self.resources}

    def settle_together(self, account_id: str, shard: int, settlements: Mapping[Lease, Settlement]) -> int:
        self.writes.append("settle_dead")
        if self.settle_dead_error:
            raise self.settle_dead_error
        self.settled_dead.append(dict(settlements))
        return len(settlements)

    def settle(self, account_id: str, lease: Lease, settlement: Settlement, now: str | None) -> Settled:
        name = SETTLEMENT_NAMES[(lease.kind, settlement.admitted, settlement.best_effort)]
        self.writes.append(name)
        if name == "commit":
            assert settlement.expected_heal_epoch == 0  # the epoch the reservation returned
            if self.commit_error:
                raise self.commit_error
            return self.commit_result
        if name == "finish" and self.finish_error:
            raise self.finish_error
        return Settled.APPLIED

    def put_resource(self, resource: Resource) -> None:
        self.writes.append("put")
        assert resource.request_token == self.leases[-1].token  # the put carries the lease's token
        if self.put_error:
            raise self.put_error

    def get_resource(self, account_id: str, resource_id: str) -> Resource | None:
        self.reads.append("get_resource")
        return self.resource

    def soft_delete(self, account_id: str, resource_id: str, now: str, token: str, shard: int, units: int = 1) -> bool:
        self.writes.append("soft_delete")
        assert token == self.leases[-1].token
        if self.soft_delete_error:
            raise self.soft_delete_error
        live = self.resource is not None and not self.resource.deleted
        return self.soft_deleted and live and self.resource is not None and self.resource.shard == shard

    def list_resources(self, account_id: str, limit: int, cursor: str | None, budget: PageBudget | None = None) -> Page:
        return Page([], None)


def create(
    store: RecordingStore, key: str | None = None, request: NewResource = REQUEST, in_time: Any = lambda: True
) -> accounts.Created:
    return accounts.create_resource(store, A1, request, key, clock, token=lambda: "t0", in_time=in_time)


def delete(store: RecordingStore, in_time: Any = lambda: True, directory: Directory | None = None) -> None:
    accounts.delete_resource(store, A1, "r1", clock, token=lambda: "d0", in_time=in_time, directory=directory)


def sharded(span: int = 4) -> ShardState:
    """Shard 0 of an account that has grown `span` shards."""
    return ShardState(0, room=0, admitted=5, limit=5, active=span, span=span)


def knowing(span: int) -> Directory:
    """A process that has seen the account with `span` shards."""
    directory = Directory()
    directory.learn(A1, span, span)
    return directory


TIMEOUT = StoreUnavailable("timeout", may_have_landed=True)


def test_usage_clamps_best_effort_and_takes_the_larger_counter() -> None:
    usage = Usage(A1, limit=5, best_effort_net=-2, eventual=3)
    assert (usage.best_effort, usage.used, usage.available) == (0, 3, 2)
    assert Usage(A1, limit=2, best_effort_net=4, eventual=1).available == 0


def test_create_reserves_before_writing_and_counts_after() -> None:
    store = RecordingStore()
    created = create(store)
    assert not created.replayed
    assert store.writes == ["reserve", "put", "commit"]
    assert [lease.kind for lease in store.leases] == [LeaseKind.RESERVATION]
    assert store.leases[0].resource_id == created.resource.resource_id


def test_create_after_a_heal_drops_its_lease_without_counting() -> None:
    store = RecordingStore(commit_result=Settled.EPOCH_MOVED)
    create(store)
    assert store.writes == ["reserve", "put", "commit", "drop"]


def test_create_for_a_missing_account_writes_nothing() -> None:
    store = RecordingStore(account=None)
    with pytest.raises(AccountNotFound):
        create(store)
    assert store.writes == []


def test_create_at_the_limit_is_refused_by_its_one_conditional_write() -> None:
    """No read before: the reservation's condition is the check, and its failure the only cost."""
    store = RecordingStore(reserve=False)
    with pytest.raises(LimitExceeded) as refused:
        create(store)
    assert store.writes == ["reserve"]
    assert refused.value.limit == 5


def test_create_that_certainly_failed_frees_its_slot() -> None:
    store = RecordingStore(put_error=StoreUnavailable("throttled", may_have_landed=False))
    with pytest.raises(StoreUnavailable):
        create(store)
    assert store.writes == ["reserve", "put", "release"]


def test_create_that_may_have_landed_keeps_its_slot() -> None:
    store = RecordingStore(put_error=TIMEOUT)
    with pytest.raises(StoreUnavailable):
        create(store)
    assert store.writes == ["reserve", "put"]  # never release a slot a live resource may hold


@pytest.mark.parametrize("found", [stored(token="t0"), stored(token="t0", deleted=True, tombstone=True)])
def test_create_whose_put_landed_unseen_is_a_success(found: Resource) -> None:
    """The read-back finds this request's token (on the item, or on the tombstone it became)."""
    store = RecordingStore(put_error=TIMEOUT, resource=found)
    assert not create(store).replayed
    assert store.writes == ["reserve", "put", "commit"]


def test_create_whose_read_back_finds_another_requests_item_keeps_its_slot() -> None:
    store = RecordingStore(put_error=TIMEOUT, resource=stored(token="other"))
    with pytest.raises(StoreUnavailable):
        create(store)
    assert store.writes == ["reserve", "put"]


def test_create_succeeds_when_only_the_best_effort_count_fails() -> None:
    """The resource was put, so the caller gets it, as a new create; the slot stays taken (its
    lease is for a heal to settle: best-effort may lag, never overcount)."""
    store = RecordingStore(commit_error=TIMEOUT)
    created = create(store)
    assert (created.resource.name, created.replayed) == ("vm", False)
    assert store.writes == ["reserve", "put", "commit"]  # no release: the resource exists
    assert [lease.resource_id for lease in store.leases] == [created.resource.resource_id]


def test_a_late_create_writes_nothing() -> None:
    store = RecordingStore()
    with pytest.raises(CallerGaveUp):
        create(store, in_time=lambda: False)
    assert store.writes == []


def test_a_create_whose_caller_gives_up_after_the_reservation_releases_it() -> None:
    answers = iter([True, False])
    store = RecordingStore()
    with pytest.raises(CallerGaveUp):
        create(store, in_time=lambda: next(answers))
    assert store.writes == ["reserve", "release"]


def test_keyed_replay_returns_the_first_resource_and_writes_nothing() -> None:
    store = RecordingStore(resource=stored(), reserve=False)
    created = create(store, key="k1")
    assert created.replayed
    assert created.resource.resource_id == "r1"
    assert store.writes == []  # even at the limit, and without counting again


def test_keyed_replay_with_another_body_is_rejected() -> None:
    store = RecordingStore(resource=stored())
    with pytest.raises(IdempotencyKeyMismatch):
        create(store, key="k1", request=NewResource(name="other"))


def test_keyed_replay_of_a_deleted_resource_is_rejected() -> None:
    store = RecordingStore(resource=stored(deleted=True))
    with pytest.raises(IdempotencyKeyReused):
        create(store, key="k1")


def test_keyed_create_losing_to_a_concurrent_twin_frees_its_slot_and_replays() -> None:
    store = RecordingStore(put_error=ResourceAlreadyExists(stored(token="twin")))
    created = create(store, key="k1")
    assert created.replayed
    assert store.writes == ["reserve", "put", "release"]


def test_keyed_ids_are_stable_per_account_and_key() -> None:
    assert idempotent_resource_id(A1, "k") == idempotent_resource_id(A1, "k")
    assert idempotent_resource_id(A1, "k") != idempotent_resource_id(A2, "k")


def test_a_quiet_accounts_delete_makes_three_writes_and_no_read() -> None:
    """Every resource of an account that never grew shards was admitted by shard 0: its delete
    takes, soft-deletes and finishes there without reading the resource first."""
    store = RecordingStore(resource=stored())
    delete(store)
    assert store.writes == ["take_deletion", "soft_delete", "finish"]
    assert store.reads == []
    assert [(lease.kind, lease.shard) for lease in store.leases] == [(LeaseKind.DELETION, 0)]


def test_a_sharded_accounts_delete_reads_the_resource_to_release_it_on_its_shard() -> None:
    store = RecordingStore(account=sharded(), resource=stored(shard=2))
    delete(store, directory=knowing(span=4))
    assert store.reads == ["get_resource"]
    assert store.writes == ["take_deletion", "soft_delete", "finish"]
    assert [lease.shard for lease in store.leases] == [2]


def test_a_delete_on_an_account_grown_since_this_process_looked_learns_its_shards() -> None:
    store = RecordingStore(account=sharded(), resource=stored(shard=3))
    directory = knowing(span=1)
    delete(store, directory=directory)
    assert directory.layout(A1) == (4, 4)  # refused on shard 0, so read the layout
    assert store.writes == ["take_deletion", "soft_delete", "finish"]
    assert [lease.shard for lease in store.leases] == [3]


def test_a_resource_admitted_by_another_shard_after_the_take_is_released_there() -> None:
    """The account grew between the take on shard 0 and the soft delete, and the resource was put
    on another shard meanwhile: the soft delete's shard condition refuses, shard 0 gets its
    decrement back, and the delete goes to the resource's shard."""
    store = RecordingStore(resource=stored(shard=3))
    delete(store)
    assert store.writes == ["take_deletion", "soft_delete", "undo", "take_deletion", "soft_delete", "finish"]
    assert [lease.shard for lease in store.leases] == [0, 3]


@pytest.mark.parametrize("resource", [None, stored(deleted=True), stored(deleted=True, tombstone=True)])
def test_delete_of_a_missing_or_deleted_resource_gives_back_its_decrement(resource: Resource | None) -> None:
    store = RecordingStore(resource=resource)
    with pytest.raises(ResourceNotFound):
        delete(store)
    assert store.writes == ["take_deletion", "soft_delete", "undo"]  # best-effort as it was


@pytest.mark.parametrize("resource", [None, stored(deleted=True), stored(deleted=True, tombstone=True)])
def test_delete_of_a_missing_or_deleted_resource_of_a_sharded_account_changes_nothing(
    resource: Resource | None,
) -> None:
    store = RecordingStore(account=sharded(), resource=resource)
    with pytest.raises(ResourceNotFound):
        delete(store, directory=knowing(span=4))
    assert store.writes == []


def test_delete_on_a_missing_account_is_not_found() -> None:
    store = RecordingStore(account=None)
    with pytest.raises(ResourceNotFound):
        delete(store)
    assert store.writes == []


def test_delete_losing_to_a_concurrent_delete_gives_back_its_decrement() -> None:
    store = RecordingStore(resource=stored(), soft_deleted=False)
    with pytest.raises(ResourceNotFound):
        delete(store)
    assert store.writes == ["take_deletion", "soft_delete", "undo"]


def test_delete_succeeds_when_only_the_release_fails() -> None:
    store = RecordingStore(resource=stored(), finish_error=TIMEOUT)
    delete(store)
    assert store.writes == ["take_deletion", "soft_delete", "finish"]


def test_delete_whose_soft_delete_landed_unseen_is_a_success() -> None:
    store = RecordingStore(resource=stored(deleted=True, delete_token="d0"), soft_delete_error=TIMEOUT)
    delete(store)
    assert store.reads == ["get_resource"]  # after the timeout: its own token is there
    assert store.writes == ["take_deletion", "soft_delete", "finish"]


def test_delete_whose_soft_delete_stays_unknown_keeps_its_lease() -> None:
    store = RecordingStore(resource=stored(), soft_delete_error=TIMEOUT)
    with pytest.raises(StoreUnavailable):
        delete(store)
    assert store.writes == ["take_deletion", "soft_delete"]  # a heal settles the lease later


def test_a_late_delete_writes_nothing() -> None:
    store = RecordingStore(resource=stored())
    with pytest.raises(CallerGaveUp):
        delete(store, in_time=lambda: False)
    assert store.writes == []


def test_reads_of_missing_things_are_not_found() -> None:
    store = RecordingStore(usage=None)
    with pytest.raises(AccountNotFound):
        accounts.get_usage(store, A1)
    with pytest.raises(AccountNotFound):
        accounts.list_resources(store, A1, 10, None)
    with pytest.raises(ResourceNotFound):
        accounts.get_resource(RecordingStore(resource=stored(deleted=True)), A1, "r1")


def test_a_page_budget_keeps_the_items_that_fit_and_always_the_first() -> None:
    items = [stored(f"r{size}", NewResource("vm", {"size": size})) for size in (40, 30, 20, 10)]
    budget = PageBudget(room=90, size_of=lambda resource: int(resource.attributes["size"]))
    assert budget.fitting(items) == items[:3]  # 40 + 30 + 20; the fourth would pass 90
    assert PageBudget(room=100, size_of=budget.size_of).fitting(items) == items
    assert PageBudget(room=10, size_of=budget.size_of).fitting(items) == items[:1]  # a page always moves on
    assert budget.fitting([]) == []


def test_put_account_returns_the_account() -> None:
    store = RecordingStore()
    assert accounts.put_account(store, A1, accounts.limit_change(5, RECEIVED_MS), clock).limit == 5
    assert store.writes == ["put_account"]
    with pytest.raises(CallerGaveUp):
        accounts.put_account(store, A1, accounts.limit_change(6, RECEIVED_MS), clock, lambda: False)
    assert store.writes == ["put_account"]


# mypy checks the stub against the port, so the tests cannot drift from what the adapter implements.
_STUB_IS_AN_API_STORE: accounts.ApiStore = RecordingStore()


# --- dead leases settled on sight ----------------------------------------------------------------


def dead(count: int, seconds_ago: int = 61, kind: LeaseKind = LeaseKind.RESERVATION) -> tuple[Lease, ...]:
    """Leases taken `seconds_ago` before clock() (60 s is the dead-lease age)."""
    taken = iso_timestamp(parse_timestamp(clock()) - timedelta(seconds=seconds_ago))
    return tuple(Lease(kind, f"x{i}", f"gone{i}", taken) for i in range(count))


def test_a_create_that_sees_enough_dead_leases_on_its_shard_settles_them_after_its_own_work() -> None:
    """Four dead reservations on the shard: one whose put landed (its slot is held by the resource:
    dropped), three that never put (their slots freed): one read, one write, after the commit."""
    held = dead(4)
    landed = stored(held[0].resource_id, token=held[0].token)
    store = RecordingStore(account=ShardState(0, room=5, limit=5), held=held, resources={landed.resource_id: landed})
    create(store)
    assert store.writes == ["reserve", "put", "commit", "settle_dead"]
    assert store.reads == ["get_resources"]
    [settled] = store.settled_dead
    assert {lease.token: SETTLEMENT_NAMES[(lease.kind, s.admitted, s.best_effort)] for lease, s in settled.items()} == {
        "x0": "drop",
        "x1": "release",
        "x2": "release",
        "x3": "release",
    }


def test_a_delete_that_sees_enough_dead_leases_settles_them_as_the_sweeper_would() -> None:
    """Dead deletions: one whose soft delete landed (its slot freed), one whose resource is still
    live (its decrement given back), two whose resource is gone (forgotten)."""
    held = dead(4, kind=LeaseKind.DELETION)
    finished = stored(held[0].resource_id, deleted=True, delete_token=held[0].token)
    live = stored(held[1].resource_id)
    store = RecordingStore(
        resource=stored(), held=held, resources={finished.resource_id: finished, live.resource_id: live}
    )
    delete(store)
    assert store.writes == ["take_deletion", "soft_delete", "finish", "settle_dead"]
    [settled] = store.settled_dead
    assert [SETTLEMENT_NAMES[(lease.kind, s.admitted, s.best_effort)] for lease, s in settled.items()] == [
        "finish",
        "undo",
        "drop",
        "drop",
    ]


@pytest.mark.parametrize(
    ("held", "why"),
    [
        (dead(3), "fewer than settle_dead_at: left to the sweeper"),
        (dead(6, seconds_ago=59), "younger than the dead-lease age: their requests may still run"),
    ],
)
def test_few_or_young_leases_cost_nothing_more(held: tuple[Lease, ...], why: str) -> None:
    store = RecordingStore(account=ShardState(0, room=5, limit=5), held=held)
    create(store)
    assert store.writes == ["reserve", "put", "commit"], why
    assert store.reads == [], why


def test_settling_dead_leases_fails_nothing_and_waits_for_a_caller_still_waiting() -> None:
    store = RecordingStore(account=ShardState(0, room=5, limit=5), held=dead(4), settle_dead_error=TIMEOUT)
    assert create(store).replayed is False  # the create succeeds all the same
    assert store.writes[-1] == "settle_dead"
    # The caller gave up while the request's own work ran: it settles nothing more.
    answers = iter([True, True, False])
    late = RecordingStore(account=ShardState(0, room=5, limit=5), held=dead(4))
    create(late, in_time=lambda: next(answers))
    assert late.writes == ["reserve", "put", "commit"]


def test_a_process_settles_a_shards_dead_leases_once_a_second() -> None:
    """A settling write that failed (a throttled shard) is not repeated by every next request of
    the process: that would write the hot shard more."""
    now = [0.0]
    directory = Directory(clock=lambda: now[0])
    store = RecordingStore(account=ShardState(0, room=5, limit=5), held=dead(4), settle_dead_error=TIMEOUT)

    def creates() -> int:
        accounts.create_resource(store, A1, REQUEST, None, clock, token=lambda: "t0", directory=directory)
        return store.writes.count("settle_dead")

    assert creates() == 1
    assert creates() == 1  # the same second: not again
    now[0] = 1.0
    assert creates() == 2

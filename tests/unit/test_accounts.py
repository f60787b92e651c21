"""The API flows: the order of writes that keeps best-effort low and admission high, and every branch."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from functions.core import accounts
from functions.core.errors import (
    AccountNotFound,
    IdempotencyKeyMismatch,
    IdempotencyKeyReused,
    LimitExceeded,
    ResourceAlreadyExists,
    ResourceNotFound,
    StoreUnavailable,
)
from functions.core.model import NewResource, Page, Resource, Usage, idempotent_resource_id


def clock() -> str:
    return "2026-11-22T00:00:00.000Z"


REQUEST = NewResource(name="vm", attributes={"size": 2})


def stored(resource_id: str = "r1", request: NewResource = REQUEST, deleted: bool = False) -> Resource:
    return Resource("a1", resource_id, request.name, request.attributes, clock(), request.fingerprint(), "t0", deleted)


@dataclass
class RecordingStore:
    """Scripted answers; `writes` lists every call in order."""

    usage: Usage | None = field(default_factory=lambda: Usage("a1", limit=5, best_effort_net=1, eventual=1))
    resource: Resource | None = None
    reserve: bool = True
    put_error: Exception | None = None
    increment_error: Exception | None = None
    release_error: Exception | None = None
    soft_deleted: bool = True
    writes: list[str] = field(default_factory=list)

    def put_account(self, account_id: str, limit: int, now: str) -> None:
        self.writes.append("put_account")

    def read_usage(self, account_id: str) -> Usage | None:
        return self.usage

    def reserve_slot(self, account_id: str, now: str) -> int | None:
        self.writes.append("reserve")
        return 0 if self.reserve else None

    def release_slot(self, account_id: str, now: str) -> None:
        self.writes.append("release")
        if self.release_error:
            raise self.release_error

    def increment_best_effort(self, account_id: str, heal_epoch: int, now: str) -> bool:
        self.writes.append("increment")
        if self.increment_error:
            raise self.increment_error
        return True

    def decrement_best_effort(self, account_id: str, now: str) -> None:
        self.writes.append("decrement")

    def put_resource(self, resource: Resource) -> None:
        self.writes.append("put")
        if self.put_error:
            raise self.put_error

    def get_resource(self, account_id: str, resource_id: str) -> Resource | None:
        return self.resource

    def mark_deleting(self, account_id: str, resource_id: str, now: str) -> bool:
        self.writes.append("mark_deleting")
        return self.resource is not None and not self.resource.deleted

    def soft_delete(self, account_id: str, resource_id: str, now: str, token: str) -> bool:
        self.writes.append("soft_delete")
        return self.soft_deleted

    def list_resources(self, account_id: str, limit: int, cursor: str | None) -> Page:
        return Page([], None)


def create(store: RecordingStore, key: str | None = None, request: NewResource = REQUEST) -> accounts.Created:
    return accounts.create_resource(store, "a1", request, key, clock)


def test_usage_clamps_best_effort_and_takes_the_larger_counter() -> None:
    usage = Usage("a1", limit=5, best_effort_net=-2, eventual=3)
    assert (usage.best_effort, usage.used, usage.available) == (0, 3, 2)
    assert Usage("a1", limit=2, best_effort_net=4, eventual=1).available == 0


def test_create_reserves_before_writing_and_counts_after() -> None:
    store = RecordingStore()
    created = create(store)
    assert not created.replayed
    assert store.writes == ["reserve", "put", "increment"]


def test_create_for_a_missing_account_writes_nothing() -> None:
    store = RecordingStore(usage=None)
    with pytest.raises(AccountNotFound):
        create(store)
    assert store.writes == []


@pytest.mark.parametrize(("best_effort", "eventual"), [(5, 0), (0, 5), (6, 2)])
def test_create_at_the_limit_by_either_counter_writes_nothing(best_effort: int, eventual: int) -> None:
    store = RecordingStore(usage=Usage("a1", limit=5, best_effort_net=best_effort, eventual=eventual))
    with pytest.raises(LimitExceeded):
        create(store)
    assert store.writes == []


def test_create_losing_the_race_for_the_last_slot_is_a_limit_error() -> None:
    store = RecordingStore(reserve=False)
    with pytest.raises(LimitExceeded):
        create(store)
    assert store.writes == ["reserve"]


def test_create_that_certainly_failed_frees_its_slot() -> None:
    store = RecordingStore(put_error=StoreUnavailable("throttled", may_have_landed=False))
    with pytest.raises(StoreUnavailable):
        create(store)
    assert store.writes == ["reserve", "put", "release"]


def test_create_that_may_have_landed_keeps_its_slot() -> None:
    store = RecordingStore(put_error=StoreUnavailable("timeout", may_have_landed=True))
    with pytest.raises(StoreUnavailable):
        create(store)
    assert store.writes == ["reserve", "put"]  # never release a slot a live resource may hold


def test_create_succeeds_when_only_the_best_effort_increment_fails() -> None:
    store = RecordingStore(increment_error=StoreUnavailable("timeout", may_have_landed=True))
    assert create(store).resource.name == "vm"


def test_keyed_replay_returns_the_first_resource_and_writes_nothing() -> None:
    store = RecordingStore(resource=stored(), usage=Usage("a1", limit=1, best_effort_net=1, eventual=1))
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
    store = RecordingStore(put_error=ResourceAlreadyExists(stored()))
    created = create(store, key="k1")
    assert created.replayed
    assert store.writes == ["reserve", "put", "release"]


def test_keyed_ids_are_stable_per_account_and_key() -> None:
    assert idempotent_resource_id("a1", "k") == idempotent_resource_id("a1", "k")
    assert idempotent_resource_id("a1", "k") != idempotent_resource_id("a2", "k")


def test_delete_decrements_while_live_and_releases_after() -> None:
    store = RecordingStore(resource=stored())
    accounts.delete_resource(store, "a1", "r1", clock)
    assert store.writes == ["mark_deleting", "decrement", "soft_delete", "release"]


@pytest.mark.parametrize("resource", [None, stored(deleted=True)])
def test_delete_of_a_missing_or_deleted_resource_changes_nothing(resource: Resource | None) -> None:
    store = RecordingStore(resource=resource)
    with pytest.raises(ResourceNotFound):
        accounts.delete_resource(store, "a1", "r1", clock)
    assert store.writes == ["mark_deleting"]  # a conditional write that did not apply


def test_delete_losing_to_a_concurrent_delete_does_not_release() -> None:
    store = RecordingStore(resource=stored(), soft_deleted=False)
    with pytest.raises(ResourceNotFound):
        accounts.delete_resource(store, "a1", "r1", clock)
    assert store.writes == ["mark_deleting", "decrement", "soft_delete"]


def test_delete_succeeds_when_only_the_release_fails() -> None:
    store = RecordingStore(resource=stored(), release_error=StoreUnavailable("timeout", may_have_landed=True))
    accounts.delete_resource(store, "a1", "r1", clock)
    assert store.writes == ["mark_deleting", "decrement", "soft_delete", "release"]


def test_reads_of_missing_things_are_not_found() -> None:
    store = RecordingStore(usage=None)
    with pytest.raises(AccountNotFound):
        accounts.get_usage(store, "a1")
    with pytest.raises(AccountNotFound):
        accounts.list_resources(store, "a1", 10, None)
    with pytest.raises(ResourceNotFound):
        accounts.get_resource(RecordingStore(resource=stored(deleted=True)), "a1", "r1")


def test_put_account_returns_the_account() -> None:
    store = RecordingStore()
    assert accounts.put_account(store, "a1", 5, clock).limit == 5
    assert store.writes == ["put_account"]


# mypy checks the stub against the port, so the tests cannot drift from what the adapter implements.
_STUB_IS_AN_API_STORE: accounts.ApiStore = RecordingStore()

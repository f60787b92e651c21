"""Stateful property tests: random interleavings of API calls (creates of 1 to 3 units, resizes,
deletes), crashes, stream deliveries, duplicates, late replays, heals and sweeps, against a model
of the truth, on three types of one
account (its default type and two others, each with its own limit): a step on one type must leave
every other type's resources and counters exact.

The flows run with the real adapters against the emulator, so what is explored is the system,
not a fake of it. After every step the guarantees of docs/guarantees.md must hold, and the set of
live resources must be exactly the model's, each at an amount the model allows. At the end
everything is delivered, and eventual must equal the live units.
"""

from __future__ import annotations

import contextlib
import os
from datetime import timedelta
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from functions.adapters import keys
from functions.core import accounts
from functions.core.counting import process_pending
from functions.core.errors import IdempotencyKeyReused, LimitExceeded, ResourceNotFound
from functions.core.healing import HealOutcome, heal_account
from functions.core.model import NewResource, Quota, idempotent_resource_id
from functions.shared.wiring import Wiring
from tests.conftest import fresh_backend, on_dynamodb_local
from tests.support.faults import Faults
from tests.support.sessions import new_session
from tests.support.stream import StreamTap, process_stream_records
from tests.support.truth import AccountTruth, assert_invariants, read_truth

ACCOUNT = "prop"
LIMITS = {Quota(ACCOUNT): 8, Quota(ACCOUNT, "seats"): 4, Quota(ACCOUNT, "projects"): 6}
AMOUNTS = st.integers(1, 3)
QUOTAS = st.sampled_from(list(LIMITS))

# Where a flow can crash: the write just landed, then the function died (self.faults.API_WRITES).
CREATE_CRASHES = ("reserve", "put", "commit")
DELETE_CRASHES = ("take-deletion", "soft-delete", "finish-deletion")
RESIZE_CRASHES = ("take-growth", "take-shrink", "resize", "commit-growth", "finish-shrink")


class CounterMachine(RuleBasedStateMachine):
    # The emulator the test was given (hypothesis builds the machine without arguments).
    endpoint_url: ClassVar[str]
    shared_emulator: ClassVar[bool]

    def __init__(self) -> None:
        super().__init__()
        self.backend = fresh_backend(self.endpoint_url, self.shared_emulator)
        self.wiring = self.backend.wiring
        self.clock = self.backend.clock
        self.faults = Faults(self.wiring)
        self.tap = StreamTap(self.backend.streams, self.backend.stream_arn)
        self.delivered: list[list[dict[str, Any]]] = []
        # The model, per quota: resources a caller would find, and crashed creates and deletes,
        # whose either outcome is correct.
        self.live: dict[Quota, set[str]] = {quota: set() for quota in LIMITS}
        self.maybe: dict[Quota, set[str]] = {quota: set() for quota in LIMITS}
        # The amounts a resource may hold: one, or two after a resize that crashed.
        self.amounts: dict[tuple[Quota, str], set[int]] = {}
        for quota, limit in LIMITS.items():
            accounts.put_limit(
                self.wiring.api_store,
                quota,
                accounts.limit_change(limit, self.clock.epoch_ms()),
                self.clock.timestamp,
            )

    # -- API --------------------------------------------------------------------------------

    @rule(quota=QUOTAS, key=st.integers(0, 9), amount=AMOUNTS)
    def create(self, quota: Quota, key: int, amount: int) -> None:
        """The same keys on every type: each names a resource of its own there. A key's amount is
        its own (a key sent again with another amount would be another request)."""
        resource_id = idempotent_resource_id(quota, f"k{key}")
        try:
            created = accounts.create_resource(
                self.wiring.api_store, quota, self._new(key), f"k{key}", self.clock.timestamp
            )
        except LimitExceeded:
            assert resource_id not in self.live[quota]
            return
        except IdempotencyKeyReused:  # the key's resource was deleted: replaying must not resurrect it
            assert resource_id not in self.live[quota]
            return
        if not created.replayed:
            self.amounts[(quota, resource_id)] = {created.resource.amount}
        self.live[quota].add(created.resource.resource_id)
        self.maybe[quota].discard(created.resource.resource_id)

    @staticmethod
    def _new(key: int) -> NewResource:
        return NewResource(f"k{key}", amount=1 + key % 3)

    @rule(quota=QUOTAS, key=st.integers(0, 9), point=st.sampled_from(CREATE_CRASHES))
    def create_and_crash(self, quota: Quota, key: int, point: str) -> None:
        self.faults.crash_after_write(point)
        resource_id = idempotent_resource_id(quota, f"k{key}")
        with contextlib.suppress(self.faults.SimulatedCrash, LimitExceeded, IdempotencyKeyReused):
            accounts.create_resource(self.wiring.api_store, quota, self._new(key), f"k{key}", self.clock.timestamp)
        self._disarm()
        if resource_id not in self.live[quota]:
            self.maybe[quota].add(resource_id)  # landed or not, depending on where it crashed
            self.amounts[(quota, resource_id)] = {self._new(key).amount}

    @precondition(lambda self: any(self.live.values()))
    @rule(data=st.data(), amount=st.integers(1, 4))
    def resize(self, data: st.DataObject, amount: int) -> None:
        quota, resource_id = data.draw(st.sampled_from(self._live_pairs()))
        try:
            resized = accounts.resize_resource(self.wiring.api_store, quota, resource_id, amount, self.clock.timestamp)
        except LimitExceeded:
            return
        assert resized.amount == amount
        self.amounts[(quota, resource_id)] = {amount}

    @precondition(lambda self: any(self.live.values()))
    @rule(data=st.data(), amount=st.integers(1, 4), point=st.sampled_from(RESIZE_CRASHES))
    def resize_and_crash(self, data: st.DataObject, amount: int, point: str) -> None:
        quota, resource_id = data.draw(st.sampled_from(self._live_pairs()))
        self.faults.crash_after_write(point)
        with contextlib.suppress(self.faults.SimulatedCrash, LimitExceeded):
            accounts.resize_resource(self.wiring.api_store, quota, resource_id, amount, self.clock.timestamp)
        self._disarm()
        self.amounts[(quota, resource_id)].add(amount)  # landed or not, depending on where it crashed

    @precondition(lambda self: any(self.live.values()))
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        quota, resource_id = data.draw(st.sampled_from(self._live_pairs()))
        with contextlib.suppress(ResourceNotFound):
            accounts.delete_resource(self.wiring.api_store, quota, resource_id, self.clock.timestamp)
        self.live[quota].discard(resource_id)

    @precondition(lambda self: any(self.live.values()))
    @rule(data=st.data(), point=st.sampled_from(DELETE_CRASHES))
    def delete_and_crash(self, data: st.DataObject, point: str) -> None:
        quota, resource_id = data.draw(st.sampled_from(self._live_pairs()))
        self.faults.crash_after_write(point)
        with contextlib.suppress(self.faults.SimulatedCrash, ResourceNotFound):
            accounts.delete_resource(self.wiring.api_store, quota, resource_id, self.clock.timestamp)
        self._disarm()
        self.live[quota].discard(resource_id)
        self.maybe[quota].add(resource_id)

    def _live_pairs(self) -> list[tuple[Quota, str]]:
        return sorted((quota, resource_id) for quota, live in self.live.items() for resource_id in live)

    # -- the stream --------------------------------------------------------------------------

    @rule(take=st.integers(1, 6))
    def deliver_next(self, take: int) -> None:
        pending = self.tap.drain()
        for start in range(0, len(pending), take):
            batch = pending[start : start + take]
            process_stream_records(self.wiring.counting_store, batch)
            self.delivered.append(batch)

    @precondition(lambda self: bool(self.delivered))
    @rule(data=st.data())
    def replay_an_old_batch(self, data: st.DataObject) -> None:
        """A duplicate, or a late replay from DLQ 1 arriving after newer batches."""
        batch = data.draw(st.sampled_from(self.delivered))
        process_stream_records(self.wiring.counting_store, batch)

    @rule()
    def sweep(self) -> None:
        store = self.wiring.counting_store
        process_pending(store, store.pending_records(None))

    @rule(quota=QUOTAS, quiet=st.sampled_from([timedelta(0), timedelta(hours=1)]))
    def heal(self, quota: Quota, quiet: timedelta) -> None:
        outcome = heal_account(self.wiring.healing_store, quota, self.clock.now(), quiet).outcome
        assert outcome is not HealOutcome.NOT_FOUND

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def counters_keep_their_bounds(self) -> None:
        # One read of the table serves every check of the step.
        truths = assert_invariants(self.backend.dynamodb, self.backend.table)
        for quota, limit in LIMITS.items():
            assert truths.get(keys.account_pk(quota), AccountTruth()).live <= limit, quota

    @invariant()
    def live_resources_are_the_models(self) -> None:
        for quota in LIMITS:
            found = self._live(quota)
            live, model, maybe = set(found), self.live[quota], self.maybe[quota]
            assert model <= live, f"{quota} missing: {model - live}"
            assert live <= model | maybe, f"{quota} unexpected: {live - model - maybe}"
            for resource_id, amount in found.items():
                allowed = self.amounts[(quota, resource_id)]
                assert amount in allowed, f"{quota} {resource_id}: amount {amount}, not one of {allowed}"
                self.amounts[(quota, resource_id)] = {amount}  # what a crashed resize left, from now on

    def _live(self, quota: Quota) -> dict[str, int]:
        page = self.wiring.api_store.list_resources(quota, 100, None)
        return {resource.resource_id: resource.amount for resource in page.items}

    def teardown(self) -> None:
        try:
            # Quiescence: everything delivered (twice over, to settle the consumer's own writes).
            for _ in range(3):
                process_stream_records(self.wiring.counting_store, self.tap.drain())
            truths = read_truth(self.backend.dynamodb, self.backend.table)
            for quota in LIMITS:
                truth = truths.get(keys.account_pk(quota), AccountTruth())
                assert truth.eventual == truth.live == truth.processed, quota
        finally:
            self._disarm()
            if self.shared_emulator:
                self.backend.drop()  # each example has a table of its own (tests/conftest.py, Backend.drop)

    def _disarm(self) -> None:
        """A new wiring, without the hooks of the crash just injected."""
        self.wiring = Wiring(self.wiring.settings, new_session(), self.endpoint_url, self.clock)
        self.faults = Faults(self.wiring)


@pytest.mark.engine
@pytest.mark.slow
def test_random_interleavings_keep_every_invariant(dynamodb_url: str, request: pytest.FixtureRequest) -> None:
    class OnThisEmulator(CounterMachine):
        endpoint_url = dynamodb_url
        shared_emulator = on_dynamodb_local(request.config, request.node)

    run_state_machine_as_test(
        OnThisEmulator,
        settings=settings(
            max_examples=int(os.environ.get("PROPERTY_EXAMPLES", "25")),
            stateful_step_count=20,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            derandomize=True,  # the same interleavings every run: a failure reproduces
        ),
    )

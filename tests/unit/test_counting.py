"""The eventual counter's rules: planning, decisions from CancellationReasons, and application.

Records here are the core's own `ResourceRecord`s; tests/unit/test_resource_records.py decodes
them from stream records and pending-index entries, and checks them against the stream filter."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from functions.core.counting import (
    COMMITTED,
    EVENTUAL_COUNTER_SHARDS,
    GONE,
    ActionKind,
    CancellationReason,
    CountingTask,
    ItemRecord,
    LimitChangedRecord,
    Outcome,
    ResourceAction,
    ResourceRecord,
    ResourceState,
    TaskKind,
    TransactionResult,
    apply_tasks,
    counter_shard,
    decide_action,
    plan_record,
    process_records,
)
from functions.core.errors import StoreUnavailable
from functions.core.model import Quota
from functions.core.thresholds import DEFAULT_THRESHOLDS, UNBOUNDED, Bands, CounterShard, Decision, Direction

A1, A2 = Quota("a1"), Quota("a2")

ALL_NON_CONDITION_CODES = [
    "TransactionConflict",
    "ThrottlingError",
    "ProvisionedThroughputExceeded",
    "ValidationError",
    "ItemCollectionSizeLimitExceeded",
]


def apply_task(store: Any, task: CountingTask) -> Outcome:
    """One task alone, as a batch of one record applies it."""
    return apply_tasks(store, [task])[0]


CREATE = CountingTask(TaskKind.COUNT_CREATE, A1, "r1")
REMOVE = CountingTask(TaskKind.REMOVE_DELETED, A1, "r1")
REMOVE_COUNTED = CountingTask(TaskKind.REMOVE_DELETED, A1, "r1", counted=True)
REMOVE_UNCOUNTED = CountingTask(TaskKind.REMOVE_DELETED, A1, "r1", counted=False)


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (ResourceRecord(A1, "r1", deleted=False, counter_processed=False), CREATE),
        (ResourceRecord(A1, "r1", deleted=True, counter_processed=True), REMOVE_COUNTED),
        (ResourceRecord(A1, "r1", deleted=True, counter_processed=False), REMOVE_UNCOUNTED),
        (ResourceRecord(A1, "r1", deleted=True), REMOVE),  # a pending entry may lack the flag
        (ResourceRecord(A1, "r1", deleted=False, counter_processed=True), None),  # the consumer's own flag flip
        (ResourceRecord(A1, "r1", deleted=False), None),  # no flag at all: not ours to count
        (ResourceRecord(A1, "r1"), None),
    ],
)
def test_plan_record(record: ResourceRecord, expected: CountingTask | None) -> None:
    assert plan_record(record) == expected


def cancelled(own: str, other: str = "None", item: ResourceState | None = None) -> TransactionResult:
    return TransactionResult((CancellationReason(own, item), CancellationReason(other)))


def reason(code: str, item: ResourceState | None = None) -> CancellationReason:
    return CancellationReason(code, item)


UNCOUNTED = ResourceState(True, deleted=True, counter_processed=False)
COUNTED_AND_DELETED = ResourceState(True, deleted=True, counter_processed=True)
LIVE = ResourceState(True, deleted=False, counter_processed=True)  # the id names a newer, live resource


@pytest.mark.parametrize(
    ("kind", "why", "expected"),
    [
        (ActionKind.COUNT_CREATE, reason("None"), None),  # not the cause: send it again
        (ActionKind.COUNT_CREATE, reason("ConditionalCheckFailed"), Outcome.ALREADY_DONE),
        (ActionKind.COUNT_CREATE, reason("ConditionalCheckFailed", UNCOUNTED), Outcome.ALREADY_DONE),
        *[(ActionKind.COUNT_CREATE, reason(code), Outcome.RETRY) for code in ALL_NON_CONDITION_CODES],
        (ActionKind.REMOVE_COUNTED, reason("ConditionalCheckFailed", GONE), Outcome.ALREADY_DONE),
        (ActionKind.REMOVE_COUNTED, reason("ConditionalCheckFailed", None), Outcome.ALREADY_DONE),
        (ActionKind.REMOVE_COUNTED, reason("ConditionalCheckFailed", LIVE), Outcome.ALREADY_DONE),
        (ActionKind.REMOVE_COUNTED, reason("ConditionalCheckFailed", UNCOUNTED), ActionKind.REMOVE_UNCOUNTED),
        (ActionKind.REMOVE_COUNTED, reason("ConditionalCheckFailed", COUNTED_AND_DELETED), Outcome.RETRY),
        *[(ActionKind.REMOVE_COUNTED, reason(code), Outcome.RETRY) for code in ALL_NON_CONDITION_CODES],
        (ActionKind.REMOVE_UNCOUNTED, reason("ConditionalCheckFailed", COUNTED_AND_DELETED), ActionKind.REMOVE_COUNTED),
        (ActionKind.REMOVE_UNCOUNTED, reason("ConditionalCheckFailed", GONE), Outcome.ALREADY_DONE),
        (ActionKind.REMOVE_UNCOUNTED, reason("ConditionalCheckFailed", LIVE), Outcome.ALREADY_DONE),
        (ActionKind.REMOVE_UNCOUNTED, reason("None"), None),
    ],
)
def test_decide_action(kind: ActionKind, why: CancellationReason, expected: object) -> None:
    assert decide_action(kind, why) == expected


def test_decisions_ignore_message_text() -> None:
    # Whatever a message might say, only the code counts (the peer matched on message text).
    assert decide_action(ActionKind.COUNT_CREATE, CancellationReason("TransactionConflict", None)) is Outcome.RETRY


@dataclass
class ScriptedStore:
    """Answers each call with the next scripted result and records the calls."""

    count_results: list[Any] = field(default_factory=list)
    remove_results: list[Any] = field(default_factory=list)
    uncounted_results: list[Any] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)

    def _next(self, name: str, results: list[Any]) -> Any:
        self.calls.append(name)
        result = results.pop(0)
        if isinstance(result, Exception):
            raise result
        return result

    def apply_actions(self, account_id: str, actions: Sequence[ResourceAction]) -> TransactionResult:
        """One action a call (each test's tasks are on distinct accounts or alone): scripted by kind."""
        assert len(actions) == 1, actions
        kind = actions[0].kind
        results = {
            ActionKind.COUNT_CREATE: self.count_results,
            ActionKind.REMOVE_COUNTED: self.remove_results,
            ActionKind.REMOVE_UNCOUNTED: self.uncounted_results,
        }[kind]
        return self._next(kind.value, results)  # type: ignore[no-any-return]


def test_remove_of_a_never_counted_create_skips_the_counter() -> None:
    store = ScriptedStore(
        remove_results=[cancelled("ConditionalCheckFailed", item=UNCOUNTED)],
        uncounted_results=[COMMITTED],
    )
    assert apply_task(store, REMOVE) is Outcome.APPLIED
    assert store.calls == ["remove_counted", "remove_uncounted"]


def test_remove_goes_round_when_the_create_is_counted_meanwhile() -> None:
    store = ScriptedStore(
        remove_results=[cancelled("ConditionalCheckFailed", item=UNCOUNTED), COMMITTED],
        uncounted_results=[TransactionResult((reason("ConditionalCheckFailed", COUNTED_AND_DELETED),))],
    )
    assert apply_task(store, REMOVE) is Outcome.APPLIED
    assert store.calls == ["remove_counted", "remove_uncounted", "remove_counted"]


@pytest.mark.parametrize("current", [GONE, ResourceState(True, deleted=False)])
def test_remove_uncounted_finding_nothing_to_remove_is_done(current: ResourceState) -> None:
    store = ScriptedStore(
        remove_results=[cancelled("ConditionalCheckFailed", item=UNCOUNTED)],
        uncounted_results=[TransactionResult((reason("ConditionalCheckFailed", current),))],
    )
    assert apply_task(store, REMOVE) is Outcome.ALREADY_DONE


def test_remove_that_keeps_flipping_is_retried_later() -> None:
    flip = cancelled("ConditionalCheckFailed", item=UNCOUNTED)
    store = ScriptedStore(
        remove_results=[flip, flip, flip],
        uncounted_results=[TransactionResult((reason("ConditionalCheckFailed", COUNTED_AND_DELETED),))] * 3,
    )
    assert apply_task(store, REMOVE) is Outcome.RETRY


@pytest.mark.parametrize("task", [CREATE, REMOVE])
def test_a_failed_call_is_retried(task: CountingTask) -> None:
    throttled = StoreUnavailable("throttled", may_have_landed=False)
    store = ScriptedStore(count_results=[throttled], remove_results=[StoreUnavailable("x", may_have_landed=True)])
    assert apply_task(store, task) is Outcome.RETRY


# --- batches: one transaction per account, folded per resource ------------------------------------


@dataclass
class BatchStore:
    """Answers each transaction with the next scripted result and records its actions."""

    results: list[TransactionResult]
    calls: list[list[ResourceAction]] = field(default_factory=list)

    def apply_actions(self, account_id: str, actions: Sequence[ResourceAction]) -> TransactionResult:
        self.calls.append(list(actions))
        return self.results.pop(0)


def insert(resource: str, seq: str, shard: int = 0, account: Quota = A1) -> ItemRecord:
    """A created resource's stream record, by its sequence number."""
    return seq, ResourceRecord(account, resource, deleted=False, counter_processed=False, shard=shard)


def deleted(resource: str, seq: str, counted: bool = True, shard: int = 0) -> ItemRecord:
    """A soft-deleted resource's stream record."""
    return seq, ResourceRecord(A1, resource, deleted=True, counter_processed=counted, shard=shard)


NOT_A_RESOURCE = None  # what a record of another item, or a REMOVE record, says of a resource


def test_a_batch_is_one_transaction_and_reports_exactly_the_failed_sequence_numbers() -> None:
    # r1 commits once the others are settled, r2 conflicts, r3 was counted by an earlier delivery.
    store = BatchStore(
        [
            TransactionResult((reason("None"), reason("TransactionConflict"), reason("ConditionalCheckFailed"))),
            COMMITTED,
        ]
    )
    records = [insert("r1", "101"), insert("r2", "102"), insert("r3", "103"), ("104", NOT_A_RESOURCE)]
    report = process_records(store, records)
    assert report.failed == ["102"]
    assert report.outcomes == {Outcome.APPLIED: 1, Outcome.RETRY: 1, Outcome.ALREADY_DONE: 1, Outcome.SKIPPED: 1}
    assert [[action.resource_id for action in call] for call in store.calls] == [["r1", "r2", "r3"], ["r1"]]


def test_replays_and_duplicates_of_a_resource_fold_into_one_action() -> None:
    store = BatchStore([COMMITTED])
    report = process_records(store, [insert("r1", "101"), insert("r1", "101"), insert("r2", "102")])
    assert store.calls == [
        [ResourceAction(ActionKind.COUNT_CREATE, "r1"), ResourceAction(ActionKind.COUNT_CREATE, "r2")]
    ]
    assert report.outcomes == {Outcome.APPLIED: 3}


def test_a_resource_created_and_deleted_in_one_batch_is_removed_uncounted_at_once() -> None:
    # The removal supersedes the count, and its record says the create was never counted: a flag
    # that cannot change once the resource is soft-deleted.
    store = BatchStore([COMMITTED])
    report = process_records(store, [insert("r1", "101"), deleted("r1", "102", counted=False)])
    assert store.calls == [[ResourceAction(ActionKind.REMOVE_UNCOUNTED, "r1")]]
    assert report.outcomes == {Outcome.APPLIED: 2}


def test_a_removal_whose_count_is_unknown_tries_the_counted_removal_first() -> None:
    store = BatchStore([TransactionResult((reason("ConditionalCheckFailed", UNCOUNTED),)), COMMITTED])
    assert apply_task(store, REMOVE) is Outcome.APPLIED
    assert store.calls == [
        [ResourceAction(ActionKind.REMOVE_COUNTED, "r1")],
        [ResourceAction(ActionKind.REMOVE_UNCOUNTED, "r1")],
    ]


def test_an_accounts_actions_go_in_transactions_of_at_most_99() -> None:
    store = BatchStore([COMMITTED, COMMITTED])
    report = process_records(store, [insert(f"r{n}", str(n)) for n in range(150)])
    assert [len(call) for call in store.calls] == [99, 51]
    assert report.outcomes == {Outcome.APPLIED: 150}


def test_accounts_are_transacted_apart() -> None:
    store = BatchStore([COMMITTED, COMMITTED])
    process_records(store, [insert("r1", "101"), insert("r2", "102", account=A2)])
    assert len(store.calls) == 2


def test_a_failed_counter_action_retries_the_whole_batch_later() -> None:
    store = BatchStore([TransactionResult((reason("None"), reason("None"), reason("ThrottlingError")))])
    report = process_records(store, [insert("r1", "101"), insert("r2", "102")])
    assert report.failed == ["101", "102"]
    assert len(store.calls) == 1  # a throttle is not retried at once


def test_a_batch_reports_the_records_of_the_creates_it_settled() -> None:
    """The consumer's counting lag reads them: a create counted now or found done, not one that
    failed, nor a removal."""
    store = BatchStore(
        [
            TransactionResult(
                (reason("None"), reason("TransactionConflict"), reason("ConditionalCheckFailed"), reason("None"))
            ),
            COMMITTED,
        ]
    )
    records = [insert("r1", "101"), insert("r2", "102"), insert("r3", "103"), deleted("r4", "104")]
    report = process_records(store, records)
    assert report.creates_done == [records[0][1], records[2][1]]


# --- counter shards ------------------------------------------------------------------------------


def test_only_a_batch_with_a_resource_admitted_above_shard_0_adds_to_a_counter_shard_above_0() -> None:
    """Readers add up the counter shards above 0 only for an account whose admission shards
    spread (shard_span > 1): a quiet account's batches, however large, keep to counter 0."""
    quiet = [ResourceAction(ActionKind.COUNT_CREATE, f"r{n}") for n in range(99)]
    assert counter_shard(quiet) == 0
    busy = [*quiet, ResourceAction(ActionKind.COUNT_CREATE, "r-busy", shard=3)]
    spread = {counter_shard([ResourceAction(ActionKind.COUNT_CREATE, f"b{n}", shard=1)]) for n in range(200)}
    assert 0 <= counter_shard(busy) < EVENTUAL_COUNTER_SHARDS
    assert spread == set(range(EVENTUAL_COUNTER_SHARDS))


def test_folding_keeps_the_admission_shard_of_each_resource() -> None:
    store = BatchStore([COMMITTED])
    process_records(store, [insert("r1", "101", shard=2), deleted("r1", "102", shard=2)])
    assert store.calls == [[ResourceAction(ActionKind.REMOVE_COUNTED, "r1", shard=2)]]


# --- usage thresholds: a failed headroom condition decides ----------------------------------------


@dataclass
class DecidingStore:
    """Scripted answers to the usual transactions and to decisions; the counter shards and bands
    a decision reads; the decisions written."""

    results: list[TransactionResult]
    decision_results: list[TransactionResult]
    shards: list[CounterShard]
    bands: Bands = field(default_factory=lambda: Bands(100, DEFAULT_THRESHOLDS))
    calls: list[str] = field(default_factory=list)
    decided: list[tuple[list[ResourceAction], Decision]] = field(default_factory=list)
    reads: list[tuple[CounterShard, int]] = field(default_factory=list)
    settle_fails: bool = False

    def apply_actions(self, quota: Quota, actions: Sequence[ResourceAction]) -> TransactionResult:
        self.calls.append(f"transaction of {len(actions)}")
        return self.results.pop(0)

    def read_for_decision(self, quota: Quota, seen: CounterShard, target: int) -> tuple[Bands, list[CounterShard]]:
        self.calls.append("read")
        self.reads.append((seen, target))
        return self.bands, self.shards

    def decided_on(self, quota: Quota) -> Quota | None:
        return quota  # a holding quota's crossings are its own

    def apply_decision(self, quota: Quota, actions: Sequence[ResourceAction], decision: Decision) -> TransactionResult:
        self.calls.append(f"decision of {len(actions)}")
        self.decided.append((list(actions), decision))
        return self.decision_results.pop(0)

    def settle_limit_change(self, quota: Quota, limit_version: int) -> None:
        self.calls.append(f"settle {limit_version}")
        if self.settle_fails:
            raise StoreUnavailable("throttled", may_have_landed=False)


def no_headroom(counter: CounterShard, actions: int = 1) -> TransactionResult:
    """The counter's condition failed (its headroom does not allow the batch), nothing else did."""
    return TransactionResult(tuple(reason("None") for _ in range(actions)), counter)


def test_a_batch_that_may_cross_is_decided_from_the_counter_the_cancellation_gave() -> None:
    at_79 = CounterShard(0, 79, up_room=1, down_room=UNBOUNDED)
    store = DecidingStore([no_headroom(at_79)], [COMMITTED], [at_79])
    report = process_records(store, [insert("r1", "101")])
    assert report.outcomes == {Outcome.APPLIED: 1}
    assert store.calls == ["transaction of 1", "read", "decision of 1"]
    assert store.reads == [(at_79, 0)]
    [(actions, decision)] = store.decided
    assert actions == [ResourceAction(ActionKind.COUNT_CREATE, "r1")]
    assert [(c.threshold, c.direction, c.usage, c.seq) for c in decision.crossings] == [(80, Direction.UP, 80, 1)]


def test_a_decision_whose_counter_moved_decides_again_from_a_new_read() -> None:
    at_79 = CounterShard(0, 79, up_room=1, down_room=UNBOUNDED)
    moved = CounterShard(0, 80, up_room=20, down_room=0, version=1)
    store = DecidingStore([no_headroom(at_79)], [no_headroom(moved), COMMITTED], [at_79])
    assert process_records(store, [insert("r1", "101")]).outcomes == {Outcome.APPLIED: 1}
    assert store.calls == ["transaction of 1", "read", "decision of 1", "read", "decision of 1"]
    assert store.reads[1][0] == moved


def test_a_decision_takes_fewer_actions_to_fit_its_shards_and_outbox_items_and_the_rest_go_on() -> None:
    """100 items at most: 8 counter shards and 2 possible outbox items leave 90 actions."""
    shards = [CounterShard(shard, 0) for shard in range(EVENTUAL_COUNTER_SHARDS)]
    store = DecidingStore([no_headroom(CounterShard(3, exists=False), 99), COMMITTED], [COMMITTED], shards)
    records = [insert(f"r{n}", str(n), shard=1) for n in range(99)]
    report = process_records(store, records)
    assert report.outcomes == {Outcome.APPLIED: 99}
    assert store.calls == ["transaction of 99", "read", "decision of 90", "transaction of 9"]


def test_a_decision_also_leaves_room_for_announced_thresholds_the_quota_no_longer_has() -> None:
    """Thresholds changed from 80 and 100 (both announced) to 10 of its own: up to 12 crossings
    (its 10, and 80 and 100 down), so 8 counter shards leave 80 actions."""
    above = frozenset({80, 100})
    shards = [CounterShard(0, 0, above=above), *(CounterShard(shard, 0) for shard in range(1, EVENTUAL_COUNTER_SHARDS))]
    own = Bands(100, tuple(range(5, 55, 5)))
    store = DecidingStore([no_headroom(CounterShard(3, exists=False), 99), COMMITTED], [COMMITTED], shards, own)
    report = process_records(store, [insert(f"r{n}", str(n), shard=1) for n in range(99)])
    assert report.outcomes == {Outcome.APPLIED: 99}
    assert store.calls == ["transaction of 99", "read", "decision of 80", "transaction of 19"]


def test_a_counter_that_fails_for_another_reason_is_not_decided_but_retried_later() -> None:
    store = DecidingStore([TransactionResult((reason("None"), reason("TransactionConflict")))], [], [])
    assert process_records(store, [insert("r1", "101")]).failed == ["101"]
    assert store.calls == ["transaction of 1"]


def test_a_limit_change_leaves_the_pending_index_once_decided_and_only_then() -> None:
    at_90 = CounterShard(0, 90, up_room=10, down_room=10)
    records: list[ItemRecord] = [("1", LimitChangedRecord(Quota("a1"), 3)), ("2", LimitChangedRecord(Quota("a1"), 4))]
    store = DecidingStore([], [COMMITTED], [at_90])
    assert process_records(store, records).outcomes == {Outcome.APPLIED: 2}
    assert store.calls == ["read", "decision of 0", "settle 3", "settle 4"]  # one decision for both

    undecided = DecidingStore([], [TransactionResult(cancelled=True)], [at_90])  # throttled: retried later
    assert process_records(undecided, records).failed == ["1", "2"]
    assert undecided.calls == ["read", "decision of 0"]

    unsettled = DecidingStore([], [COMMITTED], [at_90], settle_fails=True)
    assert process_records(unsettled, records).failed == ["1", "2"]  # decided again later: harmless

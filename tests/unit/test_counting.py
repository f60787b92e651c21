"""The eventual counter's rules: planning, decisions from CancellationReasons, and application."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from functions.core import schema
from functions.core.counting import (
    COMMITTED,
    GONE,
    CancellationReason,
    ConditionalDeleteResult,
    CountingTask,
    Outcome,
    RemovalDecision,
    ResourceState,
    TaskKind,
    TransactionResult,
    TransientStoreError,
    apply_task,
    decide_count_create,
    decide_remove_counted,
    plan_pending_item,
    plan_stream_record,
    process_pending_items,
    process_stream_records,
)
from local.filters import matches_any

ALL_NON_CONDITION_CODES = [
    "TransactionConflict",
    "ThrottlingError",
    "ProvisionedThroughputExceeded",
    "ValidationError",
    "ItemCollectionSizeLimitExceeded",
]


def record(event: str, sk: str = "RESOURCE#r1", seq: str = "100", **image: bool) -> dict[str, Any]:
    data: dict[str, Any] = {"Keys": {"pk": {"S": "ACCOUNT#a1"}, "sk": {"S": sk}}, "SequenceNumber": seq}
    if event != "REMOVE":
        data["NewImage"] = {name: {"BOOL": value} for name, value in image.items()}
    return {"eventName": event, "dynamodb": data}


CREATE = CountingTask(TaskKind.COUNT_CREATE, "a1", "r1")
REMOVE = CountingTask(TaskKind.REMOVE_DELETED, "a1", "r1")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (record("INSERT", counter_processed=False, deleted=False), CREATE),
        (record("MODIFY", counter_processed=True, deleted=True), REMOVE),
        (record("MODIFY", counter_processed=False, deleted=True), REMOVE),
        (record("MODIFY", counter_processed=True, deleted=False), None),  # the consumer's own flag flip
        (record("REMOVE"), None),  # the consumer's own hard delete
        (record("INSERT", sk="ACCOUNT", counter_processed=False), None),  # account item
        (record("MODIFY", sk="COUNTER"), None),  # eventual counter item
        (record("INSERT", deleted=False), None),  # no flag at all: not ours to count
        ({"eventName": "INSERT"}, None),  # malformed
    ],
)
def test_plan_stream_record(raw: dict[str, Any], expected: CountingTask | None) -> None:
    assert plan_stream_record(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        record("INSERT", counter_processed=False, deleted=False),
        record("MODIFY", counter_processed=True, deleted=True),
        record("MODIFY", counter_processed=False, deleted=True),
        record("MODIFY", counter_processed=True, deleted=False),
        record("INSERT", sk="ACCOUNT", counter_processed=False),
        record("MODIFY", sk="COUNTER"),
    ],
)
def test_code_agrees_with_the_event_source_filter(raw: dict[str, Any]) -> None:
    """Redriven ranges are unfiltered: the code must select exactly what the filter lets through."""
    filtered_in = matches_any(schema.STREAM_FILTER_PATTERNS, raw)
    assert filtered_in == (plan_stream_record(raw) is not None)


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ({"pk": "ACCOUNT#a1", "sk": "RESOURCE#r1", "counter_processed": False, "deleted": False}, CREATE),
        ({"pk": "ACCOUNT#a1", "sk": "RESOURCE#r1", "counter_processed": True, "deleted": True}, REMOVE),
        ({"pk": "ACCOUNT#a1", "sk": "RESOURCE#r1", "counter_processed": False, "deleted": True}, REMOVE),
        ({"pk": "ACCOUNT#a1", "sk": "RESOURCE#r1", "counter_processed": True, "deleted": False}, None),
        ({"pk": "ACCOUNT#a1", "sk": "ACCOUNT"}, None),
    ],
)
def test_plan_pending_item(item: dict[str, Any], expected: CountingTask | None) -> None:
    assert plan_pending_item(item) == expected


def cancelled(own: str, other: str = "None", item: ResourceState | None = None) -> TransactionResult:
    return TransactionResult((CancellationReason(own, item), CancellationReason(other)))


def test_count_create_committed_is_applied() -> None:
    assert decide_count_create(COMMITTED) is Outcome.APPLIED


def test_count_create_condition_failure_on_own_action_means_done() -> None:
    assert decide_count_create(cancelled("ConditionalCheckFailed")) is Outcome.ALREADY_DONE


@pytest.mark.parametrize("code", ALL_NON_CONDITION_CODES)
def test_count_create_any_other_own_code_is_retried(code: str) -> None:
    assert decide_count_create(cancelled(code)) is Outcome.RETRY


@pytest.mark.parametrize("code", ALL_NON_CONDITION_CODES)
def test_count_create_a_failed_counter_action_is_retried(code: str) -> None:
    assert decide_count_create(cancelled("None", other=code)) is Outcome.RETRY


def test_decisions_ignore_message_text() -> None:
    misleading = TransactionResult((CancellationReason("TransactionConflict", None), CancellationReason("None")))
    # Whatever a message might say, only the code counts (the peer matched on message text).
    assert decide_count_create(misleading) is Outcome.RETRY


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (COMMITTED, RemovalDecision.DONE),
        (cancelled("ConditionalCheckFailed", item=GONE), RemovalDecision.ALREADY_DONE),
        (cancelled("ConditionalCheckFailed", item=None), RemovalDecision.ALREADY_DONE),
        (
            cancelled("ConditionalCheckFailed", item=ResourceState(True, deleted=False, counter_processed=True)),
            RemovalDecision.ALREADY_DONE,  # the id names a newer, live resource
        ),
        (
            cancelled("ConditionalCheckFailed", item=ResourceState(True, deleted=True, counter_processed=False)),
            RemovalDecision.REMOVE_UNCOUNTED,
        ),
        (
            cancelled("ConditionalCheckFailed", item=ResourceState(True, deleted=True, counter_processed=True)),
            RemovalDecision.RETRY,
        ),
        *[(cancelled(code), RemovalDecision.RETRY) for code in ALL_NON_CONDITION_CODES],
        *[(cancelled("None", other=code), RemovalDecision.RETRY) for code in ALL_NON_CONDITION_CODES],
    ],
)
def test_decide_remove_counted(result: TransactionResult, expected: RemovalDecision) -> None:
    assert decide_remove_counted(result) is expected


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

    def count_create(self, account_id: str, resource_id: str) -> TransactionResult:
        return self._next("count_create", self.count_results)  # type: ignore[no-any-return]

    def remove_counted(self, account_id: str, resource_id: str) -> TransactionResult:
        return self._next("remove_counted", self.remove_results)  # type: ignore[no-any-return]

    def remove_uncounted(self, account_id: str, resource_id: str) -> ConditionalDeleteResult:
        return self._next("remove_uncounted", self.uncounted_results)  # type: ignore[no-any-return]


UNCOUNTED = ResourceState(True, deleted=True, counter_processed=False)
COUNTED_AND_DELETED = ResourceState(True, deleted=True, counter_processed=True)


def test_remove_of_a_never_counted_create_skips_the_counter() -> None:
    store = ScriptedStore(
        remove_results=[cancelled("ConditionalCheckFailed", item=UNCOUNTED)],
        uncounted_results=[ConditionalDeleteResult(deleted=True)],
    )
    assert apply_task(store, REMOVE) is Outcome.APPLIED
    assert store.calls == ["remove_counted", "remove_uncounted"]


def test_remove_goes_round_when_the_create_is_counted_meanwhile() -> None:
    store = ScriptedStore(
        remove_results=[cancelled("ConditionalCheckFailed", item=UNCOUNTED), COMMITTED],
        uncounted_results=[ConditionalDeleteResult(deleted=False, current=COUNTED_AND_DELETED)],
    )
    assert apply_task(store, REMOVE) is Outcome.APPLIED
    assert store.calls == ["remove_counted", "remove_uncounted", "remove_counted"]


@pytest.mark.parametrize("current", [GONE, ResourceState(True, deleted=False)])
def test_remove_uncounted_finding_nothing_to_remove_is_done(current: ResourceState) -> None:
    store = ScriptedStore(
        remove_results=[cancelled("ConditionalCheckFailed", item=UNCOUNTED)],
        uncounted_results=[ConditionalDeleteResult(deleted=False, current=current)],
    )
    assert apply_task(store, REMOVE) is Outcome.ALREADY_DONE


def test_remove_that_keeps_flipping_is_retried_later() -> None:
    flip = cancelled("ConditionalCheckFailed", item=UNCOUNTED)
    store = ScriptedStore(
        remove_results=[flip, flip, flip],
        uncounted_results=[ConditionalDeleteResult(deleted=False, current=COUNTED_AND_DELETED)] * 3,
    )
    assert apply_task(store, REMOVE) is Outcome.RETRY


@pytest.mark.parametrize("task", [CREATE, REMOVE])
def test_a_failed_call_is_retried(task: CountingTask) -> None:
    store = ScriptedStore(count_results=[TransientStoreError("throttled")], remove_results=[TransientStoreError("x")])
    assert apply_task(store, task) is Outcome.RETRY


def test_batch_reports_exactly_the_failed_sequence_numbers() -> None:
    store = ScriptedStore(
        count_results=[COMMITTED, cancelled("TransactionConflict"), cancelled("ConditionalCheckFailed")]
    )
    records = [record("INSERT", seq=str(seq), counter_processed=False, deleted=False) for seq in (101, 102, 103)] + [
        record("REMOVE", seq="104")
    ]
    report = process_stream_records(store, records)
    assert report.failed == ["102"]
    assert report.outcomes == {Outcome.APPLIED: 1, Outcome.RETRY: 1, Outcome.ALREADY_DONE: 1, Outcome.SKIPPED: 1}


def test_sweep_reports_failed_items_by_key() -> None:
    store = ScriptedStore(count_results=[cancelled("ThrottlingError")])
    items = [{"pk": "ACCOUNT#a1", "sk": "RESOURCE#r1", "counter_processed": False, "deleted": False}]
    assert process_pending_items(store, items).failed == ["ACCOUNT#a1/RESOURCE#r1"]

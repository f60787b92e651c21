"""The eventual counter: what to do for each resource record, and how to read the outcome.

A unit of work is a `CountingTask` on one resource. It comes from a stream record (consumer,
redrive) or from a pending resource found by a sweep; either way `apply_task` runs it, so every
path applies exactly the same rules (SPEC section 3):

* COUNT_CREATE: one transaction sets counter_processed=true and adds 1 to the eventual counter,
  conditional on the flag still being false (and the resource not deleted: a create and a delete
  that were never counted cancel out).
* REMOVE_DELETED: one transaction hard-deletes the resource and subtracts 1, conditional on
  deleted=true and counter_processed=true; a resource whose create was never counted is
  hard-deleted without touching the counter.

A failed condition on the resource's own action means the work is already done. Every other
cancellation is retried. Decisions read the structured CancellationReasons codes only.
"""

from __future__ import annotations

import enum
import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from functions.core import keys, schema

logger = logging.getLogger(__name__)

CONDITIONAL_CHECK_FAILED = "ConditionalCheckFailed"
NO_FAILURE = "None"

# A resource can flip between the two removal paths while we look at it (its create being
# counted concurrently); a few re-reads settle it, after that the record is retried later.
MAX_REMOVAL_ATTEMPTS = 3


class TaskKind(enum.Enum):
    COUNT_CREATE = "count_create"
    REMOVE_DELETED = "remove_deleted"


class Outcome(enum.Enum):
    APPLIED = "applied"
    ALREADY_DONE = "already_done"
    SKIPPED = "skipped"  # not a record with counting work (filtered out by the event source on AWS)
    RETRY = "retry"


@dataclass(frozen=True)
class CountingTask:
    kind: TaskKind
    account_id: str
    resource_id: str


@dataclass(frozen=True)
class ResourceState:
    """The resource as a failed condition saw it (ReturnValuesOnConditionCheckFailure=ALL_OLD)."""

    exists: bool
    deleted: bool = False
    counter_processed: bool = False


GONE = ResourceState(exists=False)


@dataclass(frozen=True)
class CancellationReason:
    code: str
    item: ResourceState | None = None


@dataclass(frozen=True)
class TransactionResult:
    """Committed, or cancelled with one reason per action, in action order (resource first)."""

    reasons: tuple[CancellationReason, ...] = ()

    @property
    def committed(self) -> bool:
        return not self.reasons

    @property
    def own_reason(self) -> CancellationReason:
        return self.reasons[0]


COMMITTED = TransactionResult()


@dataclass(frozen=True)
class ConditionalDeleteResult:
    deleted: bool
    current: ResourceState = GONE


class TransientStoreError(Exception):
    """A call that failed as a whole (throttled, 5xx, network): retry the record later."""


class CountingStore(Protocol):
    def count_create(self, account_id: str, resource_id: str) -> TransactionResult: ...

    def remove_counted(self, account_id: str, resource_id: str) -> TransactionResult: ...

    def remove_uncounted(self, account_id: str, resource_id: str) -> ConditionalDeleteResult: ...


# --- planning ---------------------------------------------------------------------------------


def plan_stream_record(record: Mapping[str, Any]) -> CountingTask | None:
    """The task a raw Lambda stream record asks for, or None if it carries no counting work.

    Mirrors schema.STREAM_FILTER_PATTERNS, because redriven ranges were never filtered."""
    if record.get("eventName") not in ("INSERT", "MODIFY"):
        return None
    data = record.get("dynamodb") or {}
    ids = _resource_ids(data.get("Keys") or {})
    if ids is None:
        return None
    image = data.get("NewImage") or {}
    deleted = _bool(image, schema.DELETED_ATTRIBUTE)
    processed = _bool(image, schema.COUNTER_PROCESSED_ATTRIBUTE)
    if deleted:
        return CountingTask(TaskKind.REMOVE_DELETED, *ids)
    if processed is False and not deleted:
        return CountingTask(TaskKind.COUNT_CREATE, *ids)
    return None


def plan_pending_item(item: Mapping[str, Any]) -> CountingTask | None:
    """The task for a resource found in the pending index (plain, deserialized attributes)."""
    account_id = keys.account_id_from_pk(str(item.get(schema.PARTITION_KEY, "")))
    resource_id = keys.resource_id_from_sk(str(item.get(schema.SORT_KEY, "")))
    if account_id is None or resource_id is None:
        return None
    if item.get(schema.DELETED_ATTRIBUTE) is True:
        return CountingTask(TaskKind.REMOVE_DELETED, account_id, resource_id)
    if item.get(schema.COUNTER_PROCESSED_ATTRIBUTE) is False:
        return CountingTask(TaskKind.COUNT_CREATE, account_id, resource_id)
    return None


def _resource_ids(key: Mapping[str, Any]) -> tuple[str, str] | None:
    pk = (key.get(schema.PARTITION_KEY) or {}).get("S", "")
    sk = (key.get(schema.SORT_KEY) or {}).get("S", "")
    account_id = keys.account_id_from_pk(pk)
    resource_id = keys.resource_id_from_sk(sk)
    if not account_id or not resource_id:
        return None
    return account_id, resource_id


def _bool(image: Mapping[str, Any], name: str) -> bool | None:
    value = (image.get(name) or {}).get("BOOL")
    return value if isinstance(value, bool) else None


# --- decisions from CancellationReasons ---------------------------------------------------------


class RemovalDecision(enum.Enum):
    DONE = "done"
    ALREADY_DONE = "already_done"
    REMOVE_UNCOUNTED = "remove_uncounted"
    RETRY = "retry"


def decide_count_create(result: TransactionResult) -> Outcome:
    if result.committed:
        return Outcome.APPLIED
    if result.own_reason.code == CONDITIONAL_CHECK_FAILED:
        # Flag already true (counted by a duplicate delivery), resource gone, or deleted before it
        # was counted (its removal record will hard-delete it uncounted): nothing left to do.
        return Outcome.ALREADY_DONE
    return Outcome.RETRY  # TransactionConflict, throttling, a failed counter action, ...


def decide_remove_counted(result: TransactionResult) -> RemovalDecision:
    if result.committed:
        return RemovalDecision.DONE
    own = result.own_reason
    if own.code != CONDITIONAL_CHECK_FAILED:
        return RemovalDecision.RETRY
    state = own.item or GONE
    if not state.exists or not state.deleted:
        # Already hard-deleted, or the id now names a newer resource: this removal is done.
        return RemovalDecision.ALREADY_DONE
    if not state.counter_processed:
        return RemovalDecision.REMOVE_UNCOUNTED  # the create was never counted: both cancel
    return RemovalDecision.RETRY  # the condition held when read back: the item changed under us


# --- applying ---------------------------------------------------------------------------------


def apply_task(store: CountingStore, task: CountingTask) -> Outcome:
    try:
        if task.kind is TaskKind.COUNT_CREATE:
            return decide_count_create(store.count_create(task.account_id, task.resource_id))
        return _remove_deleted(store, task)
    except TransientStoreError as error:
        logger.warning("transient store error on %s: %s", task, error)
        return Outcome.RETRY


def _remove_deleted(store: CountingStore, task: CountingTask) -> Outcome:
    for _ in range(MAX_REMOVAL_ATTEMPTS):
        decision = decide_remove_counted(store.remove_counted(task.account_id, task.resource_id))
        if decision is RemovalDecision.DONE:
            return Outcome.APPLIED
        if decision is RemovalDecision.ALREADY_DONE:
            return Outcome.ALREADY_DONE
        if decision is RemovalDecision.RETRY:
            return Outcome.RETRY
        uncounted = store.remove_uncounted(task.account_id, task.resource_id)
        if uncounted.deleted:
            return Outcome.APPLIED
        current = uncounted.current
        if not current.exists or not current.deleted:
            return Outcome.ALREADY_DONE
        # Its create got counted meanwhile: go round and remove it with the counter.
    return Outcome.RETRY


@dataclass
class BatchReport:
    """What a batch of records or a sweep did. `failed` holds the ids to report for retry."""

    outcomes: Counter[Outcome] = field(default_factory=Counter)
    failed: list[str] = field(default_factory=list)

    def record(self, item_id: str, outcome: Outcome) -> None:
        self.outcomes[outcome] += 1
        if outcome is Outcome.RETRY:
            self.failed.append(item_id)

    def merge(self, other: BatchReport) -> None:
        self.outcomes.update(other.outcomes)
        self.failed.extend(other.failed)


def process_stream_records(store: CountingStore, records: Sequence[Mapping[str, Any]]) -> BatchReport:
    """Apply a batch of Lambda-shaped stream records; failures are reported by sequence number.

    Takes the whole batch so that work can be grouped (per account) without changing callers.
    Records are independent: each task's conditions make order and duplicates harmless.
    """
    report = BatchReport()
    for record in records:
        sequence_number = str((record.get("dynamodb") or {}).get("SequenceNumber", ""))
        task = plan_stream_record(record)
        report.record(sequence_number, Outcome.SKIPPED if task is None else apply_task(store, task))
    return report


def process_pending_items(store: CountingStore, items: Iterable[Mapping[str, Any]]) -> BatchReport:
    """Apply pending resources found by a sweep; failures are reported by resource key."""
    report = BatchReport()
    for item in items:
        task = plan_pending_item(item)
        item_id = f"{item.get(schema.PARTITION_KEY)}/{item.get(schema.SORT_KEY)}"
        report.record(item_id, Outcome.SKIPPED if task is None else apply_task(store, task))
    return report

"""The eventual counter: what to do for each resource record, and how to read the outcome.

A unit of work is a `CountingTask` on one resource, planned from a `ResourceRecord`: what a stream
record (consumer, redrive) or the pending index (sweeps) says of the resource, decoded by the
adapters (functions/adapters/resource_records.py). Either way the same rules apply
(docs/admission.md, docs/scaling.md):

* COUNT_CREATE: set counter_processed=true and add 1 to the eventual counter, conditional on the
  flag still being false (and the resource not deleted: a create and a delete that were never
  counted cancel out).
* COUNT_RESIZE: a counted resource was resized (it carries `counted_units`, what the counter holds
  for it): add its amount less those units, and drop them, conditional on both being as the
  record said and the resource live.
* REMOVE_DELETED: turn the resource into its tombstone and subtract what the counter holds for it
  (its amount, or its `counted_units` while a resize is uncounted), conditional on deleted=true and
  counter_processed=true; a resource whose create was never counted is removed without touching
  the counter.

Every action is conditional on the amount (and uncounted resize) it assumes, so a record that
is older than the resource's last resize moves nothing, and the failed condition's old item says
what to apply instead: each change of a resource is counted once, whatever the order of records.

Work is batched per quota (an account's limit, functions/core/model.py): a batch's tasks are folded
to one action per resource, and one transaction per quota applies up to 99 of them with one ADD of
their net change to the counter, and to its headroom, on condition that the headroom is there: the
batch crosses no usage threshold (functions/core/thresholds.py).
A cancelled transaction says, per action, why: a failed condition on an action's own item means
that work is done already (or asks for the other removal), an action that was not the cause is
sent again, and any other reason is retried later. A failed condition on the counter alone means
the batch may cross a threshold (or the counter has no headroom yet): the counter as it was (the
cancellation's ALL_OLD) and the quota's limit decide its crossings, and one transaction writes the
actions, the counter with its new headroom and one outbox item per crossing. Decisions read the
structured CancellationReasons codes only. A limit change's outbox item (`LimitChangedRecord`)
asks for a decision with no count moving (`redecide`): the headroom was measured to the old limit.
"""

from __future__ import annotations

import enum
import hashlib
import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from functions.core.errors import StoreUnavailable
from functions.core.model import Quota
from functions.core.thresholds import Bands, CounterShard, Decision, decide

logger = logging.getLogger(__name__)

CONDITIONAL_CHECK_FAILED = "ConditionalCheckFailed"
NO_FAILURE = "None"

# A resource can flip between the two removal paths while we look at it (its create being
# counted concurrently); a few re-reads settle it, after that the record is retried later.
MAX_REMOVAL_ATTEMPTS = 3
# DynamoDB takes up to 100 items per TransactWriteItems; one of them is the counter.
MAX_TRANSACTION_ITEMS = 100
MAX_ACTIONS_PER_TRANSACTION = MAX_TRANSACTION_ITEMS - 1
# Pending resources a sweep applies together (their accounts' actions batched).
SWEEP_PAGE = 1000
# Transactions one chunk of actions may take before what is left is retried later.
MAX_ROUNDS = 8
# A busy account's eventual counter is spread over this many counter shards, read as their sum
# (counter_shard): shard 0 lives in the account's partition, the others on keys of their own.
EVENTUAL_COUNTER_SHARDS = 8


class TaskKind(enum.Enum):
    COUNT_CREATE = "count_create"
    COUNT_RESIZE = "count_resize"
    REMOVE_DELETED = "remove_deleted"


class ActionKind(enum.Enum):
    """What one transaction does to one resource, and what it adds to the counter."""

    COUNT_CREATE = "count_create"  # +amount
    COUNT_RESIZE = "count_resize"  # +(amount - counted)
    REMOVE_COUNTED = "remove_counted"  # -counted (what the counter holds for it)
    REMOVE_UNCOUNTED = "remove_uncounted"  # 0: its create was never counted

    @property
    def depends_on_amount(self) -> bool:
        """Its condition names the amount (and uncounted resize) it assumes."""
        return self is not ActionKind.REMOVE_UNCOUNTED


@dataclass(frozen=True)
class ResourceAction:
    kind: ActionKind
    resource_id: str
    shard: int = 0  # the admission shard that admitted the resource: above 0, the account is busy
    # The units it holds, as its record said (a pending-index entry says none: 1). The action is
    # conditional on it, so a wrong one moves nothing and its old item tells the right one.
    amount: int = 1
    # While a resize of the counted resource is uncounted: the units the counter holds for it
    # (its `counted_units`); None: the counter holds `amount` (or nothing, uncounted).
    counted: int | None = None

    @property
    def held(self) -> int:
        """The units the eventual counter holds for the resource before this action, once counted."""
        return self.amount if self.counted is None else self.counted

    @property
    def delta(self) -> int:
        """What it adds to the eventual counter, in units."""
        if self.kind is ActionKind.COUNT_CREATE:
            return self.amount
        if self.kind is ActionKind.COUNT_RESIZE:
            return self.amount - self.held
        if self.kind is ActionKind.REMOVE_COUNTED:
            return -self.held
        return 0


def net_change(actions: Iterable[ResourceAction]) -> int:
    """What a batch of actions adds to the eventual counter, in units."""
    return sum(action.delta for action in actions)


class Outcome(enum.Enum):
    APPLIED = "applied"
    ALREADY_DONE = "already_done"
    SKIPPED = "skipped"  # not a record with counting work (filtered out by the event source on AWS)
    RETRY = "retry"


@dataclass(frozen=True)
class CountingTask:
    kind: TaskKind
    quota: Quota
    resource_id: str
    # A removal's create was counted (True) or not (False) when the resource was soft-deleted; the
    # flag cannot change after that (a count requires deleted=false). None: not known.
    counted: bool | None = None
    shard: int = 0  # the admission shard that admitted the resource (0 when not known)
    amount: int = 1  # the units it holds, as its record said
    units_counted: int | None = None  # the units the counter holds for it while a resize is uncounted


@dataclass(frozen=True)
class ResourceState:
    """The resource as a failed condition saw it (ReturnValuesOnConditionCheckFailure=ALL_OLD)."""

    exists: bool
    deleted: bool = False
    counter_processed: bool = False
    amount: int = 1
    counted: int | None = None  # its `counted_units`: a resize of it not counted yet


GONE = ResourceState(exists=False)


@dataclass(frozen=True)
class CancellationReason:
    code: str
    item: ResourceState | None = None


@dataclass(frozen=True)
class TransactionResult:
    """Committed, or cancelled with one reason per resource action, in action order. `counter`: a
    counter shard whose condition failed, as it was: its headroom did not allow the batch, or it
    moved since a decision read it (None: no counter condition failed)."""

    reasons: tuple[CancellationReason, ...] = ()
    counter: CounterShard | None = None
    # Cancelled with no resource action to give a reason to: a decision after a limit change
    # moves no resource, so only this says its transaction did not commit.
    cancelled: bool = False

    @property
    def committed(self) -> bool:
        return not self.reasons and not self.cancelled


COMMITTED = TransactionResult()


class CountingStore(Protocol):
    def apply_actions(self, quota: Quota, actions: Sequence[ResourceAction]) -> TransactionResult:
        """In one transaction: each action on its resource, in order, and one ADD of their net
        change to one of the account's eventual counter shards (none when it is 0): shard 0,
        unless an action's resource was admitted by an admission shard above 0 (counter_shard).
        The same ADD moves the shard's headroom, on condition that it allows the change.
        At most MAX_ACTIONS_PER_TRANSACTION actions, one per resource."""
        ...

    def read_for_decision(
        self, quota: Quota, seen: CounterShard | None, target: int
    ) -> tuple[Bands, list[CounterShard]]:
        """The quota's limit and thresholds, and the counter shards a decision on shard `target`
        writes, shard 0 first: shard 0 alone (`seen`, if that is shard 0 as a failed condition
        gave it, else read) for a quota whose admission never spread, else every counter shard it
        may have, read strongly consistent."""
        ...

    def decided_on(self, quota: Quota) -> Quota | None:
        """Where a limit change of `quota` moves crossings: the quota itself, or a periodic quota's
        current period (None while that period has no shard 0: nothing counted, nothing to cross)."""
        ...

    def apply_decision(self, quota: Quota, actions: Sequence[ResourceAction], decision: Decision) -> TransactionResult:
        """In one transaction: each action on its resource, each counter shard of the decision
        (its count and headroom, and shard 0's seq, above and version) conditional on it being as
        read, and one outbox item per crossing."""
        ...

    def settle_limit_change(self, quota: Quota, limit_version: int) -> None:
        """Take a limit change whose crossings were decided out of the pending index (nothing if
        its outbox item is gone). Raises StoreUnavailable."""
        ...


def counter_shard(actions: Sequence[ResourceAction]) -> int:
    """The eventual counter shard a transaction adds to. An account's readers add up the counter
    shards above 0 only when its admission `shard_span` is above 1, and that span never shrinks: so
    only a batch holding a resource admitted by a shard above 0 may use them. Which one follows from
    the first such resource's id, so concurrent batches of a busy account spread over them."""
    busy = next((action for action in actions if action.shard > 0), None)
    if busy is None:
        return 0
    return int.from_bytes(hashlib.sha256(busy.resource_id.encode()).digest()[:4], "big") % EVENTUAL_COUNTER_SHARDS


# --- planning ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResourceRecord:
    """A resource's counting state as one record saw it: a stream record's new image, or the
    resource's entry in the pending index. A flag the record does not carry is None."""

    quota: Quota
    resource_id: str
    deleted: bool | None = None
    counter_processed: bool | None = None
    shard: int = 0  # the admission shard that admitted the resource (0 when not known)
    created_at: str | None = None  # when the API created the resource (the consumer's counting lag)
    amount: int = 1  # the units it holds (a pending-index entry does not carry it: 1, checked on write)
    counted: int | None = None  # its `counted_units`, while a resize of the counted resource is uncounted
    # A pending-index entry carries only the flags: a live, counted resource in the index has a
    # resize to count, whose units the write's failed condition tells.
    flags_only: bool = False


@dataclass(frozen=True)
class LimitChangedRecord:
    """A limit change's outbox item was inserted: the quota's headroom is for the old limit, so
    its crossings are decided again now, with no count moving (`redecide`). The item stays in the
    pending index until then (`settle_limit_change`): a change whose stream records are lost is
    decided by the sweep that finds it there."""

    quota: Quota
    limit_version: int


# An item of a batch: its id, as failures are reported (a stream record's sequence number, a pending
# entry's key), and what it says (None: neither a resource's record nor a limit change).
ItemRecord = tuple[str, ResourceRecord | LimitChangedRecord | None]


def plan_record(record: ResourceRecord) -> CountingTask | None:
    """The task a resource record asks for, or None if it carries no counting work.

    Mirrors the consumer's stream filter (functions/adapters/table_layout.py), because redriven
    ranges and the pending index were never filtered."""
    if record.deleted:
        kind, counted = TaskKind.REMOVE_DELETED, record.counter_processed
    elif record.counter_processed is False:
        kind, counted = TaskKind.COUNT_CREATE, None
    elif record.counter_processed and (record.counted is not None or record.flags_only):
        kind, counted = TaskKind.COUNT_RESIZE, None
    else:
        return None
    return CountingTask(
        kind, record.quota, record.resource_id, counted, record.shard, record.amount, units_counted=record.counted
    )


# --- decisions from CancellationReasons ---------------------------------------------------------


def decide_step(action: ResourceAction, reason: CancellationReason) -> Outcome | ResourceAction | None:
    """`decide_action` for an action with its amount: when its condition failed on a resource that
    still has this action's work to do but holds another amount (or uncounted resize) than the
    action's record said (an older record, or a pending-index entry, which says none), the same
    action with what the resource holds; otherwise what `decide_action` says."""
    state = reason.item or GONE
    if (
        reason.code == CONDITIONAL_CHECK_FAILED
        and state.exists
        and action.kind.depends_on_amount
        and (state.amount, state.counted) != (action.amount, action.counted)
        and _still_to_do(action.kind, state)
    ):
        return replace(action, amount=state.amount, counted=state.counted)
    step = decide_action(action.kind, reason)
    return replace(action, kind=step) if isinstance(step, ActionKind) else step


def _still_to_do(kind: ActionKind, state: ResourceState) -> bool:
    """Whether a resource in `state` still needs an action of `kind`."""
    if kind is ActionKind.COUNT_CREATE:
        return not state.counter_processed and not state.deleted
    if kind is ActionKind.COUNT_RESIZE:
        return state.counter_processed and not state.deleted and state.counted is not None
    return state.deleted and state.counter_processed


def decide_action(kind: ActionKind, reason: CancellationReason) -> Outcome | ActionKind | None:
    """What a cancelled transaction says about one of its actions: the action's outcome, the
    other removal to try instead, or None when the action was not the cause (send it again)."""
    if reason.code == NO_FAILURE:
        return None
    if reason.code != CONDITIONAL_CHECK_FAILED:
        return Outcome.RETRY  # TransactionConflict, throttling, ...: the record is retried later
    state = reason.item or GONE
    if kind is ActionKind.COUNT_CREATE:
        # Flag already true (counted by a duplicate delivery), resource gone, or deleted before it
        # was counted (its removal removes it uncounted): nothing left to do.
        return Outcome.ALREADY_DONE
    if kind is ActionKind.COUNT_RESIZE:
        # Counted by another delivery, or deleted (its removal subtracts what the counter holds for
        # it), or gone; a resize still uncounted as the record said failed for another reason.
        return Outcome.RETRY if _still_to_do(kind, state) else Outcome.ALREADY_DONE
    if not state.exists or not state.deleted:
        # Already removed, or the id now names a newer resource: this removal is done.
        return Outcome.ALREADY_DONE
    if kind is ActionKind.REMOVE_COUNTED:
        # Never counted: remove it uncounted. Counted, yet the condition failed: it changed under us.
        return Outcome.RETRY if state.counter_processed else ActionKind.REMOVE_UNCOUNTED
    return ActionKind.REMOVE_COUNTED if state.counter_processed else Outcome.RETRY  # counted meanwhile


# --- applying ---------------------------------------------------------------------------------


def apply_tasks(store: CountingStore, tasks: Sequence[CountingTask]) -> list[Outcome]:
    """Apply tasks, batched per quota; returns each task's outcome, in order.

    Folded first, because no item may appear twice in one transaction: duplicates (replays,
    redeliveries) collapse, and a removal supersedes the count of the same resource's create (the
    removal subtracts it or not, by its flag; a create cannot follow its removal in one batch, the
    tombstone holds its key)."""
    planned: dict[tuple[Quota, str], ActionKind] = {}
    shards: dict[tuple[Quota, str], int] = {}
    units: dict[tuple[Quota, str], tuple[int, int | None]] = {}
    for task in tasks:
        key = (task.quota, task.resource_id)
        shards[key] = max(shards.get(key, 0), task.shard)
        kind = _action_of(task)
        if key not in planned or _PRECEDENCE[kind] >= _PRECEDENCE[planned[key]]:
            # A later record of the same work says the newer amount (records come in order per
            # resource); a removal supersedes a count, and a resize's count a create's (a resize
            # record of a counted resource comes after its create was counted).
            planned[key] = kind
            units[key] = (task.amount, task.units_counted)
    by_quota: dict[Quota, dict[str, ActionKind]] = {}
    for (quota, resource_id), kind in planned.items():
        by_quota.setdefault(quota, {})[resource_id] = kind
    outcomes: dict[tuple[Quota, str], Outcome] = {}
    for quota, actions in by_quota.items():
        resource_ids = list(actions)
        for start in range(0, len(resource_ids), MAX_ACTIONS_PER_TRANSACTION):
            chunk = {rid: actions[rid] for rid in resource_ids[start : start + MAX_ACTIONS_PER_TRANSACTION]}
            admitted_by = {rid: shards[(quota, rid)] for rid in chunk}
            held = {rid: units[(quota, rid)] for rid in chunk}
            for resource_id, outcome in _apply_chunk(store, quota, chunk, admitted_by, held).items():
                outcomes[(quota, resource_id)] = outcome
    return [outcomes[(task.quota, task.resource_id)] for task in tasks]


# Which action a resource's tasks in one batch fold to: the highest, the latest among equals.
_PRECEDENCE = {
    ActionKind.COUNT_CREATE: 0,
    ActionKind.COUNT_RESIZE: 1,
    ActionKind.REMOVE_COUNTED: 2,
    ActionKind.REMOVE_UNCOUNTED: 2,
}


def _action_of(task: CountingTask) -> ActionKind:
    if task.kind is TaskKind.REMOVE_DELETED:
        # When not known, the counted removal is tried first; a cancellation tells otherwise.
        return ActionKind.REMOVE_UNCOUNTED if task.counted is False else ActionKind.REMOVE_COUNTED
    return ActionKind.COUNT_RESIZE if task.kind is TaskKind.COUNT_RESIZE else ActionKind.COUNT_CREATE


def _apply_chunk(
    store: CountingStore,
    quota: Quota,
    pending: dict[str, ActionKind],
    admitted_by: Mapping[str, int],
    units: Mapping[str, tuple[int, int | None]] | None = None,
) -> dict[str, Outcome]:
    """One quota's actions, one transaction per round, until each has an outcome. A round is the
    usual transaction, or a decision when the last one's counter condition failed (`seen`). An
    action whose resource holds another amount than its record said (a pending-index entry does
    not carry it) is sent again with the amount its failed condition saw."""
    amounts = dict(units or {})
    outcomes: dict[str, Outcome] = {}
    switches: Counter[str] = Counter()
    seen: CounterShard | None = None
    for _ in range(MAX_ROUNDS):
        if not pending:
            break
        actions = [
            ResourceAction(kind, resource_id, admitted_by[resource_id], *amounts.get(resource_id, (1, None)))
            for resource_id, kind in pending.items()
        ]
        try:
            if seen is None:
                result = store.apply_actions(quota, actions)
            else:
                actions, result = _decide(store, quota, actions, seen)
        except StoreUnavailable as error:  # the records are retried later
            logger.warning("store unavailable for %d action(s) of %s: %s", len(actions), quota, error)
            break
        seen = None
        if result.committed:
            for action in actions:  # a decision may have taken only the first of them
                outcomes[action.resource_id] = Outcome.APPLIED
                del pending[action.resource_id]
            continue
        steps = [decide_step(action, reason) for action, reason in zip(actions, result.reasons, strict=False)]
        if all(step is None for step in steps):
            if result.counter is None:
                break  # the counter's own action failed (throttled, conflicting): retry them all later
            seen = result.counter  # no headroom for this batch, or the counter moved: decide
            continue
        for action, step in zip(actions, steps, strict=False):
            if isinstance(step, Outcome):
                outcomes[action.resource_id] = step
                del pending[action.resource_id]
            elif isinstance(step, ResourceAction):
                switches[action.resource_id] += 1
                if switches[action.resource_id] > MAX_REMOVAL_ATTEMPTS:
                    outcomes[action.resource_id] = Outcome.RETRY
                    del pending[action.resource_id]
                else:
                    pending[action.resource_id] = step.kind
                    amounts[action.resource_id] = (step.amount, step.counted)
    outcomes.update((resource_id, Outcome.RETRY) for resource_id in pending)
    return outcomes


def _decide(
    store: CountingStore, quota: Quota, actions: list[ResourceAction], seen: CounterShard
) -> tuple[list[ResourceAction], TransactionResult]:
    """A decision's round (functions/core/thresholds.py): the crossings of the actions' net change
    from the exact usage, written with them. A decision's transaction also holds every counter
    shard and an outbox item per threshold it may cross (each of the quota's, and each announced
    one the quota no longer has), so it takes fewer actions when it must: the rest go in the next
    round."""
    bands, shards = store.read_for_decision(quota, seen, counter_shard(actions))
    crossable = set(bands.thresholds) | (shards[0].above or frozenset())
    taken = actions[: MAX_TRANSACTION_ITEMS - len(shards) - len(crossable)]
    delta = net_change(taken)
    decision = decide(quota, bands, shards, counter_shard(taken), delta)
    return taken, store.apply_decision(quota, taken, decision)


def redecide(store: CountingStore, quota: Quota) -> Outcome:
    """Decide a quota's crossings with no count moving: after its limit or thresholds changed,
    from what was last decided to where its exact usage stands against the new ones, with new
    headroom. A replay finds nothing left to cross and writes the same headroom. A periodic quota's
    are its current period's (its past periods' crossings stand as they were made)."""
    try:
        deciding = store.decided_on(quota)
    except StoreUnavailable as error:
        logger.warning("store unavailable deciding %s after its limit changed: %s", quota, error)
        return Outcome.RETRY
    if deciding is None:
        return Outcome.APPLIED
    quota = deciding
    for _ in range(MAX_ROUNDS):
        try:
            bands, shards = store.read_for_decision(quota, None, 0)
            result = store.apply_decision(quota, [], decide(quota, bands, shards, 0, 0))
        except StoreUnavailable as error:
            logger.warning("store unavailable deciding %s after its limit changed: %s", quota, error)
            return Outcome.RETRY
        if result.committed:
            return Outcome.APPLIED
        if result.counter is None:
            return Outcome.RETRY  # throttled or conflicting: the record is retried later
    return Outcome.RETRY


@dataclass
class BatchReport:
    """What a batch of records or a sweep did. `failed` holds the ids to report for retry;
    `creates_done` the records of the creates it settled: counted now, or found done (counted by an
    earlier delivery, or removed)."""

    outcomes: Counter[Outcome] = field(default_factory=Counter)
    failed: list[str] = field(default_factory=list)
    creates_done: list[ResourceRecord] = field(default_factory=list)

    def record(self, item_id: str, outcome: Outcome) -> None:
        self.outcomes[outcome] += 1
        if outcome is Outcome.RETRY:
            self.failed.append(item_id)

    def merge(self, other: BatchReport) -> None:
        self.outcomes.update(other.outcomes)
        self.failed.extend(other.failed)
        self.creates_done.extend(other.creates_done)


def process_records(store: CountingStore, records: Sequence[ItemRecord]) -> BatchReport:
    """Apply one batch of records (a stream batch, a redriven range); failures are reported by id.

    Records are independent: each action's condition makes order and duplicates harmless.
    """
    tasks = [plan_record(record) if isinstance(record, ResourceRecord) else None for _, record in records]
    outcomes = iter(apply_tasks(store, [task for task in tasks if task is not None]))
    # After the counts: a decision on the new limit then also takes in what this batch counted.
    changed = {record.quota for _, record in records if isinstance(record, LimitChangedRecord)}
    redecided = {quota: redecide(store, quota) for quota in changed}
    report = BatchReport()
    for (item_id, record), task in zip(records, tasks, strict=True):
        if isinstance(record, LimitChangedRecord):
            report.record(item_id, settle(store, record, redecided[record.quota]))
            continue
        outcome = Outcome.SKIPPED if task is None else next(outcomes)
        report.record(item_id, outcome)
        if record and task and task.kind is TaskKind.COUNT_CREATE and outcome is not Outcome.RETRY:
            report.creates_done.append(record)
    return report


def settle(store: CountingStore, record: LimitChangedRecord, redecided: Outcome) -> Outcome:
    """A limit change decided leaves the pending index; one that is not stays there, for the
    stream's retry, the redrive or the sweep."""
    if redecided is not Outcome.APPLIED:
        return redecided
    try:
        store.settle_limit_change(record.quota, record.limit_version)
    except StoreUnavailable as error:
        logger.warning("store unavailable settling %s's limit change: %s", record.quota, error)
        return Outcome.RETRY
    return Outcome.APPLIED


def process_pending(store: CountingStore, records: Iterable[ItemRecord]) -> BatchReport:
    """Apply the records of pending resources found by a sweep, a page at a time."""
    report = BatchReport()
    page: list[ItemRecord] = []
    for item in records:
        page.append(item)
        if len(page) == SWEEP_PAGE:
            report.merge(process_records(store, page))
            page = []
    report.merge(process_records(store, page))
    return report

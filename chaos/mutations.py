"""Deliberate bugs a chaos run can plant in the sandboxes, to show that it catches them.

Never used outside `python -m chaos --break NAME`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from functions.adapters import table_layout


def _consumer_ignores_counter_processed() -> None:
    """The consumer counts a create without checking that it was not counted already."""
    from functions.adapters.counting_store import DynamoCountingStore

    original = DynamoCountingStore._transact

    def transact(
        self: DynamoCountingStore, actions: list[dict[str, Any]], resources: int, counters: Sequence[int]
    ) -> Any:
        update = actions[0].get("Update", {})
        if f"{table_layout.COUNTER_PROCESSED} = :false" in update.get("ConditionExpression", ""):
            update = {**update, "ConditionExpression": "attribute_exists(#pk)"}
            update["ExpressionAttributeValues"] = {
                k: v for k, v in update["ExpressionAttributeValues"].items() if k == ":true"
            }
            actions = [{"Update": update}, *actions[1:]]
        return original(self, actions, resources, counters)

    DynamoCountingStore._transact = transact  # type: ignore[method-assign]


def _consumer_drops_downward_crossings() -> None:
    """The consumer decides a crossing down but writes no outbox item for it."""
    import dataclasses

    from functions.core import counting, thresholds

    original = thresholds.decide  # what counting.py calls, by the name it imported

    def decide(*args: Any, **kwargs: Any) -> thresholds.Decision:
        decision = original(*args, **kwargs)
        kept = tuple(c for c in decision.crossings if c.direction is thresholds.Direction.UP)
        return dataclasses.replace(decision, crossings=kept)

    setattr(counting, "decide", decide)  # noqa: B010 - counting imported it by name: replace that name


def _consumer_ignores_limit_changes() -> None:
    """The consumer takes a limit change's record as done without deciding on the new limit."""
    from functions.core import counting

    def redecide(store: Any, quota: Any) -> counting.Outcome:
        return counting.Outcome.APPLIED

    setattr(counting, "redecide", redecide)  # noqa: B010 - process_records calls it by this module's name


def _aggregator_counts_each_window_once_per_batch() -> None:
    """The aggregator adds one refusal to a window per batch, however many the batch holds."""
    import dataclasses

    from functions.core import refusals

    original = refusals.windows_of

    def windows_of(*args: Any, **kwargs: Any) -> list[refusals.WindowCount]:
        return [dataclasses.replace(count, refused=1) for count in original(*args, **kwargs)]

    setattr(refusals, "windows_of", windows_of)  # noqa: B010 - aggregate() calls it by this module's name


def _consumer_counts_a_resize_from_nothing() -> None:
    """The consumer counts a resize as if the counter held nothing for the resource: it adds the
    new amount, not the difference from what the counter held (only amounts and resizes show it)."""
    from functions.core import counting

    original = counting.ResourceAction.delta

    def delta(self: counting.ResourceAction) -> int:
        if self.kind is counting.ActionKind.COUNT_RESIZE:
            return self.amount
        return original.fget(self)  # type: ignore[attr-defined, no-any-return]

    counting.ResourceAction.delta = property(delta)  # type: ignore[method-assign, assignment]


def _consumer_counts_a_record_in_the_period_it_processes_it() -> None:
    """The consumer counts a usage record in the period of its own clock when it reads the record
    (the period current then), not in the record's `period_id`: a record created late in a period
    and counted after its end lands in the next one (only periods, and a clock over midnight, show it)."""
    import dataclasses

    from functions.core import counting
    from functions.core.periods import parse_period
    from functions.shared.wiring import default

    original = counting.plan_record

    def plan_record(record: counting.ResourceRecord) -> counting.CountingTask | None:
        task = original(record)
        if task is None or not task.quota.period:
            return task
        current = parse_period("day", None).window_at(default().clock.now()).id  # the run's periods are days
        return dataclasses.replace(task, quota=task.quota.in_period(current))

    setattr(counting, "plan_record", plan_record)  # noqa: B010 - process_records calls it by this module's name


def _periods_told_by_the_wall_clock() -> None:
    """Every function tells which period an instant is in by the wall clock, not by the instant it
    was given (the injected clock's): the calendar reads the time itself. Only a clock other than
    the wall clock shows it: a run with `--periods`, whose records all land in today's real period."""
    from datetime import UTC, datetime

    from functions.core.periods import Period, PeriodWindow

    original = Period.window_at

    def window_at(self: Period, instant: datetime) -> PeriodWindow:
        return original(self, datetime.now(UTC))

    Period.window_at = window_at  # type: ignore[method-assign]


def _returned_types_leave_the_membership_as_dated() -> None:
    """A type returned to its plan (an override removed, a grant ended) does not date the
    account's membership (the bug before plans.return_to_plan did): the plan's later versions,
    given as of the membership, are older than the type's limit and never reach it. Only a run
    with `--plans` shows it: the plans' final check finds the type at its plan's older limit."""
    from functions.adapters.api_store import DynamoApiStore

    def follow_plan(self: DynamoApiStore, account_id: str, plan: str, received_ms: int) -> bool:
        return False

    DynamoApiStore.follow_plan = follow_plan  # type: ignore[method-assign]


def _erasure_keeps_the_outbox_items() -> None:
    """An account's erasure leaves the outbox items of its partitions (`EVENT#...`: its crossings,
    limit changes, refusals and its Account Deleted event), as if the publisher still needed them
    once published. Only a run with `--plans` shows it: the deletion's check finds them left."""
    from functions.adapters import offboarding_store
    from functions.adapters.keys import EVENT_PREFIX
    from functions.adapters.table_layout import SORT_KEY

    original = offboarding_store.quota_keys  # type: ignore[attr-defined]  # the name the erasure calls

    def quota_keys(table: Any, partition: Any, span: int = 1) -> list[dict[str, Any]]:
        return [key for key in original(table, partition, span) if not key[SORT_KEY]["S"].startswith(EVENT_PREFIX)]

    offboarding_store.quota_keys = quota_keys  # type: ignore[attr-defined]


MUTATIONS = {
    "consumer-ignores-counter-processed": _consumer_ignores_counter_processed,
    "consumer-drops-downward-crossings": _consumer_drops_downward_crossings,
    "consumer-ignores-limit-changes": _consumer_ignores_limit_changes,
    "aggregator-counts-each-window-once-per-batch": _aggregator_counts_each_window_once_per_batch,
    "consumer-counts-a-resize-from-nothing": _consumer_counts_a_resize_from_nothing,
    "consumer-counts-a-record-in-the-period-it-processes-it": _consumer_counts_a_record_in_the_period_it_processes_it,
    "periods-told-by-the-wall-clock": _periods_told_by_the_wall_clock,
    "returned-types-leave-the-membership-as-dated": _returned_types_leave_the_membership_as_dated,
    "erasure-keeps-the-outbox-items": _erasure_keeps_the_outbox_items,
}


def apply(names: str) -> None:
    """Plant the mutation `names` names, or each of several joined by commas (a run whose checks
    must catch each: tests/chaos/test_chaos.py plants two caught by different checks in one run)."""
    for name in names.split(","):
        if name not in MUTATIONS:
            raise ValueError(f"unknown mutation {name!r}; known: {sorted(MUTATIONS)}")
    for name in names.split(","):
        MUTATIONS[name]()

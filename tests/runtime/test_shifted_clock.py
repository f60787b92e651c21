"""The local runtime's shifted clock (local/clock.py): a caller moves the time of day, and the
functions in every sandbox (the product's clock, functions/shared/clock.py) read the moved time
at once; without one they run on the system clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from functions.shared import clock as product_clock
from local import clock as runtime_clock
from local.clock import CLOCK_OFFSET_ENV, ShiftedClock
from local.functions import DeployedFunction, FunctionPool

MIDNIGHT = datetime(2026, 12, 31, 23, 59, 50, tzinfo=UTC)
HANDLER = "tests.runtime.sandbox_handlers.time_of_day"


@pytest.fixture
def clock() -> ShiftedClock:
    return ShiftedClock()


def sandboxes(environment: dict[str, str]) -> Iterator[FunctionPool]:
    pool = FunctionPool(DeployedFunction("clock", "arn:clock", HANDLER, 10, 128, {}), environment, 1)
    try:
        yield pool
    finally:
        pool.close()


def sandbox_now(pool: FunctionPool) -> datetime:
    invocation = pool.invoke({})
    assert invocation.ok, invocation
    return datetime.fromisoformat(invocation.payload["now"])


def test_the_runtime_and_the_functions_name_the_same_variable() -> None:
    assert runtime_clock.CLOCK_OFFSET_ENV == product_clock.CLOCK_OFFSET_ENV


def test_a_sandbox_reads_the_time_its_runtime_set_and_each_move_at_once(clock: ShiftedClock) -> None:
    for pool in sandboxes({CLOCK_OFFSET_ENV: clock.path}):
        clock.set(MIDNIGHT)
        assert MIDNIGHT <= sandbox_now(pool) < MIDNIGHT + timedelta(seconds=5)
        clock.advance(timedelta(days=1))  # the same sandbox, already warm: the next read moves with it
        tomorrow = MIDNIGHT + timedelta(days=1)
        assert tomorrow <= sandbox_now(pool) < tomorrow + timedelta(seconds=5)
        assert tomorrow <= clock.now() < tomorrow + timedelta(seconds=5)


def test_without_a_shifted_clock_a_sandbox_runs_on_the_system_clock() -> None:
    for pool in sandboxes({}):
        assert abs(sandbox_now(pool) - datetime.now(UTC)) < timedelta(seconds=5)

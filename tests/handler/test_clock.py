"""The handlers tell the time by their wiring's clock (functions/shared/clock.py), never by the
wall clock: each test sets the clock decades away from the day it runs, where a handler that read
the wall clock would stamp, judge lateness or heal differently."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from functions.core.leases import parse_timestamp
from tests.handler.conftest import Harness
from tests.support.lambda_context import FakeLambdaContext

LONG_AGO = "2001-09-09T01:46:40.000Z"
FAR_AHEAD = "2099-01-02T03:04:05.678Z"


def test_the_api_stamps_its_writes_by_its_clock_in_the_apis_format(harness: Harness) -> None:
    harness.clock.set(parse_timestamp(FAR_AHEAD))
    harness.api.put_account("acme", 5)
    created = harness.api.create("acme").json()
    # The test's clock runs on from FAR_AHEAD as the calls take their (machine-dependent) time.
    assert re.fullmatch(r"2099-01-02T03:\d\d:\d\d\.\d{3}Z", created["createdAt"]), created["createdAt"]
    assert parse_timestamp(FAR_AHEAD) <= parse_timestamp(created["createdAt"]) <= harness.clock.now()


@pytest.mark.parametrize("now", [LONG_AGO, FAR_AHEAD])
@pytest.mark.parametrize(("received_before", "status"), [(28, 201), (30, 504)])
def test_a_request_is_late_by_the_functions_clock(
    harness: Harness, now: str, received_before: int, status: int
) -> None:
    """API Gateway gives up after 29 s: a request it received 30 s before the function's clock
    writes nothing; one received 28 s before still does."""
    harness.clock.set(parse_timestamp(now))
    harness.api.put_account("acme", 5)
    received = harness.clock.epoch_ms() - received_before * 1000
    answer = harness.api.request("POST", "/accounts/acme/resources", {"name": "vm"}, received_ms=received)
    assert answer.status == status, answer.text
    assert harness.api.account("acme")["bestEffort"] == (1 if status == 201 else 0)


def test_the_sweeper_heals_an_account_quiet_by_its_clock(harness: Harness) -> None:
    """The sweeper judges an account quiet (60 s without a write) at its clock's time."""
    from functions.sweeper.handler import handler as sweeper

    harness.clock.set(parse_timestamp(LONG_AGO))
    harness.api.put_account("acme", 5)
    harness.faults.crash_after("PutItem")  # created, never counted by best-effort
    with pytest.raises(harness.faults.SimulatedCrash):
        harness.api.create("acme")
    harness.pump()
    harness.clock.advance(timedelta(minutes=2))
    result = sweeper({}, FakeLambdaContext(function_name="sweeper"), wiring=harness.wiring)
    assert result["heals"] == {"healed": 1}
    assert harness.api.account("acme")["bestEffort"] == 1

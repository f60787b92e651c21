"""Least privilege, checked both ways (infra/table_access.py): every DynamoDB call each handler
makes in a run through all of its paths is allowed by its role in the synthesized template, and
every DynamoDB action its role allows was needed by one of those calls."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from functions.core import rollout
from functions.core.model import Quota
from functions.core.periods import format_instant
from functions.shared.config import FunctionEnvironment, Settings
from functions.shared.wiring import Wiring
from infra.function_settings import (
    API_FUNCTION,
    PLAN_PAGER_FUNCTION,
    PLAN_WORKER_FUNCTION,
    REDRIVE_FUNCTION,
    STREAM_CONSUMER_FUNCTION,
    SWEEPER_FUNCTION,
)
from tests.handler.conftest import Harness
from tests.handler.test_plan_rollout import Rollout
from tests.handler.test_redrive import failed_range, redrive  # noqa: F401 - failed_range is a fixture
from tests.support.faults import Faults
from tests.support.iam_calls import CallRecorder, Needed
from tests.support.lambda_context import FakeLambdaContext
from tests.support.template import synth_template_json

# What Lambda's own poller needs from the role of a function with a DynamoDB stream event source
# (Lambda developer guide, "Using AWS Lambda with Amazon DynamoDB", execution role permissions):
# granted for the service, not for the function's code.
STREAM_POLLER: Needed = {
    ("dynamodb:DescribeStream", "stream"),
    ("dynamodb:GetRecords", "stream"),
    ("dynamodb:GetShardIterator", "stream"),
    ("dynamodb:ListStreams", "*"),
}
HANDLERS = {
    "api": API_FUNCTION.handler,
    "consumer": STREAM_CONSUMER_FUNCTION.handler,
    "redrive": REDRIVE_FUNCTION.handler,
    "sweeper": SWEEPER_FUNCTION.handler,
    "plan_pager": PLAN_PAGER_FUNCTION.handler,
    "plan_worker": PLAN_WORKER_FUNCTION.handler,
}
# Functions with a DynamoDB stream event source: Lambda's poller uses their roles too.
STREAM_SOURCED = {"consumer", "plan_pager"}


def granted(template: dict[str, Any], handler: str) -> Needed:
    """The DynamoDB actions the function's role allows, on "table", "index/<name>" or "stream"."""
    resources = template["Resources"]
    functions = [r for r in resources.values() if r["Type"] == "AWS::Lambda::Function"]
    [function] = [f for f in functions if f["Properties"]["Handler"] == handler]
    role = function["Properties"]["Role"]["Fn::GetAtt"][0]
    allowed: Needed = set()
    for policy in resources.values():
        if policy["Type"] != "AWS::IAM::Policy" or {"Ref": role} not in policy["Properties"]["Roles"]:
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            targets = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            for action in (a for a in actions if a.startswith("dynamodb:")):
                allowed |= {(action, _kind(target)) for target in targets}
    return allowed


def _kind(resource: Any) -> str:
    if resource == "*":
        return "*"
    if "Fn::GetAtt" in resource:
        return "stream" if resource["Fn::GetAtt"][1] == "StreamArn" else "table"
    return str(resource["Fn::Join"][1][-1]).lstrip("/")  # "<table arn>/index/<name>"


@pytest.fixture
def recorder(harness: Harness) -> CallRecorder:
    recorded = CallRecorder()
    recorded.install(harness.wiring)
    return recorded


def run_the_api_through_its_paths(harness: Harness) -> None:
    api = harness.api
    api.put_account("busy", 6)
    created = api.create("busy", "vm", key="k1").json()  # an idempotent create reads first
    api.account("busy")
    api.request("GET", "/accounts/busy/resources")
    api.request("GET", "/accounts?limit=5")  # the account registry: the accounts index
    api.request("GET", f"/accounts/busy/resources/{created['resourceId']}")
    api.delete("busy", created["resourceId"])
    # A type removed: its limit change's outbox item in a batch, its items in a transaction.
    assert api.put_type("busy", "gone", 1).status == 200
    assert api.put_type("busy", "gone", 2).status == 200
    assert api.request("DELETE", "/accounts/busy/types/gone").json()["removed"] is True
    # An account deleted (its deletion recorded with its event, its shards fenced in a batch); the
    # sweeper below erases it.
    assert api.put_account("leaving", 1).status == 200
    assert api.create("leaving", "r").status == 201
    assert api.request("DELETE", "/accounts/leaving").status == 202
    # A busy account: room moved between shards, a refusal proved by a snapshot, a limit lowered
    # below its usage (the other shards retired, the change checked against each of them).
    assert harness.wiring.api_store.set_active(Quota("busy"), 1, 1, 4)
    for index in range(6):
        assert api.create("busy", f"r{index}").status == 201
    assert api.create("busy", "one too many").status == 409
    assert api.put_account("busy", 2).status == 200
    # An expiring grant on a type once grown (its other shard retired by the grant), used to the
    # full, so that the sweeper's ending lowers it below shard 0's room.
    assert api.request("PUT", "/plans/team", {"quotas": {"seats": {"limit": 1}}}).status == 200
    assert api.request("PUT", "/accounts/granted", {"plan": "team"}).status == 200
    assert harness.wiring.api_store.set_active(Quota("granted", "seats"), 1, 1, 2)
    ends = format_instant(harness.clock.now().replace(microsecond=0) + timedelta(seconds=2))
    grant = {"limit": 3, "expiresAt": ends}
    assert api.request("PUT", "/accounts/granted/types/seats", grant).status == 200
    assert [api.create("granted", f"g{index}", resource_type="seats").status for index in range(3)] == [201] * 3


@pytest.mark.engine
def test_each_function_is_allowed_exactly_the_calls_it_makes(
    harness: Harness,
    recorder: CallRecorder,
    failed_range: str,  # noqa: F811 - the fixture imported above
    faults: Faults,
    emulator_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run_the_api_through_its_paths(harness)
    harness.pump()  # the consumer
    assert redrive(harness, failed_range) == []  # the redrive re-reads a stream range
    # ... and, when the range's records are gone, sweeps the pending index instead.
    faults.answer_instead(
        "GetShardIterator", lambda _: True, {"__type": "TrimmedDataAccessException"}, service="dynamodb-streams"
    )
    assert redrive(harness, failed_range) == []
    # The sweeper, with nothing too young to sweep or heal: a create whose process died after its
    # put leaves a lease that a heal settles by reading the resource.
    faults.crash_after("PutItem")
    with pytest.raises(faults.SimulatedCrash):
        harness.api.create("acme", "dies")
    from functions.sweeper.handler import handler as sweeper

    sweep_now = {FunctionEnvironment.variable("pending_older_than"): "0", FunctionEnvironment.variable("quiet"): "0"}
    settings = Settings.from_env({FunctionEnvironment.variable("table_name"): harness.backend.table, **sweep_now})
    sweeper_wiring = Wiring(settings, harness.wiring.session, harness.wiring.endpoint_url, harness.clock)
    recorder.install(sweeper_wiring)
    harness.clock.advance(timedelta(seconds=3))  # past the grant's end
    swept = sweeper({}, FakeLambdaContext(function_name="sweeper"), wiring=sweeper_wiring)
    assert (swept["grants_ended"], swept["accounts_erased"]) == (1, 1)
    # A plan's new version: the pager reads its accounts from the registry, the worker gives it to
    # each, and pages on (pages of one account: the worker's own paging too).
    for other in ("team-1", "team-2"):
        assert harness.api.request("PUT", f"/accounts/{other}", {"plan": "team"}).status == 200
    monkeypatch.setattr(rollout, "PAGE_SIZE", 1)
    plan_rollout = Rollout(harness, emulator_url)
    recorder.install(plan_rollout.wiring)
    assert harness.api.request("PUT", "/plans/team", {"quotas": {"seats": {"limit": 2}}}).status == 200
    assert len(plan_rollout.run()) > 3  # apply messages, and page messages
    seats = harness.api.request("GET", "/accounts/granted/types/seats").json()  # its grant ended above
    assert (seats["limit"], seats["limitSource"]) == (2, "plan")

    template = synth_template_json()
    for function, handler in HANDLERS.items():
        made, allowed = recorder.by_function[function], granted(template, handler)
        if function in STREAM_SOURCED:
            assert allowed >= STREAM_POLLER
            allowed -= STREAM_POLLER
        assert made <= allowed, f"{function} calls what its role does not allow: {made - allowed}"
        assert allowed <= made, f"{function}'s role allows what it never calls: {allowed - made}"

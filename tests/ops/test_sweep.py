"""`ops sweep`: in this process with the deployed function's settings, or by invoking it."""

from __future__ import annotations

import io
import json
import os

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from functions.shared.config import FunctionEnvironment
from ops import commands
from ops.stack import EXIT_OK, EXIT_TRY_LATER, Connection, FunctionFailed, OpsError, TryLater
from tests.handler.conftest import Harness
from tests.ops.conftest import SWEEPER_ENVIRONMENT, Cli


def pending_and_drifted(cli_harness: Harness) -> None:
    """acme: two resources the stream never applied, one of them missed by best-effort."""
    api, faults = cli_harness.api, cli_harness.faults
    api.put_account("acme", 5)
    api.create("acme")
    faults.crash_after("PutItem")
    with pytest.raises(faults.SimulatedCrash):
        api.create("acme")


def test_in_process_applies_pending_work_and_heals(
    cli_harness: Harness, connection: Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    pending_and_drifted(cli_harness)
    monkeypatch.setenv(FunctionEnvironment.variable("table_name"), "not-the-table")  # the table comes from the outputs

    result = commands.sweep_in_process(connection, cli_harness.backend.table, SWEEPER_ENVIRONMENT, cli_harness.clock)
    assert result.summary == {
        "pending": {"applied": 2},
        "pending_failed": 0,
        "heals": {"healed": 1},
        "busy_accounts": 0,
        "dead_leases_settled": 0,
        "grants_ended": 0,
        "accounts_erased": 0,
        "audits": result.summary["audits"],  # this sweep's slice: whichever bucket the clock picks
    }
    assert set(result.summary["audits"]) <= {"exact", "inconclusive"}
    assert result.settings == {"pending_older_than_seconds": 0, "quiet_seconds": 0, "lookback_seconds": 3600}
    # The functions' settings were given to them, not put in this process's environment.
    assert os.environ[FunctionEnvironment.variable("table_name")] == "not-the-table"
    assert FunctionEnvironment.variable("pending_older_than") not in os.environ

    account = cli_harness.api.account("acme")
    assert (account["bestEffort"], account["eventual"]) == (2, 2)
    cli_harness.check_invariants()


def test_in_process_keeps_the_deployed_thresholds(cli_harness: Harness, connection: Connection) -> None:
    pending_and_drifted(cli_harness)

    deployed = {**SWEEPER_ENVIRONMENT, FunctionEnvironment.variable("pending_older_than"): "300"}
    result = commands.sweep_in_process(connection, cli_harness.backend.table, deployed, cli_harness.clock)
    assert result.summary["pending"] == {}  # nothing has been pending for five minutes yet
    assert result.settings["pending_older_than_seconds"] == 300
    assert cli_harness.api.account("acme")["eventual"] == 0


def test_invalid_deployed_settings_are_an_error(cli_harness: Harness, connection: Connection) -> None:
    with pytest.raises(OpsError, match=FunctionEnvironment.variable("quiet")):
        commands.sweep_in_process(
            connection, cli_harness.backend.table, {FunctionEnvironment.variable("quiet"): "soon"}, cli_harness.clock
        )


def test_the_cli_sweeps_in_process_by_default_against_an_endpoint(cli_harness: Harness, cli: Cli) -> None:
    pending_and_drifted(cli_harness)

    result = cli("sweep")  # the settings come from the stack's sweeper function: all zero
    assert result.code == EXIT_OK, result.err
    assert result.out.splitlines() == [
        "sweep (in-process; pending older than 0 s, quiet 0 s, lookback 3600 s)",
        "  pending work   applied 2; failed 0",
        "  heals          healed 1",
        "  busy accounts  0; dead leases settled 0",
        "  grants ended   0",
        "  accounts erased 0",
    ]
    assert cli_harness.api.account("acme")["eventual"] == 2


def stubbed_lambda() -> tuple[object, Stubber]:
    client = boto3.client("lambda", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    return client, Stubber(client)


def payload(value: object) -> StreamingBody:
    raw = json.dumps(value).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


EXPECTED_INVOKE = {"FunctionName": "sweeper", "InvocationType": "RequestResponse", "Payload": b'{"source": "ops"}'}


def test_invoke_returns_the_functions_result() -> None:
    client, stubber = stubbed_lambda()
    summary = {"pending": {"applied": 1}, "pending_failed": 0, "heals": {}}
    stubber.add_response("invoke", {"StatusCode": 200, "Payload": payload(summary)}, EXPECTED_INVOKE)
    with stubber:
        assert commands.sweep_invoke(client, "sweeper") == commands.SweepResult("invoke", summary)


def test_a_failed_invocation_is_an_error() -> None:
    client, stubber = stubbed_lambda()
    error = {"errorType": "StoreUnavailable", "errorMessage": "query pending index: throttled"}
    stubber.add_response(
        "invoke", {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": payload(error)}, EXPECTED_INVOKE
    )
    with stubber, pytest.raises(FunctionFailed, match="query pending index: throttled"):
        commands.sweep_invoke(client, "sweeper")


def test_a_sweep_already_running_means_try_later() -> None:
    client, stubber = stubbed_lambda()
    stubber.add_client_error("invoke", "TooManyRequestsException", "Rate exceeded", 429)
    with stubber, pytest.raises(TryLater) as raised:
        commands.sweep_invoke(client, "sweeper")
    assert raised.value.exit_code == EXIT_TRY_LATER

"""`ops heal` (alias `reconcile`): the sweeper's heal on one account now, and its exit codes."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest

from functions.adapters.dynamo_table import DynamoTable
from functions.core.healing import HealOutcome
from functions.core.model import Quota
from ops import commands
from ops.__main__ import main
from ops.stack import EXIT_DRIFT, EXIT_ERROR, EXIT_NOT_FOUND, EXIT_OK, EXIT_TRY_LATER
from tests.handler.conftest import Harness
from tests.ops.conftest import Cli
from tests.support.faults import expression


def drift(cli_harness: Harness) -> None:
    """acme: one resource best-effort missed, one slot held by a create that died."""
    api, faults = cli_harness.api, cli_harness.faults
    api.put_account("acme", 3)
    faults.crash_after("PutItem")
    with pytest.raises(faults.SimulatedCrash):
        api.create("acme")
    faults.crash_after_write("reserve")
    with pytest.raises(faults.SimulatedCrash):
        api.create("acme")


def test_healed_exits_0_and_prints_before_and_after(cli_harness: Harness, cli: Cli) -> None:
    drift(cli_harness)
    cli_harness.pump()

    result = cli("heal", "acme", "--quiet-seconds", "0", "--force")
    assert result.code == EXIT_OK, result.err
    assert result.out.splitlines()[0] == "heal acme: healed"
    assert "best_effort    0 -> 1" in result.out
    assert "admitted       2 -> 1" in result.out
    truth = cli_harness.truth("acme")
    assert (truth.best_effort_net, truth.admitted, truth.eventual) == (1, 1, 1)
    cli_harness.check_invariants()

    again = cli("reconcile", "acme", "--quiet-seconds", "0", "--force", "--json")
    assert again.code == EXIT_OK
    assert again.json()["outcome"] == "exact"
    assert again.json()["before"]["best_effort"] == again.json()["after"]["best_effort"] == 1


def test_held_slots_wait_for_the_account_to_be_quiet(cli_harness: Harness, cli: Cli) -> None:
    drift(cli_harness)
    cli_harness.pump()

    result = cli("heal", "acme")  # the deployed quiet period (60 s): the account was just written
    assert result.code == EXIT_OK, result.err
    assert "admitted       2 -> 2" in result.out
    assert "1 slot(s) still held" in result.out
    assert cli_harness.truth("acme").best_effort_net == 1


def test_pending_work_exits_3(cli_harness: Harness, cli: Cli) -> None:
    cli_harness.api.put_account("acme", 3)
    cli_harness.api.create("acme")  # not applied by the stream yet

    result = cli("heal", "acme", "--quiet-seconds", "0", "--force")
    assert result.code == EXIT_TRY_LATER
    assert "pending work" in result.out
    cli_harness.pump()
    assert cli("heal", "acme", "--quiet-seconds", "0", "--force").code == EXIT_OK


def test_an_unknown_account_exits_4(cli: Cli) -> None:
    result = cli("heal", "nobody")
    assert result.code == EXIT_NOT_FOUND
    assert "account nobody not found" in result.err
    assert "Traceback" not in result.err


def test_a_write_during_the_heal_makes_it_busy_exit_3(cli_harness: Harness) -> None:
    drift(cli_harness)
    cli_harness.pump()
    client = cli_harness.backend.dynamodb
    state = {"done": False}

    def write_now(params: dict[str, Any], **_: Any) -> None:
        if "heal_epoch" in expression(params) and not state["done"]:
            state["done"] = True
            assert cli_harness.api.create("acme").status == 201  # its writes bump the account's version

    client.meta.events.register("provide-client-params.dynamodb.UpdateItem", write_now)
    report = commands.heal(
        DynamoTable(client, cli_harness.backend.table), Quota("acme"), timedelta(0), cli_harness.clock.now()
    )
    assert report.outcome is HealOutcome.BUSY
    assert report.exit_code == EXIT_TRY_LATER
    cli_harness.check_invariants()


def test_a_quiet_period_shorter_than_the_api_timeout_needs_force(cli_harness: Harness, cli: Cli) -> None:
    drift(cli_harness)
    cli_harness.pump()

    refused = cli("heal", "acme", "--quiet-seconds", "0")
    assert refused.code == EXIT_ERROR
    assert "below the API function's timeout" in refused.err
    assert cli_harness.truth("acme").admitted == 2  # nothing was written


def test_exit_codes() -> None:
    assert {outcome: commands.heal_exit_code(outcome) for outcome in HealOutcome} == {
        HealOutcome.HEALED: EXIT_OK,
        HealOutcome.EXACT: EXIT_OK,
        HealOutcome.PENDING_WORK: EXIT_TRY_LATER,
        HealOutcome.BUSY: EXIT_TRY_LATER,
        HealOutcome.NOT_FOUND: EXIT_NOT_FOUND,
    }


def test_the_help_names_every_exit_code_and_heal_force(capsys: pytest.CaptureFixture[str]) -> None:
    """Operators' scripts branch on these: each one the CLI returns is in `--help`."""
    with pytest.raises(SystemExit):
        main(["--help"])
    usage = capsys.readouterr().out
    codes = {EXIT_OK, EXIT_ERROR, 2, EXIT_TRY_LATER, EXIT_NOT_FOUND, EXIT_DRIFT}  # 2: argparse's bad usage
    listed = usage[usage.index("Exit codes:") :].split("\n\n")[0]
    for code in codes:
        assert re.search(rf"\b{code} \w", listed), code
    with pytest.raises(SystemExit):
        main(["heal", "--help"])
    assert "--force" in capsys.readouterr().out

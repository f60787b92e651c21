"""`ops audit`: a recount of each account from its own items, compared with every counter,
read-only. Injected drift (a resource deleted behind the system's back, a counter nudged) is
found; an account whose counters agree with its items, writes in flight allowed for, is exact."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest

from functions.adapters import keys, table_layout
from functions.adapters.attributes import to_attributes
from functions.adapters.dynamo_table import DynamoTable
from functions.core.audit import AuditFinding
from functions.core.healing import HealOutcome
from functions.core.model import Quota
from ops import commands
from ops.stack import EXIT_DRIFT, EXIT_OK
from tests.handler.conftest import Harness
from tests.ops.conftest import Cli

ACME = Quota("acme")


def audit(cli_harness: Harness, account_id: str) -> AuditFinding:
    return commands.audit_account(
        DynamoTable(cli_harness.backend.dynamodb, cli_harness.backend.table), Quota(account_id)
    )


def settled_account(cli_harness: Harness, account_id: str, resources: int) -> list[str]:
    cli_harness.api.put_account(account_id, 10)
    ids = [cli_harness.api.create(account_id, f"r{index}").json()["resourceId"] for index in range(resources)]
    cli_harness.pump()
    return ids


def test_a_settled_account_and_one_with_writes_in_flight_are_exact(cli_harness: Harness) -> None:
    faults = cli_harness.faults
    settled_account(cli_harness, "calm", 3)
    assert audit(cli_harness, "calm").verdict == "exact"
    # A create that died after reserving: its slot is held by a lease, which the audit allows for.
    cli_harness.api.put_account("busy", 5)
    faults.crash_after_write("reserve")
    with pytest.raises(faults.SimulatedCrash):
        cli_harness.api.create("busy")
    finding = audit(cli_harness, "busy")
    assert (finding.verdict, finding.problems) == ("exact", ())


def test_a_resource_deleted_behind_the_systems_back_is_drift(cli_harness: Harness) -> None:
    ids = settled_account(cli_harness, "acme", 3)
    key = {table_layout.PARTITION_KEY: keys.account_pk(ACME), table_layout.SORT_KEY: keys.resource_sk(ids[0])}
    cli_harness.backend.dynamodb.delete_item(
        TableName=cli_harness.backend.table, Key=to_attributes(key)
    )  # a console delete
    finding = audit(cli_harness, "acme")
    assert finding.verdict == "drift"
    assert "eventual 3 but 2 counted units" in finding.problems
    assert any("above 2 live units (overcount)" in problem for problem in finding.problems)


def test_a_nudged_eventual_counter_is_drift(cli_harness: Harness) -> None:
    settled_account(cli_harness, "acme", 2)
    key = {table_layout.PARTITION_KEY: keys.account_pk(ACME), table_layout.SORT_KEY: keys.COUNTER_SORT_KEY}
    cli_harness.backend.dynamodb.update_item(
        TableName=cli_harness.backend.table,
        Key=to_attributes(key),
        UpdateExpression="ADD #count :one",
        ExpressionAttributeNames={"#count": "count"},
        ExpressionAttributeValues=to_attributes({":one": 1}),
    )
    finding = audit(cli_harness, "acme")
    assert (finding.verdict, finding.problems) == ("drift", ("eventual 3 but 2 counted units",))


def test_the_cli_audits_every_account_as_json_lines_and_exits_by_what_it_found(cli_harness: Harness, cli: Cli) -> None:
    settled_account(cli_harness, "calm", 1)
    settled_account(cli_harness, "acme", 2)
    clean = cli("audit", "--all")
    assert clean.code == EXIT_OK, clean.err
    assert "audited 2 quotas of 2 accounts: exact 2" in clean.out

    key = {table_layout.PARTITION_KEY: keys.account_pk(ACME), table_layout.SORT_KEY: keys.COUNTER_SORT_KEY}
    cli_harness.backend.dynamodb.delete_item(TableName=cli_harness.backend.table, Key=to_attributes(key))
    found = cli("audit", "--all", "--json")
    assert found.code == EXIT_DRIFT
    lines = {line["account_id"]: line for line in map(json.loads, found.out.splitlines())}
    assert (lines["acme"]["verdict"], lines["calm"]["verdict"]) == ("drift", "exact")
    assert lines["acme"]["account"]["eventual"] == 0
    one = cli("audit", "calm")  # the account positional, as `ops account ACCOUNT` and `ops heal ACCOUNT`
    assert (one.code, one.out.strip()) == (EXIT_OK, "audited 1 quota of 1 account: exact 1")
    repaired = cli("audit", "acme", "--repair")
    assert repaired.code == EXIT_OK, repaired.out + repaired.err
    assert "repaired: eventual +2" in repaired.out
    assert cli("audit", "--all").code == EXIT_OK


def test_the_summary_counts_quotas_and_the_accounts_they_are_of(cli_harness: Harness, cli: Cli) -> None:
    """Three types of one account are three quotas of one account, not three accounts."""
    settled_account(cli_harness, "acme", 1)
    for resource_type in ("seats", "api-keys"):
        assert cli_harness.api.put_type("acme", resource_type, 3).status == 200
    settled_account(cli_harness, "calm", 1)

    every_type = cli("audit", "acme", "--all-types")
    assert (every_type.code, every_type.out.strip()) == (EXIT_OK, "audited 3 quotas of 1 account: exact 3")
    every_account = cli("audit", "--all")
    assert (every_account.code, every_account.out.strip()) == (EXIT_OK, "audited 4 quotas of 2 accounts: exact 4")


def nudge_eventual(cli_harness: Harness, account_id: str, by: int) -> None:
    key = {table_layout.PARTITION_KEY: keys.account_pk(Quota(account_id)), table_layout.SORT_KEY: keys.COUNTER_SORT_KEY}
    cli_harness.backend.dynamodb.update_item(
        TableName=cli_harness.backend.table,
        Key=to_attributes(key),
        UpdateExpression="ADD #count :by",
        ExpressionAttributeNames={"#count": "count"},
        ExpressionAttributeValues=to_attributes({":by": by}),
    )


def repair(cli_harness: Harness, finding: AuditFinding) -> commands.Repair:
    table = DynamoTable(cli_harness.backend.dynamodb, cli_harness.backend.table)
    return commands.repair_account(table, finding, timedelta(0), cli_harness.clock.now())


def test_repair_corrects_a_console_delete_and_the_account_then_admits_its_limit(cli_harness: Harness) -> None:
    ids = settled_account(cli_harness, "acme", 3)  # limit 10
    key = {table_layout.PARTITION_KEY: keys.account_pk(ACME), table_layout.SORT_KEY: keys.resource_sk(ids[0])}
    cli_harness.backend.dynamodb.delete_item(TableName=cli_harness.backend.table, Key=to_attributes(key))
    fixed = repair(cli_harness, audit(cli_harness, "acme"))
    assert (fixed.eventual_fixed_by, fixed.heal) == (-1, HealOutcome.HEALED)
    assert audit(cli_harness, "acme").verdict == "exact"
    answers = [cli_harness.api.create("acme").status for _ in range(9)]
    assert answers == [201] * 8 + [409]  # 2 live + 8 = the limit of 10


def test_repair_while_writes_continue_fixes_exactly_the_injected_drift(cli_harness: Harness) -> None:
    """A writer creates and deletes on the account all along. The audit is judged between its
    writes (polled until two reads agree), and the repair adds exactly -drift, which the
    writer's correct transactions leave unchanged."""
    settled_account(cli_harness, "acme", 2)
    nudge_eventual(cli_harness, "acme", 5)
    stop = threading.Event()

    def keep_writing() -> None:
        while not stop.wait(0.2):
            created = cli_harness.api.create("acme")
            if created.status == 201:
                cli_harness.api.delete("acme", created.json()["resourceId"])

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        finding = audit(cli_harness, "acme")
        for _ in range(50):
            if finding.verdict != "inconclusive":
                break
            finding = audit(cli_harness, "acme")
        assert finding.verdict == "drift", finding
        assert repair(cli_harness, finding).eventual_fixed_by == -5
    finally:
        stop.set()
        writer.join()
    cli_harness.pump()
    assert audit(cli_harness, "acme").verdict == "exact"
    cli_harness.check_invariants()


def test_the_old_account_option_still_works_and_says_it_is_deprecated(cli_harness: Harness, cli: Cli) -> None:
    settled_account(cli_harness, "calm", 1)
    old = cli("audit", "--account", "calm")
    assert (old.code, old.out.strip()) == (EXIT_OK, "audited 1 quota of 1 account: exact 1")
    assert "deprecated" in old.err
    assert "ops audit calm" in old.err
    for neither_or_both in ([], ["calm", "--all"], ["calm", "--account", "calm"]):
        with pytest.raises(SystemExit) as usage:  # one account or every account
            cli("audit", *neither_or_both)
        assert usage.value.code == 2

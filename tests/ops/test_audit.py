"""`ops audit`: a recount of each account from its own items, compared with every counter,
read-only. Injected drift (a resource deleted behind the system's back, a counter nudged) is
found; an account whose counters agree with its items, writes in flight allowed for, is exact."""

from __future__ import annotations

import json

import pytest

from functions.adapters.attributes import to_attributes
from functions.core import keys, schema
from ops import commands
from ops.stack import EXIT_DRIFT, EXIT_OK
from tests.handler.conftest import Harness
from tests.ops.conftest import Cli
from tests.support import faults


def audit(harness: Harness, account_id: str) -> commands.AuditFinding:
    return commands.audit_account(harness.system.dynamodb, harness.system.table, account_id)


def settled_account(harness: Harness, account_id: str, resources: int) -> list[str]:
    harness.api.put_account(account_id, 10)
    ids = [harness.api.create(account_id, f"r{index}").json()["resourceId"] for index in range(resources)]
    harness.pump()
    return ids


def test_a_settled_account_and_one_with_writes_in_flight_are_exact(harness: Harness) -> None:
    settled_account(harness, "calm", 3)
    assert audit(harness, "calm").verdict == "exact"
    # A create that died after reserving: its slot is held by a lease, which the audit allows for.
    harness.api.put_account("busy", 5)
    faults.crash_after_write("reserve")
    with pytest.raises(faults.SimulatedCrash):
        harness.api.create("busy")
    finding = audit(harness, "busy")
    assert (finding.verdict, finding.problems) == ("exact", ())


def test_a_resource_deleted_behind_the_systems_back_is_drift(harness: Harness) -> None:
    ids = settled_account(harness, "acme", 3)
    key = {schema.PARTITION_KEY: keys.account_pk("acme"), schema.SORT_KEY: keys.resource_sk(ids[0])}
    harness.system.dynamodb.delete_item(TableName=harness.system.table, Key=to_attributes(key))  # a console delete
    finding = audit(harness, "acme")
    assert finding.verdict == "drift"
    assert "eventual 3 but 2 counted resource items" in finding.problems
    assert any("above 2 live resources (overcount)" in problem for problem in finding.problems)


def test_a_nudged_eventual_counter_is_drift(harness: Harness) -> None:
    settled_account(harness, "acme", 2)
    key = {schema.PARTITION_KEY: keys.account_pk("acme"), schema.SORT_KEY: schema.EVENTUAL_COUNTER_SORT_KEY}
    harness.system.dynamodb.update_item(
        TableName=harness.system.table,
        Key=to_attributes(key),
        UpdateExpression="ADD #count :one",
        ExpressionAttributeNames={"#count": "count"},
        ExpressionAttributeValues=to_attributes({":one": 1}),
    )
    finding = audit(harness, "acme")
    assert (finding.verdict, finding.problems) == ("drift", ("eventual 3 but 2 counted resource items",))


def test_the_cli_audits_every_account_as_json_lines_and_exits_by_what_it_found(harness: Harness, cli: Cli) -> None:
    settled_account(harness, "calm", 1)
    settled_account(harness, "acme", 2)
    clean = cli("audit", "--all")
    assert clean.code == EXIT_OK, clean.err
    assert "audited 2 account(s): exact 2" in clean.out

    key = {schema.PARTITION_KEY: keys.account_pk("acme"), schema.SORT_KEY: schema.EVENTUAL_COUNTER_SORT_KEY}
    harness.system.dynamodb.delete_item(TableName=harness.system.table, Key=to_attributes(key))
    found = cli("audit", "--all", "--json")
    assert found.code == EXIT_DRIFT
    lines = {line["account_id"]: line for line in map(json.loads, found.out.splitlines())}
    assert (lines["acme"]["verdict"], lines["calm"]["verdict"]) == ("drift", "exact")
    assert lines["acme"]["account"]["eventual"] == 0
    one = cli("audit", "--account", "calm")
    assert (one.code, one.out.strip()) == (EXIT_OK, "audited 1 account(s): exact 1")

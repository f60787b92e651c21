"""`ops` speaks resource types: `account` shows every type of an account in one table (`--type`: one),
`audit` and `heal` take `--type` (the default type when absent) and `--all-types`, and DLQ 2's
listing names the quota (account and type) of each record in a range."""

from __future__ import annotations

import json

import pytest

from functions.adapters import keys, table_layout
from functions.adapters.attributes import to_attributes
from functions.core.model import Quota
from ops import commands
from ops.stack import EXIT_DRIFT, EXIT_ERROR, EXIT_NOT_FOUND, EXIT_OK
from tests.handler.conftest import Harness
from tests.ops.conftest import Cli, Queues
from tests.support.failure_messages import on_failure_message

SEATS = Quota("acme", "seats")


def acme_with_seats(cli_harness: Harness) -> None:
    """acme: 1 default-type resource (limit 5) and 2 seats (limit 3), all counted."""
    api = cli_harness.api
    assert api.put_account("acme", 5).status == 200
    assert api.put_type("acme", "seats", 3).status == 200
    assert api.put_type("acme", "api-keys", 4).status == 200
    assert api.create("acme", "project").status == 201
    for name in ("alice", "bob"):
        assert api.create("acme", name, resource_type="seats").status == 201
    cli_harness.pump()


def drop_counter(cli_harness: Harness, quota: Quota) -> None:
    """Drift no fault makes: the quota's eventual counter deleted behind the system's back."""
    key = {table_layout.PARTITION_KEY: keys.account_pk(quota), table_layout.SORT_KEY: keys.COUNTER_SORT_KEY}
    cli_harness.backend.dynamodb.delete_item(TableName=cli_harness.backend.table, Key=to_attributes(key))


def table_rows(out: str) -> dict[str, list[str]]:
    """`ops account`'s table: each type's row, by type (the heading's row under "type")."""
    rows = {}
    for line in out.splitlines()[1:]:
        if not line.startswith("  "):
            break
        cells = line.split()
        rows[cells[0]] = cells[1:]
    return rows


def test_account_shows_every_type_in_one_table_and_one_with_type(cli_harness: Harness, cli: Cli) -> None:
    acme_with_seats(cli_harness)
    etag = cli_harness.api.request("GET", "/accounts/acme/types/seats").headers["ETag"]

    every = cli("account", "acme")
    assert every.code == EXIT_OK, every.err
    assert every.out.splitlines()[0] == "account acme"
    rows = table_rows(every.out)
    # The types as GET /accounts/acme lists them: the default first, then by name.
    assert list(rows) == ["type", "default", "api-keys", "seats"]
    assert rows["type"] == [
        "limit", "best_effort", "admitted", "eventual", "live", "pending", "best_effort-live", "admitted-live", "etag"
    ]  # fmt: skip
    assert rows["default"][:6] == ["5", "1", "1", "1", "1", "0"]
    assert rows["api-keys"][:6] == ["4", "0", "0", "0", "0", "0"]
    assert rows["seats"] == ["3", "2", "2", "2", "2", "0", "0", "0", etag]
    assert "python -m ops account acme --type TYPE" in every.out
    assert "limit version" not in every.out  # nothing to look at: no details

    as_json = cli("account", "acme", "--json").json()
    assert (as_json["limit"], as_json["live"]) == (5, 1)  # the default type's, as before types
    assert [(t.get("resource_type"), t["limit"], t["live"]) for t in as_json["types"]] == [
        ("default", 5, 1),
        ("api-keys", 4, 0),
        ("seats", 3, 2),
    ]

    seats = cli("account", "acme", "--type", "seats")
    assert seats.code == EXIT_OK, seats.err
    assert list(table_rows(seats.out)) == ["type", "seats"]
    assert table_rows(seats.out)["seats"] == rows["seats"]
    assert f"  limit version  {etag.strip(chr(34))}  (the API's ETag {etag})" in seats.out  # its details
    assert "api-keys" not in seats.out
    as_json = cli("account", "acme", "--type", "seats", "--json").json()
    assert (as_json["account_id"], as_json["resource_type"], as_json["live"]) == ("acme", "seats", 2)
    assert "types" not in as_json
    default = cli("account", "acme", "--type", "default")
    assert list(table_rows(default.out)) == ["type", "default"]


def test_account_shows_the_details_of_a_type_with_drift_and_how_to_heal_that_type(
    cli_harness: Harness, cli: Cli
) -> None:
    acme_with_seats(cli_harness)
    faults = cli_harness.faults
    faults.crash_after("PutItem")  # a seat's create dies after its reservation and its put
    with pytest.raises(faults.SimulatedCrash):
        cli_harness.api.create("acme", "carol", resource_type="seats")
    cli_harness.pump()

    every = cli("account", "acme")
    assert table_rows(every.out)["seats"][6:8] == ["-1", "0"]
    assert "\nacme/seats\n" in every.out  # its details, and the other types' not
    assert "\nacme\n" not in every.out
    assert "`python -m ops heal acme --type seats` heals it" in every.out


def test_a_type_the_account_lacks_is_not_found_and_a_bad_name_is_bad_usage(cli_harness: Harness, cli: Cli) -> None:
    acme_with_seats(cli_harness)
    missing = cli("account", "acme", "--type", "rooms")
    assert missing.code == EXIT_NOT_FOUND
    assert "acme/rooms not found" in missing.err
    assert cli("heal", "acme", "--type", "rooms").code == EXIT_NOT_FOUND
    for command in (["account", "acme"], ["audit", "acme"], ["heal", "acme"]):
        with pytest.raises(SystemExit) as usage:
            cli(*command, "--type", "Not A Type")
        assert usage.value.code == 2


def test_audit_judges_one_type_or_every_type_of_the_account(cli_harness: Harness, cli: Cli) -> None:
    acme_with_seats(cli_harness)
    drop_counter(cli_harness, SEATS)

    assert cli("audit", "acme").code == EXIT_OK  # the default type: exact
    seats = cli("audit", "acme", "--type", "seats")
    assert seats.code == EXIT_DRIFT
    assert seats.out.splitlines()[0] == "acme/seats: drift"

    every = cli("audit", "acme", "--all-types", "--json")
    assert every.code == EXIT_DRIFT
    lines = [json.loads(line) for line in every.out.splitlines()]
    assert [(line.get("resource_type", "default"), line["verdict"]) for line in lines] == [
        ("default", "exact"),
        ("api-keys", "exact"),
        ("seats", "drift"),
    ]

    repaired = cli("audit", "acme", "--all-types", "--repair", "--json")
    assert repaired.code == EXIT_OK, repaired.out + repaired.err
    (repair,) = [json.loads(line)["repair"] for line in repaired.out.splitlines() if "repair" in json.loads(line)]
    assert (repair["account_id"], repair["resource_type"], repair["eventual_fixed_by"]) == ("acme", "seats", 2)
    assert cli("audit", "--all").code == EXIT_OK
    assert cli("audit", "--all", "--all-types").code == EXIT_ERROR  # --all covers every type already
    cli_harness.check_invariants()


def test_heal_heals_one_type_or_every_type_and_leaves_the_others_alone(cli_harness: Harness, cli: Cli) -> None:
    acme_with_seats(cli_harness)
    faults = cli_harness.faults
    faults.crash_after("PutItem")  # a seat's create dies after its reservation and its put
    with pytest.raises(faults.SimulatedCrash):
        cli_harness.api.create("acme", "carol", resource_type="seats")
    cli_harness.pump()
    default_before = cli_harness.truth(Quota("acme"))

    healed = cli("heal", "acme", "--type", "seats", "--quiet-seconds", "0", "--force", "--json")
    assert healed.code == EXIT_OK, healed.err
    assert (healed.json()["resource_type"], healed.json()["outcome"]) == ("seats", "healed")
    assert cli_harness.truth(SEATS).best_effort_net == 3
    assert cli_harness.truth(Quota("acme")) == default_before

    every = cli("heal", "acme", "--all-types", "--quiet-seconds", "0", "--force")
    assert every.code == EXIT_OK, every.err
    assert [line for line in every.out.splitlines() if line.startswith("heal ")] == [
        "heal acme: exact: nothing to change",
        "heal acme/api-keys: exact: nothing to change",
        "heal acme/seats: exact: nothing to change",
    ]
    cli_harness.check_invariants()


def test_dlq2_list_names_the_quotas_of_a_ranges_records(cli_harness: Harness, queues: Queues, cli: Cli) -> None:
    api = cli_harness.api
    api.put_account("acme", 5)
    api.put_type("acme", "seats", 3)
    cli_harness.pump()
    api.create("acme", "project")
    api.create("acme", "alice", resource_type="seats")
    records = cli_harness.tap.drain()  # never delivered: the batch "exhausted its retries"
    stream = cli_harness.backend.streams.describe_stream(StreamArn=cli_harness.backend.stream_arn)["StreamDescription"]
    body = on_failure_message(
        cli_harness.backend.stream_arn,
        stream["Shards"][0]["ShardId"],
        records[0]["dynamodb"]["SequenceNumber"],
        records[-1]["dynamodb"]["SequenceNumber"],
        len(records),
    )
    queues.send(queues.dlq2, body)

    listing = commands.list_dlq2(queues.sqs, queues.dlq2, streams=cli_harness.backend.streams)
    (message,) = listing.messages
    assert message.quotas == (Quota("acme"), SEATS)
    listed = cli("dlq2", "list")
    assert listed.code == EXIT_OK, listed.err
    assert "    records of acme, acme/seats" in listed.out
    assert cli("dlq2", "list", "--json").json()["messages"][0]["quotas"] == [
        {"account_id": "acme"},
        {"account_id": "acme", "resource_type": "seats"},
    ]

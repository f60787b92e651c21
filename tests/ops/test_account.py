"""`ops account`: the counters next to the truth of the account's own partition, and the drift."""

from __future__ import annotations

from typing import Any

import pytest

from functions.adapters.dynamo_table import DynamoTable
from functions.core.audit import Recount
from functions.core.model import Quota
from ops import commands
from ops.stack import EXIT_NOT_FOUND, AccountNotInTable
from tests.handler.conftest import Harness
from tests.ops.conftest import Cli


def view(cli_harness: Harness, account_id: str = "acme") -> Recount:
    return commands.recount(DynamoTable(cli_harness.backend.dynamodb, cli_harness.backend.table), Quota(account_id))


def numbers(account: Recount) -> dict[str, Any]:
    return {
        name: value
        for name, value in account.to_json().items()
        if name not in ("account_id", "version", "limit_version", "heal_epoch", "last_write_at", "healed_at")
    }


def test_a_settled_account_shows_no_drift_and_no_pending_work(cli_harness: Harness) -> None:
    api = cli_harness.api
    api.put_account("acme", 5)
    ids = [api.create("acme", f"r{index}").json()["resourceId"] for index in range(3)]
    assert api.delete("acme", ids[0]).status == 204
    cli_harness.pump()

    assert numbers(view(cli_harness)) == {
        "limit": 5,
        "best_effort": {"net": 2, "clamped": 2},
        "admitted": 2,
        "eventual": 2,
        "live": 2,
        "counted": 2,
        "resource_items": 2,
        "pending": {"uncounted": 0, "soft_deleted": 0, "deletes_in_flight": 0},
        "creates_in_flight": 0,
        "tombstones": 1,
        "drift": {"best_effort": 0, "admitted": 0},
    }


def test_pending_work_is_counted_by_kind(cli_harness: Harness) -> None:
    faults = cli_harness.faults
    api = cli_harness.api
    api.put_account("acme", 5)
    counted = [api.create("acme", f"r{index}").json()["resourceId"] for index in range(3)]
    cli_harness.pump()
    api.create("acme", "not-yet-counted")
    assert api.delete("acme", counted[0]).status == 204  # soft-deleted, not yet removed
    faults.crash_after_write("take-deletion")  # a delete stops after its decrement
    with pytest.raises(faults.SimulatedCrash):
        api.delete("acme", counted[1])

    account = view(cli_harness)
    assert (account.uncounted, account.soft_deleted, account.deletes_in_flight) == (1, 1, 1)
    assert (account.resource_items, account.live, account.counted, account.eventual) == (4, 3, 3, 3)
    assert account.pending == 3


def test_a_crash_after_the_put_shows_best_effort_drift(cli_harness: Harness) -> None:
    faults = cli_harness.faults
    api = cli_harness.api
    api.put_account("acme", 5)
    api.create("acme")
    faults.crash_after("PutItem")  # the resource lands, best-effort never counts it
    with pytest.raises(faults.SimulatedCrash):
        api.create("acme")
    cli_harness.pump()

    account = view(cli_harness)
    assert (account.best_effort, account.admitted, account.eventual, account.live) == (1, 2, 2, 2)
    assert (account.best_effort_drift, account.admitted_drift) == (-1, 0)
    assert account.pending == 0


def test_a_crash_after_the_reservation_shows_a_held_slot(cli_harness: Harness) -> None:
    faults = cli_harness.faults
    api = cli_harness.api
    api.put_account("acme", 5)
    faults.crash_after_write("reserve")  # a slot, no resource
    with pytest.raises(faults.SimulatedCrash):
        api.create("acme")

    account = view(cli_harness)
    assert (account.admitted, account.live, account.admitted_drift, account.best_effort_drift) == (1, 0, 1, 0)


def test_best_effort_is_shown_signed_and_clamped(cli_harness: Harness) -> None:
    faults = cli_harness.faults
    api = cli_harness.api
    api.put_account("acme", 5)
    resource_id = api.create("acme").json()["resourceId"]
    cli_harness.pump()
    faults.crash_after_write("take-deletion")
    with pytest.raises(faults.SimulatedCrash):
        api.delete("acme", resource_id)
    # The retry decrements a second time; the dead delete's lease gives its decrement back only
    # when a heal settles it.
    assert api.delete("acme", resource_id).status == 204
    cli_harness.pump()

    account = view(cli_harness)
    assert (account.best_effort_net, account.best_effort, account.live, account.eventual) == (-1, 0, 0, 0)
    assert account.best_effort_drift == -1
    assert account.deletes_in_flight == 1


def test_the_view_queries_the_partition_and_never_scans(cli_harness: Harness) -> None:
    cli_harness.api.put_account("acme", 5)
    cli_harness.api.put_account("other", 5)
    cli_harness.api.create("other")
    client = cli_harness.backend.dynamodb
    calls: list[str] = []

    def refuse_scan(**_: Any) -> None:
        raise AssertionError("ops account must not scan the table")

    client.meta.events.register("before-call.dynamodb.Scan", refuse_scan)
    client.meta.events.register("before-call.dynamodb.*", lambda model, **_: calls.append(model.name))
    try:
        account = view(cli_harness)
    finally:
        client.meta.events.unregister("before-call.dynamodb.Scan", refuse_scan)
    assert account.resource_items == 0  # the other account's resource is in another partition
    assert set(calls) == {"BatchGetItem", "Query"}


def test_an_unknown_account_is_not_found(cli_harness: Harness) -> None:
    with pytest.raises(AccountNotInTable) as raised:
        view(cli_harness, "nobody")
    assert raised.value.exit_code == EXIT_NOT_FOUND


def test_the_cli_prints_the_view_as_text_and_json(cli_harness: Harness, cli: Cli) -> None:
    faults = cli_harness.faults
    cli_harness.api.put_account("acme", 5)
    faults.crash_after("PutItem")
    with pytest.raises(faults.SimulatedCrash):
        cli_harness.api.create("acme")
    cli_harness.pump()

    text = cli("account", "acme")
    assert text.code == 0, text.err
    assert text.out.splitlines()[:3] == [
        "account acme",
        "  type     limit  best_effort  admitted  eventual  live  pending  best_effort-live  admitted-live  etag",
        '  default      5            0         1         1     1        0                -1              0   "1"',
    ]
    assert "best_effort - live = -1, admitted - live = 0" in text.out  # the type's details: it drifted
    assert "`python -m ops heal acme` heals it" in text.out  # drift with nothing pending: the hint to heal
    assert "--type TYPE" not in text.out  # one type: nothing to narrow

    as_json = cli("account", "acme", "--json")
    assert as_json.code == 0
    assert as_json.json() == view(cli_harness).to_json()

    missing = cli("account", "nobody")
    assert missing.code == EXIT_NOT_FOUND
    assert "account nobody not found" in missing.err
    assert "Traceback" not in missing.err


def test_the_version_shown_is_the_one_the_apis_etag_names(cli_harness: Harness, cli: Cli) -> None:
    """The account item counts its writes (every admission writes it) apart from its limit's
    version, which is the API's ETag: `ops account` shows the ETag's, named so, and the other as
    the account item's write count."""
    api = cli_harness.api
    api.put_account("acme", 5)
    api.put_account("acme", 6)
    for index in range(3):
        api.create("acme", f"r{index}")
    etag = api.request("GET", "/accounts/acme").headers["ETag"]

    account = view(cli_harness)
    assert f'"{account.limit_version}"' == etag
    assert account.version > account.limit_version  # the item's writes: not what If-Match names
    assert f'  "{account.limit_version}"' in cli("account", "acme").out  # the table's etag column
    text = cli("account", "acme", "--type", "default")  # one type: its details too
    assert f"limit version  {account.limit_version}  (the API's ETag {etag})" in text.out
    assert f"writes {account.version}" in text.out
    assert cli("account", "acme", "--json").json()["limit_version"] == account.limit_version

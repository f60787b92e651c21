"""`ops registry-backfill`: accounts from before the account registry get their key, once."""

from __future__ import annotations

from datetime import timedelta

from functions.adapters.shards import account_key
from functions.adapters.table_layout import REGISTRY
from functions.core.model import Quota
from tests.handler.conftest import Harness
from tests.ops.conftest import Cli


def test_the_backfill_lists_older_accounts_and_writes_nothing_twice(cli_harness: Harness, cli: Cli) -> None:
    api, table = cli_harness.api, cli_harness.wiring.table
    assert api.request("PUT", "/plans/pro", {"quotas": {"seats": {"limit": 5}}}).status == 200
    api.put_account("acme", 3)
    assert api.request("PUT", "/accounts/globex", {"plan": "pro"}).status == 200
    for account in ("acme", "globex"):  # as an older release wrote them
        table.client.update_item(
            TableName=table.name, Key=account_key(Quota(account)), UpdateExpression=f"REMOVE {REGISTRY}"
        )
    assert api.request("GET", "/accounts").json()["items"] == []

    assert cli("registry-backfill").out.strip() == "2 accounts given a registry key"
    assert cli("registry-backfill", "--json").json() == {"written": 0}
    assert api.request("GET", "/accounts").json()["items"] == [
        {"accountId": "acme"},
        {"accountId": "globex", "plan": "pro", "planVersion": 1},
    ]


def test_plans_status_says_how_many_accounts_have_the_plans_version(cli_harness: Harness, cli: Cli) -> None:
    api = cli_harness.api
    assert api.request("PUT", "/plans/pro", {"quotas": {"seats": {"limit": 5}}}).status == 200
    for account in ("acme", "globex"):
        assert api.request("PUT", f"/accounts/{account}", {"plan": "pro"}).status == 200
    done = cli("plans", "status", "pro")
    assert (done.code, done.out.strip()) == (0, "pro version 1: 2 of 2 accounts have it (done)")
    assert api.request("PUT", "/plans/pro", {"quotas": {"seats": {"limit": 6}}}).status == 200  # no rollout here
    running = cli("plans", "status", "pro", "--json")
    assert running.code == 3
    assert running.json() == {"plan": "pro", "version": 2, "accounts": 2, "updated": 0}
    assert cli("plans", "status", "nope").code == 1


def test_accounts_delete_refuses_the_accounts_creates_and_the_sweeper_erases_it(cli_harness: Harness, cli: Cli) -> None:
    api = cli_harness.api
    api.put_account("acme", 3)
    assert api.create("acme").status == 201
    deleted = cli("accounts", "delete", "acme", "--json")
    assert (deleted.code, deleted.json()["resourceTypes"]) == (0, ["default"])
    assert api.create("acme").status == 404
    assert cli("accounts", "delete", "acme").code == 0  # accepted again: the same deletion
    assert cli("accounts", "delete", "nobody").code == 4
    cli_harness.clock.advance(timedelta(seconds=61))
    from functions.core.offboarding import finish_deletions

    erased = finish_deletions(cli_harness.wiring.offboarding_store, cli_harness.clock.now(), timedelta(seconds=60))
    assert erased == 1

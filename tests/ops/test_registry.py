"""`ops registry-backfill`: accounts from before the account registry get their key, once."""

from __future__ import annotations

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

"""`ops account` and `ops audit` on a periodic quota (docs/periods.md): its row shows its current
period's counts and its period; the audit judges each of its periods as a quota of its own, its own
account item (which admits nothing, whatever records its partition holds) is not drift, and a
period whose records have expired is judged on its counters alone."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from functions.adapters import keys, table_layout
from functions.adapters.attributes import to_attributes
from functions.core.model import Quota
from ops.stack import EXIT_DRIFT, EXIT_OK
from tests.handler.conftest import Harness
from tests.ops.conftest import Cli

BUILDS = "/accounts/acme/types/builds"
BUILDS_QUOTA = Quota("acme", "builds")
EVENING = datetime(2026, 11, 27, 23, 59, 0, tzinfo=UTC)
TODAY, TOMORROW = "20261127T000000Z", "20261128T000000Z"


def two_days_of_builds(harness: Harness) -> list[str]:
    """acme's builds, 5 a day: 2 on the 27th, 1 on the 28th (at 00:01), all counted; the ids of the 27th's."""
    harness.clock.set(EVENING)
    assert harness.api.put_account("acme", 10).status == 200
    assert harness.api.request("PUT", BUILDS, {"limit": 5, "period": "day"}).status == 200
    first = [harness.api.create("acme", f"b{index}", resource_type="builds").json()["resourceId"] for index in (1, 2)]
    harness.clock.advance(timedelta(minutes=2))
    assert harness.api.create("acme", "b3", resource_type="builds").status == 201
    harness.pump()
    return first


def findings(result: Any) -> dict[str, dict[str, Any]]:
    """The audit's JSON lines, by the quota each names (`type@period`)."""
    found = {}
    for line in result.out.splitlines():
        finding = json.loads(line)
        name = finding.get("resource_type", "default") + (f"@{finding['period_id']}" if "period_id" in finding else "")
        found[name] = finding
    return found


def test_an_account_with_a_periodic_type_audits_exact_each_period_and_its_own_item(
    cli_harness: Harness, cli: Cli
) -> None:
    two_days_of_builds(cli_harness)
    result = cli("audit", "acme", "--all-types", "--json")
    assert result.code == EXIT_OK, result.out
    found = findings(result)
    assert {name: finding["verdict"] for name, finding in found.items()} == {
        "default": "exact",
        "builds": "exact",  # its own item: every record of its partition is its periods'
        f"builds@{TOMORROW}": "exact",
        f"builds@{TODAY}": "exact",
    }
    assert found["builds"]["account"]["basis"] == "periods"
    assert (found[f"builds@{TODAY}"]["account"]["live"], found[f"builds@{TOMORROW}"]["account"]["live"]) == (2, 1)

    text = cli("audit", "acme", "--type", "builds")
    assert text.code == EXIT_OK
    assert text.out.splitlines()[-1] == "audited 3 quotas of 1 account: exact 3"
    every = cli("audit", "--all")  # the periods come from the activity index, as every quota does
    assert every.code == EXIT_OK, every.out


def test_a_record_deleted_behind_the_systems_back_is_drift_in_its_period(cli_harness: Harness, cli: Cli) -> None:
    first = two_days_of_builds(cli_harness)
    key = {table_layout.PARTITION_KEY: keys.account_pk(BUILDS_QUOTA), table_layout.SORT_KEY: keys.resource_sk(first[0])}
    cli_harness.backend.dynamodb.delete_item(TableName=cli_harness.backend.table, Key=to_attributes(key))
    result = cli("audit", "acme", "--type", "builds", "--json")
    assert result.code == EXIT_DRIFT
    verdicts = {name: finding["verdict"] for name, finding in findings(result).items()}
    assert verdicts == {"builds": "exact", f"builds@{TOMORROW}": "exact", f"builds@{TODAY}": "drift"}


def test_a_period_whose_records_expired_is_judged_on_its_counters(cli_harness: Harness, cli: Cli) -> None:
    first = two_days_of_builds(cli_harness)
    cli_harness.clock.advance(timedelta(days=15))  # past the 27th's end and its records' retention (14 days)
    for resource_id in first:  # TTL removes the 27th's records
        key = {
            table_layout.PARTITION_KEY: keys.account_pk(BUILDS_QUOTA),
            table_layout.SORT_KEY: keys.resource_sk(resource_id),
        }
        cli_harness.backend.dynamodb.delete_item(TableName=cli_harness.backend.table, Key=to_attributes(key))
    # Past a day quota's last 13 periods: `--all` finds it in the activity index.
    result = cli("audit", "--all", "--json")
    assert result.code == EXIT_OK, result.out
    today = findings(result)[f"builds@{TODAY}"]
    assert (today["verdict"], today["account"]["basis"], today["account"]["eventual"]) == ("exact", "counters", 2)

    # A counter nudged in that period is found, and not "repaired" from records that are gone.
    counter = {
        table_layout.PARTITION_KEY: keys.account_pk(BUILDS_QUOTA.in_period(TODAY)),
        table_layout.SORT_KEY: keys.COUNTER_SORT_KEY,
    }
    cli_harness.backend.dynamodb.update_item(
        TableName=cli_harness.backend.table,
        Key=to_attributes(counter),
        UpdateExpression="ADD #count :one",
        ExpressionAttributeNames={"#count": "count"},
        ExpressionAttributeValues=to_attributes({":one": 1}),
    )
    repaired = cli("audit", "--all", "--repair")
    assert repaired.code == EXIT_DRIFT
    assert "disagree" in repaired.out
    assert "not repaired: its records have expired" in repaired.out


def test_the_account_view_shows_a_periodic_types_period_and_current_counts(cli_harness: Harness, cli: Cli) -> None:
    two_days_of_builds(cli_harness)
    text = cli("account", "acme")
    assert text.code == EXIT_OK, text.err
    rows = text.out.splitlines()
    builds = next(row.split() for row in rows if row.strip().startswith("builds "))
    assert builds[:6] == ["builds", "5", "1", "1", "1", "1"]  # limit, best effort, admitted, eventual, live today
    assert (
        "  builds: per day; its counts are the current period's, 2026-11-28T00:00:00Z to 2026-11-29T00:00:00Z "
        "(`python -m ops audit` audits its recent periods)"
    ) in rows
    assert "drift" not in text.out

    as_json = cli("account", "acme", "--type", "builds", "--json").json()
    assert (as_json["period"], as_json["period_start"], as_json["period_id"]) == (
        {"period": "day"},
        "2026-11-28T00:00:00Z",
        TOMORROW,
    )
    cli_harness.clock.advance(timedelta(days=1))  # a day nobody created in yet: 0 at its limit
    quiet = cli("account", "acme", "--type", "builds", "--json").json()
    assert (quiet["limit"], quiet["eventual"], quiet["live"], quiet["period_start"]) == (
        5,
        0,
        0,
        "2026-11-29T00:00:00Z",
    )

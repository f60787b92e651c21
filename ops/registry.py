"""The account registry's backfill (docs/plans.md, "The account registry"): an account created
before the accounts index has no registry key on its default type's account item, so `GET
/accounts` does not list it until this one-off pass gives it one (its plan's name, or NO_PLAN).

An operator's command, never a request path: it Scans the table once, a page at a time, and writes
only the default account items that lack the key, each conditional on still lacking it (an
account's membership written meanwhile sets the key itself), so a rerun, or one racing the API,
writes nothing twice.
"""

from __future__ import annotations

from typing import Any

from functions.adapters import keys
from functions.adapters.account_item import ACCOUNT_TYPE, PLAN
from functions.adapters.attributes import to_attributes
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.errors import ConditionFailed
from functions.adapters.table_layout import ITEM_TYPE, NO_PLAN, PARTITION_KEY, REGISTRY, SORT_KEY


def backfill_registry(table: DynamoTable) -> int:
    """Give every account item of a default type that lacks it its registry key; how many were written."""
    request: dict[str, Any] = {
        "TableName": table.name,
        "FilterExpression": "#sk = :sk AND #type = :type AND attribute_not_exists(#registry)",
        "ProjectionExpression": "#pk, #sk, #plan",
        "ExpressionAttributeNames": {
            "#pk": PARTITION_KEY,
            "#sk": SORT_KEY,
            "#type": ITEM_TYPE,
            "#registry": REGISTRY,
            "#plan": PLAN,
        },
        "ExpressionAttributeValues": to_attributes({":sk": keys.ACCOUNT_SORT_KEY, ":type": ACCOUNT_TYPE}),
    }
    written = 0
    for page in table.pages("scan the account items", request, method="scan"):
        for item in page.get("Items", []):
            quota = keys.quota_of(item[PARTITION_KEY]["S"])
            if quota is None or not quota.is_default or quota.period:
                continue  # a type's account item, or a period's: never in the registry
            written += _give_key(table, item)
    return written


def _give_key(table: DynamoTable, item: dict[str, Any]) -> int:
    names = {"#registry": REGISTRY, "#plan": PLAN, "#pk": PARTITION_KEY}
    if PLAN in item:  # the plan as it is when written, not as the scan read it
        update, condition, values = "SET #registry = #plan", "attribute_exists(#plan)", None
    else:
        update, condition, values = "SET #registry = :none", "attribute_not_exists(#plan)", {":none": NO_PLAN}
    request: dict[str, Any] = {
        "TableName": table.name,
        "Key": {PARTITION_KEY: item[PARTITION_KEY], SORT_KEY: item[SORT_KEY]},
        "UpdateExpression": update,
        "ConditionExpression": f"attribute_exists(#pk) AND attribute_not_exists(#registry) AND {condition}",
        "ExpressionAttributeNames": names,
    }
    if values:
        request["ExpressionAttributeValues"] = to_attributes(values)
    try:
        table.call("give an account its registry key", "update_item", **request)
    except ConditionFailed:
        return 0  # given one meanwhile (its membership, or another backfill), or its plan changed: rerun
    return 1

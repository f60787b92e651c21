"""The account registry: the accounts index (table_layout.ACCOUNTS_INDEX) read a page at a time.

Each account's default type's account item carries the registry key: its plan's name, or NO_PLAN
for an account on none. A plan's accounts are one index partition, sorted by account id; every
account is every partition, one after another: NO_PLAN first, then each plan's by plan name (the
plans' own partition says which plans there are). Only Queries: never a Scan (docs/plans.md, "The
account registry"). The index is eventually consistent, as every global secondary index is: an
account created or moved a moment ago may be listed where it was.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from functions.adapters import keys
from functions.adapters.attributes import from_attributes, to_attributes
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.shards import account_key
from functions.adapters.table_layout import ACCOUNTS_INDEX, NO_PLAN, PARTITION_KEY, REGISTRY, SORT_KEY
from functions.core.errors import InvalidCursor
from functions.core.model import ID_PATTERN, RESOURCE_TYPE_PATTERN, Quota
from functions.core.plans import AccountEntry, AccountPage

# A page reads at most this many index pages (and plans' names) while it fills: a bound on a
# request's reads when many plans have no account; a short page then still has its nextCursor.
MAX_QUERIES_PER_PAGE = 5

ACCOUNT_ID = ACCOUNTS_INDEX.sort_key
PLAN, PLAN_VERSION = ACCOUNTS_INDEX.projected


class AccountRegistry:
    def __init__(self, table: DynamoTable) -> None:
        self._table = table

    def list_accounts(self, plan: str | None, limit: int, cursor: str | None) -> AccountPage:
        partition, after = (plan or NO_PLAN, None) if cursor is None else _decode_cursor(cursor)
        if plan is not None and partition != plan:
            raise InvalidCursor()  # a cursor of another plan's list (or of every account's)
        items: list[AccountEntry] = []
        for _ in range(MAX_QUERIES_PER_PAGE):
            found, after = self._page(partition, after, limit - len(items))
            items += found
            if after is not None:
                if len(items) >= limit:
                    return AccountPage(tuple(items), _encode_cursor(partition, after))
                continue
            following = None if plan is not None else self._plan_after(partition)
            if following is None:
                return AccountPage(tuple(items), None)
            partition = following
            if len(items) >= limit:
                return AccountPage(tuple(items), _encode_cursor(partition, None))
        return AccountPage(tuple(items), _encode_cursor(partition, after))

    def accounts_of(self, partition: str, limit: int, after: str | None) -> tuple[list[AccountEntry], str | None]:
        """One index page of a registry partition after the account `after`: its accounts, and the
        last one's id if there may be more (None: the partition ends here)."""
        return self._page(partition, after, limit)

    def _page(self, partition: str, after: str | None, limit: int) -> tuple[list[AccountEntry], str | None]:
        request: dict[str, Any] = {
            "TableName": self._table.name,
            "IndexName": ACCOUNTS_INDEX.name,
            "KeyConditionExpression": "#registry = :registry",
            "ExpressionAttributeNames": {"#registry": REGISTRY},
            "ExpressionAttributeValues": to_attributes({":registry": partition}),
            "Limit": limit,
        }
        if after is not None:
            request["ExclusiveStartKey"] = {
                REGISTRY: {"S": partition},
                ACCOUNT_ID: {"S": after},
                **account_key(Quota(after)),
            }
        response = self._table.call("list accounts", "query", **request)
        found = [_entry(from_attributes(item)) for item in response.get("Items", [])]
        last = response.get("LastEvaluatedKey")
        return found, None if not last else str(last[ACCOUNT_ID]["S"])

    def _plan_after(self, partition: str) -> str | None:
        """The name of the first plan after the registry partition `partition` (NO_PLAN sorts first)."""
        request: dict[str, Any] = {
            "TableName": self._table.name,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY},
            "ExpressionAttributeValues": to_attributes({":pk": keys.PLANS_PK, ":prefix": keys.PLAN_PREFIX}),
            "ProjectionExpression": "#sk",
            "Limit": 1,
        }
        if partition != NO_PLAN:
            request["ExclusiveStartKey"] = {
                PARTITION_KEY: {"S": keys.PLANS_PK},
                SORT_KEY: {"S": keys.plan_sk(partition)},
            }
        response = self._table.call("list accounts' plans", "query", **request)
        for item in response.get("Items", []):
            return keys.plan_name_from_sk(str(item[SORT_KEY]["S"]))
        return None


def _entry(item: dict[str, Any]) -> AccountEntry:
    plan = item.get(PLAN)
    return AccountEntry(
        account_id=str(item[ACCOUNT_ID]),
        plan=None if plan is None else str(plan),
        plan_version=int(item.get(PLAN_VERSION, 0)),
    )


def _encode_cursor(partition: str, after: str | None) -> str:
    raw = json.dumps({"r": partition, "a": after}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[str, str | None]:
    """The registry partition and the account a cursor continues after: only a plan's name (or
    NO_PLAN) and an account id come back in, no key injection."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        decoded = json.loads(raw)
        partition, after = decoded["r"], decoded["a"]
    except (binascii.Error, ValueError, KeyError, TypeError) as error:
        raise InvalidCursor() from error
    if not isinstance(partition, str) or not (partition == NO_PLAN or re.fullmatch(RESOURCE_TYPE_PATTERN, partition)):
        raise InvalidCursor()
    if after is not None and not (isinstance(after, str) and re.fullmatch(ID_PATTERN, after)):
        raise InvalidCursor()
    return partition, after

"""The plan item (`PLANS` / `PLAN#<name>`, functions/adapters/keys.py): every attribute name it
carries, its one reader and writer, and the plans' store (read, conditional write, list).

A plan is one item: its name, its version (its ETag), its quotas as a map by type name, each a map
of the quota's limit and, when the plan gives them, its thresholds, period and anchor; and who
last changed it, when. Every plan is in one partition, listed by a Query (plans are few and
written rarely: a PUT of a plan is one item write, docs/plans.md).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from functions.adapters import keys
from functions.adapters.attributes import from_attributes, to_attributes
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.errors import ConditionFailed
from functions.adapters.table_layout import ITEM_TYPE, PARTITION_KEY, SORT_KEY, item_key
from functions.core.errors import InvalidCursor
from functions.core.model import QuotaMode
from functions.core.periods import format_instant, parse_period
from functions.core.plans import Plan, PlanPage, PlanQuota

PLAN_TYPE = "plan"  # its item type (table_layout.ITEM_TYPE)

# --- attribute names ------------------------------------------------------------------------
NAME = "plan_name"
VERSION = "plan_version"  # bumped by each change of its quotas: the plan's ETag
QUOTAS = "quotas"  # type name -> the quota's map (the names below)
CHANGED_AT = "changed_at"
CHANGED_BY = "changed_by"
# In each quota's map: the names a type's PUT gives them (the account item's are its own module's).
QUOTA_LIMIT = "limit"
QUOTA_THRESHOLDS = "thresholds"
QUOTA_PERIOD = "period"
QUOTA_ANCHOR = "anchor"
QUOTA_MODE = "mode"  # `shadow` only; absent: enforce (every plan written before shadow mode)

# A plan's write: only at the version read (value :read), or as the first one (name #pk).
FIRST_WRITE = "attribute_not_exists(#pk)"
READ_VERSION = "#version = :read"


def plan_key(name: str) -> dict[str, Any]:
    return item_key(keys.PLANS_PK, keys.plan_sk(name))


def quota_values(quota: PlanQuota) -> dict[str, Any]:
    values: dict[str, Any] = {QUOTA_LIMIT: quota.limit}
    if quota.thresholds is not None:
        values[QUOTA_THRESHOLDS] = list(quota.thresholds)
    if quota.period is not None:
        values[QUOTA_PERIOD] = quota.period.kind.value
        if quota.period.anchor is not None:
            values[QUOTA_ANCHOR] = format_instant(quota.period.anchor)
    if quota.mode == QuotaMode.SHADOW:
        values[QUOTA_MODE] = quota.mode
    return values


def quota_from(values: Mapping[str, Any]) -> PlanQuota:
    thresholds = values.get(QUOTA_THRESHOLDS)
    period = values.get(QUOTA_PERIOD)
    anchor = values.get(QUOTA_ANCHOR)
    return PlanQuota(
        limit=int(values[QUOTA_LIMIT]),
        thresholds=None if thresholds is None else tuple(int(each) for each in thresholds),
        period=None if period is None else parse_period(str(period), None if anchor is None else str(anchor)),
        mode=QuotaMode.SHADOW if values.get(QUOTA_MODE) == QuotaMode.SHADOW else QuotaMode.ENFORCE,
    )


def plan_item(plan: Plan) -> dict[str, Any]:
    values = {
        PARTITION_KEY: keys.PLANS_PK,
        SORT_KEY: keys.plan_sk(plan.name),
        ITEM_TYPE: PLAN_TYPE,
        NAME: plan.name,
        VERSION: plan.version,
        QUOTAS: {name: quota_values(quota) for name, quota in plan.quotas.items()},
        CHANGED_AT: plan.updated_at,
        CHANGED_BY: plan.updated_by,
    }
    return to_attributes(values)


def plan_from(item: Mapping[str, Any]) -> Plan:
    """A decoded plan item as the core sees it."""
    return Plan(
        name=str(item[NAME]),
        version=int(item[VERSION]),
        quotas={str(name): quota_from(values) for name, values in dict(item.get(QUOTAS, {})).items()},
        updated_at=str(item.get(CHANGED_AT, "")),
        updated_by=str(item.get(CHANGED_BY, "")),
    )


class PlanItems:
    """The plans' store on the table (the PlanStore port of functions/core/plans.py, but the
    membership, which is the account item's: functions/adapters/api_store.py)."""

    def __init__(self, table: DynamoTable) -> None:
        self._table = table

    def read_plan(self, name: str) -> Plan | None:
        response = self._table.call(
            "read plan", "get_item", TableName=self._table.name, Key=plan_key(name), ConsistentRead=True
        )
        item = response.get("Item")
        return None if item is None else plan_from(from_attributes(item))

    def write_plan(self, plan: Plan, read_version: int) -> bool:
        condition: dict[str, Any] = {
            "ConditionExpression": FIRST_WRITE,
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY},
        }
        if read_version:
            condition = {
                "ConditionExpression": READ_VERSION,
                "ExpressionAttributeNames": {"#version": VERSION},
                "ExpressionAttributeValues": to_attributes({":read": read_version}),
            }
        try:
            self._table.call("write plan", "put_item", TableName=self._table.name, Item=plan_item(plan), **condition)
        except ConditionFailed:
            return False  # another PUT came first (or ours, retried by the SDK): the caller reads again
        return True

    def list_plans(self, limit: int, cursor: str | None) -> PlanPage:
        request: dict[str, Any] = {
            "TableName": self._table.name,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY},
            "ExpressionAttributeValues": to_attributes({":pk": keys.PLANS_PK, ":prefix": keys.PLAN_PREFIX}),
            "Limit": limit,
            "ConsistentRead": True,
        }
        if cursor:
            request["ExclusiveStartKey"] = plan_key(_decode_cursor(cursor))
        response = self._table.call("list plans", "query", **request)
        items = tuple(plan_from(from_attributes(item)) for item in response.get("Items", []))
        last = response.get("LastEvaluatedKey")
        return PlanPage(items=items, next_cursor=_encode_cursor(last[SORT_KEY]["S"]) if last else None)


def _encode_cursor(sort_key: str) -> str:
    raw = json.dumps({"sk": sort_key}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> str:
    """The plan a cursor continues after: only a plan's sort key comes back in, no key injection."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        sort_key = json.loads(raw)["sk"]
    except (binascii.Error, ValueError, KeyError, TypeError) as error:
        raise InvalidCursor() from error
    name = keys.plan_name_from_sk(sort_key) if isinstance(sort_key, str) else None
    if name is None:
        raise InvalidCursor()
    return name

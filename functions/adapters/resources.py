"""The resource item family: a resource's key, its attributes, its codec, and its tombstone.

A resource lives in its quota's partition (`ACCOUNT#<id>` / `RESOURCE#<id>`), in the sparse
pending index while it has counting work left, and as a tombstone after its delete is counted. A
usage record of a periodic quota lives there too, whatever its period (so an Idempotency-Key names
one record in any period), and says its period in `period_id`; TTL removes it once its period and the
key's window are over (`expires_at`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from functions.adapters import keys
from functions.adapters.attributes import from_attributes, to_attributes
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.table_layout import (
    COUNTED_UNITS,
    COUNTER_PROCESSED,
    DELETED,
    EXPIRES_AT,
    ITEM_TYPE,
    PARTITION_KEY,
    PENDING_BUCKET,
    PENDING_SINCE,
    SORT_KEY,
    item_key,
)
from functions.core.counting import GONE, ResourceState
from functions.core.model import Quota, Resource

# The request tokens that let a retried write recognise its own landing (functions/core/leases.py).
REQUEST_TOKEN = "request_token"  # noqa: S105 - an attribute name, not a secret
DELETE_TOKEN = "delete_token"  # noqa: S105
ADMITTED_BY = "shard"  # the admission shard that admitted the resource, where it is released
RESOURCE_TYPE = "resource"  # a resource item's type (table_layout.ITEM_TYPE); a tombstone's is TOMBSTONE
AMOUNT = "amount"  # the units it holds; only when not 1 (absent: 1, as every older resource)
# Set by a resize: the version it made (absent: 1, never resized) and its request's token.
RESOURCE_VERSION = "resource_version"
PERIOD = "period_id"  # a usage record's period (its id): the one its admission's time fell in
RESIZE_TOKEN = "resize_token"  # noqa: S105 - an attribute name, not a secret
RESIZE_KEY = "resize_key"  # its Idempotency-Key, hashed: a retry of that resize finds it
# While a resize of a counted resource is not counted yet, `counted_units` (table_layout) holds the
# units the eventual counter holds for it (the amount it had when counted): the consumer's stream
# filter picks the records that carry it, and counting the resize removes it.
# A counted delete leaves a tombstone instead of nothing: the resource's key with its request and
# delete tokens and its request fingerprint, and neither `deleted` nor `counter_processed`, so no
# stream filter or index picks it up. A retried write finds its own token there; a late create
# finds the key taken. DynamoDB's TTL removes it after the retention.
TOMBSTONE = "tombstone"
# What a counted delete removes from the resource, leaving its tombstone.
TOMBSTONE_REMOVES = (
    f"{DELETED}, {COUNTER_PROCESSED}, attributes, {PENDING_BUCKET}, {PENDING_SINCE}, deleted_at, {COUNTED_UNITS}"
)


def resource_key(quota: Quota, resource_id: str) -> dict[str, Any]:
    return item_key(keys.resources_pk(quota), keys.resource_sk(resource_id))


def resource_item(resource: Resource) -> dict[str, Any]:
    amount = {} if resource.amount == 1 else {AMOUNT: resource.amount}
    period = {PERIOD: resource.quota.period, EXPIRES_AT: resource.expires_at} if resource.quota.period else {}
    return to_attributes(
        {
            PARTITION_KEY: keys.resources_pk(resource.quota),
            SORT_KEY: keys.resource_sk(resource.resource_id),
            ITEM_TYPE: RESOURCE_TYPE,
            "account_id": resource.account_id,
            "resource_id": resource.resource_id,
            "name": resource.name,
            # JSON text keeps any JSON value exactly (DynamoDB maps reject floats and empty keys).
            "attributes": json.dumps(resource.attributes, separators=(",", ":")),
            "created_at": resource.created_at,
            "request_fingerprint": resource.request_fingerprint,
            REQUEST_TOKEN: resource.request_token,
            DELETED: resource.deleted,
            COUNTER_PROCESSED: resource.counter_processed,
            # In the sparse pending index until the consumer counts it.
            PENDING_BUCKET: keys.pending_bucket(resource.quota, resource.resource_id),
            PENDING_SINCE: resource.created_at,
            ADMITTED_BY: resource.shard,
            **amount,
            **period,
        }
    )


def amount_of(values: Mapping[str, Any]) -> int:
    """A decoded resource item's amount (absent: 1)."""
    return int(values.get(AMOUNT, 1))


def resource_from_item(item: Mapping[str, Any]) -> Resource:
    return resource_from_values(from_attributes(item))


def stored_attributes(text: str) -> dict[str, Any]:
    """A resource's attributes from their JSON text. Versions before the API's JSON rules
    (functions/api/json_body.py) stored NaN and Infinity as json.dumps writes them: they read as
    null, as those versions answered them."""
    attributes: dict[str, Any] = json.loads(text, parse_constant=lambda _: None)
    return attributes


def resource_from_values(values: Mapping[str, Any]) -> Resource:
    """A decoded resource item or tombstone (its key included) as the core sees it."""
    tombstone = values.get(ITEM_TYPE) == TOMBSTONE
    quota = keys.quota_of(str(values[PARTITION_KEY]))
    if quota is None:
        raise ValueError(f"not a resource's partition key: {values[PARTITION_KEY]!r}")
    period = values.get(PERIOD)
    if isinstance(period, str) and period:
        quota = quota.in_period(period)
    return Resource(
        quota=quota,
        resource_id=values["resource_id"],
        name=values["name"],
        attributes=stored_attributes(values.get("attributes", "{}")),
        created_at=values["created_at"],
        request_fingerprint=values.get("request_fingerprint", ""),
        request_token=values.get(REQUEST_TOKEN, ""),
        deleted=tombstone or bool(values.get(DELETED, False)),
        counter_processed=bool(values.get(COUNTER_PROCESSED, False)),
        delete_token=values.get(DELETE_TOKEN, ""),
        tombstone=tombstone,
        shard=int(values.get(ADMITTED_BY, 0)),
        expires_at=int(values.get(EXPIRES_AT, 0)) if tombstone or quota.period else 0,
        amount=amount_of(values),
        version=int(values.get(RESOURCE_VERSION, 1)),
        resize_token=values.get(RESIZE_TOKEN, ""),
        resize_key=values.get(RESIZE_KEY, ""),
    )


def read_resource(table: DynamoTable, quota: Quota, resource_id: str) -> Resource | None:
    """The resource or its tombstone, strongly consistent; None if there is neither."""
    key = resource_key(quota, resource_id)
    item = table.call("get resource", "get_item", TableName=table.name, Key=key, ConsistentRead=True).get("Item")
    return resource_from_item(item) if item else None


def read_resources(table: DynamoTable, quota: Quota, resource_ids: Iterable[str]) -> dict[str, Resource]:
    """The resources or tombstones that exist among `resource_ids`, by id, strongly consistent, in
    one BatchGetItem per 100."""
    wanted = [resource_key(quota, resource_id) for resource_id in sorted(set(resource_ids))]
    found = map(resource_from_values, table.read_keys("read resources", wanted))
    return {resource.resource_id: resource for resource in found}


def amount_condition(amount: int, values: dict[str, Any]) -> str:
    """The condition that the resource holds `amount` units (a resource of 1 has no attribute)."""
    if amount == 1:
        return f"attribute_not_exists({AMOUNT})"
    values[":amount"] = amount
    return f"{AMOUNT} = :amount"


def counted_units_of(values: Mapping[str, Any]) -> int | None:
    """The units the eventual counter holds for a resource whose resize is not counted yet (None:
    no such resize; a counted resource's counter then holds its amount)."""
    counted = values.get(COUNTED_UNITS)
    return None if counted is None else int(counted)


def counted_units_condition(counted: int | None, values: dict[str, Any]) -> str:
    """The condition that a resize of the resource is (not) waiting to be counted, from `counted`."""
    if counted is None:
        return f"attribute_not_exists({COUNTED_UNITS})"
    values[":counted_units"] = counted
    return f"{COUNTED_UNITS} = :counted_units"


def counted_update(table: str, quota: Quota, resource_id: str, amount: int = 1) -> dict[str, Any]:
    """The update that counts a resource's create: its flag set, and out of the pending index, if
    it is still uncounted, not deleted, and holds the `amount` the count adds."""
    values: dict[str, Any] = {":true": True, ":false": False}
    holds = amount_condition(amount, values)
    return {
        "TableName": table,
        "Key": resource_key(quota, resource_id),
        "UpdateExpression": f"SET {COUNTER_PROCESSED} = :true REMOVE {PENDING_BUCKET}, {PENDING_SINCE}",
        "ConditionExpression": (
            f"attribute_exists(#pk) AND {COUNTER_PROCESSED} = :false AND {DELETED} = :false AND {holds}"
        ),
        "ExpressionAttributeNames": {"#pk": PARTITION_KEY},
        "ExpressionAttributeValues": to_attributes(values),
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def resize_counted_update(table: str, quota: Quota, resource_id: str, amount: int, counted: int) -> dict[str, Any]:
    """The update that counts a resize of a counted resource (the counter moves from `counted` to
    `amount` units): out of the pending index, if it is live, holds `amount` and its counter still
    holds `counted`."""
    values: dict[str, Any] = {":true": True, ":false": False}
    holds = f"{amount_condition(amount, values)} AND {counted_units_condition(counted, values)}"
    return {
        "TableName": table,
        "Key": resource_key(quota, resource_id),
        "UpdateExpression": f"REMOVE {COUNTED_UNITS}, {PENDING_BUCKET}, {PENDING_SINCE}",
        "ConditionExpression": f"{COUNTER_PROCESSED} = :true AND {DELETED} = :false AND {holds}",
        "ExpressionAttributeValues": to_attributes(values),
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def resize_update(
    table: str, resource: Resource, amount: int, token: str, key: str, now: str, counted: bool
) -> dict[str, Any]:
    """The update that resizes `resource` (as read) to `amount` units and makes its next version
    (with the resize's `token`, and its hashed Idempotency-Key `key` or none), if it is still live
    at that version and its create's count is still `counted`. A counted one
    keeps what its counter holds in `counted_units` (the amount it was counted at, unless an
    earlier resize is still uncounted) and goes back into the pending index, so the consumer
    counts the change; an uncounted one is counted at its new amount."""
    values: dict[str, Any] = {
        ":false": False,
        ":counted": counted,
        ":next": resource.version + 1,
        ":token": token,
    }
    sets = [f"{RESOURCE_VERSION} = :next", f"{RESIZE_TOKEN} = :token"]
    removes = []
    if key:
        values[":key"] = key
        sets.append(f"{RESIZE_KEY} = :key")
    else:
        removes.append(RESIZE_KEY)
    if amount == 1:
        removes.append(AMOUNT)
    else:
        values[":amount"] = amount
        sets.append(f"{AMOUNT} = :amount")
    if counted:
        values |= {
            ":held": resource.amount,
            ":bucket": keys.pending_bucket(resource.quota, resource.resource_id),
            ":now": now,
        }
        sets += [
            f"{COUNTED_UNITS} = if_not_exists({COUNTED_UNITS}, :held)",
            f"{PENDING_BUCKET} = :bucket",
            f"{PENDING_SINCE} = :now",
        ]
    if resource.version == 1:
        at_version = f"attribute_not_exists({RESOURCE_VERSION})"
    else:
        values[":version"] = resource.version
        at_version = f"{RESOURCE_VERSION} = :version"
    names = {"#pk": PARTITION_KEY}
    if resource.quota.period:  # the record read, not one its key made after it expired
        at_version += " AND #period = :period"
        names["#period"], values[":period"] = PERIOD, resource.quota.period
    expression = "SET " + ", ".join(sets) + (f" REMOVE {', '.join(removes)}" if removes else "")
    return {
        "TableName": table,
        "Key": resource_key(resource.quota, resource.resource_id),
        "UpdateExpression": expression,
        "ConditionExpression": (
            f"attribute_exists(#pk) AND {DELETED} = :false AND {COUNTER_PROCESSED} = :counted AND {at_version}"
        ),
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": to_attributes(values),
        "ReturnValues": "ALL_NEW",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def tombstone_update(
    table: str,
    quota: Quota,
    resource_id: str,
    counted: bool,
    expires_at: int,
    amount: int = 1,
    counted_units: int | None = None,
) -> dict[str, Any]:
    """The update that turns a soft-deleted resource into its tombstone (the removal of the
    resource), if its create's count is `counted` (and, counted, if it holds the `amount` and the
    `counted_units` of an uncounted resize the removal assumes); TTL removes the tombstone after
    `expires_at`."""
    values: dict[str, Any] = {":true": True, ":counted": counted, ":tombstone": TOMBSTONE, ":expires": expires_at}
    holds = ""
    if counted:
        holds = f" AND {amount_condition(amount, values)} AND {counted_units_condition(counted_units, values)}"
    return {
        "TableName": table,
        "Key": resource_key(quota, resource_id),
        "UpdateExpression": f"SET #type = :tombstone, {EXPIRES_AT} = :expires REMOVE {TOMBSTONE_REMOVES}",
        "ConditionExpression": f"{DELETED} = :true AND {COUNTER_PROCESSED} = :counted{holds}",
        "ExpressionAttributeNames": {"#type": ITEM_TYPE},
        "ExpressionAttributeValues": to_attributes(values),
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def resources_query(
    table: str,
    quota: Quota,
    names: Mapping[str, str] | None = None,
    values: Mapping[str, Any] | None = None,
    **request: Any,
) -> dict[str, Any]:
    """A Query of an account's resource items (its partition, from the first resource sort key):
    `request`'s other parameters, with their attribute `names` and `values` beside the key's. For
    one period of a periodic quota, its records only (a filter on `period`)."""
    names, values = dict(names or {}), dict(values or {})
    if quota.period:
        period_filter = "#period = :period"
        names["#period"], values[":period"] = PERIOD, quota.period
        given = request.get("FilterExpression")
        request["FilterExpression"] = f"({given}) AND {period_filter}" if given else period_filter
    return {
        "TableName": table,
        "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
        **request,
        "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY, **names},
        "ExpressionAttributeValues": to_attributes(
            {":pk": keys.resources_pk(quota), ":prefix": keys.RESOURCE_PREFIX, **values}
        ),
    }


def resource_state(values: Mapping[str, Any]) -> ResourceState:
    """A resource item as a failed condition saw it (plain values; empty: no item)."""
    if not values:
        return GONE
    if values.get(ITEM_TYPE) == TOMBSTONE:
        return GONE
    return ResourceState(
        exists=True,
        deleted=bool(values.get(DELETED, False)),
        counter_processed=bool(values.get(COUNTER_PROCESSED, False)),
        amount=amount_of(values),
        counted=counted_units_of(values),
    )

"""The resource item family: a resource's key, its attributes, its codec, and its tombstone.

A resource lives in its account's partition (`ACCOUNT#<id>` / `RESOURCE#<id>`), in the sparse
pending index while it has counting work left, and as a tombstone after its delete is counted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from functions.adapters import keys
from functions.adapters.attributes import from_attributes, to_attributes
from functions.adapters.errors import unavailable
from functions.adapters.shards import ShardStore
from functions.adapters.table_layout import (
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
from functions.core.model import Resource

# The request tokens that let a retried write recognise its own landing (functions/core/leases.py).
REQUEST_TOKEN = "request_token"  # noqa: S105 - an attribute name, not a secret
DELETE_TOKEN = "delete_token"  # noqa: S105
ADMITTED_BY = "shard"  # the admission shard that admitted the resource, where it is released
# A counted delete leaves a tombstone instead of nothing: the resource's key with its request and
# delete tokens and its request fingerprint, and neither `deleted` nor `counter_processed`, so no
# stream filter or index picks it up. A retried write finds its own token there; a late create
# finds the key taken. DynamoDB's TTL removes it after the retention.
TOMBSTONE = "tombstone"
# What a counted delete removes from the resource, leaving its tombstone.
TOMBSTONE_REMOVES = f"{DELETED}, {COUNTER_PROCESSED}, attributes, {PENDING_BUCKET}, {PENDING_SINCE}, deleted_at"


def resource_key(account_id: str, resource_id: str) -> dict[str, Any]:
    return item_key(keys.account_pk(account_id), keys.resource_sk(resource_id))


def resource_item(resource: Resource) -> dict[str, Any]:
    return to_attributes(
        {
            PARTITION_KEY: keys.account_pk(resource.account_id),
            SORT_KEY: keys.resource_sk(resource.resource_id),
            ITEM_TYPE: "resource",
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
            PENDING_BUCKET: keys.pending_bucket(resource.account_id, resource.resource_id),
            PENDING_SINCE: resource.created_at,
            ADMITTED_BY: resource.shard,
        }
    )


def resource_from_item(item: Mapping[str, Any]) -> Resource:
    return resource_from_values(from_attributes(item))


def stored_attributes(text: str) -> dict[str, Any]:
    """A resource's attributes from their JSON text. Versions before the API's JSON rules
    (functions/api/json_body.py) stored NaN and Infinity as json.dumps writes them: they read as
    null, as those versions answered them."""
    attributes: dict[str, Any] = json.loads(text, parse_constant=lambda _: None)
    return attributes


def resource_from_values(values: Mapping[str, Any]) -> Resource:
    """A decoded resource item or tombstone as the core sees it."""
    tombstone = values.get(ITEM_TYPE) == TOMBSTONE
    return Resource(
        account_id=values["account_id"],
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
        expires_at=int(values.get(EXPIRES_AT, 0)) if tombstone else 0,
    )


def read_resource(client: Any, table: str, account_id: str, resource_id: str) -> Resource | None:
    try:
        response = client.get_item(TableName=table, Key=resource_key(account_id, resource_id), ConsistentRead=True)
    except (ClientError, BotoCoreError) as error:
        raise unavailable("get resource", error) from error
    item = response.get("Item")
    return resource_from_item(item) if item else None


def read_resources(store: ShardStore, account_id: str, resource_ids: Iterable[str]) -> dict[str, Resource]:
    """The resources or tombstones that exist among `resource_ids`, by id, strongly consistent, in
    one BatchGetItem per 100."""
    found = store.read_keys([resource_key(account_id, resource_id) for resource_id in sorted(set(resource_ids))])
    return {resource.resource_id: resource for resource in map(resource_from_values, found)}


def resource_state(item: Mapping[str, Any] | None) -> ResourceState:
    if not item:
        return GONE
    values = from_attributes(item)
    if values.get(ITEM_TYPE) == TOMBSTONE:
        return GONE
    return ResourceState(
        exists=True,
        deleted=bool(values.get(DELETED, False)),
        counter_processed=bool(values.get(COUNTER_PROCESSED, False)),
    )

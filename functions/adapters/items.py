"""The codec of an account's resource items and eventual counter items: their keys, attribute
names and values, defined once (admission shards: shards.py; rate windows: rate_windows.py)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from functions.adapters.attributes import from_attributes, to_attributes
from functions.adapters.errors import unavailable
from functions.adapters.shards import ShardStore, shard_index, shard_key, shard_state
from functions.core import keys, schema
from functions.core.counting import GONE, ResourceState
from functions.core.model import Resource

PK, SK = schema.PARTITION_KEY, schema.SORT_KEY
COUNTER_PROCESSED, DELETED = schema.COUNTER_PROCESSED_ATTRIBUTE, schema.DELETED_ATTRIBUTE
PENDING_BUCKET, PENDING_SINCE = schema.PENDING_BUCKET_ATTRIBUTE, schema.PENDING_SINCE_ATTRIBUTE
ACTIVITY_BUCKET, LAST_WRITE = schema.ACTIVITY_BUCKET_ATTRIBUTE, schema.LAST_WRITE_ATTRIBUTE
LAST_WRITE_EXACT = schema.LAST_WRITE_EXACT_ATTRIBUTE
REQUEST_TOKEN, DELETE_TOKEN = schema.REQUEST_TOKEN_ATTRIBUTE, schema.DELETE_TOKEN_ATTRIBUTE
ITEM_TYPE, EXPIRES_AT = schema.ITEM_TYPE_ATTRIBUTE, schema.EXPIRES_AT_ATTRIBUTE
ADMITTED_BY = schema.RESOURCE_SHARD_ATTRIBUTE  # the admission shard that admitted the resource
CCF = "ConditionalCheckFailedException"

# What a counted delete removes from the resource, leaving its tombstone (schema.TOMBSTONE_TYPE).
TOMBSTONE_REMOVES = f"{DELETED}, {COUNTER_PROCESSED}, attributes, {PENDING_BUCKET}, {PENDING_SINCE}, deleted_at"


def item_key(pk: str, sk: str) -> dict[str, Any]:
    return {PK: {"S": pk}, SK: {"S": sk}}


def account_key(account_id: str) -> dict[str, Any]:
    return item_key(keys.account_pk(account_id), schema.ACCOUNT_SORT_KEY)


def counter_key(account_id: str, shard: int = 0) -> dict[str, Any]:
    """An eventual counter shard: 0 in the account's partition, j >= 1 on a key of its own."""
    pk = keys.account_pk(account_id) if shard == 0 else keys.counter_pk(account_id, shard)
    return item_key(pk, schema.EVENTUAL_COUNTER_SORT_KEY)


def other_counter_keys(account_id: str, span: int) -> list[dict[str, Any]]:
    """The counter shards above 0 an account can have: none until its admission shards spread."""
    return [counter_key(account_id, shard) for shard in range(1, schema.COUNTER_SHARDS)] if span > 1 else []


@dataclass(frozen=True)
class AccountItems:
    """An account's admission shard items (the account item first) and eventual counter items."""

    shards: list[dict[str, Any]]
    counters: list[dict[str, Any]]

    @property
    def eventual(self) -> int:
        return sum(int(counter.get("count", 0)) for counter in self.counters)


def read_account_items(store: ShardStore, account_id: str) -> AccountItems | None:
    """The account item and its eventual counter in one BatchGetItem, and for a busy account its
    other admission and counter shards in one more; None if there is no such account."""
    found = store.read_keys([account_key(account_id), counter_key(account_id)])
    account = next((item for item in found if item[SK] == schema.ACCOUNT_SORT_KEY), None)
    if account is None:
        return None
    span = shard_state(account).span
    if span > 1:
        others = [shard_key(account_id, shard) for shard in range(1, span)]
        found += store.read_keys(others + other_counter_keys(account_id, span))
    shards = sorted((item for item in found if item[SK] == schema.SHARD_SORT_KEY), key=shard_index)
    counters = [item for item in found if item[SK] == schema.EVENTUAL_COUNTER_SORT_KEY]
    return AccountItems([account, *shards], counters)


def resource_key(account_id: str, resource_id: str) -> dict[str, Any]:
    return item_key(keys.account_pk(account_id), keys.resource_sk(resource_id))


def resource_item(resource: Resource) -> dict[str, Any]:
    return to_attributes(
        {
            PK: keys.account_pk(resource.account_id),
            SK: keys.resource_sk(resource.resource_id),
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
    tombstone = values.get(ITEM_TYPE) == schema.TOMBSTONE_TYPE
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
    if values.get(ITEM_TYPE) == schema.TOMBSTONE_TYPE:
        return GONE
    return ResourceState(
        exists=True,
        deleted=bool(values.get(DELETED, False)),
        counter_processed=bool(values.get(COUNTER_PROCESSED, False)),
    )

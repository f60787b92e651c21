"""DynamoDB adapters: every table call of the system lives here and in functions/adapters/shards.py.

`DynamoApiStore` implements the API's port (single-item writes; transactions only to move room
between a busy account's admission shards); `DynamoCountingStore` implements the consumer's port
(transactions) and the sweep's reads; `DynamoHealingStore` a heal's reads and writes.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from functions.adapters.attributes import from_attributes, to_attributes
from functions.adapters.errors import error_code, unavailable
from functions.adapters.pages import query_pages
from functions.adapters.rate_windows import RATE, WINDOW, rate_of_item
from functions.adapters.shards import (
    ACTIVE,
    LIMIT_REQUEST,
    LIMIT_SET_AT,
    LIMIT_VERSION,
    RETIRED,
    ROOM,
    SPAN,
    ShardStore,
    held_leases,
    latest_write,
    settle_lease,
    shard_index,
    shard_key,
    shard_state,
    take_lease,
)
from functions.core import keys, leases, schema
from functions.core.accounts import LimitChange
from functions.core.admission import Reserved, ShardState
from functions.core.audit import AccountView
from functions.core.counting import (
    COMMITTED,
    CONDITIONAL_CHECK_FAILED,
    DELTAS,
    GONE,
    ActionKind,
    CancellationReason,
    ResourceAction,
    ResourceState,
    TransactionResult,
    TransientStoreError,
    counter_shard,
)
from functions.core.errors import InvalidCursor, ResourceAlreadyExists, StoreUnavailable
from functions.core.healing import (
    DEFAULT_TOMBSTONE_RETENTION,
    AccountState,
    HealPlan,
    last_write_stamp,
)
from functions.core.leases import Lease, Settled, Settlement
from functions.core.model import Page, Resource, Usage

PK, SK = schema.PARTITION_KEY, schema.SORT_KEY
COUNTER_PROCESSED, DELETED = schema.COUNTER_PROCESSED_ATTRIBUTE, schema.DELETED_ATTRIBUTE
PENDING_BUCKET, PENDING_SINCE = schema.PENDING_BUCKET_ATTRIBUTE, schema.PENDING_SINCE_ATTRIBUTE
ACTIVITY_BUCKET, LAST_WRITE = schema.ACTIVITY_BUCKET_ATTRIBUTE, schema.LAST_WRITE_ATTRIBUTE
LAST_WRITE_EXACT = schema.LAST_WRITE_EXACT_ATTRIBUTE
REQUEST_TOKEN, DELETE_TOKEN = schema.REQUEST_TOKEN_ATTRIBUTE, schema.DELETE_TOKEN_ATTRIBUTE
ITEM_TYPE, EXPIRES_AT = schema.ITEM_TYPE_ATTRIBUTE, schema.EXPIRES_AT_ATTRIBUTE
CCF = "ConditionalCheckFailedException"

# What a counted delete removes from the resource, leaving its tombstone (schema.TOMBSTONE_TYPE).
TOMBSTONE_REMOVES = f"{DELETED}, {COUNTER_PROCESSED}, attributes, {PENDING_BUCKET}, {PENDING_SINCE}, deleted_at"

# A list page reads at most this many DynamoDB pages while skipping soft-deleted items.
MAX_QUERY_PAGES_PER_LIST = 5


def _rate_update(change: LimitChange, values: dict[str, Any]) -> str:
    """The SET clauses (and their values) of a limit change's rate limit, if it has one."""
    if change.rate is None:
        return ""
    values.update({":rate": change.rate.requests_per_second, ":window": change.rate.window_seconds})
    return f", {RATE} = :rate, {WINDOW} = :window"


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {PK: {"S": pk}, SK: {"S": sk}}


def account_key(account_id: str) -> dict[str, Any]:
    return _key(keys.account_pk(account_id), schema.ACCOUNT_SORT_KEY)


def counter_key(account_id: str, shard: int = 0) -> dict[str, Any]:
    """An eventual counter shard: 0 in the account's partition, j >= 1 on a key of its own."""
    pk = keys.account_pk(account_id) if shard == 0 else keys.counter_pk(account_id, shard)
    return _key(pk, schema.EVENTUAL_COUNTER_SORT_KEY)


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
    return _key(keys.account_pk(account_id), keys.resource_sk(resource_id))


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
            schema.RESOURCE_SHARD_ATTRIBUTE: resource.shard,
        }
    )


def resource_from_item(item: Mapping[str, Any]) -> Resource:
    values = from_attributes(item)
    tombstone = values.get(ITEM_TYPE) == schema.TOMBSTONE_TYPE
    return Resource(
        account_id=values["account_id"],
        resource_id=values["resource_id"],
        name=values["name"],
        attributes=json.loads(values.get("attributes", "{}")),
        created_at=values["created_at"],
        request_fingerprint=values.get("request_fingerprint", ""),
        request_token=values.get(REQUEST_TOKEN, ""),
        deleted=tombstone or bool(values.get(DELETED, False)),
        counter_processed=bool(values.get(COUNTER_PROCESSED, False)),
        delete_token=values.get(DELETE_TOKEN, ""),
        tombstone=tombstone,
        shard=int(values.get(schema.RESOURCE_SHARD_ATTRIBUTE, 0)),
        expires_at=int(values.get(EXPIRES_AT, 0)) if tombstone else 0,
    )


def _condition_failed_item(error: ClientError) -> dict[str, Any] | None:
    return error.response.get("Item")  # type: ignore[no-any-return]


def read_resource(client: Any, table: str, account_id: str, resource_id: str) -> Resource | None:
    try:
        response = client.get_item(TableName=table, Key=resource_key(account_id, resource_id), ConsistentRead=True)
    except (ClientError, BotoCoreError) as error:
        raise unavailable("get resource", error) from error
    item = response.get("Item")
    return resource_from_item(item) if item else None


class DynamoApiStore(ShardStore):
    """The API's storage: single-item calls, each safe to retry (docs/admission.md), so `client`
    keeps the SDK's standard retries. Transactions run only to move room between a busy account's
    shards (ShardStore), and their cancellations never reach a caller."""

    # accounts ------------------------------------------------------------------------------

    def create_account(self, account_id: str, change: LimitChange, now: str) -> bool:
        values = {
            ":limit": change.limit,
            ":zero": 0,
            ":one": 1,
            ":id": account_id,
            ":type": "account",
            ":now": now,
            ":bucket": keys.activity_bucket(account_id),
            ":stamp": last_write_stamp(now),
            ":received": change.received_ms,
            ":token": change.token,
        }
        try:
            self._client.update_item(
                TableName=self._table,
                Key=account_key(account_id),
                UpdateExpression=(
                    f"SET #limit = :limit, {ROOM} = :limit, admitted = :zero, best_effort = :zero, "
                    f"heal_epoch = :zero, {ACTIVE} = :one, {SPAN} = :one, version = :one, "
                    f"account_id = :id, #type = :type, created_at = :now, updated_at = :now, "
                    f"{ACTIVITY_BUCKET} = :bucket, {LAST_WRITE} = :stamp, {LAST_WRITE_EXACT} = :now, "
                    f"{LIMIT_VERSION} = :one, {LIMIT_SET_AT} = :received, {LIMIT_REQUEST} = :token"
                    + _rate_update(change, values)
                ),
                ConditionExpression="attribute_not_exists(#pk)",
                ExpressionAttributeNames={"#limit": "limit", "#type": "type", "#pk": PK},
                ExpressionAttributeValues=to_attributes(values),
            )
        except ClientError as error:
            if error_code(error) == CCF:
                return False  # it exists (perhaps our own retried write): the caller re-reads
            raise unavailable("create account", error) from error
        except BotoCoreError as error:
            raise unavailable("create account", error) from error
        return True

    def set_limit(self, account_id: str, account: ShardState, change: LimitChange, now: str, retired_span: int) -> bool:
        values = {
            ":limit": change.limit,
            ":change": change.limit - account.limit,
            ":now": now,
            ":stamp": last_write_stamp(now),
            ":one": 1,
            ":next": account.limit_version + 1,
            ":received": change.received_ms,
            ":token": change.token,
        }
        # The version read, or no version at all on an account item written before versions.
        if account.limit_version:
            values[":version"] = account.limit_version
            unchanged = f"{LIMIT_VERSION} = :version"
        else:
            unchanged = f"attribute_not_exists({LIMIT_VERSION})"
        update: dict[str, Any] = {
            "TableName": self._table,
            "Key": account_key(account_id),
            "UpdateExpression": (
                f"SET #limit = :limit, updated_at = :now, {LAST_WRITE} = :stamp, {LAST_WRITE_EXACT} = :now, "
                f"{LIMIT_VERSION} = :next, {LIMIT_SET_AT} = :received, {LIMIT_REQUEST} = :token"
                + _rate_update(change, values)
                + f" ADD {ROOM} :change, version :one"
            ),
            "ConditionExpression": unchanged,
            "ExpressionAttributeNames": {"#limit": "limit"},
            "ExpressionAttributeValues": to_attributes(values),
        }
        if not retired_span:
            try:
                self._client.update_item(**update)
            except ClientError as error:
                if error_code(error) == CCF:
                    return False  # another change came first (or ours, retried): the caller re-reads
                raise unavailable("set limit", error) from error
            except BotoCoreError as error:
                raise unavailable("set limit", error) from error
            return True
        # Lowered below shard 0's room: only once every other shard admits nothing and holds no room.
        update["ConditionExpression"] += f" AND {ACTIVE} = :single"
        update["ExpressionAttributeValues"][":single"] = {"N": "1"}
        checks = [
            {
                "ConditionCheck": {
                    "TableName": self._table,
                    "Key": shard_key(account_id, shard),
                    "ConditionExpression": f"attribute_not_exists(#pk) OR ({RETIRED} = :true AND {ROOM} = :zero)",
                    "ExpressionAttributeNames": {"#pk": PK},
                    "ExpressionAttributeValues": to_attributes({":true": True, ":zero": 0}),
                }
            }
            for shard in range(1, retired_span)
        ]
        return self._transact("set limit", [{"Update": update}, *checks])

    def read_usage(self, account_id: str) -> Usage | None:
        read = read_account_items(self, account_id)
        if read is None:
            return None
        return Usage(
            account_id=account_id,
            limit=shard_state(read.shards[0]).limit,
            best_effort_net=sum(shard_state(item).best_effort for item in read.shards),
            eventual=read.eventual,
            rate=rate_of_item(read.shards[0]),
            limit_version=shard_state(read.shards[0]).limit_version,
        )

    def reserve_on(self, account_id: str, lease: Lease) -> Reserved | None:
        taken = take_lease(
            self._client,
            self._table,
            account_id,
            lease,
            {"admitted": +1, ROOM: -1},
            f"{ROOM} >= :one AND attribute_not_exists({RETIRED})",
        )
        if taken is None:
            return None
        state = shard_state(taken)
        layout = (state.active, state.span) if lease.shard == 0 else None
        return Reserved(heal_epoch=int(taken.get("heal_epoch", 0)), version=state.version, layout=layout)

    def take_deletion(self, account_id: str, lease: Lease) -> None:
        # Signed on purpose: a decrement may land before the increment it cancels (a delete
        # racing a create that is still in flight). Clamping at zero here would lose it, and the
        # late increment would then overcount. Readers clamp instead (Usage.best_effort).
        if take_lease(self._client, self._table, account_id, lease, {"best_effort": -1}) is None:
            raise StoreUnavailable("take deletion lease: a token taken twice", may_have_landed=False)

    def settle(self, account_id: str, lease: Lease, settlement: Settlement, now: str | None) -> Settled:
        return settle_lease(self._client, self._table, account_id, lease, settlement, now)

    # resources ------------------------------------------------------------------------------

    def put_resource(self, resource: Resource) -> None:
        try:
            self._client.put_item(
                TableName=self._table,
                Item=resource_item(resource),
                # A new key, or one whose tombstone outlived its retention (TTL removes it within
                # days, not at once): the Idempotency-Key's window is over.
                ConditionExpression="attribute_not_exists(#pk) OR (#type = :tombstone AND #expires <= :now)",
                ExpressionAttributeNames={"#pk": PK, "#type": ITEM_TYPE, "#expires": EXPIRES_AT},
                ExpressionAttributeValues=to_attributes(
                    {":tombstone": schema.TOMBSTONE_TYPE, ":now": int(time.time())}
                ),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if error_code(error) != CCF:
                raise unavailable("create resource", error) from error
            existing = resource_from_item(_condition_failed_item(error) or {})
            if existing.request_token != resource.request_token:
                raise ResourceAlreadyExists(existing) from error
            # Our own write landed and the SDK retried it: that is success.
        except BotoCoreError as error:
            raise unavailable("create resource", error) from error

    def get_resource(self, account_id: str, resource_id: str) -> Resource | None:
        return read_resource(self._client, self._table, account_id, resource_id)

    def soft_delete(self, account_id: str, resource_id: str, now: str, token: str) -> bool:
        try:
            self._client.update_item(
                TableName=self._table,
                Key=resource_key(account_id, resource_id),
                UpdateExpression=(
                    f"SET {DELETED} = :true, deleted_at = :now, {DELETE_TOKEN} = :token, "
                    f"{PENDING_BUCKET} = :bucket, {PENDING_SINCE} = :now"
                ),
                ConditionExpression=f"attribute_exists(#pk) AND {DELETED} = :false",
                ExpressionAttributeNames={"#pk": PK},
                ExpressionAttributeValues=to_attributes(
                    {
                        ":true": True,
                        ":false": False,
                        ":now": now,
                        ":token": token,
                        ":bucket": keys.pending_bucket(account_id, resource_id),
                    }
                ),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if error_code(error) != CCF:
                raise unavailable("delete resource", error) from error
            current = from_attributes(_condition_failed_item(error) or {})
            # Our own landed write, retried: the item, or the tombstone it became, has our token.
            return current.get(DELETE_TOKEN) == token
        except BotoCoreError as error:
            raise unavailable("delete resource", error) from error
        return True

    def list_resources(self, account_id: str, limit: int, cursor: str | None) -> Page:
        # By hand, not a paginator: the page ends at `limit` live items and its LastEvaluatedKey
        # becomes the API's own cursor.
        start_key = _decode_cursor(account_id, cursor) if cursor else None
        items: list[Resource] = []
        for _ in range(MAX_QUERY_PAGES_PER_LIST):
            request: dict[str, Any] = {
                "TableName": self._table,
                "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
                "FilterExpression": f"{DELETED} = :false",
                "ExpressionAttributeNames": {"#pk": PK, "#sk": SK},
                "ExpressionAttributeValues": to_attributes(
                    {":pk": keys.account_pk(account_id), ":prefix": schema.RESOURCE_PREFIX, ":false": False}
                ),
                "Limit": limit - len(items),
                "ConsistentRead": True,
            }
            if start_key:
                request["ExclusiveStartKey"] = start_key
            response = self._call("list resources", self._client.query, **request)
            items.extend(resource_from_item(item) for item in response.get("Items", []))
            start_key = response.get("LastEvaluatedKey")
            if not start_key or len(items) >= limit:
                break
        return Page(items=items, next_cursor=_encode_cursor(start_key) if start_key else None)

    def _call(self, operation: str, method: Any, **request: Any) -> Any:
        try:
            return method(**request)
        except (ClientError, BotoCoreError) as error:
            raise unavailable(operation, error) from error


def _encode_cursor(last_key: Mapping[str, Any]) -> str:
    raw = json.dumps({"sk": last_key[SK]["S"]}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(account_id: str, cursor: str) -> dict[str, Any]:
    """Only a resource sort key of this account can come back in: no key injection."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        sort_key = json.loads(raw)["sk"]
    except (binascii.Error, ValueError, KeyError, TypeError) as error:
        raise InvalidCursor() from error
    if not isinstance(sort_key, str) or keys.resource_id_from_sk(sort_key) is None:
        raise InvalidCursor()
    return _key(keys.account_pk(account_id), sort_key)


class DynamoCountingStore:
    """The eventual counter's storage: one transaction per batch of an account's counting actions,
    plus the sweep's reads.

    A counted delete turns the resource into a tombstone kept for `tombstone_retention`."""

    def __init__(
        self,
        client: Any,
        table_name: str,
        tombstone_retention: timedelta = DEFAULT_TOMBSTONE_RETENTION,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._client = client
        self._table = table_name
        self._retention = tombstone_retention
        self._clock = clock

    def apply_actions(self, account_id: str, actions: Sequence[ResourceAction]) -> TransactionResult:
        delta = sum(DELTAS[action.kind] for action in actions)
        if delta == 0 and len(actions) == 1:
            return self._update_alone(self._action(account_id, actions[0]))  # 1 WCU, not a transaction's 2
        items = [{"Update": self._action(account_id, action)} for action in actions]
        counter = [self._counter_update(account_id, delta, counter_shard(actions))] if delta else []
        return self._transact(items + counter)

    def _action(self, account_id: str, action: ResourceAction) -> dict[str, Any]:
        if action.kind is ActionKind.COUNT_CREATE:
            return {
                "TableName": self._table,
                "Key": resource_key(account_id, action.resource_id),
                "UpdateExpression": f"SET {COUNTER_PROCESSED} = :true REMOVE {PENDING_BUCKET}, {PENDING_SINCE}",
                "ConditionExpression": (
                    f"attribute_exists(#pk) AND {COUNTER_PROCESSED} = :false AND {DELETED} = :false"
                ),
                "ExpressionAttributeNames": {"#pk": PK},
                "ExpressionAttributeValues": to_attributes({":true": True, ":false": False}),
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        return self._to_tombstone(account_id, action.resource_id, counted=action.kind is ActionKind.REMOVE_COUNTED)

    def _update_alone(self, update: dict[str, Any]) -> TransactionResult:
        """One conditional update, its outcome told as a one-action transaction's would be."""
        try:
            self._client.update_item(**update)
        except ClientError as error:
            if error_code(error) != CCF:
                raise TransientStoreError(f"update {update['Key']}: {error}") from error
            return TransactionResult(
                (CancellationReason(CONDITIONAL_CHECK_FAILED, _state(_condition_failed_item(error))),)
            )
        except BotoCoreError as error:
            raise TransientStoreError(f"update {update['Key']}: {error}") from error
        return COMMITTED

    def pending_items(self, older_than: str | None) -> Iterator[dict[str, Any]]:
        """Every resource in the sparse pending index, bucket by bucket, oldest first."""
        for index in range(schema.PENDING_BUCKET_COUNT):
            condition = "#bucket = :bucket"
            values: dict[str, Any] = {":bucket": keys.pending_bucket_name(index)}
            if older_than is not None:
                condition += " AND #since < :cutoff"
                values[":cutoff"] = older_than
            request: dict[str, Any] = {
                "TableName": self._table,
                "IndexName": schema.PENDING_INDEX_NAME,
                "KeyConditionExpression": condition,
                "ExpressionAttributeNames": {"#bucket": PENDING_BUCKET, "#since": PENDING_SINCE}
                if older_than is not None
                else {"#bucket": PENDING_BUCKET},
                "ExpressionAttributeValues": to_attributes(values),
            }
            for page in _transient_pages(self._client, request, "query pending index: "):
                yield from map(from_attributes, page.get("Items", []))

    def _to_tombstone(self, account_id: str, resource_id: str, *, counted: bool) -> dict[str, Any]:
        """A soft-deleted resource becomes its tombstone (the removal of the resource)."""
        return {
            "TableName": self._table,
            "Key": resource_key(account_id, resource_id),
            "UpdateExpression": f"SET #type = :tombstone, {EXPIRES_AT} = :expires REMOVE {TOMBSTONE_REMOVES}",
            "ConditionExpression": f"{DELETED} = :true AND {COUNTER_PROCESSED} = :counted",
            "ExpressionAttributeNames": {"#type": ITEM_TYPE},
            "ExpressionAttributeValues": to_attributes(
                {
                    ":true": True,
                    ":counted": counted,
                    ":tombstone": schema.TOMBSTONE_TYPE,
                    ":expires": int(self._clock() + self._retention.total_seconds()),
                }
            ),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def _counter_update(self, account_id: str, delta: int, shard: int) -> dict[str, Any]:
        return {
            "Update": {
                "TableName": self._table,
                "Key": counter_key(account_id, shard),
                "UpdateExpression": "ADD #count :delta SET account_id = :id",
                "ExpressionAttributeNames": {"#count": "count"},
                "ExpressionAttributeValues": to_attributes({":delta": delta, ":id": account_id}),
            }
        }

    def _transact(self, actions: list[dict[str, Any]]) -> TransactionResult:
        try:
            self._client.transact_write_items(TransactItems=actions)
        except ClientError as error:
            if error_code(error) != "TransactionCanceledException":
                raise TransientStoreError(f"transaction failed: {error}") from error
            reasons = error.response.get("CancellationReasons") or []
            if len(reasons) != len(actions):
                raise TransientStoreError("transaction cancelled without a reason per action") from error
            return TransactionResult(
                tuple(
                    CancellationReason(code=str(reason.get("Code", "")), item=_state(reason.get("Item")))
                    for reason in reasons
                )
            )
        except BotoCoreError as error:
            raise TransientStoreError(f"transaction failed: {error}") from error
        return COMMITTED


def _state(item: Mapping[str, Any] | None) -> ResourceState:
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


class DynamoHealingStore:
    """Reads and writes of a heal, and the activity index the sweeper reads heal candidates from."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name
        self._shards = ShardStore(client, table_name)

    def read_account_state(self, account_id: str) -> tuple[AccountState, int] | None:
        try:
            read = read_account_items(self._shards, account_id)
        except StoreUnavailable as error:
            raise TransientStoreError(str(error)) from error
        if read is None:
            return None
        account, shard_items = read.shards[0], read.shards
        shards = tuple(map(shard_state, shard_items))
        written = latest_write(shard_items)
        state = AccountState(
            version=shards[0].version,
            best_effort_net=sum(shard.best_effort for shard in shards),
            admitted=sum(shard.admitted for shard in shards),
            heal_epoch=int(account.get("heal_epoch", 0)),
            last_write_at=written if written is not None else str(account.get("updated_at", "")),
            leases=leases.in_order(lease for item in shard_items for lease in held_leases(item)),
            shards=shards,
        )
        return state, read.eventual

    def has_pending_work(self, account_id: str) -> bool:
        request: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "FilterExpression": f"{COUNTER_PROCESSED} = :false OR {DELETED} = :true",
            "ExpressionAttributeNames": {"#pk": PK, "#sk": SK},
            "ExpressionAttributeValues": to_attributes(
                {
                    ":pk": keys.account_pk(account_id),
                    ":prefix": schema.RESOURCE_PREFIX,
                    ":false": False,
                    ":true": True,
                }
            ),
            "Select": "COUNT",
            "ConsistentRead": True,
        }
        return any(page.get("Count", 0) > 0 for page in _transient_pages(self._client, request))

    def get_resource(self, account_id: str, resource_id: str) -> Resource | None:
        try:
            return read_resource(self._client, self._table, account_id, resource_id)
        except StoreUnavailable as error:
            raise TransientStoreError(str(error)) from error

    def settle(self, account_id: str, lease: Lease, settlement: Settlement, now: str | None) -> Settled:
        try:
            return settle_lease(self._client, self._table, account_id, lease, settlement, now)
        except StoreUnavailable as error:
            raise TransientStoreError(str(error)) from error

    def apply_heal(self, account_id: str, state: AccountState, plan: HealPlan, now: str) -> bool:
        shards = state.shards or (ShardState(0, room=0, admitted=state.admitted, version=state.version),)
        first, others = shards[0], shards[1:]
        room = sum(shard.room + shard.admitted for shard in shards)  # the limit, as the shards hold it
        assignments = {"best_effort": plan.best_effort - sum(shard.best_effort for shard in others)}
        if plan.admitted is not None:  # quiet: fold every shard into shard 0
            assignments = {"best_effort": plan.best_effort, "admitted": plan.admitted, ROOM: room - plan.admitted}
            if others:
                assignments[ACTIVE] = 1
        writes = [self._heal_write(account_id, first, assignments, now)]
        folded = {"best_effort": 0, "admitted": 0, ROOM: 0, RETIRED: True} if plan.admitted is not None else {}
        writes += [self._heal_write(account_id, shard, folded, now) for shard in others]
        return self._heal_writes(account_id, writes, now)

    def record_checked(self, account_id: str, state: AccountState, now: str) -> bool:
        """Note that the account was found exact, so the sweeper skips it until its next write."""
        shards = state.shards or (ShardState(0, room=0, version=state.version),)
        writes = [self._heal_write(account_id, shard, {}, now, epoch=False) for shard in shards]
        return self._heal_writes(account_id, writes, now)

    def _heal_write(
        self, account_id: str, shard: ShardState, assignments: Mapping[str, Any], now: str, epoch: bool = True
    ) -> dict[str, Any]:
        """One shard's part of a heal: its assignments and `healed_at`, and a new heal epoch,
        if its version is the one read."""
        values = {f":{name}": value for name, value in assignments.items()}
        sets = ", ".join([*(f"{name} = :{name}" for name in assignments), "healed_at = :now"])
        return {
            "TableName": self._table,
            "Key": shard_key(account_id, shard.shard),
            "UpdateExpression": f"SET {sets}" + (" ADD heal_epoch :one" if epoch else ""),
            "ConditionExpression": "version = :version",
            "ExpressionAttributeValues": to_attributes(
                {**values, ":now": now, ":version": shard.version, **({":one": 1} if epoch else {})}
            ),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def _heal_writes(self, account_id: str, writes: list[dict[str, Any]], now: str) -> bool:
        """A heal's writes: one conditional update on a one-shard account, else one transaction
        (the SDK's ClientRequestToken makes its retry apply once). Each stamps `healed_at = :now`,
        so a retry of a single update that landed finds its own stamp."""
        try:
            if len(writes) > 1:
                self._client.transact_write_items(TransactItems=[{"Update": write} for write in writes])
            else:
                self._client.update_item(**writes[0])
        except ClientError as error:
            if error_code(error) == CCF:
                return bool(from_attributes(_condition_failed_item(error) or {}).get("healed_at") == now)
            if error_code(error) in ("TransactionCanceledException", "TransactionConflictException"):
                return False  # an API write came between: the heal is busy
            raise TransientStoreError(f"heal {account_id}: {error}") from error
        except BotoCoreError as error:
            raise TransientStoreError(f"heal {account_id}: {error}") from error
        return True

    # The audit's reads (the sweeper audits a slice of accounts); imported here because they build
    # on this module's readers.
    def accounts_in_bucket(self, index: int) -> set[str]:
        from functions.adapters.audit_reads import accounts_in_bucket

        return accounts_in_bucket(self._client, self._table, index)

    def account_view(self, account_id: str) -> AccountView | None:
        from functions.adapters.audit_reads import account_view

        return account_view(self._client, self._table, account_id)

    def accounts_written_since(self, written_after: str) -> Iterator[str]:
        """Accounts last written at or after that time and not healed or checked since that write
        (each once, though the account item and each of its other shards have their own entry)."""
        seen: set[str] = set()
        for index in range(schema.ACTIVITY_BUCKET_COUNT):
            request: dict[str, Any] = {
                "TableName": self._table,
                "IndexName": schema.ACTIVITY_INDEX_NAME,
                "KeyConditionExpression": "#bucket = :bucket AND #written >= :after",
                "ExpressionAttributeNames": {"#bucket": ACTIVITY_BUCKET, "#written": LAST_WRITE},
                "ExpressionAttributeValues": to_attributes(
                    {":bucket": keys.activity_bucket_name(index), ":after": written_after}
                ),
            }
            for page in _transient_pages(self._client, request):
                for item in map(from_attributes, page.get("Items", [])):
                    account_id = str(item["account_id"])
                    if str(item.get("healed_at", "")) < str(item[LAST_WRITE]) and account_id not in seen:
                        seen.add(account_id)
                        yield account_id


def _transient_pages(client: Any, request: dict[str, Any], context: str = "") -> Iterator[dict[str, Any]]:
    """A Query's pages; a failure on any page is transient (the sweeper tries again)."""
    try:
        yield from query_pages(client, request)
    except (ClientError, BotoCoreError) as error:
        raise TransientStoreError(f"{context}{error}") from error

"""DynamoDB adapters: every table call of the system lives here.

`DynamoApiStore` implements the API's port (single-item writes only, never a transaction);
`DynamoCountingStore` implements the consumer's port (transactions) and the sweep's reads.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import timedelta
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from functions.adapters.errors import error_code, unavailable
from functions.core import keys, leases, schema
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
)
from functions.core.errors import AccountNotFound, InvalidCursor, ResourceAlreadyExists, StoreUnavailable
from functions.core.healing import (
    DEFAULT_TOMBSTONE_RETENTION,
    AccountState,
    HealPlan,
    last_write_of,
    last_write_stamp,
)
from functions.core.leases import Lease, Settled, Settlement
from functions.core.model import Page, Resource, Usage

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()

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


def to_attributes(values: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _serializer.serialize(value) for name, value in values.items()}


def from_attributes(item: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _plain(_deserializer.deserialize(value)) for name, value in item.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {PK: {"S": pk}, SK: {"S": sk}}


def account_key(account_id: str) -> dict[str, Any]:
    return _key(keys.account_pk(account_id), schema.ACCOUNT_SORT_KEY)


def counter_key(account_id: str) -> dict[str, Any]:
    return _key(keys.account_pk(account_id), schema.EVENTUAL_COUNTER_SORT_KEY)


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
    )


def _condition_failed_item(error: ClientError) -> dict[str, Any] | None:
    return error.response.get("Item")  # type: ignore[no-any-return]


def take_lease(
    client: Any, table: str, account_id: str, lease: Lease, attribute: str, delta: int, condition: str | None = None
) -> dict[str, Any] | None:
    """Add `delta` to the account item's `attribute` and take `lease` in the same update, if
    `condition` holds and the lease is not held yet. Returns the account item as it is with the
    lease held, or None if the condition failed. A retry of a take that landed finds its own lease
    in the old item, and returns that item: it is applied once."""
    conditions = ["attribute_exists(#limit)", "attribute_not_exists(#lease)", *([condition] if condition else [])]
    try:
        response = client.update_item(
            TableName=table,
            Key=account_key(account_id),
            UpdateExpression=(
                f"ADD {attribute} :delta, version :one "
                f"SET {LAST_WRITE} = :stamp, {LAST_WRITE_EXACT} = :now, #lease = :lease"
            ),
            ConditionExpression=" AND ".join(conditions),
            ExpressionAttributeNames={"#limit": "limit", "#lease": lease.attribute},
            ExpressionAttributeValues=to_attributes(
                {
                    ":delta": delta,
                    ":one": 1,
                    ":stamp": last_write_stamp(lease.taken_at),
                    ":now": lease.taken_at,
                    ":lease": lease.value,
                }
            ),
            ReturnValues="ALL_NEW",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as error:
        if error_code(error) != CCF:
            raise unavailable(f"take {lease.kind.value} lease", error) from error
        old = from_attributes(_condition_failed_item(error) or {})
        if not old:
            raise AccountNotFound(account_id) from error
        return old if leases.holds(old, lease) else None
    except BotoCoreError as error:
        raise unavailable(f"take {lease.kind.value} lease", error) from error
    return from_attributes(response["Attributes"])


def settle_lease(
    client: Any, table: str, account_id: str, lease: Lease, settlement: Settlement, now: str | None
) -> Settled:
    """Remove `lease` from the account item and apply `settlement` in the same update, once.

    Conditional on the lease being held, so a retry of a settle that landed changes nothing. Every
    account write bumps `version`; an API write (`now` given) also stamps `last_write_at`."""
    values: dict[str, Any] = {":lease": lease.value, ":one": 1}
    adds = ["version :one"]
    for attribute, delta in (("admitted", settlement.admitted), ("best_effort", settlement.best_effort)):
        if delta:
            adds.append(f"{attribute} :{attribute}")
            values[f":{attribute}"] = delta
    expression = f"ADD {', '.join(adds)} REMOVE #lease"
    if now is not None:
        expression += f" SET {LAST_WRITE} = :stamp, {LAST_WRITE_EXACT} = :now"
        values[":stamp"], values[":now"] = last_write_stamp(now), now
    condition = "#lease = :lease"
    if settlement.expected_heal_epoch is not None:
        condition += " AND heal_epoch = :epoch"
        values[":epoch"] = settlement.expected_heal_epoch
    try:
        client.update_item(
            TableName=table,
            Key=account_key(account_id),
            UpdateExpression=expression,
            ConditionExpression=condition,
            ExpressionAttributeNames={"#lease": lease.attribute},
            ExpressionAttributeValues=to_attributes(values),
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as error:
        if error_code(error) != CCF:
            raise unavailable("settle lease", error) from error
        if leases.holds(from_attributes(_condition_failed_item(error) or {}), lease):
            return Settled.EPOCH_MOVED  # the lease is held, so only the epoch can have failed
        return Settled.ALREADY
    except BotoCoreError as error:
        raise unavailable("settle lease", error) from error
    return Settled.APPLIED


def read_resource(client: Any, table: str, account_id: str, resource_id: str) -> Resource | None:
    try:
        response = client.get_item(TableName=table, Key=resource_key(account_id, resource_id), ConsistentRead=True)
    except (ClientError, BotoCoreError) as error:
        raise unavailable("get resource", error) from error
    item = response.get("Item")
    return resource_from_item(item) if item else None


class DynamoApiStore:
    """The API's storage: single-item calls only, each safe to retry (docs/admission.md), so
    `client` keeps the SDK's standard retries."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    # accounts ------------------------------------------------------------------------------

    def put_account(self, account_id: str, limit: int, now: str) -> None:
        self._call(
            "put account",
            self._client.update_item,
            TableName=self._table,
            Key=account_key(account_id),
            UpdateExpression=(
                f"SET #limit = :limit, updated_at = :now, {LAST_WRITE} = :stamp, {LAST_WRITE_EXACT} = :now, "
                "account_id = :id, #type = :type, "
                f"{ACTIVITY_BUCKET} = :bucket, created_at = if_not_exists(created_at, :now), "
                "best_effort = if_not_exists(best_effort, :zero), admitted = if_not_exists(admitted, :zero), "
                "heal_epoch = if_not_exists(heal_epoch, :zero) ADD version :one"
            ),
            ExpressionAttributeNames={"#limit": "limit", "#type": "type"},
            ExpressionAttributeValues=to_attributes(
                {
                    ":limit": limit,
                    ":now": now,
                    ":stamp": last_write_stamp(now),
                    ":id": account_id,
                    ":type": "account",
                    ":zero": 0,
                    ":one": 1,
                    ":bucket": keys.activity_bucket(account_id),
                }
            ),
        )

    def read_usage(self, account_id: str) -> Usage | None:
        wanted = [account_key(account_id), counter_key(account_id)]
        found: dict[str, dict[str, Any]] = {}
        for _ in range(4):  # BatchGetItem may leave keys unprocessed under load
            response = self._call(
                "read usage",
                self._client.batch_get_item,
                RequestItems={self._table: {"Keys": wanted, "ConsistentRead": True}},
            )
            for item in response.get("Responses", {}).get(self._table, []):
                found[item[SK]["S"]] = from_attributes(item)
            wanted = response.get("UnprocessedKeys", {}).get(self._table, {}).get("Keys", [])
            if not wanted:
                break
        else:
            raise StoreUnavailable("read usage: keys left unprocessed", may_have_landed=False)
        account = found.get(schema.ACCOUNT_SORT_KEY)
        if account is None:
            return None
        counter = found.get(schema.EVENTUAL_COUNTER_SORT_KEY, {})
        return Usage(
            account_id=account_id,
            limit=int(account["limit"]),
            best_effort_net=int(account.get("best_effort", 0)),
            eventual=int(counter.get("count", 0)),
        )

    def reserve_slot(self, account_id: str, lease: Lease) -> int | None:
        taken = take_lease(self._client, self._table, account_id, lease, "admitted", +1, "admitted < #limit")
        return None if taken is None else int(taken.get("heal_epoch", 0))

    def take_deletion(self, account_id: str, lease: Lease) -> None:
        # Signed on purpose: a decrement may land before the increment it cancels (a delete
        # racing a create that is still in flight). Clamping at zero here would lose it, and the
        # late increment would then overcount. Readers clamp instead (Usage.best_effort).
        if take_lease(self._client, self._table, account_id, lease, "best_effort", -1) is None:
            raise StoreUnavailable("take deletion lease: a token taken twice", may_have_landed=False)

    def settle(self, account_id: str, lease: Lease, settlement: Settlement, now: str | None) -> Settled:
        return settle_lease(self._client, self._table, account_id, lease, settlement, now)

    # resources ------------------------------------------------------------------------------

    def put_resource(self, resource: Resource) -> None:
        try:
            self._client.put_item(
                TableName=self._table,
                Item=resource_item(resource),
                ConditionExpression="attribute_not_exists(#pk)",
                ExpressionAttributeNames={"#pk": PK},
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
        return self._transact(items + ([self._counter_update(account_id, delta)] if delta else []))

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
            while True:
                try:
                    response = self._client.query(**request)
                except (ClientError, BotoCoreError) as error:
                    raise TransientStoreError(f"query pending index: {error}") from error
                yield from (from_attributes(item) for item in response.get("Items", []))
                if "LastEvaluatedKey" not in response:
                    break
                request["ExclusiveStartKey"] = response["LastEvaluatedKey"]

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

    def _counter_update(self, account_id: str, delta: int) -> dict[str, Any]:
        return {
            "Update": {
                "TableName": self._table,
                "Key": counter_key(account_id),
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

    def read_account_state(self, account_id: str) -> tuple[AccountState, int] | None:
        response = self._request(
            self._client.batch_get_item,
            RequestItems={
                self._table: {"Keys": [account_key(account_id), counter_key(account_id)], "ConsistentRead": True}
            },
        )
        items = {item[SK]["S"]: from_attributes(item) for item in response["Responses"].get(self._table, [])}
        if response.get("UnprocessedKeys"):
            raise TransientStoreError("read account state: keys left unprocessed")
        account = items.get(schema.ACCOUNT_SORT_KEY)
        if account is None:
            return None
        written = last_write_of(account)
        state = AccountState(
            version=int(account.get("version", 0)),
            best_effort_net=int(account.get("best_effort", 0)),
            admitted=int(account.get("admitted", 0)),
            heal_epoch=int(account.get("heal_epoch", 0)),
            last_write_at=written if written is not None else str(account.get("updated_at", "")),
            leases=leases.leases_of(account),
        )
        return state, int(items.get(schema.EVENTUAL_COUNTER_SORT_KEY, {}).get("count", 0))

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
        while True:
            response = self._request(self._client.query, **request)
            if response.get("Count", 0) > 0:
                return True
            if "LastEvaluatedKey" not in response:
                return False
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]

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

    def apply_heal(self, account_id: str, expected_version: int, plan: HealPlan, now: str) -> bool:
        assignments = "best_effort = :best_effort, healed_at = :now"
        values: dict[str, Any] = {
            ":best_effort": plan.best_effort,
            ":now": now,
            ":version": expected_version,
            ":one": 1,
        }
        if plan.admitted is not None:
            assignments += ", admitted = :admitted"
            values[":admitted"] = plan.admitted
        return self._conditional_account_write(
            account_id,
            f"SET {assignments} ADD heal_epoch :one",
            values,
        )

    def record_checked(self, account_id: str, expected_version: int, now: str) -> bool:
        """Note that the account was found exact, so the sweeper skips it until its next write."""
        return self._conditional_account_write(
            account_id, "SET healed_at = :now", {":now": now, ":version": expected_version}
        )

    def quiet_accounts(self, written_after: str, written_before: str) -> Iterator[str]:
        """Accounts last written in that window and not healed or checked since that write."""
        for index in range(schema.ACTIVITY_BUCKET_COUNT):
            request: dict[str, Any] = {
                "TableName": self._table,
                "IndexName": schema.ACTIVITY_INDEX_NAME,
                "KeyConditionExpression": "#bucket = :bucket AND #written BETWEEN :after AND :before",
                "ExpressionAttributeNames": {"#bucket": ACTIVITY_BUCKET, "#written": LAST_WRITE},
                "ExpressionAttributeValues": to_attributes(
                    {":bucket": keys.activity_bucket_name(index), ":after": written_after, ":before": written_before}
                ),
            }
            while True:
                response = self._request(self._client.query, **request)
                for item in map(from_attributes, response.get("Items", [])):
                    if str(item.get("healed_at", "")) < str(item[LAST_WRITE]):
                        yield str(item["account_id"])
                if "LastEvaluatedKey" not in response:
                    break
                request["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def _conditional_account_write(self, account_id: str, expression: str, values: dict[str, Any]) -> bool:
        """Both writes stamp `healed_at = :now`: a retry of one that landed finds its own stamp."""
        try:
            self._client.update_item(
                TableName=self._table,
                Key=account_key(account_id),
                UpdateExpression=expression,
                ConditionExpression="version = :version",
                ExpressionAttributeValues=to_attributes(values),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if error_code(error) == CCF:
                return bool(from_attributes(_condition_failed_item(error) or {}).get("healed_at") == values[":now"])
            raise TransientStoreError(f"heal {account_id}: {error}") from error
        except BotoCoreError as error:
            raise TransientStoreError(f"heal {account_id}: {error}") from error
        return True

    @staticmethod
    def _request(method: Any, **request: Any) -> Any:
        try:
            return method(**request)
        except (ClientError, BotoCoreError) as error:
            raise TransientStoreError(str(error)) from error

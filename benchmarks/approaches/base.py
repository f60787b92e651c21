"""What every counter approach in `make bench` implements, and the table shape the blog's share.

A resource counter: `create` stores a resource and counts it, unless the account is at its limit;
`delete` removes it and uncounts it. The caller (the harness) retries an operation that raised,
with the same resource id, as an API client retries a 5xx, so each approach says what a repeated
create or delete does. `count` is the count the approach enforces its limit with, once settled.

Every approach gets one boto3 client, configured as the project's functions configure theirs
(standard retry mode, three attempts: functions/shared/wiring.py), so they retry alike.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

from botocore.config import Config
from botocore.exceptions import ClientError

from tests.support.stream import StreamTap

SDK_CONFIG = Config(retries={"mode": "standard", "total_max_attempts": 3}, connect_timeout=2, read_timeout=5)
COUNTER = "#counter"


class LimitReached(Exception):
    pass


class Approach(ABC):
    name = ""  # short id: JSON keys, chart labels
    title = ""  # as the table prints it
    source = ""  # where the design comes from
    has_stream = False

    def __init__(self, dynamodb: Any, streams: Any, table: str) -> None:
        self.dynamodb, self.streams, self.table = dynamodb, streams, table
        self.tap: StreamTap | None = None
        self.pending: list[dict[str, Any]] = []  # stream records to apply again

    def connect(self, tap: StreamTap | None = None) -> None:
        """Start reading the table's stream, or go on where `tap` (another client's) is."""
        if self.has_stream:
            arn = self.dynamodb.describe_table(TableName=self.table)["Table"]["LatestStreamArn"]
            self.tap = tap or StreamTap(self.streams, arn)

    def create_table(self) -> None:
        """Create the approach's table (a partition key and a sort key, both strings)."""
        stream = {"StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}}
        self.dynamodb.create_table(
            TableName=self.table,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
            **(stream if self.has_stream else {}),
        )

    @abstractmethod
    def open_account(self, account: str, limit: int) -> None: ...

    @abstractmethod
    def create(self, account: str, resource_id: str) -> None:
        """Store and count the resource; raises LimitReached. A repeat of a create that landed returns."""

    @abstractmethod
    def delete(self, account: str, resource_id: str) -> bool:
        """Remove and uncount the resource; False when there was none to delete."""

    @abstractmethod
    def count(self, account: str) -> int: ...

    def live(self, account: str) -> int:
        """The truth: the account's resources that exist (and are not soft-deleted)."""
        pages = self.query_pages(
            KeyConditionExpression="pk = :account AND begins_with(sk, :resources)",
            FilterExpression="attribute_not_exists(deleted) OR deleted = :false",
            ExpressionAttributeValues={
                ":account": {"S": account},
                ":resources": {"S": "resource#"},
                ":false": {"BOOL": False},
            },
            Select="COUNT",
        )
        return sum(int(page["Count"]) for page in pages)

    def consume(self) -> int:
        """Apply the stream records written since the last call; returns how many were applied."""
        return 0

    # -- helpers the approaches share -------------------------------------------------------------

    def key(self, account: str, sort_key: str) -> dict[str, Any]:
        return {"pk": {"S": account}, "sk": {"S": sort_key}}

    def read(self, account: str, sort_key: str) -> dict[str, Any] | None:
        item = self.dynamodb.get_item(TableName=self.table, Key=self.key(account, sort_key), ConsistentRead=True)
        found: dict[str, Any] | None = item.get("Item")
        return found

    def query_pages(self, **request: Any) -> Iterator[dict[str, Any]]:
        """Every page of a consistent Query of the approach's table."""
        paginator = self.dynamodb.get_paginator("query")
        yield from paginator.paginate(TableName=self.table, ConsistentRead=True, **request)

    def resource_item(self, account: str, resource_id: str, **attributes: Any) -> dict[str, Any]:
        return {**self.key(account, f"resource#{resource_id}"), "name": {"S": "vm"}, **attributes}

    def put_counter(self, account: str, limit: int, **attributes: Any) -> None:
        """The account's counter item, holding its limit and `attributes`."""
        item = {**self.key(account, COUNTER), "limit": {"N": str(limit)}, **attributes}
        self.dynamodb.put_item(TableName=self.table, Item=item)

    def delete_resource_item(self, account: str, resource_id: str) -> bool:
        """Delete the resource's item; False when there was none."""
        old = self.dynamodb.delete_item(
            TableName=self.table, Key=self.key(account, f"resource#{resource_id}"), ReturnValues="ALL_OLD"
        )
        return "Attributes" in old


def failed_condition(error: ClientError) -> bool:
    return bool(error.response["Error"]["Code"] == "ConditionalCheckFailedException")


def cancellation_codes(error: ClientError) -> list[str]:
    """A cancelled transaction's reasons, in action order; [] for any other error."""
    if error.response["Error"]["Code"] != "TransactionCanceledException":
        return []
    return [reason.get("Code", "None") for reason in error.response.get("CancellationReasons", [])]


def number(item: dict[str, Any] | None, name: str) -> int:
    return int((item or {}).get(name, {"N": "0"})["N"])

"""The emulator's scaled partition limits (`--partition-limits`): a hot item, a hot index key and
what callers get, as DynamoDB answers them (local/partition_throttling.py cites the pages).

At 1/1000 of AWS's limits and no burst, an item or key takes 1 write unit and 3 read units a
second, and its bucket holds one second of them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from functions.adapters import keys, table_layout
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.shards import ShardStore
from functions.core.errors import StoreUnavailable
from functions.core.model import Quota
from local.emulator import EmulatorProcess
from local.partition_throttling import read_throttles
from local.product import by_family
from tests.support.tables import create_table

TABLE = "limited"


@pytest.fixture(scope="module")
def emulator() -> Iterator[EmulatorProcess]:
    with EmulatorProcess(partition_limits="1/1000", partition_burst_seconds=0) as emulator:
        yield emulator


@pytest.fixture(scope="module")
def dynamodb(emulator: EmulatorProcess) -> Any:
    client = boto3.client(
        "dynamodb",
        endpoint_url=emulator.url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),  # no retries: see every throttle
    )
    create_table(client, TABLE)
    return client


def key(pk: str, sk: str = "ITEM") -> dict[str, dict[str, str]]:
    return {table_layout.PARTITION_KEY: {"S": pk}, table_layout.SORT_KEY: {"S": sk}}


def add_one(dynamodb: Any, pk: str, sk: str = "ITEM") -> str:
    """'ok', or the error code DynamoDB answered."""
    try:
        dynamodb.update_item(
            TableName=TABLE,
            Key=key(pk, sk),
            UpdateExpression="ADD n :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )
    except ClientError as error:
        return str(error.response["Error"]["Code"])
    return "ok"


def test_a_hot_item_is_throttled_at_the_scaled_rate(dynamodb: Any, emulator: EmulatorProcess) -> None:
    answers = []
    started = time.monotonic()
    while time.monotonic() - started < 2.0:
        answers.append(add_one(dynamodb, "HOT#1"))
    elapsed = time.monotonic() - started
    assert set(answers) == {"ok", "ProvisionedThroughputExceededException"}
    # 1 write unit a second, one second in the bucket, and the request that takes it below zero
    assert answers.count("ok") <= 1 * elapsed + 1 + 1
    assert add_one(dynamodb, "COLD#1") == "ok"  # another partition is not held back
    refusals = read_throttles(emulator.url)
    assert refusals[f"write item {TABLE} / HOT#1 / ITEM"] == answers.count("ProvisionedThroughputExceededException")


def test_a_throttled_index_key_holds_back_writes_to_the_table(dynamodb: Any) -> None:
    """Items of their own partitions, fresh buckets all, share one activity index key."""
    answers = []
    for number in range(6):
        item = {
            **key(f"GSI#{number}"),
            table_layout.ACTIVITY_BUCKET: {"S": "B#hot"},
            table_layout.LAST_WRITE: {"S": f"2026-11-23T10:00:0{number}.000Z"},
        }
        try:
            dynamodb.put_item(TableName=TABLE, Item=item)
            answers.append("ok")
        except ClientError as error:
            answers.append(error.response["Error"]["Code"])
    assert answers[0] == "ok"
    assert "ProvisionedThroughputExceededException" in answers
    dynamodb.put_item(TableName=TABLE, Item=key("GSI#outside"))  # not in the sparse index: not held back


def test_a_throttled_action_cancels_its_transaction_with_a_throttling_reason(dynamodb: Any) -> None:
    while add_one(dynamodb, "TX#hot") == "ok":
        pass  # until the item's bucket is empty
    with pytest.raises(ClientError) as cancelled:
        dynamodb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": TABLE, "Item": key("TX#cold")}},
                {
                    "Update": {
                        "TableName": TABLE,
                        "Key": key("TX#hot"),
                        "UpdateExpression": "ADD n :one",
                        "ExpressionAttributeValues": {":one": {"N": "1"}},
                    }
                },
            ]
        )
    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    reasons = [reason["Code"] for reason in cancelled.value.response["CancellationReasons"]]
    assert reasons == ["None", "ThrottlingError"]
    assert "Item" not in dynamodb.get_item(TableName=TABLE, Key=key("TX#cold"))  # nothing applied


def test_a_grant_from_a_throttled_shard_is_told_as_a_throttle_not_as_a_lost_race(dynamodb: Any) -> None:
    """The create that asked for the grant then spreads to another shard instead of going back to
    the one that is short of writes (functions/core/admission.py)."""
    store = ShardStore(DynamoTable(dynamodb, TABLE))
    account = {**key("ACCOUNT#busy", keys.ACCOUNT_SORT_KEY), "limit": {"N": "10"}, "room": {"N": "10"}}
    dynamodb.put_item(TableName=TABLE, Item=account)
    while add_one(dynamodb, "ACCOUNT#busy", keys.ACCOUNT_SORT_KEY) == "ok":
        pass  # the account item has no write left this second
    with pytest.raises(StoreUnavailable) as refused:
        store.grant(Quota("busy"), 1, 5)
    assert refused.value.throttled
    assert not refused.value.may_have_landed


def test_a_batch_read_returns_the_throttled_keys_unprocessed(dynamodb: Any) -> None:
    dynamodb.put_item(TableName=TABLE, Item=key("READ#hot"))
    dynamodb.put_item(TableName=TABLE, Item=key("READ#cold"))
    codes = []
    for _ in range(20):  # 3 read units a second: a handful of strong reads empties the bucket
        try:
            dynamodb.get_item(TableName=TABLE, Key=key("READ#hot"), ConsistentRead=True)
        except ClientError as error:
            codes.append(error.response["Error"]["Code"])
            break
    assert codes == ["ProvisionedThroughputExceededException"]
    response = dynamodb.batch_get_item(
        RequestItems={TABLE: {"Keys": [key("READ#hot"), key("READ#cold")], "ConsistentRead": True}}
    )
    assert [item[table_layout.PARTITION_KEY]["S"] for item in response["Responses"][TABLE]] == ["READ#cold"]
    assert response["UnprocessedKeys"][TABLE]["Keys"] == [key("READ#hot")]


def test_requests_it_does_not_limit_reach_the_table_whole(dynamodb: Any) -> None:
    """A query of a table partition is not limited (docs/local-runtime.md); it must still run."""
    dynamodb.put_item(TableName=TABLE, Item=key("QUERY#1", "A"))
    dynamodb.put_item(TableName=TABLE, Item=key("QUERY#1", "B"))
    items = dynamodb.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "QUERY#1"}},
        ConsistentRead=True,
    )["Items"]
    assert [item[table_layout.SORT_KEY]["S"] for item in items] == ["A", "B"]


def test_refusals_add_up_per_kind_of_item() -> None:
    refusals = {
        "write item T / ACCOUNT#a / ACCOUNT": 3,
        "write item T / SHARD#a#01 / SHARD": 2,
        "write item T / SHARD#a#02 / SHARD": 5,
        "read item T / ACCOUNT#a / ACCOUNT": 1,
        "write item T / ACCOUNT#a / RESOURCE#9f2": 4,
        "write index partition key T index activity / ACTIVITY#3": 6,
    }
    assert by_family(refusals) == {
        "write SHARD": 7,
        "write index activity": 6,
        "write resource": 4,
        "write ACCOUNT": 3,
        "read ACCOUNT": 1,
    }

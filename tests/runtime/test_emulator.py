"""The embedded emulator's departures from plain moto, each one copying DynamoDB's behaviour."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from local.emulator import EmulatorProcess
from tests.support.tables import create_table


@pytest.fixture(scope="module")
def aws() -> Iterator[dict[str, Any]]:
    with EmulatorProcess() as emulator:
        options = {
            "endpoint_url": emulator.url,
            "region_name": "us-east-1",
            "aws_access_key_id": "x",
            "aws_secret_access_key": "x",
        }
        yield {name: boto3.client(name, **options) for name in ("dynamodb", "dynamodbstreams", "sqs", "lambda", "iam")}


def read_all(streams: Any, iterator: str) -> tuple[list[dict[str, Any]], str]:
    response = streams.get_records(ShardIterator=iterator)
    return response["Records"], response["NextShardIterator"]


def test_a_cancelled_transaction_leaves_stream_readers_reading(aws: dict[str, Any]) -> None:
    dynamodb, streams = aws["dynamodb"], aws["dynamodbstreams"]
    stream_arn = create_table(dynamodb, "rollback")
    shard = streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=stream_arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")[
        "ShardIterator"
    ]
    dynamodb.put_item(TableName="rollback", Item={"pk": {"S": "a"}, "sk": {"S": "1"}})
    records, iterator = read_all(streams, iterator)
    assert len(records) == 1

    with pytest.raises(ClientError) as cancelled:
        dynamodb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": "rollback", "Item": {"pk": {"S": "a"}, "sk": {"S": "2"}}}},
                {
                    "ConditionCheck": {
                        "TableName": "rollback",
                        "Key": {"pk": {"S": "a"}, "sk": {"S": "1"}},
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
        )
    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert "Item" not in dynamodb.get_item(TableName="rollback", Key={"pk": {"S": "a"}, "sk": {"S": "2"}})

    dynamodb.put_item(TableName="rollback", Item={"pk": {"S": "a"}, "sk": {"S": "3"}})
    records, _ = read_all(streams, iterator)
    assert [r["dynamodb"]["Keys"]["sk"]["S"] for r in records] == ["3"]  # nothing of the cancelled one


def test_mapped_queues_and_streams_are_left_to_the_local_lambda_service(aws: dict[str, Any]) -> None:
    """moto would receive (and count) messages itself for a mapped queue; the emulator does not."""
    sqs, lam, iam = aws["sqs"], aws["lambda"], aws["iam"]
    queue_url = sqs.create_queue(QueueName="mapped")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    role = iam.create_role(RoleName="fn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    lam.create_function(
        FunctionName="fn",
        Runtime="python3.12",
        Role=role,
        Handler="x.handler",
        Code={"ZipFile": b"PK\x05\x06" + b"\0" * 18},
    )
    lam.create_event_source_mapping(EventSourceArn=queue_arn, FunctionName="fn", BatchSize=10)
    sqs.send_message(QueueUrl=queue_url, MessageBody="hello")
    received = sqs.receive_message(QueueUrl=queue_url, AttributeNames=["All"])["Messages"]
    assert received[0]["Attributes"]["ApproximateReceiveCount"] == "1"

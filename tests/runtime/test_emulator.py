"""The embedded emulator itself (local/emulator.py): its server, its extensions. Its changes to moto
are tested in test_moto_patches.py."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from local.emulator import FLAVOURS, EmulatorProcess
from local.partition_reads import read_partitions
from tests.support.tables import create_table


def clients(url: str) -> dict[str, Any]:
    options = {"endpoint_url": url, "region_name": "us-east-1", "aws_access_key_id": "x", "aws_secret_access_key": "x"}
    return {name: boto3.client(name, **options) for name in ("dynamodb", "dynamodbstreams")}


@pytest.fixture(scope="module", params=FLAVOURS)
def aws(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    with EmulatorProcess(flavour=request.param) as emulator:
        yield clients(emulator.url)


def test_the_tuned_emulator_keeps_connections_alive() -> None:
    """werkzeug's development server closes every connection, so each SDK call paid for a new one."""
    with EmulatorProcess(flavour="tuned") as emulator:
        host, port = emulator.url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        for _ in range(3):
            connection.request("POST", "/", body="{}", headers=signed_like_the_sdk("DynamoDB_20120810.ListTables"))
            response = connection.getresponse()
            assert response.status == 200, response.read()
            assert response.getheader("Connection", "").lower() != "close"
            response.read()
            socket_in_use = connection.sock
            assert socket_in_use is not None  # http.client drops the socket when the server closes it
        connection.close()


def signed_like_the_sdk(target: str) -> dict[str, str]:
    return {
        "X-Amz-Target": target,
        "Content-Type": "application/x-amz-json-1.0",
        "Authorization": "AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/dynamodb/aws4_request, "
        "SignedHeaders=host, Signature=x",
    }


def test_several_partitions_are_read_at_one_instant_for_the_checks_that_need_it(aws: dict[str, Any]) -> None:
    """local/partition_reads.py: an extension of the emulator (chaos/truth.py reads with it)."""
    dynamodb = aws["dynamodb"]
    create_table(dynamodb, "partitions")
    for pk, sk in (("ACCOUNT#a", "ACCOUNT"), ("ACCOUNT#a", "RES#1"), ("SHARD#a#01", "SHARD"), ("ACCOUNT#b", "ACCOUNT")):
        dynamodb.put_item(TableName="partitions", Item={"pk": {"S": pk}, "sk": {"S": sk}, "n": {"N": "1"}})
    items = read_partitions(dynamodb.meta.endpoint_url, "partitions", ["ACCOUNT#a", "SHARD#a#01", "SHARD#a#02"])
    assert sorted((item["pk"]["S"], item["sk"]["S"]) for item in items) == [
        ("ACCOUNT#a", "ACCOUNT"),
        ("ACCOUNT#a", "RES#1"),
        ("SHARD#a#01", "SHARD"),
    ]
    assert items[0]["n"] == {"N": "1"}  # DynamoDB JSON, as the SDK's low-level client gives it


def test_the_emulator_counts_its_requests_and_their_cpu_by_kind() -> None:
    from local.request_counts import read_request_counts, read_request_cpu

    with EmulatorProcess() as emulator:
        dynamodb = clients(emulator.url)["dynamodb"]
        create_table(dynamodb, "counted")
        before, cpu_before = read_request_counts(emulator.url), read_request_cpu(emulator.url)
        for _ in range(3):
            dynamodb.get_item(TableName="counted", Key={"pk": {"S": "a"}, "sk": {"S": "1"}})
        dynamodb.list_tables()
        counted = read_request_counts(emulator.url) - before
        spent = read_request_cpu(emulator.url) - cpu_before  # a Counter keeps what grew
    assert counted == {"DynamoDB.GetItem": 3, "DynamoDB.ListTables": 1}
    assert set(spent) == {"DynamoDB.GetItem", "DynamoDB.ListTables"}

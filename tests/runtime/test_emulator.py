"""The embedded emulator's departures from plain moto, each one copying DynamoDB's behaviour."""

from __future__ import annotations

import datetime
import http.client
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from local.emulator import FLAVOURS, EmulatorProcess
from local.partition_reads import read_partitions
from tests.support.tables import create_table

SERVICES = ("dynamodb", "dynamodbstreams", "sqs", "lambda", "iam")


def clients(url: str) -> dict[str, Any]:
    options = {"endpoint_url": url, "region_name": "us-east-1", "aws_access_key_id": "x", "aws_secret_access_key": "x"}
    return {name: boto3.client(name, **options) for name in SERVICES}


@pytest.fixture(scope="module", params=FLAVOURS)
def aws(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    with EmulatorProcess(flavour=request.param) as emulator:
        yield clients(emulator.url)


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


def test_a_cancelled_transaction_restores_the_items_it_named_and_keeps_the_others(aws: dict[str, Any]) -> None:
    dynamodb = aws["dynamodb"]
    create_table(dynamodb, "partial")
    for sort_key in ("1", "2", "3"):
        dynamodb.put_item(TableName="partial", Item={"pk": {"S": "a"}, "sk": {"S": sort_key}, "n": {"N": "0"}})

    with pytest.raises(ClientError):
        dynamodb.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": "partial",
                        "Key": {"pk": {"S": "a"}, "sk": {"S": "1"}},
                        "UpdateExpression": "SET n = :one",
                        "ExpressionAttributeValues": {":one": {"N": "1"}},
                    }
                },
                {"Delete": {"TableName": "partial", "Key": {"pk": {"S": "a"}, "sk": {"S": "2"}}}},
                {"Put": {"TableName": "partial", "Item": {"pk": {"S": "a"}, "sk": {"S": "9"}}}},
                {
                    "ConditionCheck": {
                        "TableName": "partial",
                        "Key": {"pk": {"S": "a"}, "sk": {"S": "3"}},
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
        )

    items = dynamodb.query(
        TableName="partial",
        KeyConditionExpression="pk = :a",
        ExpressionAttributeValues={":a": {"S": "a"}},
        ConsistentRead=True,
    )["Items"]
    assert sorted((item["sk"]["S"], item["n"]["N"]) for item in items) == [("1", "0"), ("2", "0"), ("3", "0")]


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


def stream_records(url: str, table: str) -> list[dict[str, Any]]:
    aws = clients(url)
    dynamodb, streams = aws["dynamodb"], aws["dynamodbstreams"]
    stream_arn = create_table(dynamodb, table)
    key = {"pk": {"S": "a"}, "sk": {"S": "1"}}
    dynamodb.put_item(
        TableName=table,
        Item={
            **key,
            "s": {"S": "text é"},
            "n": {"N": "1.50"},
            "b": {"B": b"\x00\xffbytes"},
            "ss": {"SS": ["x", "y"]},
            "ns": {"NS": ["1", "2"]},
            "bs": {"BS": [b"\x01", b"\x02"]},
            "m": {"M": {"inner": {"L": [{"BOOL": True}, {"NULL": True}]}}},
        },
    )
    dynamodb.update_item(
        TableName=table, Key=key, UpdateExpression="ADD n :one", ExpressionAttributeValues={":one": {"N": "1"}}
    )
    dynamodb.delete_item(TableName=table, Key=key)
    shard = streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=stream_arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    records: list[dict[str, Any]] = streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"]
    return records


def test_the_tuned_stream_reads_give_the_sdk_what_moto_gives_it() -> None:
    """The tuned emulator writes GetRecords with json.dumps; the SDK must parse the same records."""
    by_flavour = {}
    for flavour in FLAVOURS:
        with EmulatorProcess(flavour=flavour) as emulator:
            by_flavour[flavour] = stream_records(emulator.url, "images")

    def comparable(record: dict[str, Any]) -> dict[str, Any]:
        created = record["dynamodb"].pop("ApproximateCreationDateTime")
        assert isinstance(created, datetime.datetime)
        assert abs((datetime.datetime.now(datetime.UTC) - created).total_seconds()) < 300
        # These two differ between processes (moto's SizeBytes measures the sequence number too).
        assert record["dynamodb"].pop("SequenceNumber").isdigit()
        assert record["dynamodb"].pop("SizeBytes") > 0
        return {name: value for name, value in record.items() if name != "eventID"}

    tuned, plain = ([comparable(r) for r in by_flavour[flavour]] for flavour in ("tuned", "plain"))
    assert [r["eventName"] for r in tuned] == ["INSERT", "MODIFY", "REMOVE"]
    assert tuned == plain


# --- TransactWriteItems' ClientRequestToken (local/client_request_tokens.py) ----------------------


def new_token() -> str:
    return uuid.uuid4().hex  # tokens are the emulator's, not a table's: each test needs its own


def add_one(table: str) -> list[dict[str, Any]]:
    update = {
        "TableName": table,
        "Key": {"pk": {"S": "counter"}, "sk": {"S": "counter"}},
        "UpdateExpression": "ADD #count :one",
        "ExpressionAttributeNames": {"#count": "count"},
        "ExpressionAttributeValues": {":one": {"N": "1"}},
    }
    return [{"Update": update}]


def count_of(dynamodb: Any, table: str) -> int:
    item = dynamodb.get_item(TableName=table, Key={"pk": {"S": "counter"}, "sk": {"S": "counter"}}, ConsistentRead=True)
    return int(item.get("Item", {}).get("count", {"N": "0"})["N"])


def test_a_transaction_repeated_with_its_token_is_answered_and_applied_once(aws: dict[str, Any]) -> None:
    dynamodb, token_1, token_2 = aws["dynamodb"], new_token(), new_token()
    create_table(dynamodb, "tokens-repeat")
    first = dynamodb.transact_write_items(TransactItems=add_one("tokens-repeat"), ClientRequestToken=token_1)
    again = dynamodb.transact_write_items(TransactItems=add_one("tokens-repeat"), ClientRequestToken=token_1)
    assert again["ResponseMetadata"]["HTTPStatusCode"] == first["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert count_of(dynamodb, "tokens-repeat") == 1
    dynamodb.transact_write_items(TransactItems=add_one("tokens-repeat"), ClientRequestToken=token_2)
    assert count_of(dynamodb, "tokens-repeat") == 2


def test_a_token_reused_with_other_parameters_is_refused(aws: dict[str, Any]) -> None:
    dynamodb, token_1 = aws["dynamodb"], new_token()
    create_table(dynamodb, "tokens-mismatch")
    dynamodb.transact_write_items(TransactItems=add_one("tokens-mismatch"), ClientRequestToken=token_1)
    other = add_one("tokens-mismatch")
    other[0]["Update"]["ExpressionAttributeValues"][":one"] = {"N": "2"}
    with pytest.raises(ClientError) as refused:
        dynamodb.transact_write_items(TransactItems=other, ClientRequestToken=token_1)
    assert refused.value.response["Error"]["Code"] == "IdempotentParameterMismatchException"
    assert count_of(dynamodb, "tokens-mismatch") == 1


def test_a_cancelled_transaction_leaves_its_token_free(aws: dict[str, Any]) -> None:
    dynamodb, token_1, token_2 = aws["dynamodb"], new_token(), new_token()
    create_table(dynamodb, "tokens-cancelled")
    guarded = add_one("tokens-cancelled")
    guarded[0]["Update"]["ConditionExpression"] = "attribute_exists(#count)"
    with pytest.raises(ClientError) as cancelled:
        dynamodb.transact_write_items(TransactItems=guarded, ClientRequestToken=token_1)
    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    dynamodb.transact_write_items(TransactItems=add_one("tokens-cancelled"), ClientRequestToken=token_2)
    dynamodb.transact_write_items(TransactItems=guarded, ClientRequestToken=token_1)  # runs, not replayed
    assert count_of(dynamodb, "tokens-cancelled") == 2


def test_the_sdks_retry_of_a_transaction_whose_answer_was_lost_applies_it_once(aws: dict[str, Any]) -> None:
    """botocore fills ClientRequestToken in once per call and sends it again on each retry."""
    from botocore.httpsession import URLLib3Session

    from local.faults import ANSWERS, aws_response

    dynamodb = clients(aws["dynamodb"].meta.endpoint_url)["dynamodb"]  # a client of its own for the hook
    create_table(dynamodb, "tokens-retry")
    sent: list[bytes] = []
    http = URLLib3Session()

    def land_then_500(request: Any, **_: Any) -> Any:
        sent.append(request.body)
        if len(sent) > 1:
            return None
        assert http.send(request).status_code == 200
        return aws_response(request, *ANSWERS["InternalServerError"])

    dynamodb.meta.events.register("before-send.dynamodb.TransactWriteItems", land_then_500)
    dynamodb.transact_write_items(TransactItems=add_one("tokens-retry"))
    assert len(sent) == 2
    assert sent[0] == sent[1]  # the same token both times
    assert count_of(dynamodb, "tokens-retry") == 1


def test_several_partitions_are_read_at_one_instant_for_the_checks_that_need_it(aws: dict[str, Any]) -> None:
    """local/partition_reads.py: what chaos/truth.py reads an account's shards with."""
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


def test_a_transactional_read_takes_up_to_100_items_as_dynamodb_does(aws: dict[str, Any]) -> None:
    """TransactGetItems reads up to 100 items (the API reference); moto refused more than 25, the
    limit before 2022, which answered a full 64-shard account's refusal snapshot with a 400."""
    dynamodb = aws["dynamodb"]
    create_table(dynamodb, "transact-reads")
    keys = [{"pk": {"S": f"SHARD#a#{i}"}, "sk": {"S": "SHARD"}} for i in range(101)]
    for key in keys[:64]:
        dynamodb.put_item(TableName="transact-reads", Item=key)
    response = dynamodb.transact_get_items(
        TransactItems=[{"Get": {"TableName": "transact-reads", "Key": k}} for k in keys[:100]]
    )
    assert sum(1 for got in response["Responses"] if got.get("Item")) == 64
    assert len(response["Responses"]) == 100
    with pytest.raises(ClientError) as refused:
        dynamodb.transact_get_items(TransactItems=[{"Get": {"TableName": "transact-reads", "Key": k}} for k in keys])
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert "less than or equal to 100" in refused.value.response["Error"]["Message"]


# Each update leaves one expression map present and empty, the rest of it valid.
WITH_AN_EMPTY_MAP = {
    "ExpressionAttributeNames": {
        "UpdateExpression": "ADD version :one",
        "ExpressionAttributeNames": {},
        "ExpressionAttributeValues": {":one": {"N": "1"}},
    },
    "ExpressionAttributeValues": {"UpdateExpression": "REMOVE version", "ExpressionAttributeValues": {}},
}


@pytest.mark.parametrize("name", sorted(WITH_AN_EMPTY_MAP))
def test_an_empty_expression_map_is_refused_as_dynamodb_refuses_it(aws: dict[str, Any], name: str) -> None:
    """DynamoDB (and DynamoDB Local) answer ValidationException; moto applied it, which hid a
    shard-growth write that always failed on AWS (local/expression_maps.py)."""
    dynamodb = aws["dynamodb"]
    table = f"empty-{name[-5:].lower()}"
    create_table(dynamodb, table)
    key = {"pk": {"S": "ACCOUNT#a"}, "sk": {"S": "ACCOUNT"}}
    update = {"TableName": table, "Key": key, **WITH_AN_EMPTY_MAP[name]}
    with pytest.raises(ClientError) as refused:
        dynamodb.update_item(**update)
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert f"{name} must not be empty" in refused.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as in_a_transaction:
        dynamodb.transact_write_items(TransactItems=[{"Update": update}])
    assert in_a_transaction.value.response["Error"]["Code"] == "ValidationException"
    assert "Item" not in dynamodb.get_item(TableName=table, Key=key)


def item_answers(url: str, table: str) -> list[Any]:
    """The SDK's parsed answers to every item call the tuned emulator writes with json.dumps, on
    an item with every attribute type (binary ones included), and one refused call."""
    dynamodb = clients(url)["dynamodb"]
    create_table(dynamodb, table)
    key = {"pk": {"S": "a"}, "sk": {"S": "1"}}
    item = {
        **key,
        "s": {"S": "text é"},
        "n": {"N": "1.50"},
        "b": {"B": b"\x00\xffbytes"},
        "ss": {"SS": ["x", "y"]},
        "ns": {"NS": ["1", "2"]},
        "bs": {"BS": [b"\x01", b"\x02"]},
        "m": {"M": {"inner": {"L": [{"BOOL": True}, {"NULL": True}]}}},
    }
    answers: list[Any] = [
        dynamodb.put_item(TableName=table, Item=item, ReturnValues="NONE"),
        dynamodb.update_item(
            TableName=table,
            Key=key,
            UpdateExpression="ADD n :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
            ReturnValues="ALL_NEW",
        ),
        dynamodb.get_item(TableName=table, Key=key, ConsistentRead=True),
        dynamodb.query(
            TableName=table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": "a"}},
            ConsistentRead=True,
        ),
        dynamodb.scan(TableName=table),
        dynamodb.batch_get_item(RequestItems={table: {"Keys": [key]}}),
        dynamodb.transact_get_items(TransactItems=[{"Get": {"TableName": table, "Key": key}}]),
        dynamodb.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": table,
                        "Key": key,
                        "UpdateExpression": "ADD n :one",
                        "ExpressionAttributeValues": {":one": {"N": "1"}},
                    }
                }
            ]
        ),
        dynamodb.delete_item(TableName=table, Key=key, ReturnValues="ALL_OLD"),
    ]
    try:
        dynamodb.update_item(
            TableName=table,
            Key=key,
            UpdateExpression="SET s = :s",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues={":s": {"S": "x"}},
        )
    except dynamodb.exceptions.ConditionalCheckFailedException as refused:
        answers.append(refused.response["Error"])
    for answer in answers:
        answer.pop("ResponseMetadata", None)
    return answers


def test_the_tuned_item_answers_give_the_sdk_what_moto_gives_it() -> None:
    """The tuned emulator writes the item calls' answers with json.dumps; the SDK must parse the
    same answers as from moto's own serializer."""
    by_flavour = {}
    for flavour in FLAVOURS:
        with EmulatorProcess(flavour=flavour) as emulator:
            by_flavour[flavour] = item_answers(emulator.url, "items")
    tuned, plain = by_flavour["tuned"], by_flavour["plain"]
    assert tuned[1]["Attributes"]["b"] == {"B": b"\x00\xffbytes"}  # binary values round-trip
    assert tuned[-1]["Code"] == "ConditionalCheckFailedException"
    assert tuned == plain


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


# One update and one condition, each sent several times with other values and names: the tuned
# emulator parses each text once and hands every request its own copy of the result.
REPEATED_UPDATE = (
    "SET #count = if_not_exists(#count, :zero) + :step, #log = list_append(if_not_exists(#log, :empty), :entry), "
    "#m.#field = :value REMOVE #gone ADD tags :tag"
)
REPEATED_CONDITION = (
    "(attribute_not_exists(#count) OR #count < :cap) AND NOT begins_with(#m.#field, :prefix) "
    "AND (size(#log) BETWEEN :low AND :high OR #count IN (:a, :b))"
)


def repeated_expression_answers(url: str, table: str) -> list[Any]:
    dynamodb = clients(url)["dynamodb"]
    create_table(dynamodb, table)
    key = {"pk": {"S": "r"}, "sk": {"S": "1"}}
    dynamodb.put_item(TableName=table, Item={**key, "m": {"M": {}}, "log": {"L": []}, "gone": {"S": "x"}})
    answers: list[Any] = []
    for step, field, cap in ((1, "f1", 10), (5, "f2", 10), (7, "f1", 6), (2, "f3", 100)):
        values = {
            ":zero": {"N": "0"},
            ":step": {"N": str(step)},
            ":empty": {"L": []},
            ":entry": {"L": [{"N": str(step)}]},
            ":value": {"S": f"value {step}"},
            ":tag": {"SS": [f"t{step}"]},
            ":cap": {"N": str(cap)},
            ":prefix": {"S": "nothing"},
            ":low": {"N": "0"},
            ":high": {"N": "3"},
            ":a": {"N": "6"},
            ":b": {"N": "12"},
        }
        names = {"#count": "count", "#log": "log", "#m": "m", "#field": field, "#gone": "gone"}
        update = {
            "TableName": table,
            "Key": key,
            "UpdateExpression": REPEATED_UPDATE,
            "ConditionExpression": REPEATED_CONDITION,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        try:
            answers.append(dynamodb.update_item(**update, ReturnValues="ALL_NEW")["Attributes"])
        except dynamodb.exceptions.ConditionalCheckFailedException:
            answers.append("refused")
        try:
            dynamodb.transact_write_items(TransactItems=[{"Update": update}])
            answers.append("transaction applied")
        except ClientError as cancelled:
            answers.append(cancelled.response["CancellationReasons"])
    answers.append(dynamodb.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"])
    return answers


def test_expressions_parsed_once_give_each_request_its_own_values() -> None:
    """The tuned emulator caches what moto parses from an expression's text; a request must still
    be applied with its own values and names, as plain moto applies it."""
    by_flavour = {}
    for flavour in FLAVOURS:
        with EmulatorProcess(flavour=flavour) as emulator:
            by_flavour[flavour] = repeated_expression_answers(emulator.url, "repeated")
    tuned, plain = by_flavour["tuned"], by_flavour["plain"]
    assert tuned[0]["count"] == {"N": "1"}  # applied ...
    assert "refused" in tuned  # ... and refused at least once
    assert tuned == plain


def refused_structures(url: str, table: str) -> list[Any]:
    """An update's structure checks, after the same text passed them: the names now put one path
    twice; and a text with two SET clauses, sent twice."""
    dynamodb = clients(url)["dynamodb"]
    create_table(dynamodb, table)
    key = {"pk": {"S": "s"}, "sk": {"S": "1"}}
    values = {":one": {"N": "1"}, ":two": {"N": "2"}}
    answers: list[Any] = []
    attempts = [
        ("SET #a = :one, #b = :two", {"#a": "x", "#b": "y"}),
        ("SET #a = :one, #b = :two", {"#a": "x", "#b": "x"}),
        ("SET a = :one SET b = :two", None),
        ("SET a = :one SET b = :two", None),
    ]
    for expression, names in attempts:
        update = {"TableName": table, "Key": key, "UpdateExpression": expression, "ExpressionAttributeValues": values}
        try:
            dynamodb.update_item(**update, **({"ExpressionAttributeNames": names} if names else {}))
            answers.append("applied")
        except ClientError as refused:
            answers.append(refused.response["Error"]["Code"])
    return answers


def test_an_update_that_breaks_moto_s_structure_checks_is_refused_every_time() -> None:
    by_flavour = {}
    for flavour in FLAVOURS:
        with EmulatorProcess(flavour=flavour) as emulator:
            by_flavour[flavour] = refused_structures(emulator.url, "structure")
    assert by_flavour["tuned"] == ["applied", "ValidationException", "ValidationException", "ValidationException"]
    assert by_flavour["tuned"] == by_flavour["plain"]

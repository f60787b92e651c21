"""The emulator's changes to moto (local/moto_patches/), one module each: what each change does, in
the emulator (both flavours, or the tuned one for a speed-up), and, where moto's own behaviour can be
seen, that moto as released still behaves as the change assumes (`upstream`: moto's own server,
unchanged). An upgrade of moto that fixes or moves what a change relies on fails its upstream test."""

from __future__ import annotations

import copy
import datetime
import inspect
import json
import re
import uuid
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from local.emulator import FLAVOURS, LOOPBACK, EmulatorProcess
from local.moto_patches import MOTO_VERSION, MotoVersionMismatch, check_version
from local.moto_patches.tables import MotoTables
from local.moto_patches.transact_get_items_limit import UPSTREAM_TRANSACTION_MAX_ITEMS
from tests.support.tables import create_table

SERVICES = ("dynamodb", "dynamodbstreams", "sqs", "lambda", "iam", "cloudformation", "events", "secretsmanager")
REQUIREMENTS = Path(__file__).resolve().parents[2] / "requirements-dev.txt"


def clients(url: str) -> dict[str, Any]:
    options = {"endpoint_url": url, "region_name": "us-east-1", "aws_access_key_id": "x", "aws_secret_access_key": "x"}
    return {name: boto3.client(name, **options) for name in SERVICES}


@pytest.fixture(scope="module", params=FLAVOURS)
def aws(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    with EmulatorProcess(flavour=request.param) as emulator:
        yield clients(emulator.url)


@pytest.fixture(scope="module")
def flavour_urls() -> Iterator[dict[str, str]]:
    """One emulator of each flavour side by side, for the tests that compare their answers (each
    its own tables): started once for them all, not twice for each."""
    with EmulatorProcess(flavour="tuned") as tuned, EmulatorProcess(flavour="plain") as plain:
        yield {"tuned": tuned.url, "plain": plain.url}


@pytest.fixture(scope="module")
def upstream() -> Iterator[dict[str, Any]]:
    """moto as released: its own server, in this process (the emulator changes moto in its own
    process only), so that a test can also watch moto's internals."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address=LOOPBACK, port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield clients(f"http://{host}:{port}")
    finally:
        server.stop()


def upstream_table(name: str) -> Any:
    """moto's own object for a table of the `upstream` server."""
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].tables[name]


def watch(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[tuple[Any, ...]]:
    """Calls of `owner.name` (a function, method or class method) from now to the test's end, each
    as its arguments and its result, the call itself unchanged."""
    calls: list[tuple[Any, ...]] = []
    original = inspect.getattr_static(owner, name)
    function = original.__func__ if isinstance(original, classmethod) else original

    def watched(*args: Any, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        calls.append((*args, result))
        return result

    monkeypatch.setattr(owner, name, classmethod(watched) if isinstance(original, classmethod) else watched)
    return calls


def test_the_changes_were_checked_against_the_moto_requirements_pin() -> None:
    """MOTO_VERSION is the one release the changes were written for; the emulator refuses another."""
    pinned = re.search(r"^moto\[server\]==(\S+)", REQUIREMENTS.read_text(encoding="utf-8"), re.MULTILINE)
    assert pinned is not None
    assert pinned.group(1) == MOTO_VERSION == version("moto")
    check_version(MOTO_VERSION)
    with pytest.raises(MotoVersionMismatch, match="checked against moto"):
        check_version("99.0.0")


def read_all(streams: Any, iterator: str) -> tuple[list[dict[str, Any]], str]:
    response = streams.get_records(ShardIterator=iterator)
    return response["Records"], response["NextShardIterator"]


# --- no_event_source_polling --------------------------------------------------------------------


def receive_count_of_a_mapped_queue_s_message(aws: dict[str, Any]) -> str:
    """A message sent to a queue mapped to a function, then received: its receive count."""
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
    return str(received[0]["Attributes"]["ApproximateReceiveCount"])


def test_mapped_queues_and_streams_are_left_to_the_local_lambda_service(aws: dict[str, Any]) -> None:
    """moto would receive (and count) messages itself for a mapped queue; the emulator does not."""
    assert receive_count_of_a_mapped_queue_s_message(aws) == "1"


def test_upstream_moto_receives_a_mapped_queue_s_messages_itself(upstream: dict[str, Any]) -> None:
    assert receive_count_of_a_mapped_queue_s_message(upstream) == "2"


# --- transaction_rollback -----------------------------------------------------------------------


def sort_keys_read_after_a_cancelled_transaction(aws: dict[str, Any], table: str) -> list[str]:
    """What a stream iterator handed out before a cancelled transaction reads of a write after it."""
    dynamodb, streams = aws["dynamodb"], aws["dynamodbstreams"]
    stream_arn = create_table(dynamodb, table)
    shard = streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=stream_arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")[
        "ShardIterator"
    ]
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"S": "1"}})
    records, iterator = read_all(streams, iterator)
    assert len(records) == 1

    with pytest.raises(ClientError) as cancelled:
        dynamodb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": table, "Item": {"pk": {"S": "a"}, "sk": {"S": "2"}}}},
                {
                    "ConditionCheck": {
                        "TableName": table,
                        "Key": {"pk": {"S": "a"}, "sk": {"S": "1"}},
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
        )
    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert "Item" not in dynamodb.get_item(TableName=table, Key={"pk": {"S": "a"}, "sk": {"S": "2"}})

    dynamodb.put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"S": "3"}})
    records, _ = read_all(streams, iterator)
    return [r["dynamodb"]["Keys"]["sk"]["S"] for r in records]


def test_a_cancelled_transaction_leaves_stream_readers_reading(aws: dict[str, Any]) -> None:
    assert sort_keys_read_after_a_cancelled_transaction(aws, "rollback") == ["3"]  # nothing of the cancelled one


def test_upstream_moto_cuts_stream_readers_off_at_a_cancelled_transaction(upstream: dict[str, Any]) -> None:
    """They read the cancelled put, and never a later write."""
    assert sort_keys_read_after_a_cancelled_transaction(upstream, "upstream-rollback") == ["2"]


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


def test_upstream_moto_rolls_back_by_swapping_in_a_copy_of_the_table_made_for_each_action(
    upstream: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import moto.dynamodb.models as models

    dynamodb = upstream["dynamodb"]
    create_table(dynamodb, "upstream-copies")
    live = upstream_table("upstream-copies")
    copied: list[str] = []

    def deepcopy(value: Any, memo: Any = None) -> Any:
        if value is live:
            copied.append(value.name)
        return copy.deepcopy(value, memo)

    monkeypatch.setattr(models, "copy", SimpleNamespace(deepcopy=deepcopy, copy=copy.copy))
    with pytest.raises(ClientError):
        dynamodb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": "upstream-copies", "Item": {"pk": {"S": "a"}, "sk": {"S": "1"}}}},
                {"Put": {"TableName": "upstream-copies", "Item": {"pk": {"S": "a"}, "sk": {"S": "2"}}}},
                {
                    "ConditionCheck": {
                        "TableName": "upstream-copies",
                        "Key": {"pk": {"S": "a"}, "sk": {"S": "3"}},
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                },
            ]
        )
    assert copied == ["upstream-copies"] * 3
    assert upstream_table("upstream-copies") is not live


# --- backend_per_host ---------------------------------------------------------------------------


def test_each_service_is_served_on_one_host(aws: dict[str, Any]) -> None:
    """Every service has the emulator's one address: a service looked up once per host must still
    be the one each request is for."""
    for _ in range(2):
        assert "TableNames" in aws["dynamodb"].list_tables()
        assert aws["sqs"].create_queue(QueueName="one-host")["QueueUrl"].endswith("/one-host")
        assert "Functions" in aws["lambda"].list_functions()
        assert "Roles" in aws["iam"].list_roles()


def test_upstream_moto_looks_a_request_s_service_up_by_host_on_every_request(
    upstream: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    calls = watch(monkeypatch, DomainDispatcherApplication, "get_backend_for_host")
    for _ in range(3):
        upstream["dynamodb"].list_tables()
    answers = {(host, backend) for _, host, backend in calls if host is not None}
    assert len(calls) >= 3
    assert {backend for _, backend in answers} == {"dynamodb"}
    assert len(answers) == len({host for host, _ in answers})  # one answer per host


# --- action_methods_listed_once -----------------------------------------------------------------


def test_an_action_is_found_or_refused_as_moto_finds_it(flavour_urls: dict[str, str]) -> None:
    """The tuned emulator keeps each response class's list of methods: an action it has is
    answered, one it lacks fails (moto raises NotImplementedError: a 500, each server's own page),
    on every request."""
    answers: dict[str, list[Any]] = {}
    for flavour, url in flavour_urls.items():
        dynamodb = clients(url)["dynamodb"]
        answers[flavour] = []
        for _ in range(2):
            answers[flavour].append("TableNames" in dynamodb.list_tables())
            with pytest.raises(ClientError) as lacking:
                dynamodb.describe_contributor_insights(TableName="any")
            answers[flavour].append(lacking.value.response["ResponseMetadata"]["HTTPStatusCode"])
    assert answers["tuned"] == answers["plain"] == [True, 500, True, 500]


def test_upstream_moto_lists_a_response_class_s_methods_on_every_request(
    upstream: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.core import responses

    calls = watch(monkeypatch, responses, "method_names_from_class")
    for _ in range(3):
        upstream["dynamodb"].list_tables()
    assert len(calls) >= 3
    assert len({(response_class, tuple(names)) for response_class, names in calls}) == 1  # the class's alone


# --- stream_records_as_json ---------------------------------------------------------------------


# An item's attributes, one of each type DynamoDB has (binary ones included).
EVERY_ATTRIBUTE_TYPE = {
    "s": {"S": "text é"},
    "n": {"N": "1.50"},
    "b": {"B": b"\x00\xffbytes"},
    "ss": {"SS": ["x", "y"]},
    "ns": {"NS": ["1", "2"]},
    "bs": {"BS": [b"\x01", b"\x02"]},
    "m": {"M": {"inner": {"L": [{"BOOL": True}, {"NULL": True}]}}},
}


def stream_records(url: str, table: str) -> list[dict[str, Any]]:
    aws = clients(url)
    dynamodb, streams = aws["dynamodb"], aws["dynamodbstreams"]
    stream_arn = create_table(dynamodb, table)
    key = {"pk": {"S": "a"}, "sk": {"S": "1"}}
    dynamodb.put_item(TableName=table, Item={**key, **EVERY_ATTRIBUTE_TYPE})
    dynamodb.update_item(
        TableName=table, Key=key, UpdateExpression="ADD n :one", ExpressionAttributeValues={":one": {"N": "1"}}
    )
    dynamodb.delete_item(TableName=table, Key=key)
    shard = streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=stream_arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    records: list[dict[str, Any]] = streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"]
    return records


def test_the_tuned_stream_reads_give_the_sdk_what_moto_gives_it(flavour_urls: dict[str, str]) -> None:
    """The tuned emulator writes GetRecords with json.dumps; the SDK must parse the same records."""
    by_flavour = {flavour: stream_records(url, "images") for flavour, url in flavour_urls.items()}

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


def test_upstream_moto_answers_get_records_with_its_handler_s_get_records(
    upstream: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

    calls = watch(monkeypatch, DynamoDBStreamsHandler, "get_records")
    assert len(stream_records(upstream["dynamodb"].meta.endpoint_url, "upstream-images")) == 3
    assert len(calls) == 1


# --- client_request_tokens (a WSGI layer in front of moto) --------------------------------------


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


def test_upstream_moto_applies_a_transaction_again_for_a_repeated_token(upstream: dict[str, Any]) -> None:
    dynamodb, token = upstream["dynamodb"], new_token()
    create_table(dynamodb, "upstream-tokens")
    for _ in range(2):
        dynamodb.transact_write_items(TransactItems=add_one("upstream-tokens"), ClientRequestToken=token)
    assert count_of(dynamodb, "upstream-tokens") == 2


# --- transact_get_items_limit -------------------------------------------------------------------


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


def test_upstream_moto_refuses_a_transactional_read_of_more_than_25_items(upstream: dict[str, Any]) -> None:
    dynamodb = upstream["dynamodb"]
    create_table(dynamodb, "upstream-transact-reads")
    keys = [{"pk": {"S": f"SHARD#a#{i}"}, "sk": {"S": "SHARD"}} for i in range(UPSTREAM_TRANSACTION_MAX_ITEMS + 1)]
    dynamodb.transact_get_items(
        TransactItems=[{"Get": {"TableName": "upstream-transact-reads", "Key": k}} for k in keys[:-1]]
    )
    with pytest.raises(ClientError) as refused:
        dynamodb.transact_get_items(
            TransactItems=[{"Get": {"TableName": "upstream-transact-reads", "Key": k}} for k in keys]
        )
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert f"less than or equal to {UPSTREAM_TRANSACTION_MAX_ITEMS}" in refused.value.response["Error"]["Message"]


# --- empty_expression_maps (a WSGI layer in front of moto) --------------------------------------


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


def test_upstream_moto_applies_an_update_with_empty_expression_attribute_names(upstream: dict[str, Any]) -> None:
    """(and refuses empty ExpressionAttributeValues itself, as the layer does)"""
    dynamodb = upstream["dynamodb"]
    create_table(dynamodb, "upstream-empty")
    key = {"pk": {"S": "ACCOUNT#a"}, "sk": {"S": "ACCOUNT"}}
    dynamodb.update_item(TableName="upstream-empty", Key=key, **WITH_AN_EMPTY_MAP["ExpressionAttributeNames"])
    assert dynamodb.get_item(TableName="upstream-empty", Key=key)["Item"]["version"] == {"N": "1"}
    with pytest.raises(ClientError, match="ExpressionAttributeValues must not be empty"):
        dynamodb.update_item(TableName="upstream-empty", Key=key, **WITH_AN_EMPTY_MAP["ExpressionAttributeValues"])


# --- item_answers_as_json -----------------------------------------------------------------------


def item_answers(url: str, table: str) -> list[Any]:
    """The SDK's parsed answers to every item call the tuned emulator writes with json.dumps, on
    an item with every attribute type (binary ones included), and one refused call."""
    dynamodb = clients(url)["dynamodb"]
    create_table(dynamodb, table)
    key = {"pk": {"S": "a"}, "sk": {"S": "1"}}
    item = {**key, **EVERY_ATTRIBUTE_TYPE}
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


def test_the_tuned_item_answers_give_the_sdk_what_moto_gives_it(flavour_urls: dict[str, str]) -> None:
    """The tuned emulator writes the item calls' answers with json.dumps; the SDK must parse the
    same answers as from moto's own serializer."""
    by_flavour = {flavour: item_answers(url, "items") for flavour, url in flavour_urls.items()}
    tuned, plain = by_flavour["tuned"], by_flavour["plain"]
    assert tuned[1]["Attributes"]["b"] == {"B": b"\x00\xffbytes"}  # binary values round-trip
    assert tuned[-1]["Code"] == "ConditionalCheckFailedException"
    assert tuned == plain


def test_upstream_moto_writes_every_item_answer_with_its_serializer(
    upstream: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.dynamodb.responses import DynamoHandler

    dynamodb = upstream["dynamodb"]
    create_table(dynamodb, "upstream-items")
    calls = watch(monkeypatch, DynamoHandler, "serialized")
    dynamodb.get_item(TableName="upstream-items", Key={"pk": {"S": "a"}, "sk": {"S": "1"}})
    assert len(calls) == 1


# --- dynamodb_without_flask ---------------------------------------------------------------------

# What differs between two answers: when, which request, and the HTTP server's own (the tuned
# flavour's waitress keeps connections open, moto's development server closes each).
PER_ANSWER_HEADERS = {"date", "server", "x-amzn-requestid", "x-amz-crc32", "content-length", "connection", "via"}


def raw_answers(url: str, table: str) -> list[Any]:
    """Each answer's status, header names (PER_ANSWER_HEADERS aside) and body as JSON, to
    DynamoDB and DynamoDB Streams calls that succeed, fail in the service and fail on their input."""
    aws = clients(url)
    dynamodb, streams = aws["dynamodb"], aws["dynamodbstreams"]
    stream_arn = create_table(dynamodb, table)
    answers: list[Any] = []

    def seen(response: dict[str, Any]) -> None:
        metadata = response["ResponseMetadata"]
        headers = sorted(set(metadata["HTTPHeaders"]) - PER_ANSWER_HEADERS)
        body = {name: value for name, value in response.items() if name != "ResponseMetadata"}
        answers.append((metadata["HTTPStatusCode"], headers, body))

    seen(dynamodb.put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"S": "1"}}))
    seen(dynamodb.describe_table(TableName=table)["Table"] and dynamodb.list_tables())
    described = streams.describe_stream(StreamArn=stream_arn)
    lasting = ("StreamStatus", "StreamViewType", "TableName", "KeySchema")  # not when it was made
    described["StreamDescription"] = {k: v for k, v in described["StreamDescription"].items() if k in lasting}
    seen(described)
    no_shard = "shardId-00000000000000000000-nosuch"
    for refused in (
        lambda: dynamodb.get_item(TableName="no-such-table", Key={"pk": {"S": "a"}, "sk": {"S": "1"}}),
        lambda: dynamodb.query(TableName=table, KeyConditionExpression="nonsense here"),
        lambda: streams.get_shard_iterator(StreamArn=stream_arn, ShardId=no_shard, ShardIteratorType="LATEST"),
    ):
        with pytest.raises(ClientError) as error:
            refused()
        if error.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500:  # the HTTP server's own page
            error.value.response["Error"].pop("Message")
        seen(error.value.response)
    return answers


def test_dynamodb_answered_without_flask_is_answered_as_through_it(flavour_urls: dict[str, str]) -> None:
    """The tuned emulator hands DynamoDB and DynamoDB Streams requests to moto's handler itself:
    each answer (status, headers, body) is the one Flask gives, successes and errors alike."""
    by_flavour = {flavour: raw_answers(url, "without-flask") for flavour, url in flavour_urls.items()}
    tuned, plain = by_flavour["tuned"], by_flavour["plain"]
    assert [status for status, _, _ in tuned] == [200, 200, 200, 400, 400, 500]  # moto fails on an unknown shard
    assert tuned == plain


# --- update_expressions_parsed_once, conditions_lexed_once, tree_walks_dispatched_once ----------


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


def test_expressions_parsed_once_give_each_request_its_own_values(flavour_urls: dict[str, str]) -> None:
    """The tuned emulator caches what moto parses from an expression's text; a request must still
    be applied with its own values and names, as plain moto applies it."""
    by_flavour = {flavour: repeated_expression_answers(url, "repeated") for flavour, url in flavour_urls.items()}
    tuned, plain = by_flavour["tuned"], by_flavour["plain"]
    assert tuned[0]["count"] == {"N": "1"}  # applied ...
    assert "refused" in tuned  # ... and refused at least once
    assert tuned == plain


def one_conditional_update(dynamodb: Any, table: str) -> None:
    dynamodb.update_item(
        TableName=table,
        Key={"pk": {"S": "u"}, "sk": {"S": "1"}},
        UpdateExpression="SET #n = if_not_exists(#n, :zero) + :one",
        ConditionExpression="attribute_not_exists(#n) OR #n < :cap",
        ExpressionAttributeNames={"#n": "n"},
        ExpressionAttributeValues={":zero": {"N": "0"}, ":one": {"N": "1"}, ":cap": {"N": "9"}},
    )


@pytest.fixture
def upstream_updates(upstream: dict[str, Any]) -> Any:
    dynamodb = upstream["dynamodb"]
    table = f"upstream-updates-{uuid.uuid4().hex[:8]}"
    create_table(dynamodb, table)
    return lambda: one_conditional_update(dynamodb, table)


def test_upstream_moto_parses_an_update_expression_twice_and_deep_copies_the_tree(
    upstream_updates: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.dynamodb.parsing import validators
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]

    parses = watch(monkeypatch, UpdateExpressionParser, "make")
    copies = watch(monkeypatch, validators, "deepcopy")
    upstream_updates()
    assert len(parses) == 2
    assert any(type(arguments[0]).__name__ == "UpdateExpression" for arguments in copies)


def test_upstream_moto_lexes_a_condition_expression_for_every_request(
    upstream_updates: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.dynamodb.comparisons import ConditionExpressionParser

    lexes = watch(monkeypatch, ConditionExpressionParser, "_lex_condition_expression")
    upstream_updates()
    upstream_updates()
    assert len(lexes) >= 2
    assert len({parser.condition_expression for parser, _ in lexes}) == 1  # the same text, lexed again


def test_upstream_moto_walks_update_trees_with_its_depth_first_traverser(
    upstream_updates: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser  # type: ignore[attr-defined]

    visits = watch(monkeypatch, DepthFirstTraverser, "traverse_node_recursively")
    upstream_updates()
    processors = {type(arguments[0]) for arguments in visits}
    assert processors
    assert all(hasattr(p, "_processing_map") and hasattr(p, "nodes_to_be_processed") for p in processors)


# --- update_structure_checked_once --------------------------------------------------------------


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


def test_an_update_that_breaks_moto_s_structure_checks_is_refused_every_time(flavour_urls: dict[str, str]) -> None:
    by_flavour = {flavour: refused_structures(url, "structure") for flavour, url in flavour_urls.items()}
    assert by_flavour["tuned"] == ["applied", "ValidationException", "ValidationException", "ValidationException"]
    assert by_flavour["tuned"] == by_flavour["plain"]


def test_upstream_moto_checks_an_update_s_structure_on_every_request(
    upstream_updates: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.dynamodb.parsing.validators import ActionCountValidator, OverlappingPathsValidator

    counted = watch(monkeypatch, ActionCountValidator, "traverse")
    overlaps = watch(monkeypatch, OverlappingPathsValidator, "traverse")
    upstream_updates()
    upstream_updates()
    assert len(counted) >= 2
    assert len(overlaps) >= 2


# --- tables (moto's tables read in place, for the emulator's own layers) -------------------------


def test_upstream_moto_s_tables_read_in_place(upstream: dict[str, Any]) -> None:
    from moto.core.models import DEFAULT_ACCOUNT_ID

    dynamodb = upstream["dynamodb"]
    create_table(dynamodb, "upstream-tables")
    item = {"pk": {"S": "P#1"}, "sk": {"S": "A"}, "n": {"N": "1"}}
    dynamodb.put_item(TableName="upstream-tables", Item=item)
    dynamodb.put_item(TableName="upstream-tables", Item={"pk": {"S": "P#2"}, "sk": {"S": "B"}})
    tables = MotoTables(DEFAULT_ACCOUNT_ID)
    shape = tables.shape("us-east-1", "upstream-tables")
    assert shape is not None
    assert shape[0] == ("pk", "sk")
    described = dynamodb.describe_table(TableName="upstream-tables")["Table"]
    assert {index.name for index in shape[1]} == {i["IndexName"] for i in described["GlobalSecondaryIndexes"]}
    assert tables.item("us-east-1", "upstream-tables", {"pk": {"S": "P#1"}, "sk": {"S": "A"}}) == item
    assert tables.item("us-east-1", "upstream-tables", {"pk": {"S": "P#1"}, "sk": {"S": "Z"}}) is None
    assert tables.partitions("us-east-1", "upstream-tables", ["P#1", "P#9"]) == [item]
    assert tables.shape("us-east-1", "no-such-table") is None


# --- event_bus_ref ------------------------------------------------------------------------------

BUS_AND_RULE = {
    "Resources": {
        "Bus": {"Type": "AWS::Events::EventBus", "Properties": {"Name": "usage"}},
        "Rule": {
            "Type": "AWS::Events::Rule",
            "Properties": {"EventBusName": {"Ref": "Bus"}, "EventPattern": {"source": ["hybrid-counter.usage"]}},
        },
    },
    "Outputs": {"BusName": {"Value": {"Ref": "Bus"}}},
}


def test_a_rule_on_a_bus_of_the_template_deploys_and_ref_names_the_bus(aws: dict[str, Any]) -> None:
    """Ref of an AWS::Events::EventBus is its name (CloudFormation reference, Return values)."""
    name = f"bus-{uuid.uuid4().hex[:8]}"
    aws["cloudformation"].create_stack(StackName=name, TemplateBody=json.dumps(BUS_AND_RULE))
    [stack] = aws["cloudformation"].describe_stacks(StackName=name)["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    assert stack["Outputs"] == [{"OutputKey": "BusName", "OutputValue": "usage"}]
    assert len(aws["events"].list_rules(EventBusName="usage")["Rules"]) == 1


def test_upstream_moto_resolves_a_bus_ref_to_the_bus_object(upstream: dict[str, Any]) -> None:
    from moto.events.models import EventBus

    assert "physical_resource_id" not in vars(EventBus)
    from botocore.parsers import ResponseParserError

    with pytest.raises(ResponseParserError):  # the rule's EventBusName is the object: an AttributeError, a 500
        upstream["cloudformation"].create_stack(StackName="upstream-bus", TemplateBody=json.dumps(BUS_AND_RULE))


# --- event_targets ------------------------------------------------------------------------------


def test_upstream_moto_fails_put_events_on_a_bus_with_a_rule_to_an_sns_topic(upstream: dict[str, Any]) -> None:
    """The patched emulator's answer is in tests/runtime/test_event_bus.py (the runtime delivers it)."""
    events = upstream["events"]
    events.create_event_bus(Name="upstream-usage")
    topic = "arn:aws:sns:us-east-1:123456789012:alarms"
    events.put_rule(Name="to-topic", EventBusName="upstream-usage", EventPattern=json.dumps({"source": ["s"]}))
    events.put_targets(Rule="to-topic", EventBusName="upstream-usage", Targets=[{"Id": "t", "Arn": topic}])
    from botocore.parsers import ResponseParserError

    entry = {"EventBusName": "upstream-usage", "Source": "s", "DetailType": "d", "Detail": "{}"}
    with pytest.raises((ClientError, ResponseParserError)):  # NotImplementedError in moto: a 500
        events.put_events(Entries=[entry])


# --- event_connections --------------------------------------------------------------------------


def webhook_template(secret_arn: str) -> dict[str, Any]:
    key = {"ApiKeyName": "x-api-key", "ApiKeyValue": f"{{{{resolve:secretsmanager:{secret_arn}:SecretString:::}}}}"}
    return {
        "Resources": {
            "Key": {
                "Type": "AWS::Events::Connection",
                "Properties": {"AuthorizationType": "API_KEY", "AuthParameters": {"ApiKeyAuthParameters": key}},
            },
            "Hook": {
                "Type": "AWS::Events::ApiDestination",
                "Properties": {
                    "ConnectionArn": {"Fn::GetAtt": ["Key", "Arn"]},
                    "InvocationEndpoint": "https://hooks.example.com/usage",
                    "HttpMethod": "POST",
                },
            },
        },
        "Outputs": {"Hook": {"Value": {"Fn::GetAtt": ["Hook", "Arn"]}}},
    }


def test_connections_and_api_destinations_deploy_with_the_secret_resolved(aws: dict[str, Any]) -> None:
    """CloudFormation resolves a dynamic reference when it creates the resource (its user guide,
    "Get values stored in other services using dynamic references")."""
    secret_arn = aws["secretsmanager"].create_secret(Name=f"hook-{uuid.uuid4().hex[:6]}", SecretString="s3cret")["ARN"]
    name = f"hook-{uuid.uuid4().hex[:8]}"
    aws["cloudformation"].create_stack(StackName=name, TemplateBody=json.dumps(webhook_template(secret_arn)))
    [stack] = aws["cloudformation"].describe_stacks(StackName=name)["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    [output] = stack["Outputs"]
    destination_name = output["OutputValue"].split(":api-destination/")[1].split("/")[0]
    destination = aws["events"].describe_api_destination(Name=destination_name)
    connection_name = destination["ConnectionArn"].split(":connection/")[1].split("/")[0]
    connection = aws["events"].describe_connection(Name=connection_name)
    stored = json.loads(aws["secretsmanager"].get_secret_value(SecretId=connection["SecretArn"])["SecretString"])
    assert stored["api_key_value"] == "s3cret"


def test_upstream_moto_has_no_cloudformation_model_of_a_connection() -> None:
    from moto.cloudformation.parsing import get_model_map

    assert "AWS::Events::Connection" not in get_model_map()
    assert "AWS::Events::ApiDestination" not in get_model_map()


# --- update_creates_one_record ------------------------------------------------------------------


def records_of_an_update_that_creates_its_item(aws: dict[str, Any], table: str) -> list[tuple[str, dict[str, Any]]]:
    """The stream records of an UpdateItem on a new key, then of a PutItem: (event, new image)."""
    dynamodb, streams = aws["dynamodb"], aws["dynamodbstreams"]
    stream_arn = create_table(dynamodb, table)
    shard = streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=stream_arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")[
        "ShardIterator"
    ]
    key = {"pk": {"S": "a"}, "sk": {"S": "1"}}
    dynamodb.update_item(
        TableName=table,
        Key=key,
        UpdateExpression="SET #n = :n",
        ExpressionAttributeNames={"#n": "n"},
        ExpressionAttributeValues={":n": {"N": "1"}},
    )
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"S": "2"}})
    records, _ = read_all(streams, iterator)
    sequence_numbers = [int(record["dynamodb"]["SequenceNumber"]) for record in records]
    assert sequence_numbers == sorted(set(sequence_numbers))  # increasing, none twice
    return [(record["eventName"], record["dynamodb"].get("NewImage", {})) for record in records]


def test_an_update_that_creates_its_item_is_one_insert_of_the_whole_item(aws: dict[str, Any]) -> None:
    """DynamoDB writes one stream record per item changed, with the item as the write left it
    (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Streams.html)."""
    assert records_of_an_update_that_creates_its_item(aws, "update-insert") == [
        ("INSERT", {"pk": {"S": "a"}, "sk": {"S": "1"}, "n": {"N": "1"}}),
        ("INSERT", {"pk": {"S": "a"}, "sk": {"S": "2"}}),
    ]


def test_upstream_moto_streams_a_keys_only_insert_before_an_update_s_new_item(upstream: dict[str, Any]) -> None:
    assert records_of_an_update_that_creates_its_item(upstream, "upstream-update-insert") == [
        ("INSERT", {"pk": {"S": "a"}, "sk": {"S": "1"}}),
        ("INSERT", {"pk": {"S": "a"}, "sk": {"S": "1"}, "n": {"N": "1"}}),
        ("INSERT", {"pk": {"S": "a"}, "sk": {"S": "2"}}),
    ]


# --- queries_sort_their_matches -----------------------------------------------------------------


def query_answers(url: str, table: str) -> list[Any]:
    """Queries of every shape the emulator serves, on a table with a sort key and on one without:
    a partition whole, ranges, backwards, filtered, projected, in pages of every size, and the same
    on a sparse index whose key spreads over the partitions (numbers in every form, items without
    the index's key)."""
    dynamodb = clients(url)["dynamodb"]
    index = {
        "IndexName": "by-group",
        "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}, {"AttributeName": "w", "KeyType": "RANGE"}],
        "Projection": {"ProjectionType": "ALL"},
    }
    numbers = {"AttributeName": "n", "KeyType": "HASH"}
    dynamodb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk", "g", "w")]
        + [{"AttributeName": "n", "AttributeType": "N"}],
        GlobalSecondaryIndexes=[
            index,
            {"IndexName": "by-number", "KeySchema": [numbers], "Projection": {"ProjectionType": "KEYS_ONLY"}},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    flat = f"{table}-flat"
    dynamodb.create_table(
        TableName=flat,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"} for name in ("pk", "g", "w")],
        GlobalSecondaryIndexes=[index],
        BillingMode="PAY_PER_REQUEST",
    )
    for p in range(12):
        for s in range(7):
            item = {"pk": {"S": f"p{p % 5}-{p}"}, "sk": {"S": f"s{(s * 5) % 7}"}, "v": {"N": str(p * s)}}
            if (p + s) % 3:  # the others stay out of the index
                item |= {"g": {"S": f"g{(p * s) % 4}"}, "w": {"S": f"w{(p + 2 * s) % 6}"}}
            if s % 2:
                item["n"] = {"N": ["1", "1.0", "10", "2E1"][(p + s) % 4]}
            dynamodb.put_item(TableName=table, Item=item)
        dynamodb.put_item(TableName=flat, Item={"pk": {"S": f"f{p}"}, "g": {"S": f"g{p % 3}"}, "w": {"S": f"w{p % 4}"}})

    def every_page(**query: Any) -> list[Any]:
        pages, start = [], None
        while True:
            page = dynamodb.query(**query, **({"ExclusiveStartKey": start} if start else {}))
            page.pop("ResponseMetadata")
            pages.append(page)
            if "LastEvaluatedKey" not in page:
                return pages
            start = page["LastEvaluatedKey"]

    def key(condition: str, **values: str) -> dict[str, Any]:
        return {
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": {f":{name}": {"N" if name == "n" else "S": v} for name, v in values.items()},
        }

    partition = key("pk = :p", p="p1-6")
    group = key("g = :g", g="g2")
    queries = [
        {"TableName": table, **partition},
        {"TableName": table, **key("pk = :p", p="p9-9")},  # no such partition
        {"TableName": table, **key("pk = :p AND sk BETWEEN :a AND :b", p="p2-7", a="s1", b="s5")},
        {"TableName": table, **key("pk = :p AND begins_with(sk, :a)", p="p3-8", a="s2")},
        {"TableName": table, **partition, "ScanIndexForward": False, "Limit": 3},
        {"TableName": table, **partition, "Limit": 2, "FilterExpression": "v > :zero"},
        {"TableName": table, **partition, "ProjectionExpression": "sk, v"},
        {"TableName": table, "IndexName": "by-group", **group},
        {"TableName": table, "IndexName": "by-group", **group, "Limit": 4, "ScanIndexForward": False},
        {"TableName": table, "IndexName": "by-group", **key("g = :g AND w >= :w", g="g1", w="w3"), "Limit": 2},
        {"TableName": table, "IndexName": "by-group", **key("g = :g", g="g9")},
        {"TableName": table, "IndexName": "by-number", **key("n = :n", n="10"), "Limit": 3},
        {"TableName": table, "IndexName": "by-number", **key("n = :n", n="1")},
        {"TableName": flat, **key("pk = :p", p="f4")},
        {"TableName": flat, "IndexName": "by-group", **key("g = :g", g="g1"), "Limit": 2},
    ]
    queries[5]["ExpressionAttributeValues"][":zero"] = {"N": "0"}
    return [every_page(**query) for query in queries]


def test_queries_answer_what_moto_answers(flavour_urls: dict[str, str]) -> None:
    """The tuned emulator hands a query only the items its key can match; every answer, page by
    page, must be plain moto's."""
    by_flavour = {flavour: query_answers(url, "queries") for flavour, url in flavour_urls.items()}
    tuned = by_flavour["tuned"]
    items = [[page["Items"] for page in pages] for pages in tuned]
    assert [item["sk"]["S"] for page in items[0] for item in page] == [f"s{s}" for s in range(7)]
    assert items[1] == [[]]
    assert min(len(tuned[4]), len(tuned[8])) > 1  # paged, on the table and on an index
    assert {item["n"]["N"] for page in items[12] for item in page} == {"1", "1.0"}
    assert tuned == by_flavour["plain"]


def test_upstream_moto_sorts_the_whole_table_for_a_query_of_one_partition(
    upstream: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.dynamodb.models.table import Table

    dynamodb = upstream["dynamodb"]
    create_table(dynamodb, "upstream-queries")
    for p in range(5):
        dynamodb.put_item(TableName="upstream-queries", Item={"pk": {"S": f"P#{p}"}, "sk": {"S": "A"}})
    gathered = watch(monkeypatch, Table, "all_items")
    found = dynamodb.query(
        TableName="upstream-queries",
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "P#3"}},
    )
    assert len(found["Items"]) == 1
    [(table, items)] = gathered
    assert table.name == "upstream-queries"
    assert len(items) == 5  # every item of the table, for one

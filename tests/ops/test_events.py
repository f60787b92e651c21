"""`ops events` and `ops events replay`: the usage events an operator tails, and the batches the
publisher gave up on put on the bus again (ops/usage_events.py, docs/events.md)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import boto3
import pytest

from functions.adapters import table_layout
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.event_bus import EventBridgeBus
from functions.core.leases import iso_timestamp
from functions.core.publishing import BusEvent
from infra.outputs import OUTPUT_EVENT_BUS_NAME, OUTPUT_EVENTS_DLQ_URL, OUTPUT_EVENTS_LOG_GROUP, OUTPUT_TABLE_NAME
from local.filters import matches_any
from ops import usage_events
from ops.stack import Connection
from tests.conftest import Backend
from tests.handler.conftest import Harness
from tests.handler.test_event_publisher import Subscriber
from tests.ops.conftest import Cli, Queues, create_output_stack
from tests.support.failure_messages import on_failure_message
from tests.support.faults import answer_on_the_wire
from tests.support.stream import StreamTap


@pytest.fixture
def subscriber(emulator_url: str, moto_backend: Backend) -> Subscriber:
    return Subscriber(emulator_url)


class EventsStack:
    """The stack's usage events parts, made in the emulator: the bus (with a subscriber's queue), its
    rule to a log group, and the events' dead-letter queue."""

    def __init__(self, connection: Connection, subscriber: Subscriber, queues: Queues, moto_backend: Backend) -> None:
        self.log_group = f"/aws/events/{subscriber.bus}"
        logs, events = connection.client("logs"), connection.client("events")
        logs.create_log_group(logGroupName=self.log_group)
        account = connection.client("sts").get_caller_identity()["Account"]
        events.put_rule(
            Name="to-log", EventBusName=subscriber.bus, EventPattern=json.dumps({"source": [{"prefix": ""}]})
        )
        log_arn = f"arn:aws:logs:us-east-1:{account}:log-group:{self.log_group}"
        events.put_targets(Rule="to-log", EventBusName=subscriber.bus, Targets=[{"Id": "log", "Arn": log_arn}])
        self.dlq = queues.sqs.create_queue(QueueName=f"events-dlq-{uuid.uuid4().hex[:8]}")["QueueUrl"]
        self.name = create_output_stack(
            connection,
            {
                OUTPUT_TABLE_NAME: moto_backend.table,
                OUTPUT_EVENT_BUS_NAME: subscriber.bus,
                OUTPUT_EVENTS_DLQ_URL: self.dlq,
                OUTPUT_EVENTS_LOG_GROUP: self.log_group,
            },
        )


@pytest.fixture
def events_stack(connection: Connection, subscriber: Subscriber, queues: Queues, moto_backend: Backend) -> EventsStack:
    return EventsStack(connection, subscriber, queues, moto_backend)


@pytest.fixture
def events_cli(
    emulator_url: str, events_stack: EventsStack, moto_backend: Backend, capsys: pytest.CaptureFixture[str]
) -> Cli:
    return Cli(emulator_url, events_stack.name, moto_backend.clock, capsys)


def crossings_written(cli_harness: Harness) -> list[dict[str, Any]]:
    """Drive acme to 80% and 100% of 5; the outbox items' inserts, as the publisher's filter passes them."""
    tap = StreamTap(cli_harness.backend.streams, cli_harness.backend.stream_arn)
    cli_harness.api.put_account("acme", 5)
    for index in range(5):
        assert cli_harness.api.create("acme", f"r{index}").status == 201
        cli_harness.pump()
    return [record for record in tap.drain() if matches_any(table_layout.OUTBOX_FILTER_PATTERNS, record)]


def given_up(records: list[dict[str, Any]], **overrides: Any) -> str:
    """The on-failure record Lambda sends when the publisher's batch of `records` exhausts its retries."""
    first, last = records[0], records[-1]
    return on_failure_message(
        first["eventSourceARN"],
        overrides.pop("shard_id", "shardId-00000001700000000000-00000000"),
        first["dynamodb"]["SequenceNumber"],
        last["dynamodb"]["SequenceNumber"],
        len(records),
        **overrides,
    )


def test_replay_reads_the_batch_back_from_the_stream_and_puts_its_events(
    cli_harness: Harness, queues: Queues, events_stack: EventsStack, subscriber: Subscriber, events_cli: Cli
) -> None:
    records = crossings_written(cli_harness)
    streams = cli_harness.backend.streams
    [shard] = streams.describe_stream(StreamArn=cli_harness.backend.stream_arn)["StreamDescription"]["Shards"]
    queues.send(events_stack.dlq, given_up(records, shard_id=shard["ShardId"]))
    result = events_cli("events", "replay", "--json")
    assert result.code == 0, result.out + result.err
    assert list(result.json()["replayed"].values()) == [2]
    assert [(e["detail"]["threshold"], e["detail"]["seq"]) for e in subscriber.received()] == [(80, 1), (100, 2)]
    assert queues.visible(events_stack.dlq) == 0
    assert events_cli("events", "replay", "--json").json()["replayed"] == {}  # nothing left


def test_replay_finds_the_outbox_items_in_the_table_once_the_stream_trimmed_the_batch(
    cli_harness: Harness, queues: Queues, events_stack: EventsStack, subscriber: Subscriber, connection: Connection
) -> None:
    """After 24 h the stream answers TrimmedDataAccessException (DynamoDB Streams API reference,
    GetShardIterator); the outbox items, kept 15 days, are found by the time the batch arrived."""
    records = crossings_written(cli_harness)
    written = iso_timestamp(cli_harness.clock.now())
    message = given_up(records, approximateArrivalOfFirstRecord=written, approximateArrivalOfLastRecord=written)
    queues.send(events_stack.dlq, message)
    streams = connection.client("dynamodbstreams")
    trimmed = {"__type": "com.amazonaws.dynamodb.v20120810#TrimmedDataAccessException", "message": "trimmed"}
    answer_on_the_wire(streams.meta.events, "dynamodbstreams", "GetShardIterator", lambda _: True, 400, trimmed, 1)
    bus = EventBridgeBus(connection.client("events"), subscriber.bus)
    table = DynamoTable(connection.client("dynamodb"), cli_harness.backend.table)
    report = usage_events.replay(queues.sqs, events_stack.dlq, streams, table, bus)
    assert (report.failed, len(report.from_table)) == ({}, 1)
    assert [(e["detail"]["threshold"], e["detail"]["seq"]) for e in subscriber.received()] == [(80, 1), (100, 2)]


def test_a_batch_the_bus_does_not_take_stays_in_the_queue(
    cli_harness: Harness, queues: Queues, events_stack: EventsStack, events_cli: Cli, emulator_url: str
) -> None:
    records = crossings_written(cli_harness)
    [shard] = cli_harness.backend.streams.describe_stream(StreamArn=cli_harness.backend.stream_arn)[
        "StreamDescription"
    ]["Shards"]
    queues.send(events_stack.dlq, given_up(records, shard_id=shard["ShardId"]))
    boto3.client("events", endpoint_url=emulator_url).delete_event_bus(Name=events_stack.log_group.rsplit("/", 1)[1])
    result = events_cli("events", "replay")
    assert result.code == 1
    assert "left in the queue" in result.out
    assert queues.visible(events_stack.dlq) == 1


def test_events_prints_what_the_bus_carried_from_its_log_group(
    events_stack: EventsStack, subscriber: Subscriber, events_cli: Cli, emulator_url: str
) -> None:
    bus = EventBridgeBus(boto3.client("events", endpoint_url=emulator_url), subscriber.bus)
    detail = {"eventId": "e1", "accountId": "acme", "resourceType": "default", "threshold": 80}
    detail |= {"direction": "up", "usage": 4, "limit": 5, "seq": 1}
    assert bus.put([BusEvent("Usage Threshold Crossed", json.dumps(detail))]) == [True]
    result = events_cli("events", "--since-minutes", "100000")
    assert result.code == 0, result.err
    assert "acme/default #1: up 80% (usage 4 of 5) id=e1" in result.out


def test_events_prints_a_limit_refused_event_as_its_count_and_minute(
    events_stack: EventsStack, subscriber: Subscriber, events_cli: Cli, emulator_url: str
) -> None:
    bus = EventBridgeBus(boto3.client("events", endpoint_url=emulator_url), subscriber.bus)
    window = {"windowStart": "2026-11-25T13:37:00.000Z", "windowEnd": "2026-11-25T13:38:00.000Z"}
    detail = {"eventId": "e2", "accountId": "acme", "resourceType": "seats", "refused": 3, "limit": 5, **window}
    assert bus.put([BusEvent("Limit Refused", json.dumps(detail))]) == [True]
    result = events_cli("events", "--since-minutes", "100000")
    assert result.code == 0, result.err
    refused = "Limit Refused acme/seats: 3 refused at limit 5"
    assert f"{refused} from 2026-11-25T13:37:00.000Z to 2026-11-25T13:38:00.000Z id=e2" in result.out


@pytest.mark.parametrize(
    ("new_thresholds", "thresholds"),
    [([80, 100], ""), ([50, 70], ", thresholds 80,100% -> 50,70%")],
    ids=["limit only", "thresholds too"],
)
def test_events_prints_a_limit_changed_event_as_its_limits_who_and_version(
    events_stack: EventsStack,
    subscriber: Subscriber,
    events_cli: Cli,
    emulator_url: str,
    new_thresholds: list[int],
    thresholds: str,
) -> None:
    bus = EventBridgeBus(boto3.client("events", endpoint_url=emulator_url), subscriber.bus)
    detail = {"eventId": "e3", "accountId": "acme", "resourceType": "seats", "oldLimit": 10, "newLimit": 8}
    detail |= {"usage": 9, "oldThresholds": [80, 100], "newThresholds": new_thresholds}
    detail |= {"changedBy": "arn:aws:iam::123456789012:user/admin", "changedAt": "2026-11-25T13:09:02.310Z"}
    assert bus.put([BusEvent("Limit Changed", json.dumps(detail | {"limitVersion": 2}))]) == [True]
    result = events_cli("events", "--since-minutes", "100000")
    assert result.code == 0, result.err
    changed = f"Limit Changed acme/seats: limit 10 -> 8{thresholds}"
    assert f"{changed} by arn:aws:iam::123456789012:user/admin, version 2 id=e3" in result.out

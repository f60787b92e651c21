"""The event publisher on the emulators: the outbox items' inserts, read from the table's stream
through its filter, put on an EventBridge bus (moto's server), read back from a queue a rule of
the bus sends to (functions/event_publisher/handler.py, docs/events.md)."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from functools import partial
from typing import Any

import boto3
import pytest

from functions.adapters import table_layout
from functions.shared.wiring import Wiring
from functions.usage_events.models import SOURCE, UsageThresholdCrossed
from local.filters import matches_any
from tests.handler.conftest import Harness
from tests.support.sessions import new_session
from tests.support.stream import StreamTap, deliver, failed_sequence_numbers


class Subscriber:
    """A bus of its own on moto's server, with a rule sending its events to a queue."""

    def __init__(self, endpoint_url: str) -> None:
        self.bus = f"usage-{uuid.uuid4().hex[:8]}"
        self.events, self.sqs = (boto3.client(service, endpoint_url=endpoint_url) for service in ("events", "sqs"))
        events = self.events
        events.create_event_bus(Name=self.bus)
        self.queue_url = self.sqs.create_queue(QueueName=self.bus)["QueueUrl"]
        queue_arn = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])["Attributes"]
        events.put_rule(Name="all", EventBusName=self.bus, EventPattern=json.dumps({"source": [SOURCE]}))
        events.put_targets(Rule="all", EventBusName=self.bus, Targets=[{"Id": "queue", "Arn": queue_arn["QueueArn"]}])

    def received(self) -> list[dict[str, Any]]:
        found = []
        while messages := self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get("Messages"):
            found += [json.loads(message["Body"]) for message in messages]
            for message in messages:
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        return found


@pytest.fixture
def subscriber(emulator_url: str) -> Subscriber:
    return Subscriber(emulator_url)


class Publisher:
    def __init__(self, harness: Harness, subscriber: Subscriber, endpoint_url: str) -> None:
        from functions.event_publisher.handler import handler

        settings = replace(harness.wiring.settings, event_bus_name=subscriber.bus)
        self.session = new_session()  # its clients take the event handlers registered on it before
        self.wiring = Wiring(settings, self.session, endpoint_url)  # EventBridge is moto's
        self.handler = partial(handler, wiring=self.wiring)
        self.tap = StreamTap(harness.backend.streams, harness.backend.stream_arn)

    def records(self) -> list[dict[str, Any]]:
        """The stream's records since the last call, through the publisher's filter, as Lambda would."""
        return [record for record in self.tap.drain() if matches_any(table_layout.OUTBOX_FILTER_PATTERNS, record)]

    def deliver(self, records: list[dict[str, Any]]) -> list[str]:
        return failed_sequence_numbers(deliver(self.handler, records))


@pytest.fixture
def publisher(harness: Harness, subscriber: Subscriber, emulator_url: str) -> Publisher:
    return Publisher(harness, subscriber, emulator_url)


def drive(harness: Harness, limit: int, creates: int) -> None:
    harness.api.put_account("acme", limit)
    for index in range(creates):
        assert harness.api.create("acme", f"r{index}").status == 201
        harness.pump()


def test_each_crossing_is_put_on_the_bus_once_as_its_outbox_item_holds_it(
    harness: Harness, subscriber: Subscriber, publisher: Publisher
) -> None:
    drive(harness, 5, 5)  # 80% at 4, 100% at 5
    records = publisher.records()
    # The filter lets through the outbox items' inserts only.
    assert {record["dynamodb"]["Keys"]["sk"]["S"] for record in records} == {"EVENT#000000000001", "EVENT#000000000002"}
    assert publisher.deliver(records) == []
    events = subscriber.received()
    assert [(event["source"], event["detail-type"]) for event in events] == [(SOURCE, "Usage Threshold Crossed")] * 2
    details = [UsageThresholdCrossed.model_validate(event["detail"]) for event in events]
    assert [(d.threshold, d.direction, d.usage, d.seq) for d in details] == [(80, "up", 4, 1), (100, "up", 5, 2)]


def test_a_redelivered_batch_puts_the_same_events_again_with_the_same_ids(
    harness: Harness, subscriber: Subscriber, publisher: Publisher
) -> None:
    drive(harness, 5, 4)
    records = publisher.records()
    assert publisher.deliver(records) == []
    assert publisher.deliver(records) == []
    ids = [event["detail"]["eventId"] for event in subscriber.received()]
    assert len(ids) == 2
    assert len(set(ids)) == 1


def test_an_entry_the_bus_refuses_fails_its_record_and_every_later_one(
    harness: Harness, subscriber: Subscriber, publisher: Publisher
) -> None:
    """PutEvents answers 200 with a FailedEntryCount and an ErrorCode on each refused entry
    (EventBridge API reference, PutEvents, "PutEventsResultEntry"); the publisher reports that
    record and the ones after it, so Lambda retries from there. The first entry is taken: were every
    record of the batch failed, Powertools would raise instead (Lambda then retries the whole batch)."""
    drive(harness, 5, 5)
    records = publisher.records()

    class Answer:
        status_code = 200

    refusals = [1]  # the first call only

    def refuse_second(params: dict[str, Any], **_: Any) -> tuple[Answer, dict[str, Any]] | None:
        if not refusals:
            return None  # sent as usual
        refusals.pop()
        sent = json.loads(params["body"])["Entries"]  # the request as serialized (JSON protocol)
        # The bus takes the first entry (put for real, by a client without this hook) and refuses the rest.
        entries = subscriber.events.put_events(Entries=sent[:1])["Entries"]
        entries += [{"ErrorCode": "ThrottlingException", "ErrorMessage": "Rate exceeded"} for _ in sent[1:]]
        return Answer(), {"FailedEntryCount": len(sent) - 1, "Entries": entries}

    session_events = publisher.session.events
    session_events.register_first("before-call.events.PutEvents", refuse_second)
    failed = publisher.deliver(records)
    sequence_numbers = [record["dynamodb"]["SequenceNumber"] for record in records]
    assert len(sequence_numbers) == 2  # the crossings of 80% and 100%, an outbox item each
    assert failed == sequence_numbers[1:]
    retried = [record for record in records if int(record["dynamodb"]["SequenceNumber"]) >= int(failed[0])]
    assert publisher.deliver(retried) == []  # Lambda's retry, from the first failed record on
    assert [event["detail"]["seq"] for event in subscriber.received()] == [1, 2]

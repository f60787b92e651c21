"""The local runtime's EventBridge delivery where moto stops short (local/event_bus.py): every event
of a tapped bus in the run log, and a rule's SNS topic target published the event, on the emulator."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from local.emulator import EmulatorProcess
from local.event_bus import BusRouter
from local.http_client import poll


@pytest.fixture(scope="module")
def aws() -> Iterator[Any]:
    with EmulatorProcess() as emulator:
        options = {"endpoint_url": emulator.url, "region_name": "us-east-1"}
        options |= {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
        yield lambda service: boto3.client(service, **options)


def test_a_rule_to_an_sns_topic_gets_the_event_published_and_each_event_is_logged(
    aws: Any, caplog: pytest.LogCaptureFixture
) -> None:
    events, sns, sqs = aws("events"), aws("sns"), aws("sqs")
    events.create_event_bus(Name="usage")
    topic = sns.create_topic(Name="alarms")["TopicArn"]
    inbox = sqs.create_queue(QueueName="inbox")["QueueUrl"]
    inbox_arn = sqs.get_queue_attributes(QueueUrl=inbox, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=inbox_arn, Attributes={"RawMessageDelivery": "true"})
    pattern = {"source": ["hybrid-counter.usage"], "detail-type": ["Usage Threshold Crossed"]}
    events.put_rule(Name="to-topic", EventBusName="usage", EventPattern=json.dumps(pattern))
    events.put_targets(Rule="to-topic", EventBusName="usage", Targets=[{"Id": "topic", "Arn": topic}])
    stop = threading.Event()
    router = BusRouter(aws, stop, poll_seconds=0.05)
    thread = threading.Thread(target=router.run, args=(router.tap("usage"),), daemon=True)
    thread.start()
    try:
        with caplog.at_level(logging.INFO, logger="local.runtime"):
            # moto's own PutEvents answers: a rule to a topic no longer fails it (moto_patches/event_targets.py).
            entry = {"EventBusName": "usage", "Source": "hybrid-counter.usage", "Detail": '{"seq": 1}'}
            answer = events.put_events(
                Entries=[entry | {"DetailType": dt} for dt in ("Usage Threshold Crossed", "Limit Changed")]
            )
            assert answer["FailedEntryCount"] == 0
            poll(lambda: router.delivered, lambda delivered: delivered == 2, 10)
        published = poll(
            lambda: sqs.receive_message(QueueUrl=inbox, MaxNumberOfMessages=10).get("Messages", []), bool, 10
        )
    finally:
        stop.set()
        thread.join(timeout=5)
    [message] = published  # the pattern lets one of the two through
    event = json.loads(message["Body"])
    assert (event["source"], event["detail-type"], event["detail"]) == (
        "hybrid-counter.usage",
        "Usage Threshold Crossed",
        {"seq": 1},
    )
    logged = [record.getMessage() for record in caplog.records]
    assert any(line.startswith("event") and "Limit Changed" in line for line in logged)
    assert any("rule to-topic -> alarms" in line for line in logged)

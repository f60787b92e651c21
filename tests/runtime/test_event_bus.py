"""The local runtime's EventBridge delivery where moto stops short (local/event_bus.py): every event
of a tapped bus in the run log, a rule's SNS topic target published the event, and an API
destination's HTTP call made for real to a server on 127.0.0.1, on the emulator."""

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
from tests.support.webhook import Webhook


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
    router = BusRouter(aws, stop)
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


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    with Webhook() as hook:
        yield hook


def test_a_rule_to_an_api_destination_makes_its_http_call_with_the_connections_api_key(
    aws: Any, webhook: Webhook
) -> None:
    events = aws("events")
    events.create_event_bus(Name="hooked")
    connection = events.create_connection(
        Name="hook-key",
        AuthorizationType="API_KEY",
        AuthParameters={"ApiKeyAuthParameters": {"ApiKeyName": "x-api-key", "ApiKeyValue": "s3cret"}},
    )
    destination = events.create_api_destination(
        Name="hook", ConnectionArn=connection["ConnectionArn"], InvocationEndpoint=webhook.url, HttpMethod="POST"
    )
    pattern = json.dumps({"source": ["hybrid-counter.usage"]})
    events.put_rule(Name="to-hook", EventBusName="hooked", EventPattern=pattern)
    target = {"Id": "hook", "Arn": destination["ApiDestinationArn"], "RoleArn": "arn:aws:iam::000000000000:role/r"}
    events.put_targets(Rule="to-hook", EventBusName="hooked", Targets=[target])
    stop = threading.Event()
    router = BusRouter(aws, stop)
    thread = threading.Thread(target=router.run, args=(router.tap("hooked"),), daemon=True)
    thread.start()
    try:
        entry = {"EventBusName": "hooked", "Source": "hybrid-counter.usage", "DetailType": "Usage Threshold Crossed"}
        assert events.put_events(Entries=[entry | {"Detail": '{"seq": 7}'}])["FailedEntryCount"] == 0
        [(headers, body)] = poll(lambda: list(webhook.received), bool, 10)
    finally:
        stop.set()
        thread.join(timeout=5)
    assert headers["x-api-key"] == "s3cret"
    assert headers["content-type"] == "application/json"
    assert (body["source"], body["detail-type"], body["detail"]) == (
        "hybrid-counter.usage",
        "Usage Threshold Crossed",
        {"seq": 7},
    )


def test_a_rule_deleted_while_an_event_is_routed_is_passed_over(aws: Any) -> None:
    """A rule listed and then deleted before its targets are read (a test's subscriber cleaning up,
    an operator's change) is no longer the bus's: the router passes over it and keeps routing."""
    other = aws("events")
    other.create_event_bus(Name="changing")
    other.put_rule(Name="short-lived", EventBusName="changing", EventPattern=json.dumps({"source": ["x"]}))
    routers_events = aws("events")

    def delete_the_rule_first(params: dict[str, Any], **_: Any) -> None:
        other.delete_rule(Name=params["Rule"], EventBusName="changing")

    routers_events.meta.events.register("before-parameter-build.events.ListTargetsByRule", delete_the_rule_first)
    router = BusRouter(lambda service: routers_events if service == "events" else aws(service), threading.Event())
    router.route("changing", {"source": "x", "detail-type": "t", "detail": {}})
    assert router.delivered == 1

"""Usage events end to end: an account driven 0 -> 100% -> 50% -> 100% through the API, its
crossings read from a queue a rule of the stack's bus sends to, as a subscriber would
(docs/events.md). Locally the events go through the same template (the local runtime); against a
deployment, the stack's outputs name the bus."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from functions.usage_events.models import SOURCE, LimitChanged, UsageThresholdCrossed
from infra.outputs import DEFAULT_STACK_NAME, OUTPUT_EVENT_BUS_NAME
from local.http_client import poll
from local.product import new_account
from tests.integration.conftest import RunningSystem
from tests.integration.test_system import eventual_reaches

CROSSED = UsageThresholdCrossed.DETAIL_TYPE


class Subscription:
    """A queue of the test's own, subscribed to the stack's bus by a rule of its own."""

    def __init__(self, client: Any, bus: str) -> None:
        self.events, self.sqs = client("events"), client("sqs")
        self.bus, self.rule = bus, f"test-subscriber-{uuid.uuid4().hex[:8]}"
        self.queue_url = self.sqs.create_queue(QueueName=self.rule)["QueueUrl"]
        arn = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])["Attributes"]
        self.events.put_rule(Name=self.rule, EventBusName=bus, EventPattern=json.dumps({"source": [SOURCE]}))
        self.events.put_targets(Rule=self.rule, EventBusName=bus, Targets=[{"Id": "queue", "Arn": arn["QueueArn"]}])
        self.received: list[dict[str, Any]] = []

    def receive(self) -> list[dict[str, Any]]:
        for message in self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get("Messages", []):
            self.received.append(json.loads(message["Body"]))
            self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        return self.received

    def close(self) -> None:
        self.events.remove_targets(Rule=self.rule, EventBusName=self.bus, Ids=["queue"])
        self.events.delete_rule(Name=self.rule, EventBusName=self.bus)
        self.sqs.delete_queue(QueueUrl=self.queue_url)


@pytest.fixture
def subscription(running_system: RunningSystem) -> Iterator[Subscription]:
    if running_system.runtime is not None:
        runtime: Any = running_system.runtime
        client, bus = runtime.client, runtime.outputs[OUTPUT_EVENT_BUS_NAME]
    else:  # a deployment: its outputs, with the caller's credentials
        stack = boto3.client("cloudformation").describe_stacks(StackName=DEFAULT_STACK_NAME)["Stacks"][0]
        outputs = {output["OutputKey"]: output["OutputValue"] for output in stack["Outputs"]}
        client, bus = boto3.client, outputs[OUTPUT_EVENT_BUS_NAME]
    subscribed = Subscription(client, bus)
    yield subscribed
    subscribed.close()


def crossings_of(subscription: Subscription, account_id: str, count: int) -> list[UsageThresholdCrossed]:
    """The account's crossings once `count` have come, in seq order (a subscriber orders by it)."""

    def mine() -> list[UsageThresholdCrossed]:
        received = subscription.receive()
        details = [UsageThresholdCrossed.model_validate(e["detail"]) for e in received if e["detail-type"] == CROSSED]
        return sorted((d for d in details if d.accountId == account_id), key=lambda d: d.seq)

    return poll(mine, lambda found: len(found) >= count, 60)


def test_an_account_driven_to_its_limit_to_half_and_back_receives_each_crossing_once(
    running_system: RunningSystem, subscription: Subscription
) -> None:
    client = running_system.client
    account_id = new_account(client, "events", limit=10)  # 80% at 8, 100% at 10
    ids = [client.create_resource(account_id, f"r{index}").resource_id for index in range(10)]
    eventual_reaches(running_system, account_id, 10)
    for resource_id in ids[:5]:
        client.delete_resource(account_id, resource_id)
    eventual_reaches(running_system, account_id, 5)
    for index in range(5):
        client.create_resource(account_id, f"again{index}")
    eventual_reaches(running_system, account_id, 10)

    found = crossings_of(subscription, account_id, 6)
    assert [(d.threshold, d.direction) for d in found] == [
        (80, "up"),
        (100, "up"),
        (100, "down"),
        (80, "down"),
        (80, "up"),
        (100, "up"),
    ]
    assert [d.seq for d in found] == [1, 2, 3, 4, 5, 6]
    assert len({d.eventId for d in found}) == 6  # none twice
    assert {(d.limit, d.resourceType) for d in found} == {(10, "default")}

    # A limit raised above the usage: its change, then the crossings it makes, with no count moving.
    client.put_account(account_id, limit=20)  # 80% at 16
    found = crossings_of(subscription, account_id, 8)
    assert [(d.threshold, d.direction, d.usage, d.limit, d.seq) for d in found[6:]] == [
        (100, "down", 10, 20, 7),
        (80, "down", 10, 20, 8),
    ]
    changes = [
        LimitChanged.model_validate(event["detail"])
        for event in subscription.received
        if event["detail-type"] == LimitChanged.DETAIL_TYPE and event["detail"]["accountId"] == account_id
    ]
    assert [(c.oldLimit, c.newLimit, c.usage) for c in changes] == [(10, 20, 10)]

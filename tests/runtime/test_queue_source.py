"""The SQS event source: delete what succeeded, leave the rest for the visibility timeout."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from local.event_sources import QueueMapping, QueuePoller, SourceStats
from local.functions import DeployedFunction, Invocation

QUEUE_ARN = "arn:aws:sqs:us-east-1:000000000000:dlq1"


@dataclass
class FakeSqs:
    messages: list[dict[str, Any]]
    deleted: list[str] = field(default_factory=list)
    visibility: dict[str, int] = field(default_factory=dict)

    def receive_message(self, **_: Any) -> dict[str, Any]:
        return {"Messages": self.messages}

    def delete_message_batch(self, QueueUrl: str, Entries: list[dict[str, str]]) -> None:
        self.deleted += [entry["ReceiptHandle"] for entry in Entries]

    def change_message_visibility(self, QueueUrl: str, ReceiptHandle: str, VisibilityTimeout: int) -> None:
        self.visibility[ReceiptHandle] = VisibilityTimeout


@dataclass
class Function:
    answer: Invocation
    events: list[dict[str, Any]] = field(default_factory=list)
    function: DeployedFunction = field(
        default_factory=lambda: DeployedFunction("redrive", "arn:fn", "functions.redrive.handler.handler", 60, 512, {})
    )

    def invoke(self, event: dict[str, Any]) -> Invocation:
        self.events.append(event)
        return self.answer


def message(n: int) -> dict[str, Any]:
    return {
        "MessageId": f"m{n}",
        "ReceiptHandle": f"h{n}",
        "Body": f"body {n}",
        "Attributes": {"ApproximateReceiveCount": "1"},
    }


def poll(answer: Invocation, retry_visibility: int | None = None) -> tuple[FakeSqs, Function]:
    sqs = FakeSqs([message(1), message(2)])
    function = Function(answer)
    mapping = QueueMapping("esm", QUEUE_ARN, "https://queue", function, 10, True)  # type: ignore[arg-type]
    QueuePoller(mapping, sqs, SourceStats(), threading.Event(), retry_visibility)._poll_once()
    return sqs, function


def test_the_event_has_lambdas_sqs_record_shape() -> None:
    _, function = poll(Invocation(ok=True, payload={"batchItemFailures": []}))
    [event] = function.events
    first = event["Records"][0]
    assert first["messageId"] == "m1"
    assert first["receiptHandle"] == "h1"
    assert first["body"] == "body 1"
    assert first["eventSource"] == "aws:sqs"
    assert first["eventSourceARN"] == QUEUE_ARN
    assert first["awsRegion"] == "us-east-1"


def test_success_deletes_every_message() -> None:
    sqs, _ = poll(Invocation(ok=True, payload=None))
    assert sqs.deleted == ["h1", "h2"]


def test_reported_failures_stay_on_the_queue() -> None:
    sqs, _ = poll(Invocation(ok=True, payload={"batchItemFailures": [{"itemIdentifier": "m2"}]}))
    assert sqs.deleted == ["h1"]
    assert sqs.visibility == {}  # the queue's own visibility timeout applies


def test_a_function_error_leaves_every_message() -> None:
    sqs, _ = poll(Invocation(ok=False, error_type="Exception"))
    assert sqs.deleted == []


def test_an_invalid_failure_report_leaves_every_message() -> None:
    sqs, _ = poll(Invocation(ok=True, payload={"batchItemFailures": [{"itemIdentifier": "unknown"}]}))
    assert sqs.deleted == []


def test_a_shortened_retry_visibility_applies_to_failed_messages_only() -> None:
    sqs, _ = poll(Invocation(ok=True, payload={"batchItemFailures": [{"itemIdentifier": "m1"}]}), retry_visibility=1)
    assert sqs.visibility == {"h1": 1}

"""Limit Refused events on the emulators (functions/core/refusals.py, docs/events.md): the API's
refusal line, the aggregator counting CloudWatch Logs' payloads into windows (one update per quota
and minute, a retried payload counted once, late lines in no event), the window's announcement
scheduled on a queue (moto's SQS, which honours DelaySeconds), and the emitter announcing each
window once, in one transaction, with the count it holds."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from functions.adapters import keys, table_layout
from functions.adapters.attributes import from_attributes
from functions.adapters.refused_windows import DynamoRefusedWindows
from functions.core.model import Quota
from functions.core.refusals import (
    Window,
    WindowState,
    announce,
    filter_pattern,
    parse_refusal,
    parse_window_message,
    window_message,
)
from functions.shared.observability import logger
from functions.shared.wiring import Wiring
from functions.usage_events.models import LimitRefused
from local.filters import matches_any
from local.log_subscriptions import FilterPattern, subscription_payload
from tests.handler.conftest import Harness
from tests.handler.test_redrive import sqs_event
from tests.support.lambda_context import FakeLambdaContext
from tests.support.sessions import new_session
from tests.support.stream import StreamTap

ACME, SEATS = Quota("acme"), Quota("acme", "seats")
MINUTE = datetime(2026, 11, 25, 13, 37, tzinfo=UTC)


def refusal_line(quota: Quota, limit: int = 3) -> str:
    """A refusal line as the API logs it (its other keys are Powertools')."""
    fields = {"level": "INFO", "message": "create refused", "service": "hybrid-counter"}
    return json.dumps({**fields, "usage_event": "LimitRefused", "account_id": quota.account_id,
                       "resource_type": quota.resource_type, "limit": limit})  # fmt: skip


class LogEvents:
    """Log events as CloudWatch Logs names them: a unique id each, a timestamp in epoch ms."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, at: datetime, message: str) -> dict[str, Any]:
        self.count += 1
        return {"id": f"{self.count:056d}", "timestamp": int(at.timestamp() * 1000), "message": message}


class Refusals:
    """The aggregator and the emitter of one test, on its table, with a queue on moto's server."""

    def __init__(self, harness: Harness, emulator_url: str) -> None:
        self.harness = harness
        self.sqs = boto3.client("sqs", endpoint_url=emulator_url)
        self.queue_url = self.sqs.create_queue(QueueName=f"windows-{harness.backend.table}")["QueueUrl"]
        settings = replace(harness.wiring.settings, refusal_queue_url=self.queue_url, refusal_grace=timedelta(0))
        self.session = new_session()  # its clients take the event handlers registered on it before
        self.calls: list[str] = []
        self.session.events.register("before-call.dynamodb", lambda model, **_: self.calls.append(model.name))
        self.wiring = Wiring(
            settings, self.session, harness.backend.endpoint_url, harness.clock, service_endpoints={"sqs": emulator_url}
        )
        self.log_events = LogEvents()
        self.tap = StreamTap(harness.backend.streams, harness.backend.stream_arn)

    def payload(self, *lines: tuple[datetime, str]) -> dict[str, Any]:
        events = [self.log_events(at, message) for at, message in lines]
        return subscription_payload("123456789012", "/aws/lambda/api", "2026/11/25/[$LATEST]abc", "refusals", events)

    def aggregate(self, payload: dict[str, Any]) -> None:
        from functions.refusal_aggregator.handler import handler

        handler(payload, FakeLambdaContext(function_name="refusal_aggregator"), wiring=self.wiring)

    def emit(self, *windows: Window) -> list[str]:
        from functions.refusal_emitter.handler import handler

        event = sqs_event(*map(window_message, windows))
        response = handler(event, FakeLambdaContext(function_name="refusal_emitter"), wiring=self.wiring)
        return [failure["itemIdentifier"] for failure in response["batchItemFailures"]]

    def window_item(self, window: Window) -> dict[str, Any] | None:
        key = table_layout.item_key(keys.account_pk(window.quota), keys.refused_window_sk(window.name))
        item = self.harness.backend.dynamodb.get_item(TableName=self.harness.backend.table, Key=key).get("Item")
        return None if item is None else from_attributes(item)

    def event(self, window: Window) -> LimitRefused | None:
        key = table_layout.item_key(keys.account_pk(window.quota), keys.limit_refused_sk(window.name))
        item = self.harness.backend.dynamodb.get_item(TableName=self.harness.backend.table, Key=key).get("Item")
        return None if item is None else LimitRefused.model_validate_json(item["detail"]["S"])

    def due(self) -> list[Window]:
        """The windows whose announcement is due now: the queue's messages that are not delayed."""
        found = []
        while messages := self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get("Messages"):
            for message in messages:
                found.append(parse_window_message(message["Body"]))
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        return found


@pytest.fixture
def refusals(harness: Harness, emulator_url: str) -> Refusals:
    return Refusals(harness, emulator_url)


class Lines(logging.Handler):
    """The lines the functions' Powertools logger writes, formatted as it writes them."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.setFormatter(logger.registered_formatter)

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def api_lines() -> Iterator[list[str]]:
    lines = Lines()
    previous = logger.log_level
    logger.setLevel("INFO")  # the stack's level (infra/function_settings.py LOG_LEVEL); the tests run at WARNING
    logger.addHandler(lines)
    yield lines.lines
    logger.removeHandler(lines)
    logger.setLevel(previous)


def test_a_refused_create_logs_one_line_that_the_subscription_filter_selects(
    harness: Harness, api_lines: list[str]
) -> None:
    pattern = FilterPattern.parse(filter_pattern())
    assert harness.api.put_account("acme", 1).status == 200
    assert harness.api.create("acme", "a").status == 201
    assert not [line for line in api_lines if pattern.matches(line)]
    assert harness.api.create("acme", "b").status == 409
    selected = [line for line in api_lines if pattern.matches(line)]
    assert len(selected) == 1
    refusal = parse_refusal(selected[0], MINUTE, "1")
    assert refusal is not None
    assert (refusal.quota, refusal.limit) == (ACME, 1)


def test_a_batch_is_counted_per_quota_and_minute_with_one_update_each(refusals: Refusals, harness: Harness) -> None:
    harness.clock.set(MINUTE + timedelta(minutes=1, seconds=10))
    next_minute = MINUTE + timedelta(minutes=1)
    payload = refusals.payload(
        (MINUTE + timedelta(seconds=5), refusal_line(ACME)),
        (MINUTE + timedelta(seconds=6), refusal_line(SEATS, 7)),
        (MINUTE + timedelta(seconds=59), refusal_line(ACME)),
        (MINUTE + timedelta(seconds=20), '{"level": "INFO", "message": "another line"}'),
        (next_minute + timedelta(seconds=1), refusal_line(ACME)),
        (MINUTE + timedelta(seconds=30), refusal_line(ACME)),
    )
    refusals.aggregate(payload)
    assert refusals.calls == ["UpdateItem"] * 3
    counts = {(w.quota, w.start): refusals.window_item(w) for w in
              (Window(ACME, MINUTE), Window(SEATS, MINUTE), Window(ACME, next_minute))}  # fmt: skip
    assert {key: (item or {}).get("refused") for key, item in counts.items()} == {
        (ACME, MINUTE): 3,
        (SEATS, MINUTE): 1,
        (ACME, next_minute): 1,
    }
    assert counts[(SEATS, MINUTE)]["limit"] == 7  # type: ignore[index]
    # Ended minutes are due after the grace (0 here); the current one only after its end.
    assert sorted(refusals.due(), key=str) == sorted([Window(ACME, MINUTE), Window(SEATS, MINUTE)], key=str)


def test_a_retried_payload_counts_nothing_twice(refusals: Refusals, harness: Harness) -> None:
    harness.clock.set(MINUTE + timedelta(minutes=2))
    payload = refusals.payload(*[(MINUTE + timedelta(seconds=s), refusal_line(ACME)) for s in (1, 2)])
    refusals.aggregate(payload)
    refusals.aggregate(payload)  # Lambda's retry, or a duplicate delivery
    assert (refusals.window_item(Window(ACME, MINUTE)) or {})["refused"] == 2
    # The retry schedules the announcement again: the try that opened the window may have failed
    # before it did. The emitter announces once.
    due = refusals.due()
    assert due == [Window(ACME, MINUTE)] * 2
    assert refusals.emit(*due) == []
    assert refusals.event(Window(ACME, MINUTE)) == LimitRefused(
        eventId=Window(ACME, MINUTE).event_id,
        accountId="acme",
        resourceType="default",
        refused=2,
        refusedUnits=2,
        limit=3,
        windowStart="2026-11-25T13:37:00.000Z",
        windowEnd="2026-11-25T13:38:00.000Z",
    )


def test_an_event_says_the_units_refused_creates_and_growths_asked_for(
    refusals: Refusals, harness: Harness, api_lines: list[str]
) -> None:
    """A refused create logs its amount and a refused growth its added units (1 is not written, as
    every line before amounts): the event counts the refusals and their units."""
    pattern = FilterPattern.parse(filter_pattern())
    api = harness.api
    assert api.put_account("acme", 10).status == 200
    kept = api.request("POST", "/accounts/acme/resources", {"name": "a", "amount": 8}).json()
    assert api.request("POST", "/accounts/acme/resources", {"name": "b", "amount": 5}).status == 409
    assert api.request("PATCH", f"/accounts/acme/resources/{kept['resourceId']}", {"amount": 13}).status == 409
    assert api.create("acme", "c").status == 201
    assert api.create("acme", "d").status == 201
    assert api.create("acme", "e").status == 409
    lines = [line for line in api_lines if pattern.matches(line)]
    asked = [refusal.units for line in lines if (refusal := parse_refusal(line, MINUTE, line)) is not None]
    assert asked == [5, 5, 1]
    assert ['"units"' in line for line in lines] == [True, True, False]
    harness.clock.set(MINUTE + timedelta(minutes=2))
    refusals.aggregate(refusals.payload(*[(MINUTE + timedelta(seconds=i), line) for i, line in enumerate(lines)]))
    assert refusals.emit(*refusals.due()) == []
    event = refusals.event(Window(ACME, MINUTE))
    assert event is not None
    assert (event.refused, event.refusedUnits, event.limit) == (3, 11, 10)


@pytest.mark.engine
def test_the_announcement_is_put_by_the_publisher_and_read_by_no_consumer(refusals: Refusals, harness: Harness) -> None:
    harness.clock.set(MINUTE + timedelta(minutes=2))
    refusals.aggregate(refusals.payload((MINUTE, refusal_line(ACME))))
    assert refusals.emit(Window(ACME, MINUTE)) == []
    records = refusals.tap.drain()
    outbox = [r for r in records if matches_any(table_layout.OUTBOX_FILTER_PATTERNS, r)]
    assert [r["dynamodb"]["Keys"]["sk"]["S"] for r in outbox] == ["EVENT#REFUSED#2026-11-25T13:37Z"]
    assert not [r for r in records if matches_any(table_layout.STREAM_FILTER_PATTERNS, r)]


def test_a_redelivered_message_writes_nothing(refusals: Refusals, harness: Harness) -> None:
    harness.clock.set(MINUTE + timedelta(minutes=2))
    refusals.aggregate(refusals.payload((MINUTE, refusal_line(ACME))))
    assert refusals.emit(Window(ACME, MINUTE)) == []
    first = refusals.event(Window(ACME, MINUTE))
    refusals.calls.clear()
    assert refusals.emit(Window(ACME, MINUTE)) == []
    assert refusals.calls == ["GetItem"]
    assert refusals.event(Window(ACME, MINUTE)) == first


def test_lines_that_arrive_after_the_announcement_are_counted_in_no_event(refusals: Refusals, harness: Harness) -> None:
    harness.clock.set(MINUTE + timedelta(minutes=3))
    refusals.aggregate(refusals.payload((MINUTE, refusal_line(ACME))))
    assert refusals.emit(Window(ACME, MINUTE)) == []
    refusals.aggregate(refusals.payload((MINUTE + timedelta(seconds=50), refusal_line(ACME))))
    assert (refusals.window_item(Window(ACME, MINUTE)) or {})["refused"] == 1
    assert refusals.due() == [Window(ACME, MINUTE)]  # the first payload's only
    event = refusals.event(Window(ACME, MINUTE))
    assert event is not None
    assert event.refused == 1


def test_a_refusal_counted_between_the_read_and_the_announcement_is_in_the_event(
    refusals: Refusals, harness: Harness
) -> None:
    harness.clock.set(MINUTE + timedelta(minutes=2))
    refusals.aggregate(refusals.payload((MINUTE, refusal_line(ACME))))
    late = refusals.payload(*[(MINUTE + timedelta(seconds=40), refusal_line(ACME))] * 2)

    class Racing(DynamoRefusedWindows):
        """The window's item as the emitter reads it, and then the aggregator's update landing."""

        attempts = 0

        def read(self, window: Window) -> WindowState | None:
            state = super().read(window)
            if not Racing.attempts:
                refusals.aggregate(late)
            return state

        def announce(self, window: Window, state: WindowState, now: datetime) -> bool:
            Racing.attempts += 1
            return super().announce(window, state, now)

    announced = announce(Window(ACME, MINUTE), Racing(refusals.wiring.table), harness.clock.now())
    assert announced is not None
    assert (announced.refused, Racing.attempts) == (3, 2)
    event = refusals.event(Window(ACME, MINUTE))
    assert event is not None
    assert event.refused == 3

"""CloudWatch Logs subscription filters to Lambda, locally (local/log_subscriptions.py): the JSON
filter pattern the stack uses (and no other), the payload in AWS's shape (read back with
Powertools' CloudWatchLogsEvent, as the aggregator reads it), the filter read from the synthesized
template, a log file tailed from where the subscription started, and asynchronous invocation's
retries and dead-letter queue."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes import CloudWatchLogsEvent

from local.log_subscriptions import (
    ASYNC_RETRY_ATTEMPTS,
    FilterPattern,
    LogSubscription,
    LogTail,
    SubscriptionSpec,
    UnsupportedFilterPattern,
    subscription_payload,
)
from tests.support.template import synth_template_json


def test_a_json_equality_pattern_selects_the_json_lines_whose_property_is_that_value() -> None:
    """CloudWatch Logs user guide, "Using filter patterns to match terms in JSON log events":
    `{ $.eventType = "UpdateTrail" }`; a line that is not JSON matches no JSON pattern."""
    pattern = FilterPattern.parse('{ $.usage_event = "LimitRefused" }')
    assert pattern.matches('{"usage_event": "LimitRefused", "account_id": "acme"}')
    assert not pattern.matches('{"usage_event": "LimitRefusedNot"}')
    assert not pattern.matches('{"other": "LimitRefused"}')
    assert not pattern.matches('usage_event = "LimitRefused"')
    assert not pattern.matches('["LimitRefused"]')
    nested = FilterPattern.parse("{ $.a.b = 3 }")
    assert nested.matches('{"a": {"b": 3}}')
    assert not nested.matches('{"a": {"b": "3"}}')


@pytest.mark.parametrize(
    "pattern", ["", "ERROR", '{ $.a = "x*" }', '{ $.a != "x" }', '{ $.a = "x" && $.b = "y" }', "{ $.a[0] = 1 }"]
)
def test_any_other_pattern_is_refused_rather_than_matched_wrongly(pattern: str) -> None:
    with pytest.raises(UnsupportedFilterPattern):
        FilterPattern.parse(pattern)


def test_the_payload_is_aws_s_base64_gzip_json_shape() -> None:
    events = [{"id": "1", "timestamp": 1795300000000, "message": '{"a": 1}'}]
    payload = subscription_payload("123456789012", "/aws/lambda/api", "2026/11/25/[$LATEST]x", "refusals", events)
    assert set(payload) == {"awslogs"}
    data = CloudWatchLogsEvent(payload).parse_logs_data()
    assert (data.message_type, data.owner, data.log_group, data.log_stream, data.subscription_filters) == (
        "DATA_MESSAGE",
        "123456789012",
        "/aws/lambda/api",
        "2026/11/25/[$LATEST]x",
        ["refusals"],
    )
    [event] = data.log_events
    assert (event.get_id, event.timestamp, event.message) == ("1", 1795300000000, '{"a": 1}')


def test_the_stack_s_filter_is_read_from_its_template() -> None:
    template_json = synth_template_json()
    [spec] = SubscriptionSpec.all_in(template_json)
    resources = template_json["Resources"]
    assert resources[spec.source_function]["Properties"]["Handler"] == "functions.api.handler.handler"
    assert resources[spec.destination_function]["Properties"]["Handler"].startswith("functions.refusal_aggregator.")
    assert resources[spec.dead_letter_queue or ""]["Type"] == "AWS::SQS::Queue"
    assert spec.pattern.matches('{"usage_event": "LimitRefused"}')


def test_a_tail_reads_the_whole_lines_written_after_it_started(tmp_path: Path) -> None:
    log = tmp_path / "api.log"
    log.write_text("before\n")
    tail = LogTail(str(log))
    with log.open("a") as out:
        out.write("one\ntw")
    assert tail.new_lines() == ["one"]
    with log.open("a") as out:
        out.write("o\n\nthree\n")
    assert tail.new_lines() == ["two", "three"]
    assert tail.new_lines() == []


def spec() -> SubscriptionSpec:
    pattern = FilterPattern.parse('{ $.kind = "x" }')
    return SubscriptionSpec("refusals", "Logs", "Api", "Aggregator", pattern, "Dlq")


def run(tmp_path: Path, answers: list[bool]) -> tuple[list[dict[str, Any]], list[str]]:
    """One poll of a subscription over a log with two selected lines and one other; the invocations
    answer `answers` in turn. Returns the events invoked with and the dead-letter messages."""
    log = tmp_path / "api.log"
    log.write_text("")
    invoked: list[dict[str, Any]] = []
    dead: list[str] = []
    done = threading.Event()

    def invoke(event: Any) -> bool:
        invoked.append(event)
        ok = answers.pop(0)
        if ok or not answers:
            done.set()
        return ok

    def dead_letter(body: str) -> None:
        dead.append(body)
        done.set()

    subscription = LogSubscription(
        spec(), str(log), "123456789012", "/aws/lambda/api", invoke, dead_letter, threading.Event(), retry_seconds=0
    )
    log.write_text('{"kind": "x", "n": 1}\nnot selected\n{"kind": "x", "n": 2}\n')
    subscription.poll_once()
    assert done.wait(10)
    return invoked, dead


def test_the_selected_lines_go_in_one_asynchronous_invocation(tmp_path: Path) -> None:
    invoked, dead = run(tmp_path, [True])
    [event] = invoked
    messages = [e.message for e in CloudWatchLogsEvent(event).parse_logs_data().log_events]
    assert [json.loads(m)["n"] for m in messages] == [1, 2]
    assert dead == []


def test_a_failed_invocation_is_retried_twice_then_its_event_goes_to_the_dead_letter_queue(tmp_path: Path) -> None:
    """Lambda developer guide, "How Lambda handles errors and retries with asynchronous invocation"."""
    invoked, dead = run(tmp_path, [False] * (ASYNC_RETRY_ATTEMPTS + 1))
    assert len(invoked) == 3
    assert invoked[0] == invoked[1] == invoked[2]
    assert [json.loads(body) for body in dead] == [invoked[0]]


def test_a_retry_that_succeeds_sends_nothing_to_the_dead_letter_queue(tmp_path: Path) -> None:
    invoked, dead = run(tmp_path, [False, True])
    assert len(invoked) == 2
    assert dead == []

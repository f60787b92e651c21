"""`ops events refusals replay`: the refusals' dead-letter queue handled as the functions would
have (ops/refusals.py, docs/operations.md): CloudWatch Logs' payloads counted with the aggregator's
core and adapters, window messages announced with the emitter's, each message deleted once handled."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.refused_windows import DynamoRefusedWindows
from functions.core.model import Quota
from functions.core.refusals import Window, WindowCount, parse_window_message, window_message
from functions.shared.config import FunctionEnvironment
from infra.outputs import OUTPUT_REFUSAL_AGGREGATOR_FUNCTION, OUTPUT_REFUSALS_DLQ_URL, OUTPUT_TABLE_NAME
from local.log_subscriptions import subscription_payload
from ops.stack import Connection
from tests.conftest import Backend
from tests.handler.conftest import Harness
from tests.handler.test_limit_refused import LogEvents, Refusals, refusal_line
from tests.ops.conftest import Cli, Queues, create_output_stack, create_sweeper_function

SEATS = Quota("acme", "seats")


class RefusalsStack:
    """The stack's Limit Refused parts the command reads: the table, the dead-letter queue, the
    windows queue, and the aggregator's function carrying its environment (grace 0)."""

    def __init__(self, connection: Connection, queues: Queues, moto_backend: Backend, grace_seconds: int = 0) -> None:
        self.dlq = queues.sqs.create_queue(QueueName=f"refusals-dlq-{moto_backend.table}")["QueueUrl"]
        self.windows = queues.sqs.create_queue(QueueName=f"refused-windows-{moto_backend.table}")["QueueUrl"]
        environment = {
            FunctionEnvironment.variable("table_name"): moto_backend.table,
            FunctionEnvironment.variable("refusal_queue_url"): self.windows,
            FunctionEnvironment.variable("refusal_grace"): str(grace_seconds),
        }
        self.name = create_output_stack(
            connection,
            {
                OUTPUT_TABLE_NAME: moto_backend.table,
                OUTPUT_REFUSALS_DLQ_URL: self.dlq,
                OUTPUT_REFUSAL_AGGREGATOR_FUNCTION: create_sweeper_function(connection, environment),
            },
        )


@pytest.fixture
def refusals_stack(connection: Connection, queues: Queues, moto_backend: Backend) -> RefusalsStack:
    return RefusalsStack(connection, queues, moto_backend)


@pytest.fixture
def refusals_cli(
    emulator_url: str, refusals_stack: RefusalsStack, moto_backend: Backend, capsys: pytest.CaptureFixture[str]
) -> Cli:
    return Cli(emulator_url, refusals_stack.name, moto_backend.clock, capsys)


@pytest.fixture
def windows(cli_harness: Harness) -> DynamoRefusedWindows:
    return DynamoRefusedWindows(DynamoTable(cli_harness.backend.dynamodb, cli_harness.backend.table))


class Payloads:
    """CloudWatch Logs' payloads of refusal lines, as Lambda's DeadLetterConfig keeps a failed one."""

    def __init__(self) -> None:
        self.log_events = LogEvents()

    def __call__(self, quota: Quota, at: datetime, count: int) -> str:
        events = [self.log_events(at, refusal_line(quota, limit=3)) for _ in range(count)]
        return json.dumps(subscription_payload("123456789012", "/aws/lambda/api", "stream", "refusals", events))


@pytest.fixture
def payloads() -> Payloads:
    return Payloads()


def a_minute_ago(cli_harness: Harness) -> datetime:
    """A minute that is over: its announcement is due at once with a grace of 0."""
    return cli_harness.clock.now() - timedelta(minutes=2)


def replay(cli: Cli, *options: str) -> tuple[int, dict[str, Any]]:
    result = cli("events", "refusals", "replay", "--json", *options)
    return result.code, result.json()


def test_a_payload_whose_window_was_never_opened_opens_it_and_schedules_its_announcement(
    cli_harness: Harness, queues: Queues, refusals_stack: RefusalsStack, refusals_cli: Cli, payloads: Payloads,
    windows: DynamoRefusedWindows,
) -> None:  # fmt: skip
    at = a_minute_ago(cli_harness)
    [message_id] = queues.send(refusals_stack.dlq, payloads(SEATS, at, 3))
    code, report = replay(refusals_cli)
    assert code == 0, report
    assert report["payloads"] == {message_id: {"counted": 3, "late": 0, "repeated": 0, "scheduled": 1}}
    window = Window.of(SEATS, at)
    state = windows.read(window)
    assert state is not None
    assert (state.refused, state.limit, state.announced) == (3, 3, False)
    assert [parse_window_message(m["Body"]) for m in queues.drain(refusals_stack.windows)] == [window]
    assert queues.visible(refusals_stack.dlq) == 0
    assert replay(refusals_cli) == (0, {"payloads": {}, "windows": {}, "left": {}})  # a second replay: nothing


def test_a_window_message_announces_it_once(
    cli_harness: Harness, queues: Queues, refusals_stack: RefusalsStack, refusals_cli: Cli,
    windows: DynamoRefusedWindows, emulator_url: str,
) -> None:  # fmt: skip
    window = Window.of(SEATS, a_minute_ago(cli_harness))
    windows.add(WindowCount(window, 4, 3, "batch-1"), cli_harness.clock.now())
    [first] = queues.send(refusals_stack.dlq, window_message(window))
    code, report = replay(refusals_cli)
    assert code == 0, report
    detail = {"accountId": "acme", "resourceType": "seats", "start": window.name}
    assert report["windows"] == {first: {**detail, "announced": True, "refused": 4}}
    assert Refusals(cli_harness, emulator_url).event(window) is not None
    # The same message again (a run whose delete failed, or the emitter's own copy): nothing to announce.
    [second] = queues.send(refusals_stack.dlq, window_message(window))
    nothing = {**detail, "announced": False, "refused": None}
    assert replay(refusals_cli) == (0, {"payloads": {}, "windows": {second: nothing}, "left": {}})
    assert queues.visible(refusals_stack.dlq) == 0


def test_a_payload_replayed_again_counts_nothing_and_a_late_one_counts_in_no_event(
    cli_harness: Harness, queues: Queues, refusals_stack: RefusalsStack, refusals_cli: Cli, payloads: Payloads,
    windows: DynamoRefusedWindows,
) -> None:  # fmt: skip
    at = a_minute_ago(cli_harness)
    payload = payloads(SEATS, at, 2)
    queues.send(refusals_stack.dlq, payload)
    assert replay(refusals_cli)[0] == 0
    [again] = queues.send(refusals_stack.dlq, payload)  # its delete failed, or Lambda kept a copy too
    code, report = replay(refusals_cli)
    assert (code, report["payloads"]) == (0, {again: {"counted": 0, "late": 0, "repeated": 2, "scheduled": 1}})
    window = Window.of(SEATS, at)
    state = windows.read(window)
    assert state is not None
    assert state.refused == 2
    assert windows.announce(window, state, cli_harness.clock.now())
    [late] = queues.send(refusals_stack.dlq, payloads(SEATS, at, 1))
    code, report = replay(refusals_cli)
    assert (code, report["payloads"]) == (0, {late: {"counted": 0, "late": 1, "repeated": 0, "scheduled": 0}})


def test_a_message_of_neither_shape_is_left_in_the_queue_and_reported(
    cli_harness: Harness, queues: Queues, refusals_stack: RefusalsStack, refusals_cli: Cli, payloads: Payloads
) -> None:
    odd = queues.send(refusals_stack.dlq, "not json", json.dumps({"hello": 1}), json.dumps({"awslogs": {"data": "x"}}))
    [counted] = queues.send(refusals_stack.dlq, payloads(SEATS, a_minute_ago(cli_harness), 1))
    result = refusals_cli("events", "refusals", "replay")
    assert result.code == 1, result.out + result.err
    for message_id in odd:
        assert f"{message_id}: left in the queue: " in result.out
    assert f"{counted}: refusal lines: counted 1, late 0, repeated 0; 1 announcement(s) scheduled" in result.out
    assert "replayed 1 message(s), 3 left" in result.out
    assert queues.visible(refusals_stack.dlq) == 3


def test_the_grace_is_the_deployed_aggregator_s_unless_given(
    cli_harness: Harness, queues: Queues, refusals_cli: Cli, refusals_stack: RefusalsStack, payloads: Payloads
) -> None:
    """SQS holds a message sent with DelaySeconds back until then (SQS developer guide, "Amazon SQS
    delay queues"): with a grace of 600 s the announcement is not due yet."""
    queues.send(refusals_stack.dlq, payloads(SEATS, a_minute_ago(cli_harness), 1))
    assert replay(refusals_cli, "--grace-seconds", "600")[0] == 0
    attributes = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed"]
    counts = queues.sqs.get_queue_attributes(QueueUrl=refusals_stack.windows, AttributeNames=attributes)["Attributes"]
    assert (counts["ApproximateNumberOfMessages"], counts["ApproximateNumberOfMessagesDelayed"]) == ("0", "1")
